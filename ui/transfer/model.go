// Package transfer is the state of the app's transfers as a pure model: one
// state machine per delivery, driven only by engine events and the user's
// actions, with no Fyne in it. Widgets render what it says; history is
// written from it. A delivery is keyed by its delivery ID (chosen by the
// sender, the same on both sides), never by its files, so the same files sent
// twice are two deliveries, two rows and two history entries.
package transfer

import (
	"time"
)

// Phase is where a delivery stands as the user sees it.
type Phase string

// Phases of a delivery.
const (
	Offered      Phase = "offered"      // incoming, waiting for this user's answer
	Waiting      Phase = "waiting"      // outgoing, waiting for the receiver's answer
	Connecting   Phase = "connecting"   // not connected yet (never "reconnecting")
	Sending      Phase = "sending"      // bytes are moving (either direction)
	Paused       Phase = "paused"       // stopped for now; By says who
	Reconnecting Phase = "reconnecting" // it was connected, lost the link, and retries
	Moved        Phase = "moved"        // the network path changed and it goes on
	Resumed      Phase = "resumed"      // the user resumed it; running again
	// Interrupted: receiving, the sender went away; what arrived is kept
	// and the same delivery goes on when the sender is back.
	Interrupted Phase = "interrupted"
	Done        Phase = "done"
	Failed      Phase = "failed" // Reason says why
	Cancelled   Phase = "cancelled"
	Declined    Phase = "declined"
	Expired     Phase = "expired" // nobody answered the offer in time
)

// Final reports whether nothing follows p but a new delivery.
func (p Phase) Final() bool {
	switch p {
	case Done, Failed, Cancelled, Declined, Expired:
		return true
	}
	return false
}

// Running reports whether the delivery is under way: its row offers Pause
// (sending side) and Cancel.
func (p Phase) Running() bool {
	switch p {
	case Connecting, Sending, Reconnecting, Moved, Resumed:
		return true
	}
	return false
}

// Over reports whether the delivery is over for the user: in a final
// phase, and not a send that waits for its device to come back and then
// goes on by itself (Rejoin), which its user may still cancel.
func (d *Delivery) Over() bool { return d.Phase.Final() && !d.Rejoin }

// Actor says who did something to a delivery.
type Actor string

// Actors.
const (
	Nobody Actor = ""
	You    Actor = "you"
	Peer   Actor = "peer"
)

// Reason says why a delivery failed, with the engine's code values.
type Reason string

// Reasons a delivery fails.
const (
	ReasonNone           Reason = ""
	ReasonConnectionLost Reason = "connection_lost" // the other device went away
	ReasonUnreachable    Reason = "unreachable"     // it never answered at all
	ReasonNoSpace        Reason = "no_space"
	ReasonUntrusted      Reason = "untrusted"
	ReasonVerifyFailed   Reason = "verify_failed"
	ReasonIO             Reason = "io" // files could not be read or written here
	ReasonProtocol       Reason = "protocol"
	ReasonBusy           Reason = "busy" // declined: too many offers were waiting
	// ReasonNotPaired: pairing ended without trust (a user said the codes
	// differ, or did not confirm them); never the receiver's trust policy.
	ReasonNotPaired Reason = "not_paired"
	// ReasonPairedBefore: pairing again with a device paired before ended
	// without a confirmed code; the devices stay paired as they were.
	ReasonPairedBefore Reason = "paired_before"
	// ReasonClosedHere: this device's Ferry was closed (or killed) before
	// the send finished; the app shows it again at its next start.
	ReasonClosedHere Reason = "closed_here"
)

// Route is the way a delivery's session goes, with the engine's values.
type Route string

// Routes.
const (
	RouteUnknown  Route = ""
	RouteLAN      Route = "lan"      // to an address of the device's, as on the LAN
	RouteInternet Route = "internet" // through the NATs, on a path found through the relay
	RouteRelayed  Route = "relayed"  // through the relay
)

// Direction of a delivery.
type Direction int

// Directions.
const (
	Outgoing Direction = iota
	Incoming
)

// EventKind names what an Event reports.
type EventKind int

// Event kinds, mirroring the engine's transfer events, and the user's actions.
const (
	// EvOffer: a delivery was offered (Files, Text, Total, Peer set).
	EvOffer EventKind = iota
	// EvState: the engine's state changed (State set: "waiting",
	// "connecting", "active", "verifying", "paused", "reconnecting", ...).
	EvState
	// EvProgress: Bytes of Total have arrived in this attempt.
	EvProgress
	// EvFile: one file ended (File set).
	EvFile
	// EvPath: the network path changed under the delivery and it goes on.
	EvPath
	// EvResult: the delivery ended or stopped (State, Code, ByPeer, Err).
	EvResult
	// ActPause, ActResume, ActCancel: the user pressed the row's button.
	ActPause
	ActResume
	ActCancel
	// EvTransport: a session carries the delivery now, by Route (and
	// Relay).
	EvTransport
	// EvFiles: several files ended: Verified of them verified in place,
	// Failed with an error (what many EvFile events add up to).
	EvFiles
	// ActDiscard: the user discarded what an interrupted receive kept
	// (its partial files): it will not resume.
	ActDiscard
)

// File is one file of a delivery.
type File struct {
	Path string
	Size int64
	// Refused says why the receiver will not take it ("" for the others).
	Refused string
}

// FileEnd is how one file ended.
type FileEnd struct {
	Path     string
	Size     int64
	Verified bool
	Err      string
}

// Event is one input to the model: an engine event or a user action.
type Event struct {
	Kind      EventKind
	Delivery  string // the delivery ID: the model's only key
	Direction Direction
	Peer      string // the other device's name as the user knows it
	Files     []File // EvOffer: the first files (a large offer is not listed whole)
	Count     int    // EvOffer, EvProgress: how many files in all (0: len(Files))
	Text      bool   // EvOffer, EvResult: the delivery carries a text
	Total     int64  // EvOffer, EvProgress
	State     string // EvState, EvResult: the engine's state value
	Bytes     int64  // EvProgress: bytes of this delivery in place so far
	// Verified: EvResult: files verified in place, as the engine counts
	// them (a file reported before a restart of Ferry has no EvFile here);
	// EvFiles: of the files that ended.
	Verified int
	// Failed: EvFiles: of the files that ended, those with an error.
	Failed int
	// Refused: EvResult: offered files the receiver refused by name, all
	// of them (an offer lists only its first files).
	Refused int
	File    *FileEnd
	Code    string // EvResult: the engine's code
	ByPeer  bool   // EvResult
	// Rejoin: EvResult: the app sends the rest by itself, once, when
	// discovery sees the other device again, if this result says it went
	// away mid-send (the app's rejoin, app/rejoin.go).
	Rejoin bool
	// NotStarted: EvResult: the delivery ended before it tried to reach
	// the other device (its own items): not unreachable.
	NotStarted bool
	// Err: EvResult: the engine's own text, for Details; EvState
	// "reconnecting": why the attempt before failed (counted: Tries).
	Err string
	// Route and Relay: EvTransport: the way the session goes, and the
	// relay's "host:port" when it went through one.
	Route Route
	Relay string
	Time  time.Time
}

// Delivery is the state of one delivery.
type Delivery struct {
	ID        string
	Direction Direction
	Peer      string
	Phase     Phase
	// By says who paused, cancelled or declined it.
	By Actor
	// Reason says why it failed; Detail is the engine's own text.
	Reason Reason
	Detail string
	// Moved is set once the network path changed and the delivery went on;
	// the row says so until it ends.
	Moved bool
	// Route is the way the delivery goes now (RouteUnknown until a
	// session carries it); Relay is the relay's "host:port" of a route
	// through one.
	Route Route
	Relay string
	// LeftLAN is set when a delivery that went on the LAN goes on beyond
	// it (a device left the network): the row says so while it runs there.
	LeftLAN bool
	// Rejoin: it failed because the other device went away (or this
	// device's Ferry was closed: ReasonClosedHere) and the app sends the
	// rest when that device is back (unless the user cancels).
	Rejoin bool
	// NotStarted: it failed before it tried to reach the other device.
	NotStarted bool
	Files      []File
	// Count is how many files the delivery has (Files may list only the
	// first ones).
	Count     int
	Text      bool
	Total     int64
	Refused   int // files the receiver would not take
	Verified  int // files verified in place
	failedOut int // files that ended with an error
	// Tries counts the attempts that failed while the delivery keeps
	// trying to reach the other device (a "reconnecting" state with the
	// engine's reason while it connects or reconnects, not the one that
	// says a connection was lost); cleared once it connects.
	Tries int
	// Bytes is how much of Total is in place, each byte counted once across
	// pauses, reconnects and resumes.
	Bytes int64
	// cancelAsked: the user pressed Cancel and the engine has not said
	// how it ended yet; its result still counts (it may have failed or
	// finished first).
	cancelAsked bool
	// connected: a byte moved or the other side answered at least once, so
	// a lost link is a reconnect, not a first connection.
	connected bool
	// goesOn: interrupted by a state, not a result: its transfer still
	// runs here (a browser's page that stopped sending), so it can be
	// cancelled.
	goesOn bool
	// discarded: cancelled by discarding what it kept (ActDiscard).
	discarded bool
	Started   time.Time
	Ended     time.Time
}

// Model holds every delivery the app has seen this run.
type Model struct {
	byID  map[string]*Delivery
	order []string // first seen first
}

// New returns an empty model.
func New() *Model { return &Model{byID: map[string]*Delivery{}} }

// Get returns the delivery with id, or nil.
func (m *Model) Get(id string) *Delivery { return m.byID[id] }

// SetPeer renames the other device of delivery id (the user renamed it).
func (m *Model) SetPeer(id, name string) {
	if d := m.byID[id]; d != nil && name != "" {
		d.Peer = name
	}
}

// Deliveries returns every delivery, newest first.
func (m *Model) Deliveries() []*Delivery {
	out := make([]*Delivery, 0, len(m.order))
	for i := len(m.order) - 1; i >= 0; i-- {
		out = append(out, m.byID[m.order[i]])
	}
	return out
}

// Apply feeds one event to the model and returns the delivery it changed
// (nil for an event without a delivery ID). An event for a delivery in a
// final phase changes nothing but a user's Resume (which the engine answers
// with the same delivery running again).
func (m *Model) Apply(ev Event) *Delivery {
	if ev.Delivery == "" {
		return nil
	}
	d := m.byID[ev.Delivery]
	if d == nil {
		d = &Delivery{ID: ev.Delivery, Direction: ev.Direction, Peer: ev.Peer, Started: ev.Time}
		if ev.Direction == Incoming {
			d.Phase = Offered
		} else {
			d.Phase = Connecting
		}
		m.byID[ev.Delivery] = d
		m.order = append(m.order, ev.Delivery)
	}
	if ev.Peer != "" {
		d.Peer = ev.Peer
	}
	if d.Phase.Final() && !d.reopens(ev) && !(ev.Kind == EvResult && d.cancelAsked) && !(ev.Kind == ActCancel && d.Rejoin) {
		return d
	}
	switch ev.Kind {
	case EvOffer:
		if d.Phase.Final() {
			// The sender sends the same delivery again (its Retry): the
			// same row goes on, with the bytes the receiver kept.
			d.restart(Offered)
			if d.Direction == Outgoing {
				d.Phase = Connecting
			}
		}
		d.Files = ev.Files
		d.Count = max(ev.Count, len(ev.Files))
		d.Text = ev.Text
		d.Total = ev.Total
		d.Refused = 0
		for _, f := range ev.Files {
			if f.Refused != "" {
				d.Refused++
			}
		}
	case EvState:
		if d.Phase.Final() {
			d.restart(Connecting)
		}
		d.state(ev.State, ev.Err)
	case EvProgress:
		d.connected = true
		if ev.Total > 0 {
			d.Total = ev.Total
		}
		if ev.Count > 0 {
			d.Count = ev.Count
		}
		// An attempt after a reconnect or resume starts from what the
		// receiver kept: progress never counts a byte twice.
		d.Bytes = min(max(d.Bytes, ev.Bytes), max(d.Total, ev.Bytes))
		switch {
		case d.Phase == Interrupted && d.goesOn:
			// Its transfer's progress ticks go on while nothing moves;
			// the engine's "active" says when it runs again.
		case d.Phase != Moved && d.Phase != Resumed || ev.Bytes > 0:
			d.Phase = Sending
		}
	case EvFile:
		if ev.File == nil {
			break
		}
		if ev.File.Verified {
			d.Verified++
		} else if ev.File.Err != "" {
			d.failedOut++
		}
	case EvFiles:
		d.Verified += ev.Verified
		d.failedOut += ev.Failed
	case EvPath:
		d.Moved = true
		d.Phase = Moved
	case EvTransport:
		d.route(ev)
	case EvResult:
		d.result(ev)
	case ActPause:
		if d.Phase.Running() {
			d.Phase, d.By = Paused, You
		}
	case ActResume:
		if d.Phase == Paused || d.Phase == Cancelled || d.Phase == Failed {
			d.restart(Resumed)
		}
	case ActDiscard:
		if d.Phase == Interrupted && !d.goesOn {
			// Its partial files are gone: a send of it again starts over.
			d.Phase, d.By, d.discarded, d.Bytes = Cancelled, You, true, 0
			d.Ended = ev.Time
		}
	case ActCancel:
		if d.Rejoin {
			// Nothing runs: Cancel drops the send that waits for the
			// device to come back.
			d.Phase, d.By, d.Reason, d.Rejoin = Cancelled, You, ReasonNone, false
			d.Ended = ev.Time
			break
		}
		if !d.Phase.Final() {
			d.Phase, d.By = Cancelled, You
			d.Ended = ev.Time
			d.cancelAsked = true
		}
	}
	return d
}

// route follows the session's way: a delivery that went on the LAN and
// goes on beyond it left the network, and its row says so.
func (d *Delivery) route(ev Event) {
	if ev.Route == RouteUnknown {
		return
	}
	beyond := ev.Route != RouteLAN
	if beyond && d.Route == RouteLAN && !d.LeftLAN {
		d.Moved, d.LeftLAN = true, true
		if d.Phase.Running() {
			d.Phase = Moved
		}
	}
	if !beyond {
		d.LeftLAN = false // back on a network with the device
	}
	d.Route, d.Relay = ev.Route, ev.Relay
}

// reopens reports whether ev, arriving for a delivery that ended, starts it
// again. The engine reuses a delivery's ID only when the same delivery goes
// on (Retry of one that did not finish, on both sides), so a new offer or a
// running state is that; the user's Resume is too. A late progress or file
// event is not.
func (d *Delivery) reopens(ev Event) bool {
	if d.Phase == Done {
		return false // a finished delivery sent again is a new delivery
	}
	switch ev.Kind {
	case ActResume, EvOffer:
		return true
	case EvState:
		switch ev.State {
		case "connecting", "waiting", "active":
			return true
		}
	}
	return false
}

// restart puts an ended or paused delivery back into phase p, keeping its
// files and the bytes already in place.
func (d *Delivery) restart(p Phase) {
	d.Phase, d.By, d.Reason, d.Detail = p, Nobody, ReasonNone, ""
	d.cancelAsked, d.Rejoin, d.NotStarted, d.discarded = false, false, false, false
	d.Ended = time.Time{}
	d.Tries = 0 // a Retry tries afresh
}

func (d *Delivery) state(s, err string) {
	switch s {
	case "waiting":
		if d.Direction == Outgoing {
			d.Phase = Waiting
		}
		d.connected = true
		d.Tries = 0
	case "connecting":
		if !d.connected {
			d.Phase = Connecting
		}
	case "active", "verifying":
		d.connected = true
		d.Tries = 0
		if d.Phase != Moved && d.Phase != Resumed {
			d.Phase = Sending
		}
	case "paused":
		d.Phase = Paused
		if d.By == Nobody {
			d.By = Peer
		}
	case "interrupted":
		if d.Direction == Incoming {
			d.Phase, d.goesOn = Interrupted, true
			break
		}
		fallthrough
	case "reconnecting":
		if err != "" && (d.Phase == Connecting || d.Phase == Reconnecting) {
			// A try that failed; the first word after a lost connection
			// is that loss, not a try.
			d.Tries++
		}
		// A send that never reached the other device is still connecting:
		// "Reconnecting" would claim a connection it never had.
		if d.connected {
			d.Phase = Reconnecting
		} else {
			d.Phase = Connecting
		}
	}
}

func (d *Delivery) result(ev Event) {
	d.cancelAsked, d.Rejoin, d.goesOn = false, false, false
	d.Text = d.Text || ev.Text
	prev := d.Phase
	d.Ended = ev.Time
	d.Detail = ev.Err
	by := You
	if ev.ByPeer {
		by = Peer
	}
	state := ev.State
	if state == "failed" {
		// A stop reason carried by a failed state reads as that stop.
		switch ev.Code {
		case "cancelled", "declined", "paused":
			state = ev.Code
		case "expired":
			state = "declined"
		}
	}
	switch state {
	case "done":
		d.Phase = Done
		d.Verified = max(d.Verified, ev.Verified)
		d.Refused = max(d.Refused, ev.Refused)
		if d.Total == 0 {
			// Neither an offer nor a progress event said the size (a small
			// file received unasked, between two progress ticks): the
			// result's bytes are the whole.
			d.Total = ev.Bytes
		}
		d.Bytes = d.Total
	case "declined":
		d.Phase, d.By = Declined, by
		switch {
		case ev.Code == "expired":
			d.Phase, d.By = Expired, Nobody
		case ev.Code == "untrusted", ev.Code == "busy", ev.Code == "no_space":
			// The receiver's policy declined it, not a person.
			d.By, d.Reason = Nobody, Reason(ev.Code)
		case d.Direction == Incoming && !ev.ByPeer && ev.Code != "declined":
			// Declined here without the user being asked: the engine's
			// policy did it; Details has its own words.
			d.By = Nobody
		}
	case "cancelled":
		d.Phase, d.By = Cancelled, by
	case "paused", "interrupted":
		d.state(state, "")
		d.goesOn = false // a result: nothing runs here any more
	case "failed":
		d.Phase = Failed
		d.Reason = Reason(ev.Code)
		d.By = Nobody
		if ev.ByPeer {
			d.By = Peer
		}
		// A failure while the delivery was trying to reach the other device
		// again is about the link, whatever the last dial said ("connection
		// refused" is no local read error): a device reached before went
		// away, one never reached was unreachable.
		// One that never started (its own items) tried nothing.
		link := !ev.NotStarted && (prev == Reconnecting || prev == Connecting || ev.Code == string(ReasonConnectionLost))
		if link && (d.Reason == ReasonIO || d.Reason == ReasonNone || d.Reason == ReasonConnectionLost) {
			if d.connected {
				d.Reason = ReasonConnectionLost
			} else {
				d.Reason = ReasonUnreachable
			}
		}
		d.Rejoin = ev.Rejoin && d.Direction == Outgoing && (d.Reason == ReasonConnectionLost || d.Reason == ReasonClosedHere)
		d.NotStarted = ev.NotStarted
	}
}
