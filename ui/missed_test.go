package ui

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// An offer whose time ran out was told ("Offer expired") only when this
// UI's tick declined it; the engine's clock runs out at the same moment
// and its result often came first, which took the prompt down without a
// word: the one on screen vanished, and one held behind it went unseen
// and untold. Either way the user is told now, and an offer never shown
// is told as missed, with who to ask for it again.
func TestExpiredOfferIsToldWhoeverNoticedFirst(t *testing.T) {
	u, be, c := newTestUI(t)
	var told []string
	u.opt.Notify = func(title, body string) { told = append(told, title+": "+body) }
	expired := func(id string) TransferEvent {
		return TransferEvent{Kind: TransferResult, ID: id, Direction: Incoming, State: StateDeclined, Peer: Peer{ID: idAlice, Name: "Alice"},
			Result: &Result{State: StateDeclined, Code: CodeExpired, Err: "Expired: not answered in time."}}
	}
	take := func() []string { t.Helper(); out := told; told = nil; return out }

	// The engine's result first: the held offer, then the one shown.
	u.ApplyTransfer(offerEvent("t1", 1))
	u.ApplyTransfer(offerEvent("t2", 1))
	take()
	u.ApplyTransfer(expired("t2"))
	if got := take(); len(got) != 1 || !strings.HasPrefix(got[0], "Missed offer: Alice offered 1 file (1.0 kB) while another offer was on screen") ||
		!strings.Contains(got[0], "Ask Alice to send it again.") {
		t.Fatalf("the held offer expired in the engine: told %q", got)
	}
	u.ApplyTransfer(expired("t1"))
	if got := take(); len(got) != 1 || !strings.HasPrefix(got[0], "Offer expired: The offer from Alice was declined") {
		t.Fatalf("the offer on screen expired in the engine: told %q", got)
	}

	// This UI's tick first: both go, the held one never shown, each told
	// once (the engine's results that follow say nothing more).
	u.ApplyTransfer(offerEvent("t3", 1))
	u.ApplyTransfer(offerEvent("t4", 2))
	take()
	u.ExpirePrompts(c.t.Add(3 * time.Minute))
	u.ApplyTransfer(expired("t3"))
	u.ApplyTransfer(expired("t4"))
	got := take()
	if len(got) != 2 || !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "Missed offer: Alice offered 2 files (2.0 kB)") }) ||
		!slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "Offer expired: The offer from Alice") }) {
		t.Fatalf("expired at the tick: told %q", got)
	}
	if slices.Contains(be.onScreen, "t4 shown") {
		t.Fatalf("the held offer was shown as it expired: %v", be.onScreen)
	}
}

// An offer the engine holds behind the prompts it shows (Options.MaxPrompts
// are out) is told to this UI by its code alone (TransferPair), with no
// offer to answer yet: it got a row saying "Alice offers files" with a
// code and only Cancel, one per held offer, while the prompt on screen
// counted none of them. It gets no row now until its offer is asked
// about; the prompt shown counts it among those waiting.
func TestOfferHeldByTheEngineIsCountedNotRowed(t *testing.T) {
	u, _, _ := newTestUI(t)
	peer := Peer{ID: idAlice, Name: "Alice"}
	// The engine tells its sender's code, then that it holds it.
	held := func(id string) {
		u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: id, Direction: Incoming, Peer: peer, Pair: &PairCode{Code: "482 913"}})
		u.ApplyTransfer(TransferEvent{Kind: TransferQueued, ID: id, Direction: Incoming, Peer: peer, State: StateWaiting})
	}
	u.ApplyTransfer(offerEvent("t1", 1))
	more := u.prompts.queue[0].more
	if more.Visible() {
		t.Fatalf("one offer, and the prompt says %q", more.Text)
	}
	held("t2")
	held("t3")
	for _, id := range []string{"t2", "t3"} {
		if v := u.transfers.byID[id]; v != nil {
			t.Fatalf("a held offer has a row: %q", texts(v.obj))
		}
	}
	if !more.Visible() || more.Text != "2 more request(s) waiting" {
		t.Fatalf("two held behind the prompt: it says %q (visible %v)", more.Text, more.Visible())
	}
	// t2's turn comes: its offer is asked about, and it has its row.
	u.ApplyTransfer(untrustedOffer("t2"))
	if v := u.transfers.byID["t2"]; v == nil || len(u.prompts.queue) != 2 || more.Text != "2 more request(s) waiting" {
		t.Fatalf("t2 asked about: row %v, %d prompts, the prompt says %q", v != nil, len(u.prompts.queue), more.Text)
	}
	// t3's sender gives up while it is held.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "t3", Direction: Incoming, State: StateCancelled, Peer: peer,
		Result: &Result{State: StateCancelled, Code: CodeCancelled, ByPeer: true}})
	if more.Text != "1 more request(s) waiting" || len(u.prompts.held) != 0 {
		t.Fatalf("t3 withdrawn: the prompt says %q, held %v", more.Text, u.prompts.held)
	}
}

// The prompt counted the offers the engine holds behind it by their
// senders' verification codes (TransferPair), which only a device not
// trusted yet has: an offer from a device trusted but not accepted without
// asking (or from a LocalSend device) was held uncounted, while a code
// told of an offer about to be asked counted it as held. The engine now
// tells every offer it holds (TransferQueued), and the prompt counts
// those.
func TestEveryHeldOfferIsCounted(t *testing.T) {
	u, _, _ := newTestUI(t)
	queued := func(id string, p Peer) TransferEvent {
		return TransferEvent{Kind: TransferQueued, ID: id, Direction: Incoming, Peer: p, State: StateWaiting}
	}
	u.ApplyTransfer(offerEvent("t1", 1))
	more := u.prompts.queue[0].more
	u.ApplyTransfer(queued("t2", Peer{ID: idAlice, Name: "Alice", Trusted: true}))
	u.ApplyTransfer(queued("t3", Peer{Name: "Pixel 8", LocalSend: true, Fingerprint: "AB12"}))
	if !more.Visible() || more.Text != "2 more request(s) waiting" {
		t.Fatalf("a trusted device's offer and a LocalSend device's held: the prompt says %q (visible %v)", more.Text, more.Visible())
	}
	for _, id := range []string{"t2", "t3"} {
		if v := u.transfers.byID[id]; v != nil {
			t.Fatalf("a held offer has a row: %q", texts(v.obj))
		}
	}
	// A code told of an offer about to be asked about holds nothing: its
	// offer comes next, with its row and its own prompt.
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "t4", Direction: Incoming, Peer: Peer{ID: idAlice, Name: "Alice"}, Pair: &PairCode{Code: "482 913"}})
	if more.Text != "2 more request(s) waiting" || u.transfers.byID["t4"] != nil {
		t.Fatalf("a code told before its offer: the prompt says %q, row %v", more.Text, u.transfers.byID["t4"] != nil)
	}
	u.ApplyTransfer(untrustedOffer("t4"))
	if more.Text != "3 more request(s) waiting" {
		t.Fatalf("t4 asked about: the prompt says %q", more.Text)
	}
}

// An offer the engine held behind the prompt on screen, whose sender
// withdrew it before it was asked about, got a row "Cancelled by Alice"
// and a notification "Transfer cancelled", though its user never saw the
// offer. It leaves neither now, only the prompt's count one lower and
// History's entry (the backend writes one for every result); so does one
// whose session ended while it was held.
func TestHeldOfferWithdrawnLeavesNoRow(t *testing.T) {
	u, be, _ := newTestUI(t)
	var told []string
	u.opt.Notify = func(title, body string) { told = append(told, title+": "+body) }
	alice := Peer{ID: idAlice, Name: "Alice", Trusted: true}
	u.ApplyTransfer(offerEvent("t1", 1))
	more := u.prompts.queue[0].more
	for _, id := range []string{"t2", "t3", "t4"} {
		u.ApplyTransfer(TransferEvent{Kind: TransferQueued, ID: id, Direction: Incoming, Peer: alice, State: StateWaiting})
	}
	told = nil
	ended := func(id string, r *Result) {
		t.Helper()
		be.history = append(be.history, HistoryEntry{ID: id, Direction: Incoming, PeerName: "Alice", PeerID: idAlice, State: r.State, Code: r.Code, ByPeer: r.ByPeer})
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Direction: Incoming, State: r.State, Peer: alice, Result: r})
	}
	ended("t2", &Result{State: StateCancelled, Code: CodeCancelled, ByPeer: true})
	if v := u.transfers.byID["t2"]; v != nil {
		t.Fatalf("a held offer withdrawn has a row: %q", texts(v.obj))
	}
	if len(told) != 0 {
		t.Fatalf("a held offer withdrawn: told %q", told)
	}
	if more.Text != "2 more request(s) waiting" {
		t.Fatalf("one of three held withdrawn: the prompt says %q", more.Text)
	}
	if got := u.history.entries; len(got) != 1 || got[0].ID != "t2" {
		t.Fatalf("History lists %+v, want the withdrawn offer", got)
	}
	// Its sender's network went away while it was held.
	ended("t3", &Result{State: StateFailed, Code: CodeConnectionLost, Err: "The connection to Alice was lost."})
	if v := u.transfers.byID["t3"]; v != nil || len(told) != 0 || more.Text != "1 more request(s) waiting" {
		t.Fatalf("a held offer whose session ended: row %v, told %q, the prompt says %q", v != nil, told, more.Text)
	}
	// One asked about, then withdrawn, ends as before: a row says so.
	u.ApplyTransfer(untrustedOffer("t4"))
	ended("t4", &Result{State: StateCancelled, Code: CodeCancelled, ByPeer: true})
	if u.transfers.byID["t4"] == nil {
		t.Fatal("an offer asked about and withdrawn has no row")
	}
}
