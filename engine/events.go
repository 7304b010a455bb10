package engine

import (
	"sync"
	"time"
)

// EventKind names what an Event reports.
type EventKind string

// The kinds of event the engine publishes.
const (
	// EventOffer: an offer. Receiving, in StateWaiting: a peer offers
	// files (and maybe a text) to us; answer with Engine.Decide. Receiving,
	// in StateActive: what arrives without a prompt (a browser's file
	// through a receive link), Expires unset; no answer is needed.
	// Receiving, in StateFailed or StateDeclined: an offer this device
	// refused before asking (its folder cannot be written, no room, files
	// too large for it, trusted devices only), right before its
	// EventResult, so that its row and history name it. Sending:
	// what this side offers, published when the transfer starts (Dest,
	// FreeBytes and Expires are unset there, and no answer is needed).
	EventOffer EventKind = "offer"
	// EventQueued: receiving, an offer waits for a place among the
	// prompts the engine asks about at once (Options.MaxPrompts are
	// waiting for an answer): it will be asked about (its EventOffer, in
	// StateWaiting, follows once it has a place), but nothing is to be
	// answered yet. Published once, as it queues; it may end before it is
	// asked about (its EventResult: its sender withdrew it, the session
	// ended, or a newcomer took its place in the queue).
	EventQueued EventKind = "queued"
	// EventState: a transfer changed state (waiting, sending, verifying, done, failed...).
	EventState EventKind = "state"
	// EventProgress: bytes moved; coalesced to a few per second per transfer.
	EventProgress EventKind = "progress"
	// EventFile: one file finished (verified or failed); once per file
	// and outcome over a transfer's sessions in one engine (fileReports).
	EventFile EventKind = "file"
	// EventMetrics: a snapshot of the connection's transport metrics.
	EventMetrics EventKind = "metrics"
	// EventResult: the transfer ended; no further events for it follow.
	EventResult EventKind = "result"
	// EventTransport: the transport carrying the transfer was chosen (or changed), with the reason.
	EventTransport EventKind = "transport"
	// EventListener: a transport could not listen (Listener says which and
	// why); receiving goes on over the others. Also the relay this device
	// serves through (ServeAnywhere): Listener.Transport "relay", Addr the
	// relay, Err why it could not be reached for ReachGrace, or empty once
	// it answers again. It belongs to no transfer.
	EventListener EventKind = "listener"
	// EventPair: the verification code of a transfer with a device this one
	// does not trust yet (Pair), or of a pairing request (Pair.Only). Both
	// screens show the same code; the user says whether they match with
	// Engine.ConfirmPair, which trusts the device, or ends the transfer.
	EventPair EventKind = "pair"
	// EventKeyChanged: a device known here presented another key (KeyChange).
	// The connection was refused: the user should be warned clearly.
	EventKeyChanged EventKind = "key_changed"
)

// Direction says whether we send or receive a transfer.
type Direction string

// Directions.
const (
	Sending   Direction = "send"
	Receiving Direction = "receive"
)

// OfferInfo is what the receiving user decides on.
type OfferInfo struct {
	// Count is the number of files offered. Files lists the first ones
	// (up to 1000) and every refused one: a large offer is summarised by
	// Folders, not listed whole.
	Count      int          `json:"count"`
	Files      []FileInfo   `json:"files"`
	Folders    []FolderInfo `json:"folders,omitempty"`
	TotalBytes int64        `json:"total_bytes"`
	// DiskBytes is the disk the offer takes on this device: its files in
	// whole 4 KiB blocks and its empty folders, which FreeBytes must hold
	// (0 where not measured, as on the sending side).
	DiskBytes int64     `json:"disk_bytes,omitempty"`
	Dest      string    `json:"dest"`
	FreeBytes int64     `json:"free_bytes"` // -1 when unknown
	Expires   time.Time `json:"expires"`
	// PairCode is the session's verification code when the sender is not
	// trusted yet (see EventPair): shown with the offer, the user may
	// confirm it (Engine.ConfirmPair) to trust the sender.
	PairCode string `json:"pair_code,omitempty"`
	// Text is the offer's text item (a message, a link, a clipboard), ""
	// when it has none: UTF-8, at most wire.MaxTextLen bytes, from the peer:
	// show it with safetext.Text. Accepting the offer accepts it; it is
	// never written to disk by the engine.
	Text string `json:"text,omitempty"`
	// Skipped says, on the sending side, what the given folders hold that
	// the transfer does not carry (symbolic links, empty folders, devices);
	// nil when nothing was skipped.
	Skipped *SkippedInfo `json:"skipped,omitempty"`
	// Renamed lists, on the sending side, the given paths offered under
	// another name (another given path has theirs); nil when none.
	Renamed []RenamedPath `json:"renamed,omitempty"`
}

// Progress is a coalesced progress report.
type Progress struct {
	Bytes      int64   `json:"bytes"` // verified payload bytes so far
	TotalBytes int64   `json:"total_bytes"`
	Files      int     `json:"files_done"`
	TotalFiles int     `json:"total_files"`
	Rate       float64 `json:"rate"` // bytes per second, smoothed
	ETA        float64 `json:"eta_seconds"`
}

// TransportInfo says which transport carries a transfer and why.
type TransportInfo struct {
	Name   string `json:"name"` // "quic" or "tcp"
	Reason string `json:"reason"`
	// Flows is set when the transport spread the batch over more
	// congestion-controlled flows (QUIC or TCP connections) because the
	// path showed random loss: how many it grows to.
	Flows int `json:"flows,omitempty"`
	// Route is the way the session goes: RouteLAN (to an address of the
	// device's, as on the LAN), RouteInternet (through the NATs, a direct
	// path found through the relay) or RouteRelayed (through Relay's TURN).
	Route string `json:"route,omitempty"`
	// Relay is the relay's "host:port" of a session that went through one.
	Relay string `json:"relay,omitempty"`
}

// Routes of a session (TransportInfo.Route).
const (
	RouteLAN      = "lan"
	RouteInternet = "internet"
	RouteRelayed  = "relayed"
)

// Event is one thing the engine reports. Exactly the field matching Kind is set
// (State is set on every event).
type Event struct {
	Time       time.Time `json:"time"`
	Kind       EventKind `json:"kind"`
	TransferID string    `json:"transfer"`
	// Delivery is the ID of the delivery the transfer is (Transfer.Delivery):
	// the same on both sides, new for every send, kept across reconnects,
	// pauses and Retry. Empty for a pairing without files.
	Delivery  string          `json:"delivery,omitempty"`
	Direction Direction       `json:"direction"`
	Peer      PeerInfo        `json:"peer"`
	State     State           `json:"state"`
	Offer     *OfferInfo      `json:"offer,omitempty"`
	Progress  *Progress       `json:"progress,omitempty"`
	File      *FileResult     `json:"file,omitempty"`
	Metrics   *Metrics        `json:"metrics,omitempty"`
	Result    *Result         `json:"result,omitempty"`
	Transport *TransportInfo  `json:"transport,omitempty"`
	Listener  *ListenerStatus `json:"listener,omitempty"`
	Pair      *PairInfo       `json:"pair,omitempty"`
	KeyChange *KeyChange      `json:"key_change,omitempty"`
	Path      *PathInfo       `json:"path,omitempty"`
	Link      *LinkInfo       `json:"link,omitempty"`    // EventLink (links.go)
	PIN       *PINRefusals    `json:"pin,omitempty"`     // EventLocalSendPIN (localsend_pin.go)
	Refused   *Refusals       `json:"refused,omitempty"` // EventRefused (refused.go)
}

// PairInfo is the verification code of a session with a device.
type PairInfo struct {
	// Code is six digits, "123 456"; the other device shows the same one
	// unless someone is in the middle.
	Code string `json:"code"`
	// Only: the peer asks to pair, and offers no files.
	Only bool `json:"only,omitempty"`
	// Shown, on the sending side, says whether the receiver showed this
	// code to its user: CodeShownPending until it decided (one that asks
	// shows the code with its question), then another EventPair with the
	// same code says CodeShownYes, CodeShownNo (it accepted without asking:
	// there is nothing to compare, and ConfirmPair refuses) or
	// CodeShownUnknown (an older Ferry, which does not say). A receiver
	// that says where the offer stands on its screen (wire.FeaturePrompt)
	// is CodeShownWaiting until it says, CodeShownQueued while the offer
	// waits behind another device's, then CodeShownPending once its user
	// is shown the offer: a code is to be compared only from then on.
	Shown CodeShown `json:"shown,omitempty"`
	// Ahead, with CodeShownQueued, is how many offers wait for the
	// receiver's user before this one when the receiving Ferry itself
	// queues it (it shows as many prompts at once as its options allow:
	// engine.Options.MaxPrompts), published again as it moves up that
	// queue; 0 when its client keeps it behind the prompt on screen.
	// Either way its screen does not show the code.
	Ahead int `json:"ahead,omitempty"`
}

// CodeShown is whether the other device showed a session's verification
// code to its user (PairInfo.Shown).
type CodeShown string

// What PairInfo.Shown says.
const (
	CodeShownPending CodeShown = ""        // not said yet: the receiver is deciding
	CodeShownYes     CodeShown = "shown"   // the receiver asked its user, showing the code
	CodeShownNo      CodeShown = "unshown" // the receiver accepted without showing it
	CodeShownUnknown CodeShown = "unknown" // the receiver runs a Ferry that does not say
	// CodeShownWaiting: the receiver says when its user is shown the offer,
	// and has not yet: its screen does not show the code.
	CodeShownWaiting CodeShown = "waiting"
	// CodeShownQueued: the receiver keeps the offer behind another
	// device's, whose prompt its user answers first: its screen does not
	// show the code yet.
	CodeShownQueued CodeShown = "queued"
)

// KeyChange describes a known device that presented another key.
type KeyChange struct {
	// Known is the device as this one knows it.
	Known PeerInfo `json:"known"`
	// PresentedID is the key (device ID) presented instead.
	PresentedID string `json:"presented_id"`
	// Warning is a sentence for the user: what happened and what to do.
	Warning string `json:"warning"`
}

// Bus fans events out to subscribers without ever blocking the publisher: a
// subscriber whose buffer is full loses progress and metrics events (they are
// superseded by the next one anyway); other kinds wait in an overflow list,
// bounded: file results beyond maxOverflow are lost, offers, states and
// results only beyond twice that.
type Bus struct {
	mu   sync.Mutex // guards the fields below
	subs map[*subscriber]struct{}
}

type subscriber struct {
	ch       chan Event
	mu       sync.Mutex // guards the fields below
	overflow []Event
	closed   bool
	wake     chan struct{}
	done     chan struct{}
}

// maxOverflow bounds what a stalled subscriber can make us keep: file
// events up to maxOverflow, other kinds up to twice that.
const maxOverflow = 4096

// Subscribe returns a channel of events and a function that ends the
// subscription (and closes the channel).
func (b *Bus) Subscribe(buffer int) (<-chan Event, func()) {
	if buffer < 1 {
		buffer = 64
	}
	s := &subscriber{ch: make(chan Event, buffer), wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.mu.Lock()
	if b.subs == nil {
		b.subs = make(map[*subscriber]struct{})
	}
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	go s.drain()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, s)
			b.mu.Unlock()
			s.mu.Lock()
			s.closed = true
			s.mu.Unlock()
			close(s.done)
		})
	}
}

// drain moves overflowed events into the channel as the subscriber catches up.
func (s *subscriber) drain() {
	defer close(s.ch)
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		for {
			s.mu.Lock()
			if len(s.overflow) == 0 {
				s.mu.Unlock()
				break
			}
			ev := s.overflow[0]
			s.mu.Unlock()
			select {
			case s.ch <- ev:
			case <-s.done:
				return
			}
			s.mu.Lock()
			s.overflow = s.overflow[1:]
			s.mu.Unlock()
		}
	}
}

// Publish delivers ev to every subscriber without blocking.
func (b *Bus) Publish(ev Event) { b.publishAfter(nil, ev) }

// publishAfter is Publish, with first (when set) run before ev is
// delivered, under the lock every Publish takes.
func (b *Bus) publishAfter(first func(), ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if first != nil {
		first()
	}
	for s := range b.subs {
		s.deliver(ev)
	}
}

func (s *subscriber) deliver(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if len(s.overflow) == 0 {
		select {
		case s.ch <- ev:
			return
		default:
		}
	}
	if ev.Kind == EventProgress || ev.Kind == EventMetrics {
		return // superseded by the next one; never worth stalling for
	}
	// Beyond the bound a subscriber loses file events (a lagging printer's
	// lines) but not the rarer kinds: a lost result left ferry-cli's
	// receive --once and send waiting for ever after the last of 10^5
	// files (docs/benchmarks/trees.md). Those have a bound of their own.
	if n := len(s.overflow); n >= 2*maxOverflow || (n >= maxOverflow && ev.Kind == EventFile) {
		return
	}
	s.overflow = append(s.overflow, ev)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
