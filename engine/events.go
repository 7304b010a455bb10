package engine

import (
	"sync"
	"time"

	"github.com/ferrydrop/ferry/internal/stallmeter"
)

// EventKind names what an Event reports.
type EventKind string

// The kinds of event the engine publishes.
const (
	// EventOffer: an offer. Receiving, in StateWaiting: a peer offers
	// files (and maybe a text) to us; answer with Engine.Decide. Receiving,
	// in StateActive: what arrives without a prompt (a browser's file
	// through a receive link), Expires unset; no answer is needed. Sending:
	// what this side offers, published when the transfer starts (Dest,
	// FreeBytes and Expires are unset there, and no answer is needed).
	EventOffer EventKind = "offer"
	// EventState: a transfer changed state (waiting, sending, verifying, done, failed...).
	EventState EventKind = "state"
	// EventProgress: bytes moved; coalesced to a few per second per transfer.
	EventProgress EventKind = "progress"
	// EventFile: one file finished (verified or failed).
	EventFile EventKind = "file"
	// EventMetrics: a snapshot of the connection's transport metrics.
	EventMetrics EventKind = "metrics"
	// EventResult: the transfer ended; no further events for it follow.
	EventResult EventKind = "result"
	// EventTransport: the transport carrying the transfer was chosen (or changed), with the reason.
	EventTransport EventKind = "transport"
	// EventListener: a transport could not listen (Listener says which and
	// why); receiving goes on over the others. It belongs to no transfer.
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

// State is the life-cycle state of a transfer.
type State string

// Transfer states, in the order a transfer usually passes through them.
const (
	StateConnecting State = "connecting"
	StateWaiting    State = "waiting" // offer sent, waiting for the receiver's decision
	StateActive     State = "active"  // data flowing
	StateVerifying  State = "verifying"
	StateDone       State = "done"
	StateFailed     State = "failed"
	StateDeclined   State = "declined"
	StateCancelled  State = "cancelled"
	StatePaused     State = "paused" // sending paused by the user (or, receiving, by the sender); Resume continues
	// StateInterrupted: a receiving session lost its sender; the data that
	// arrived is kept, and the transfer continues (same ID) when the sender
	// comes back.
	StateInterrupted State = "interrupted"
	StateRetrying    State = "reconnecting" // the connection dropped; retrying with back-off
)

// Final reports whether no further state follows s.
func (s State) Final() bool {
	switch s {
	case StateDone, StateFailed, StateDeclined, StateCancelled:
		return true
	}
	return false
}

// PeerInfo describes the device at the other end of a transfer.
type PeerInfo struct {
	Name    string `json:"name"`
	ID      string `json:"id"`      // its peer ID (package peer): a Ferry device ID (base32), or "kind:key"
	Trusted bool   `json:"trusted"` // the user trusts it: paired, or marked trusted
	Addr    string `json:"addr,omitempty"`
	// Protocol is "" for Ferry, ProtocolLocalSend for a LocalSend device;
	// Model, DeviceType and Fingerprint are what a LocalSend device said.
	Protocol    string `json:"protocol,omitempty"`
	Model       string `json:"model,omitempty"`
	DeviceType  string `json:"device_type,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Unverified says the device proved no identity (a LocalSend sender
	// without a client certificate): its name and fingerprint are claims.
	Unverified bool `json:"unverified,omitempty"`
}

// FileInfo is one entry of an offer as shown to the user.
type FileInfo struct {
	// Index is the file's place in the offer (what Decision.Files lists).
	Index int    `json:"index"`
	Path  string `json:"path"` // relative, slash-separated; show it with safetext.Name
	Size  int64  `json:"size"`
	// Refused, when set, says why this file will not be received whatever
	// the answer (a name that cannot be stored safely); the others can be.
	Refused string `json:"refused,omitempty"`
}

// OfferInfo is what the receiving user decides on.
type OfferInfo struct {
	// Count is the number of files offered. Files lists the first ones
	// (up to 1000) and every refused one: a large offer is summarised by
	// Folders, not listed whole.
	Count      int          `json:"count"`
	Files      []FileInfo   `json:"files"`
	Folders    []FolderInfo `json:"folders,omitempty"`
	TotalBytes int64        `json:"total_bytes"`
	Dest       string       `json:"dest"`
	FreeBytes  int64        `json:"free_bytes"` // -1 when unknown
	Expires    time.Time    `json:"expires"`
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
}

// FolderInfo summarises one top-level folder of an offer.
type FolderInfo struct {
	Path  string `json:"path"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
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

// FileResult is the outcome of one file.
type FileResult struct {
	Path     string `json:"path"`
	SavedAs  string `json:"saved_as,omitempty"` // receiver: name on disk if renamed to avoid a clash
	Size     int64  `json:"size"`
	Verified bool   `json:"verified"`
	Root     string `json:"root,omitempty"` // hex BLAKE3 Merkle root
	Err      string `json:"error,omitempty"`
}

// Result summarises a finished transfer.
type Result struct {
	// Delivery is the delivery that ended (Transfer.Delivery).
	Delivery string `json:"delivery,omitempty"`
	State    State  `json:"state"`
	Err      string `json:"error,omitempty"` // a sentence for the user
	// Code says why it ended: "" when done, else a wire error code
	// ("cancelled", "paused", "declined", "expired", "busy", "no_space",
	// "untrusted", "too_large", "verify_failed", "io", "protocol", ...) or
	// "connection_lost".
	Code string `json:"code,omitempty"`
	// ByPeer: the end came from the other device (its cancel, decline, pause).
	ByPeer bool `json:"by_peer,omitempty"`
	// Detail is the technical error behind Err, for a Details view.
	Detail string `json:"detail,omitempty"`
	// TotalBytes is the size of what was accepted (offered, when nothing was).
	TotalBytes int64    `json:"total_bytes,omitempty"`
	Files      int      `json:"files"`
	Verified   int      `json:"verified"`
	Bytes      int64    `json:"bytes"`      // payload bytes sent or received
	WireBytes  int64    `json:"wire_bytes"` // bytes on the wire (transport counters)
	Duration   float64  `json:"duration_seconds"`
	Transport  string   `json:"transport"`
	Reason     string   `json:"transport_reason,omitempty"`
	Metrics    *Metrics `json:"metrics,omitempty"`
	Resent     int64    `json:"resent_bytes,omitempty"`
	// Refused counts offered files the receiver refused by name; each has
	// its EventFile with the reason.
	Refused int `json:"refused,omitempty"`
	// PresentedID is set when another device than the expected one answered
	// (discovery is told, so it stops offering that address for that ID).
	PresentedID string `json:"presented_id,omitempty"`
	Destination string `json:"destination,omitempty"`
	// Stalls: on the receiving side, how often and how long the data
	// streams waited for their next bytes (head-of-line blocking).
	Stalls *stallmeter.Stats `json:"stalls,omitempty"`
	// Text is the transfer's text item once the receiver accepted the
	// offer (on both sides), else "". Receiving, it came from the peer:
	// show it with safetext.Text.
	Text string `json:"text,omitempty"`
}

// TransportInfo says which transport carries a transfer and why.
type TransportInfo struct {
	Name   string `json:"name"` // "quic" or "tcp"
	Reason string `json:"reason"`
	// Flows is set when the transport spread the batch over more
	// congestion-controlled flows (QUIC or TCP connections) because the
	// path showed random loss: how many it grows to.
	Flows int `json:"flows,omitempty"`
}

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
	Link      *LinkInfo       `json:"link,omitempty"` // EventLink (links.go)
}

// PairInfo is the verification code of a session with a device.
type PairInfo struct {
	// Code is six digits, "123 456"; the other device shows the same one
	// unless someone is in the middle.
	Code string `json:"code"`
	// Only: the peer asks to pair, and offers no files.
	Only bool `json:"only,omitempty"`
}

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
// superseded by the next one anyway); other kinds wait in a small overflow
// list so that offers, file results and results are never lost.
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

// maxOverflow bounds what a stalled subscriber can make us keep.
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
func (b *Bus) Publish(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
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
	if len(s.overflow) >= maxOverflow {
		return
	}
	s.overflow = append(s.overflow, ev)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
