package engine

import (
	"sync/atomic"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/fair"
)

// EventRefused: offers that this device's limits refused before reading
// them (Refused says why, how many and from which devices; Peer.Addr from
// where): too many devices offering at once, too many new devices from one
// address, a muted device or address, a LocalSend offer whose list did not
// fit beside the others held. Such a sender leaves no transfer, so without
// it a flood went uncounted. Refusals are summed per address and reason as
// EventLocalSendPIN's are: the first at once, the ones that follow within
// a minute of it in one event at the minute's end, and so on every minute
// while they go on; of at most maxRefusedWatch addresses and reasons apart,
// the rest together per reason (Peer.Addr empty). Peer.ID, Name and
// Protocol are set when they came from one device. It belongs to no
// transfer. Those still waiting for their minute's end when the engine
// closes are told as it closes. Offers refused once read (busy, declined)
// end a transfer of their own instead (EventResult).
const EventRefused EventKind = "refused"

// RefusalReason says why offers were refused unread (Refusals.Reason).
type RefusalReason string

// The reasons of EventRefused.
const (
	// RefusedBusy: too many devices were offering files at once (sessions
	// waiting for their offer's decision, in all, from the address, or of
	// the device).
	RefusedBusy RefusalReason = "busy"
	// RefusedNewDevices: the address brought too many devices new to this
	// one within the mute period (core.MaxFreshPerSource).
	RefusedNewDevices RefusalReason = "new_devices"
	// RefusedMuted: the user declined the device's offers twice a moment
	// ago (Options.MuteDeclined).
	RefusedMuted RefusalReason = "muted"
	// RefusedMutedAddress: a device new here, at an address whose new
	// devices' offers the user declined twice a moment ago.
	RefusedMutedAddress RefusalReason = "muted_address"
	// RefusedLargeOffers: a LocalSend offer whose file list did not fit
	// beside the other offers held (Options.ManifestBudget).
	RefusedLargeOffers RefusalReason = "large_offers"
)

// Refusals counts the offers from one address refused unread for one
// reason since the last EventRefused about them.
type Refusals struct {
	Reason RefusalReason `json:"reason"`
	Count  int           `json:"count"`
	// First and Last are when the first and the last of them came.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Devices are the devices they came from, each once, the first
	// maxRefusedDevices; MoreDevices says that more came.
	Devices     []RefusedDevice `json:"devices,omitempty"`
	MoreDevices bool            `json:"more_devices,omitempty"`
}

// RefusedDevice is a device whose offer was refused unread.
type RefusedDevice struct {
	ID string `json:"id"` // its peer ID (package peer)
	// Name is what it calls itself, from the peer: show it with
	// safetext.Name; "" when it was refused before it said.
	Name string `json:"name,omitempty"`
	// Protocol is "" for Ferry, "localsend" for a LocalSend device.
	Protocol string `json:"protocol,omitempty"`
}

const (
	// maxRefusedWatch bounds the addresses and reasons whose refusals are
	// counted apart; those of the others are counted together.
	maxRefusedWatch = 100
	// maxRefusedDevices bounds the devices one Refusals names.
	maxRefusedDevices = 16
)

// refusedKey is what refusals are summed up by: the address (package
// fair's source: an IPv6 /64), "" for the others, and the reason.
type refusedKey struct {
	src    string
	reason RefusalReason
}

// refusedWatch coalesces refusals of offers not read into EventRefused
// events (minuteSums): a flood makes at most one event a minute for each
// of maxRefusedWatch addresses and reasons and one per reason for the
// rest, and what it keeps is bounded by them whatever comes; counting one
// takes a lock and a map look-up, and never waits for a reader.
type refusedWatch struct {
	sums minuteSums[refusedKey, Refusals]
}

func (w *refusedWatch) init(e *Engine) {
	w.sums = minuteSums[refusedKey, Refusals]{
		clock:  e.opts.Clock,
		max:    maxRefusedWatch,
		others: func(k refusedKey) refusedKey { return refusedKey{reason: k.reason} },
		tell: func(k refusedKey, r Refusals, _ int) {
			ev := Event{Kind: EventRefused, Time: e.now(), Direction: Receiving, Peer: PeerInfo{Addr: k.src}, Refused: &r}
			if len(r.Devices) == 1 && !r.MoreDevices {
				d := r.Devices[0]
				ev.Peer.ID, ev.Peer.Name, ev.Peer.Protocol = d.ID, d.Name, d.Protocol
			}
			e.bus.Publish(ev)
		},
	}
}

// refused counts an offer refused unread: from remote ("host:port"), by
// device d, with the admission's refusal r. A refusal that is none of the
// limits' (an impersonation, told as EventKeyChanged) is not counted.
func (w *refusedWatch) refused(remote string, d RefusedDevice, r *wire.RemoteError) {
	reason := refusalReason(r)
	if reason == "" {
		return
	}
	w.sums.add(refusedKey{fair.Source(remote), reason}, func(n *Refusals, now time.Time) {
		if n.Count == 0 {
			n.Reason, n.First = reason, now
		}
		n.Count++
		n.Last = now
		for i := range n.Devices {
			if n.Devices[i].ID == d.ID {
				if d.Name != "" {
					n.Devices[i].Name = d.Name // its latest name
				}
				return
			}
		}
		if len(n.Devices) < maxRefusedDevices {
			n.Devices = append(n.Devices, d)
		} else {
			n.MoreDevices = true
		}
	})
}

// close tells, at once, the refusals still waiting for their minute's end
// (the listeners are closed by then: no more come); nothing is told after.
func (w *refusedWatch) close() { w.sums.close() }

// refusalReason is the reason of the admission's refusal r, "" for one
// that is not a limit's.
func refusalReason(r *wire.RemoteError) RefusalReason {
	switch r {
	case core.ErrReceiverBusy:
		return RefusedBusy
	case core.ErrTooManyNew:
		return RefusedNewDevices
	case core.ErrMuted:
		return RefusedMuted
	case core.ErrMutedAddress:
		return RefusedMutedAddress
	case core.ErrManifestsFull:
		return RefusedLargeOffers
	}
	return ""
}

// offerClaim decides, once, whether a Ferry session's offer was read (its
// transfer tells of it) or the session was refused before (EventRefused
// tells of it): an eviction (core.Admission's) can come at any time while
// the session waits for a decision.
type offerClaim struct {
	state atomic.Int32 // 0 undecided, 1 read, 2 refused
}

// read claims the offer as read; false: the session was refused first. A
// nil claim (a receiver outside serve, in tests) is read.
func (o *offerClaim) read() bool { return o == nil || o.state.CompareAndSwap(0, 1) }

// refuse claims the session as refused unread; false: its offer was read,
// or it was told as refused already.
func (o *offerClaim) refuse() bool { return o.state.CompareAndSwap(0, 2) }
