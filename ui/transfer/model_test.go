package transfer

import (
	"reflect"
	"slices"
	"testing"
)

const mb = 1 << 20

func offer(id string, dir Direction, peer string, files ...File) Event {
	var total int64
	for _, f := range files {
		total += f.Size
	}
	return Event{Kind: EvOffer, Delivery: id, Direction: dir, Peer: peer, Files: files, Total: total}
}

func st(id, s string) Event            { return Event{Kind: EvState, Delivery: id, State: s} }
func prog(id string, b int64) Event    { return Event{Kind: EvProgress, Delivery: id, Bytes: b} }
func act(id string, k EventKind) Event { return Event{Kind: k, Delivery: id} }
func res(id, state, code string, byPeer bool, err string) Event {
	return Event{Kind: EvResult, Delivery: id, State: state, Code: code, ByPeer: byPeer, Err: err}
}
func via(id string, r Route, relay string) Event {
	return Event{Kind: EvTransport, Delivery: id, Route: r, Relay: relay}
}
func rejoin(ev Event) Event { ev.Rejoin = true; return ev }
func retry(id, err string) Event {
	return Event{Kind: EvState, Delivery: id, State: "reconnecting", Err: err}
}
func fileEnd(id, path string, ok bool, err string) Event {
	return Event{Kind: EvFile, Delivery: id, File: &FileEnd{Path: path, Verified: ok, Err: err}}
}

var big = File{Path: "big.bin", Size: 200 * mb}

// want is what one delivery must show after the events.
type want struct {
	id      string
	phase   Phase
	by      Actor
	reason  Reason
	status  string
	actions []Action
	bytes   int64 // -1: not checked
	path    string
}

func TestDeliveryStateTable(t *testing.T) {
	cases := []struct {
		name   string
		events []Event
		want   []want
		rows   int
	}{{
		// Finding 1: the same files sent twice are two deliveries; pausing
		// the second leaves the first done.
		name: "same files twice, second paused",
		events: []Event{
			offer("d1", Incoming, "Alice", big), st("d1", "active"), prog("d1", 200*mb),
			fileEnd("d1", "big.bin", true, ""), res("d1", "done", "", false, ""),
			offer("d2", Incoming, "Alice", big), st("d2", "active"), prog("d2", 30*mb),
			st("d2", "paused"),
		},
		want: []want{
			{id: "d1", phase: Done, status: "Received 1 file · verified", actions: []Action{ActionOpen}, bytes: 200 * mb},
			{id: "d2", phase: Paused, by: Peer, status: "Paused by Alice", bytes: 30 * mb},
		},
		rows: 2,
	}, {
		// Received unasked and done before any progress tick: the
		// result's bytes are the whole, in place.
		name: "done before any progress",
		events: []Event{
			{Kind: EvState, Delivery: "r", Direction: Incoming, State: "active"}, fileEnd("r", "note.txt", true, ""),
			{Kind: EvResult, Delivery: "r", State: "done", Verified: 1, Bytes: 3 * mb},
		},
		want: []want{{id: "r", phase: Done, status: "Received 1 file · verified", actions: []Action{ActionOpen}, bytes: 3 * mb}},
		rows: 1,
	}, {
		// Finding 2: cancel then resume runs again with Pause and Cancel.
		name: "cancel then resume",
		events: []Event{
			offer("s", Outgoing, "Bob", big), st("s", "active"), prog("s", 50*mb),
			act("s", ActCancel), res("s", "cancelled", "cancelled", false, ""),
			act("s", ActResume), st("s", "active"), prog("s", 60*mb),
		},
		want: []want{{id: "s", phase: Sending, status: "Sending 1 file", actions: []Action{ActionPause, ActionCancel}, bytes: 60 * mb}},
		rows: 1,
	}, {
		// Finding 3: bytes after a resume and a reconnect count once; the
		// result's own (double-counting) figure is not shown.
		name: "bytes once across reconnect and resume",
		events: []Event{
			offer("s", Outgoing, "Bob", big), st("s", "active"), prog("s", 80*mb),
			st("s", "reconnecting"), st("s", "active"), prog("s", 70*mb), prog("s", 120*mb),
			act("s", ActPause), act("s", ActResume), prog("s", 120*mb), prog("s", 200*mb),
			{Kind: EvResult, Delivery: "s", State: "done", Bytes: 218 * mb},
		},
		want: []want{{id: "s", phase: Done, status: "Sent 1 file", bytes: 200 * mb}},
		rows: 1,
	}, {
		name: "a text ends as a text",
		events: []Event{
			{Kind: EvOffer, Delivery: "t", Direction: Outgoing, Peer: "vm", Text: true},
			st("t", "active"), res("t", "done", "", false, ""),
		},
		want: []want{{id: "t", phase: Done, status: "Text sent", bytes: -1}},
		rows: 1,
	}, {
		name: "a declined text is not files",
		events: []Event{
			{Kind: EvOffer, Delivery: "t", Direction: Incoming, Peer: "vm", Text: true},
			res("t", "declined", "declined", false, ""),
		},
		want: []want{{id: "t", phase: Declined, by: You, status: "Declined by you: a text from vm", bytes: -1}},
		rows: 1,
	}, {
		// Finding 4: a receiver killed mid-send and never back went away;
		// the last dial's "connection refused" is no local read error.
		name: "receiver killed and never back",
		events: []Event{
			offer("s", Outgoing, "Bob's laptop", big), st("s", "active"), prog("s", 40*mb),
			st("s", "reconnecting"),
			res("s", "failed", "io", false, "could not connect: connection refused"),
		},
		want: []want{{id: "s", phase: Failed, reason: ReasonConnectionLost,
			status:  "Bob's laptop went away. Retry sends the rest when it is back.",
			actions: []Action{ActionRetry}, bytes: 40 * mb}},
		rows: 1,
	}, {
		// The app rejoins: a send whose receiver went away goes on by
		// itself when discovery sees it again; the row says so and offers
		// Retry (now) and Cancel (give up).
		name: "receiver went away, the app sends the rest when it is back",
		events: []Event{
			offer("s", Outgoing, "Bob's laptop", big), st("s", "active"), prog("s", 40*mb),
			st("s", "reconnecting"), rejoin(res("s", "failed", "io", false, "connection refused")),
		},
		want: []want{{id: "s", phase: Failed, reason: ReasonConnectionLost,
			status:  "Bob's laptop went away. Ferry will send the rest when it is back.",
			actions: []Action{ActionRetry, ActionCancel}, bytes: 40 * mb}},
		rows: 1,
	}, {
		// A receiver that quits Ferry says so (wire code going_away): the
		// engine ends the send as connection_lost by the peer, which is
		// the device going away, rejoined when it is back; never "could
		// not save the files". While the offer waited, and mid-send.
		name: "receiver quit Ferry while the offer waited",
		events: []Event{
			offer("s", Outgoing, "Bob's laptop", big), st("s", "waiting"),
			rejoin(res("s", "failed", "connection_lost", true, "Bob's laptop went away: Ferry was closed there.")),
		},
		want: []want{{id: "s", phase: Failed, by: Peer, reason: ReasonConnectionLost,
			status:  "Bob's laptop went away. Ferry will send the rest when it is back.",
			actions: []Action{ActionRetry, ActionCancel}, bytes: 0}},
		rows: 1,
	}, {
		name: "receiver quit Ferry mid-send, rejoined once already",
		events: []Event{
			offer("s", Outgoing, "Bob's laptop", big), st("s", "active"), prog("s", 40*mb),
			res("s", "failed", "connection_lost", true, "Bob's laptop went away: Ferry was closed there."),
		},
		want: []want{{id: "s", phase: Failed, by: Peer, reason: ReasonConnectionLost,
			status:  "Bob's laptop went away. Retry sends the rest when it is back.",
			actions: []Action{ActionRetry}, bytes: 40 * mb}},
		rows: 1,
	}, {
		name: "rejoin cancelled by the user",
		events: []Event{
			offer("s", Outgoing, "Bob's laptop", big), st("s", "active"), prog("s", 40*mb),
			rejoin(res("s", "failed", "connection_lost", false, "")), act("s", ActCancel),
		},
		want: []want{{id: "s", phase: Cancelled, by: You, status: "Cancelled by you",
			actions: []Action{ActionRetry}, bytes: 40 * mb}},
		rows: 1,
	}, {
		// The same delivery goes on in its row when the device is back,
		// from the bytes already there; failing again after its one
		// rejoin, it says Retry.
		name: "rejoined, then gone again",
		events: []Event{
			offer("s", Outgoing, "Bob's laptop", big), st("s", "active"), prog("s", 40*mb),
			rejoin(res("s", "failed", "connection_lost", false, "")),
			st("s", "connecting"), st("s", "active"), prog("s", 90*mb),
			res("s", "failed", "connection_lost", false, ""),
		},
		want: []want{{id: "s", phase: Failed, reason: ReasonConnectionLost,
			status:  "Bob's laptop went away. Retry sends the rest when it is back.",
			actions: []Action{ActionRetry}, bytes: 90 * mb}},
		rows: 1,
	}, {
		// A send this device's Ferry was closed in the middle of, shown
		// at the next start (the app's kept sends): it goes on when the
		// device is seen, or at Retry; Cancel gives up on it. Its one
		// automatic go spent, Retry is the user's.
		name: "closed here, shown at the next start",
		events: []Event{
			offer("s", Outgoing, "Bob's laptop", big), rejoin(res("s", "failed", "closed_here", false, "")),
			offer("t", Outgoing, "Bob's laptop", big), res("t", "failed", "closed_here", false, ""),
		},
		want: []want{{id: "s", phase: Failed, reason: ReasonClosedHere,
			status:  "Interrupted: Ferry was closed while sending. It sends the rest when Bob's laptop is back.",
			actions: []Action{ActionRetry, ActionCancel}, bytes: 0}, {id: "t", phase: Failed, reason: ReasonClosedHere,
			status:  "Interrupted: Ferry was closed while sending. Retry sends the rest.",
			actions: []Action{ActionRetry}, bytes: 0}},
		rows: 2,
	}, {
		// Only a device that went away is waited for: one never reached,
		// or a failure of another kind, is not retried by itself.
		name: "rejoin only for a device that went away",
		events: []Event{
			offer("u", Outgoing, "Carol's phone", big), st("u", "reconnecting"),
			rejoin(res("u", "failed", "io", false, "dial: connection refused")),
			offer("v", Outgoing, "Bob's laptop", big), st("v", "active"), prog("v", 10*mb),
			rejoin(res("v", "failed", "no_space", true, "")),
		},
		want: []want{
			{id: "u", phase: Failed, reason: ReasonUnreachable,
				status: "Carol's phone could not be reached. Is it on and receiving?", actions: []Action{ActionRetry}, bytes: 0},
			{id: "v", phase: Failed, by: Peer, reason: ReasonNoSpace,
				status: "Not enough space on Bob's laptop", actions: []Action{ActionRetry}, bytes: 10 * mb},
		},
		rows: 2,
	}, {
		name: "send to an offline device is not reconnecting",
		events: []Event{
			offer("s", Outgoing, "Carol's phone", big), st("s", "connecting"), st("s", "reconnecting"),
		},
		want: []want{{id: "s", phase: Connecting, status: "Connecting to Carol's phone…",
			actions: []Action{ActionPause, ActionCancel}, bytes: 0}},
		rows: 1,
	}, {
		// Each failed attempt is counted in the row while it keeps
		// trying (Details has the last one's words).
		name: "send to an offline device says how often it tried",
		events: []Event{
			offer("s", Outgoing, "Carol's phone", big), st("s", "connecting"),
			retry("s", "Nothing is listening at 192.0.2.2:47950: is Ferry running there?"),
		},
		want: []want{{id: "s", phase: Connecting, status: "Connecting to Carol's phone… (tried once)",
			actions: []Action{ActionPause, ActionCancel}, bytes: 0}},
		rows: 1,
	}, {
		// Retry after it could not be reached: its tries counted afresh.
		name: "tries counted afresh after a Retry",
		events: []Event{
			offer("s", Outgoing, "Carol's phone", big), retry("s", "a"), retry("s", "b"),
			res("s", "failed", "io", false, "dial: connection refused"),
			act("s", ActResume), st("s", "connecting"), retry("s", "c"),
		},
		want: []want{{id: "s", phase: Connecting, status: "Connecting to Carol's phone… (tried once)",
			actions: []Action{ActionPause, ActionCancel}, bytes: 0}},
		rows: 1,
	}, {
		name: "three tries",
		events: []Event{
			offer("s", Outgoing, "Carol's phone", big), retry("s", "a"), retry("s", "b"), retry("s", "c"),
		},
		want: []want{{id: "s", phase: Connecting, status: "Connecting to Carol's phone… (tried 3 times)",
			actions: []Action{ActionPause, ActionCancel}, bytes: 0}},
		rows: 1,
	}, {
		// Connected: the count starts again for a later outage, whose
		// first word is the loss, not a try.
		name: "tries counted again after a connection",
		events: []Event{
			offer("s", Outgoing, "Carol's phone", big), retry("s", "a"), retry("s", "b"),
			st("s", "active"), prog("s", 5*mb), retry("s", "connection lost"), st("s", "connecting"),
			retry("s", "nothing listening"),
		},
		want: []want{{id: "s", phase: Reconnecting, status: "Reconnecting to Carol's phone… (tried once)",
			actions: []Action{ActionPause, ActionCancel}, bytes: 5 * mb}},
		rows: 1,
	}, {
		name: "offline device never reached fails as unreachable",
		events: []Event{
			offer("s", Outgoing, "Carol's phone", big), st("s", "reconnecting"),
			res("s", "failed", "io", false, "dial: connection refused"),
		},
		want: []want{{id: "s", phase: Failed, reason: ReasonUnreachable,
			status: "Carol's phone could not be reached. Is it on and receiving?", actions: []Action{ActionRetry}, bytes: 0}},
		rows: 1,
	}, {
		// A send that could not even start (a named pipe given) tried no
		// device: it is no unreachable one (the row said "could not be
		// reached. Is it on and receiving?"); the app shows the engine's
		// sentence.
		name: "a send that never started is not unreachable",
		events: []Event{
			{Kind: EvResult, Delivery: "local-1", Direction: Outgoing, Peer: "Carol's phone", State: "failed", NotStarted: true,
				Err: "The transfer could not start: /tmp/pipe is a named pipe (FIFO), not a file or folder."},
		},
		want: []want{{id: "local-1", phase: Failed, reason: ReasonNone, status: "Failed: Details says why", bytes: 0}},
		rows: 1,
	}, {
		// A real local read error mid-transfer keeps its reason.
		name: "a real read error stays a read error",
		events: []Event{
			offer("s", Outgoing, "Bob", big), st("s", "active"), prog("s", mb),
			res("s", "failed", "io", false, "read big.bin: input/output error"),
		},
		want: []want{{id: "s", phase: Failed, reason: ReasonIO, status: "The files could not be read here", actions: []Action{ActionRetry}, bytes: mb}},
		rows: 1,
	}, {
		name: "receiver's row counts refused files",
		events: []Event{
			offer("r", Incoming, "Alice", File{Path: "a", Size: 1}, File{Path: "b", Size: 1},
				File{Path: "CON", Size: 1, Refused: "reserved name"}),
			st("r", "active"), fileEnd("r", "a", true, ""), fileEnd("r", "b", true, ""),
			res("r", "done", "", false, ""),
		},
		want: []want{{id: "r", phase: Done, status: "Received 2 files · verified · 1 refused", actions: []Action{ActionOpen}, bytes: 3}},
		rows: 1,
	}, {
		// Finding 7: a path event shows "Network changed — continuing".
		name: "network change while sending",
		events: []Event{
			offer("s", Outgoing, "Bob", big), st("s", "active"), prog("s", mb),
			{Kind: EvPath, Delivery: "s"},
		},
		want: []want{{id: "s", phase: Moved, status: "Network changed — continuing", actions: []Action{ActionPause, ActionCancel}, bytes: mb}},
		rows: 1,
	}, {
		name: "network change stays said while it goes on",
		events: []Event{
			offer("s", Outgoing, "Bob", big), st("s", "active"), prog("s", mb),
			{Kind: EvPath, Delivery: "s"}, prog("s", 2*mb),
		},
		want: []want{{id: "s", phase: Sending, status: "Network changed — continuing · Sending 1 file", actions: []Action{ActionPause, ActionCancel}, bytes: 2 * mb}},
		rows: 1,
	}, {
		name: "offer expired",
		events: []Event{
			offer("r", Incoming, "Alice", big), res("r", "declined", "expired", false, ""),
		},
		want: []want{{id: "r", phase: Expired, status: "Expired: nobody answered in time", bytes: 0}},
		rows: 1,
	}, {
		name: "cancelled by the peer",
		events: []Event{
			offer("s", Outgoing, "Bob", big), st("s", "waiting"), res("s", "cancelled", "cancelled", true, ""),
		},
		want: []want{{id: "s", phase: Cancelled, by: Peer, status: "Cancelled by Bob", actions: []Action{ActionRetry}, bytes: 0}},
		rows: 1,
	}, {
		name: "events after the end change nothing",
		events: []Event{
			offer("s", Outgoing, "Bob", big), st("s", "active"), res("s", "done", "", false, ""),
			st("s", "reconnecting"), prog("s", 5),
		},
		want: []want{{id: "s", phase: Done, status: "Sent 1 file", bytes: 200 * mb}},
		rows: 1,
	}, {
		// The sender's Retry of a cancelled delivery reaches the receiver
		// as a new offer under the same ID: the same row goes on.
		name: "receiver's row goes on after the sender's retry",
		events: []Event{
			offer("r", Incoming, "Alice", big), st("r", "active"), prog("r", 50*mb),
			res("r", "cancelled", "cancelled", true, ""),
			offer("r", Incoming, "Alice", big), st("r", "active"), prog("r", 60*mb),
		},
		want: []want{{id: "r", phase: Sending, status: "Receiving 1 file", actions: []Action{ActionCancel}, bytes: 60 * mb}},
		rows: 1,
	}, {
		name: "receiving row interrupted by its sender",
		events: []Event{
			offer("r", Incoming, "Alice", big), st("r", "active"), prog("r", 50*mb),
			res("r", "interrupted", "connection_lost", false, "control stream: unexpected EOF"),
		},
		want: []want{{id: "r", phase: Interrupted, status: "Interrupted — will resume when Alice is back",
			actions: []Action{ActionDiscard}, bytes: 50 * mb}},
		rows: 1,
	}, {
		// A UI audit: its row offers to give it up, as Settings' Unfinished
		// transfers does (only Settings did); once discarded it is over,
		// until its sender sends it again.
		name: "interrupted receive discarded",
		events: []Event{
			offer("r", Incoming, "Alice", big), st("r", "active"), prog("r", 50*mb),
			res("r", "interrupted", "connection_lost", false, "control stream: unexpected EOF"),
			act("r", ActDiscard), st("r", "interrupted"), prog("r", 60*mb),
		},
		want: []want{{id: "r", phase: Cancelled, by: You, status: "Discarded by you: its partial files were deleted", bytes: 0}},
		rows: 1,
	}, {
		name: "discarded receive sent again",
		events: []Event{
			offer("r", Incoming, "Alice", big), st("r", "active"), prog("r", 50*mb),
			res("r", "interrupted", "connection_lost", false, ""), act("r", ActDiscard),
			offer("r", Incoming, "Alice", big), st("r", "active"), prog("r", 10*mb),
		},
		want: []want{{id: "r", phase: Sending, status: "Receiving 1 file", actions: []Action{ActionCancel}, bytes: 10 * mb}},
		rows: 1,
	}, {
		// A browser's set interrupted while its transfer goes on is
		// cancelled (Cancel), not discarded.
		name: "interrupted while it goes on is not discarded",
		events: []Event{
			offer("r", Incoming, "a browser at 192.168.1.5", big), st("r", "active"), prog("r", 50*mb),
			st("r", "interrupted"), act("r", ActDiscard),
		},
		want: []want{{id: "r", phase: Interrupted, status: "Interrupted — will resume when a browser at 192.168.1.5 is back",
			actions: []Action{ActionCancel}, bytes: 50 * mb}},
		rows: 1,
	}, {
		// A browser's set whose page stopped sending: interrupted while
		// its transfer goes on (a state, no result), so Cancel gives up on
		// it; the page's next bytes make it run again.
		name: "receiving row interrupted while it goes on",
		events: []Event{
			offer("r", Incoming, "a browser at 192.168.1.5", big), st("r", "active"), prog("r", 50*mb),
			st("r", "interrupted"), prog("r", 50*mb), // its progress ticks go on
		},
		want: []want{{id: "r", phase: Interrupted, status: "Interrupted — will resume when a browser at 192.168.1.5 is back",
			actions: []Action{ActionCancel}, bytes: 50 * mb}},
		rows: 1,
	}, {
		name: "receiving row back from an interruption",
		events: []Event{
			offer("r", Incoming, "a browser at 192.168.1.5", big), st("r", "active"), prog("r", 50*mb),
			st("r", "interrupted"), st("r", "active"), prog("r", 60*mb),
		},
		want: []want{{id: "r", phase: Sending, status: "Receiving 1 file", actions: []Action{ActionCancel}, bytes: 60 * mb}},
		rows: 1,
	}, {
		// Cancel pressed while the engine was already failing: the
		// engine's result says how it ended.
		name: "cancel pressed, engine failed first",
		events: []Event{
			offer("s", Outgoing, "Alice", big), st("s", "active"), prog("s", mb), act("s", ActCancel),
			res("s", "failed", "no_space", true, "3 GB needed"),
		},
		want: []want{{id: "s", phase: Failed, by: Peer, reason: ReasonNoSpace, status: "Not enough space on Alice",
			actions: []Action{ActionRetry}, bytes: mb}},
		rows: 1,
	}, {
		name: "an offer the engine ended unanswered is expired",
		events: []Event{
			offer("r", Incoming, "Alice", big), res("r", "failed", "expired", false, ""),
		},
		want: []want{{id: "r", phase: Expired, status: "Expired: nobody answered in time", bytes: 0}},
		rows: 1,
	}, {
		// Declined by the receiver's policy, not by a person.
		name: "declined because untrusted",
		events: []Event{
			offer("s", Outgoing, "Alice", big), res("s", "declined", "untrusted", true, ""),
		},
		want: []want{{id: "s", phase: Declined, reason: ReasonUntrusted, status: "Declined: Alice only accepts files from trusted devices", bytes: 0}},
		rows: 1,
	}, {
		name: "declined here by the engine's policy",
		events: []Event{
			offer("r", Incoming, "Alice", big), res("r", "declined", "", false, "no space"),
		},
		want: []want{{id: "r", phase: Declined, status: "Declined automatically: Details says why", bytes: 0}},
		rows: 1,
	}, {
		// A large offer lists only its first files: the count is the
		// engine's, and the verified count the result's.
		name: "counts beyond the listed files",
		events: []Event{
			{Kind: EvOffer, Delivery: "r", Direction: Incoming, Peer: "Alice", Files: []File{big}, Count: 199, Total: big.Size},
			st("r", "active"), {Kind: EvResult, Delivery: "r", State: "done", Verified: 199},
		},
		want: []want{{id: "r", phase: Done, status: "Received 199 files · verified", actions: []Action{ActionOpen}, bytes: big.Size}},
		rows: 1,
	}, {
		// A UI audit: the two sides of one delivery read alike, where the
		// receiver's said "Done · 2,100 verified" and the sender's "Sent
		// 2,100 files".
		name: "both sides count the files alike",
		events: []Event{
			{Kind: EvOffer, Delivery: "s", Direction: Outgoing, Peer: "Bob", Files: []File{big}, Count: 2100, Total: big.Size},
			st("s", "active"), {Kind: EvResult, Delivery: "s", State: "done"},
			{Kind: EvOffer, Delivery: "r", Direction: Incoming, Peer: "Alice", Files: []File{big}, Count: 2100, Total: big.Size},
			st("r", "active"), {Kind: EvResult, Delivery: "r", State: "done", Verified: 2100},
		},
		want: []want{
			{id: "s", phase: Done, status: "Sent 2,100 files", bytes: big.Size},
			{id: "r", phase: Done, status: "Received 2,100 files · verified", actions: []Action{ActionOpen}, bytes: big.Size},
		},
		rows: 2,
	}, {
		// Finding 4: the receiver's row says it refused 2 files, also when
		// they were not among the files the offer listed.
		name: "refused files beyond the listed ones",
		events: []Event{
			{Kind: EvOffer, Delivery: "r", Direction: Incoming, Peer: "Alice", Files: []File{big}, Count: 201, Total: big.Size},
			st("r", "active"), {Kind: EvResult, Delivery: "r", State: "done", Verified: 199, Refused: 2},
		},
		want: []want{{id: "r", phase: Done, status: "Received 199 files · verified · 2 refused", actions: []Action{ActionOpen}, bytes: big.Size}},
		rows: 1,
	}, {
		// Issue 29: a send on the LAN whose link is cut reconnects through
		// the relay; the row says it left the network, while it moves and
		// once bytes flow again, and the path is the new one.
		name: "left the network, continuing over the internet",
		events: []Event{
			offer("s", Outgoing, "Desktop", big), via("s", RouteLAN, ""), st("s", "active"), prog("s", 20*mb),
			st("s", "reconnecting"), via("s", RouteInternet, "relay.example.org:3478"), st("s", "active"),
		},
		want: []want{{id: "s", phase: Moved, status: "Left the network — continuing over the internet",
			actions: []Action{ActionPause, ActionCancel}, bytes: 20 * mb, path: "through the internet (direct)"}},
		rows: 1,
	}, {
		name: "left the network, bytes flow through the relay",
		events: []Event{
			offer("s", Outgoing, "Desktop", big), via("s", RouteLAN, ""), st("s", "active"), prog("s", 20*mb),
			st("s", "reconnecting"), via("s", RouteRelayed, "relay.example.org:3478"), st("s", "active"), prog("s", 30*mb),
		},
		want: []want{{id: "s", phase: Sending, status: "Left the network — continuing over the internet · Sending 1 file",
			actions: []Action{ActionPause, ActionCancel}, bytes: 30 * mb, path: "relayed via relay.example.org"}},
		rows: 1,
	}, {
		// A send that starts beyond the LAN never left it: the row says
		// only how it goes.
		name: "through the internet from the start",
		events: []Event{
			offer("s", Outgoing, "Desktop", big), via("s", RouteInternet, "[2001:db8::1]:3478"), st("s", "active"), prog("s", mb),
		},
		want: []want{{id: "s", phase: Sending, status: "Sending 1 file", actions: []Action{ActionPause, ActionCancel},
			bytes: mb, path: "through the internet (direct)"}},
		rows: 1,
	}, {
		// Back on the LAN (the device came home): a network change, not
		// "over the internet".
		name: "back on the LAN",
		events: []Event{
			offer("s", Outgoing, "Desktop", big), via("s", RouteLAN, ""), st("s", "active"), prog("s", mb),
			st("s", "reconnecting"), via("s", RouteRelayed, "relay:3478"), st("s", "active"), prog("s", 2*mb),
			st("s", "reconnecting"), via("s", RouteLAN, ""), st("s", "active"), prog("s", 3*mb),
		},
		want: []want{{id: "s", phase: Sending, status: "Network changed — continuing · Sending 1 file",
			actions: []Action{ActionPause, ActionCancel}, bytes: 3 * mb, path: "direct"}},
		rows: 1,
	}, {
		// An engine that does not say the route (an older one, a
		// LocalSend session): nothing changes.
		name: "route not said",
		events: []Event{
			offer("s", Outgoing, "Desktop", big), via("s", RouteLAN, ""), st("s", "active"), via("s", RouteUnknown, ""), prog("s", mb),
		},
		want: []want{{id: "s", phase: Sending, status: "Sending 1 file", actions: []Action{ActionPause, ActionCancel}, bytes: mb, path: "direct"}},
		rows: 1,
	}, {
		// A finished delivery keeps its words; a late transport event
		// does not reopen it.
		name: "done, then a late route",
		events: []Event{
			offer("s", Outgoing, "Desktop", big), via("s", RouteLAN, ""), st("s", "active"), prog("s", big.Size),
			res("s", "done", "", false, ""), via("s", RouteRelayed, "relay:3478"),
		},
		want: []want{{id: "s", phase: Done, status: "Sent 1 file", bytes: big.Size, path: "direct"}},
		rows: 1,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			for _, ev := range tc.events {
				m.Apply(ev)
			}
			if got := len(m.Deliveries()); got != tc.rows {
				t.Fatalf("rows = %d, want %d", got, tc.rows)
			}
			for _, w := range tc.want {
				d := m.Get(w.id)
				if d == nil {
					t.Fatalf("no delivery %q", w.id)
				}
				if d.Phase != w.phase || d.By != w.by || d.Reason != w.reason {
					t.Errorf("%s: phase/by/reason = %s/%q/%q, want %s/%q/%q", w.id, d.Phase, d.By, d.Reason, w.phase, w.by, w.reason)
				}
				if got := d.Status(); got != w.status {
					t.Errorf("%s: status = %q, want %q", w.id, got, w.status)
				}
				if got := d.Actions(); !slices.Equal(got, w.actions) {
					t.Errorf("%s: actions = %v, want %v", w.id, got, w.actions)
				}
				if w.bytes >= 0 && d.Bytes != w.bytes {
					t.Errorf("%s: bytes = %d, want %d", w.id, d.Bytes, w.bytes)
				}
				if w.path != "" && d.PathText() != w.path {
					t.Errorf("%s: path = %q, want %q", w.id, d.PathText(), w.path)
				}
			}
		})
	}
}

// Finding 1 and 5: history keeps one entry per delivery, with file names,
// and the same files twice are two entries.
func TestHistoryOneEntryPerDeliveryWithNames(t *testing.T) {
	m := New()
	photos := []File{{Path: "a.jpg", Size: 1}, {Path: "b.jpg", Size: 2}, {Path: "c.jpg", Size: 3}}
	for _, ev := range []Event{
		offer("p", Outgoing, "Bob", photos...), st("p", "active"), res("p", "done", "", false, ""),
		offer("d1", Outgoing, "Bob", big), st("d1", "active"), res("d1", "done", "", false, ""),
		offer("d2", Outgoing, "Bob", big), st("d2", "active"), prog("d2", mb), act("d2", ActPause),
		act("d2", ActCancel),
	} {
		m.Apply(ev)
	}
	h := m.History()
	var got []string
	for _, e := range h {
		got = append(got, e.Delivery+":"+string(e.Phase))
	}
	if want := []string{"d2:cancelled", "d1:done", "p:done"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("history = %v, want %v", got, want)
	}
	if want := []string{"a.jpg", "b.jpg", "c.jpg"}; !reflect.DeepEqual(h[2].Names, want) {
		t.Errorf("photos' names = %v, want %v", h[2].Names, want)
	}
	if h[1].Bytes != 200*mb || h[0].Bytes != mb {
		t.Errorf("bytes = %d, %d; the done copy keeps its size, the cancelled one its own", h[1].Bytes, h[0].Bytes)
	}
}

func TestPathText(t *testing.T) {
	for _, c := range []struct {
		route Route
		relay string
		want  string
	}{
		{RouteUnknown, "", ""},
		{RouteLAN, "", "direct"},
		{RouteInternet, "relay.example.org:3478", "through the internet (direct)"},
		{RouteRelayed, "relay.example.org:3478", "relayed via relay.example.org"},
		{RouteRelayed, "[2001:db8::1]:3478", "relayed via 2001:db8::1"},
		{RouteRelayed, "relay-without-port", "relayed via relay-without-port"},
		{RouteRelayed, "", "relayed"},
		{Route("warp"), "", ""}, // a route this version does not know says nothing
	} {
		d := &Delivery{Route: c.route, Relay: c.relay}
		if got := d.PathText(); got != c.want {
			t.Errorf("%q via %q: %q, want %q", c.route, c.relay, got, c.want)
		}
	}
}

// A failed or cancelled receive offers no Retry: its sender sends it again
// (the engine refuses to retry a receive, and the row offered a button that
// could only say so); a send offers it.
func TestRetryIsForSends(t *testing.T) {
	for _, c := range []struct {
		d     Delivery
		retry bool
	}{
		{Delivery{Phase: Failed, Direction: Incoming}, false},
		{Delivery{Phase: Cancelled, Direction: Incoming}, false},
		{Delivery{Phase: Failed, Direction: Outgoing}, true},
		{Delivery{Phase: Cancelled, Direction: Outgoing}, true},
	} {
		if got := slices.Contains(c.d.Actions(), ActionRetry); got != c.retry {
			t.Errorf("%v %s: Retry %v, want %v", c.d.Direction, c.d.Phase, got, c.retry)
		}
	}
}
