package engine

import (
	"errors"
	"net/netip"
	"time"

	"github.com/ferrydrop/ferry/engine/localsend"
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
const pinWindow = sumWindow

// maxPINWatch bounds the addresses whose refusals are counted apart; those
// of the others are counted together.
const maxPINWatch = 64

// pinWatch coalesces the PIN refusals of the LocalSend server into
// EventLocalSendPIN events (minuteSums).
type pinWatch struct {
	sums minuteSums[netip.Addr, PINRefusals]
}

func (w *pinWatch) init(e *Engine) {
	w.sums = minuteSums[netip.Addr, PINRefusals]{
		clock:  e.opts.Clock,
		max:    maxPINWatch,
		others: func(netip.Addr) netip.Addr { return netip.Addr{} }, // the others, together
		tell: func(addr netip.Addr, n PINRefusals, _ int) {
			var peer PeerInfo
			if addr.IsValid() {
				peer = PeerInfo{Addr: addr.String(), Protocol: ProtocolLocalSend}
			}
			e.bus.Publish(Event{Kind: EventLocalSendPIN, Time: e.now(), Peer: peer, PIN: &n})
		},
	}
}

// refused counts a refusal (localsend.ServerConfig.OnPIN).
func (w *pinWatch) refused(addr netip.Addr, err error) {
	w.sums.add(addr, func(n *PINRefusals, now time.Time) { count(n, err, now) })
}

// close tells, at once, the refusals still waiting for their minute's end
// (the LocalSend server is closed by then: no more come); nothing is told
// after. They were dropped, so the last guesses before Ferry quit went
// unseen.
func (w *pinWatch) close() { w.sums.close() }

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
