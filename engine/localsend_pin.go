package engine

import (
	"errors"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/internal/clock"
)

// EventLocalSendPIN: offers of LocalSend devices were refused for their PIN
// (LocalSendOptions.PIN; Event.PIN counts them, Peer.Addr says from where):
// someone there may be guessing it. The first refusal from an address is
// told at once; those that follow within a minute of it are summed up in
// one event at the minute's end, and so on every minute while they go on,
// so that a guesser makes at most one event a minute per address (of at
// most maxPINWatch addresses; the rest together, Peer.Addr empty). It
// belongs to no transfer. Those still waiting for their minute's end when
// the engine closes are told as it closes. A share's PIN (prepare-download)
// refused counts as an offer's.
const EventLocalSendPIN EventKind = "localsend_pin"

// PINRefusals counts the offers of one address refused for their PIN since
// the last EventLocalSendPIN about it.
type PINRefusals struct {
	// Missing offers came without a PIN: a LocalSend app then asks its
	// user for one and offers again.
	Missing int `json:"missing,omitempty"`
	// Wrong offers came with a wrong PIN.
	Wrong int `json:"wrong,omitempty"`
	// Locked offers were refused unread: the address gave 3 wrong PINs,
	// and waits 5 minutes.
	Locked int `json:"locked,omitempty"`
	// Since is when the first of them came.
	Since time.Time `json:"since"`
}

// pinWindow is how long refusals from one address are summed up before
// they are told.
const pinWindow = time.Minute

// maxPINWatch bounds the addresses whose refusals are counted apart; those
// of the others are counted together.
const maxPINWatch = 64

// pinWatch coalesces the PIN refusals of the LocalSend server into
// EventLocalSendPIN events.
type pinWatch struct {
	e *Engine

	mu     sync.Mutex // guards the fields below
	addrs  map[netip.Addr]*pinTally
	closed bool
}

// pinTally is one address's refusals not told yet, since its last event
// (at start), and the timer that ends its minute.
type pinTally struct {
	n     PINRefusals
	start time.Time
	timer clock.Timer
	gen   int // which timer is this minute's: an older one that fires does nothing
}

// refused counts a refusal (localsend.ServerConfig.OnPIN).
func (w *pinWatch) refused(addr netip.Addr, err error) {
	now := w.e.now()
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	if w.addrs == nil {
		w.addrs = map[netip.Addr]*pinTally{}
	}
	t := w.addrs[addr]
	if t == nil && len(w.addrs) >= maxPINWatch {
		w.forgetQuietLocked(now)
		if len(w.addrs) >= maxPINWatch {
			addr = netip.Addr{} // the others, together
			t = w.addrs[addr]
		}
	}
	if t != nil && (t.n != PINRefusals{} || now.Sub(t.start) < pinWindow) {
		count(&t.n, err, now) // told at the minute's end
		w.mu.Unlock()
		return
	}
	// The first in a minute: told at once, and a minute begins.
	if t == nil {
		t = &pinTally{}
		w.addrs[addr] = t
	}
	var n PINRefusals
	count(&n, err, now)
	w.startLocked(addr, t, now)
	w.mu.Unlock()
	w.publish(addr, n)
}

// startLocked begins addr's minute at now.
func (w *pinWatch) startLocked(addr netip.Addr, t *pinTally, now time.Time) {
	if t.timer != nil {
		t.timer.Stop()
	}
	t.gen++
	gen := t.gen
	t.start = now
	t.timer = w.e.opts.Clock.AfterFunc(pinWindow, func() { w.minute(addr, gen) })
}

// forgetQuietLocked forgets the addresses whose last minute passed without
// a refusal (their timers may not have run yet).
func (w *pinWatch) forgetQuietLocked(now time.Time) {
	for a, t := range w.addrs {
		if t.n == (PINRefusals{}) && now.Sub(t.start) >= pinWindow {
			t.timer.Stop()
			delete(w.addrs, a)
		}
	}
}

func count(n *PINRefusals, err error, now time.Time) {
	if n.Since.IsZero() {
		n.Since = now
	}
	switch {
	case errors.Is(err, localsend.ErrPINRequired):
		n.Missing++
	case errors.Is(err, localsend.ErrTooManyPINs):
		n.Locked++
	default:
		n.Wrong++
	}
}

// minute ends addr's minute gen: what came in it is told, and another
// minute begins; a quiet minute forgets the address, whose next refusal is
// told at once.
func (w *pinWatch) minute(addr netip.Addr, gen int) {
	w.mu.Lock()
	t := w.addrs[addr]
	if w.closed || t == nil || t.gen != gen {
		w.mu.Unlock()
		return
	}
	n := t.n
	if n == (PINRefusals{}) {
		delete(w.addrs, addr)
		w.mu.Unlock()
		return
	}
	t.n = PINRefusals{}
	w.startLocked(addr, t, w.e.now())
	w.mu.Unlock()
	w.publish(addr, n)
}

func (w *pinWatch) publish(addr netip.Addr, n PINRefusals) {
	var peer PeerInfo
	if addr.IsValid() {
		peer = PeerInfo{Addr: addr.String(), Protocol: ProtocolLocalSend}
	}
	w.e.bus.Publish(Event{Kind: EventLocalSendPIN, Time: w.e.now(), Peer: peer, PIN: &n})
}

// close stops the timers and tells, at once, the refusals still waiting
// for their minute's end (the LocalSend server is closed by then: no more
// come); nothing is told after. They were dropped, so the last guesses
// before Ferry quit went unseen.
func (w *pinWatch) close() {
	type pending struct {
		addr netip.Addr
		n    PINRefusals
	}
	var left []pending
	w.mu.Lock()
	w.closed = true
	for a, t := range w.addrs {
		t.timer.Stop()
		if t.n != (PINRefusals{}) {
			left = append(left, pending{a, t.n})
		}
	}
	w.addrs = nil
	w.mu.Unlock()
	slices.SortFunc(left, func(a, b pending) int { return a.n.Since.Compare(b.n.Since) })
	for _, p := range left {
		w.publish(p.addr, p.n)
	}
}
