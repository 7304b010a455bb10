package engine

import (
	"github.com/ferrydrop/ferry/engine/internal/rendezvous"
	"github.com/ferrydrop/ferry/engine/peer"
)

// isTrusted reports whether the user trusts the device: its offers are
// accepted without asking (where the policy says so) and never muted.
func (e *Engine) isTrusted(id peer.ID) bool {
	p, known := e.trust.Get(id)
	return known && p.AlwaysAccept
}

// acceptedFrom records a device whose offer was accepted, by the user or
// the policy. Devices that only said hello, or whose offers were declined,
// are never written to the trust store: a flood of new identities must not
// grow it, nor cost a write each (issue #14).
func (e *Engine) acceptedFrom(id peer.ID, name string) {
	if err := e.trust.Seen(id, name, ""); err != nil {
		e.log.Warn("trust store", "err", err)
	}
}

// rendezvousOf is the rendezvous secret held for a paired device (zero for
// none, or for a value the store cannot read).
func (e *Engine) rendezvousOf(id peer.ID) rendezvous.Secret {
	p, ok := e.trust.Get(id)
	if !ok || !p.Paired {
		return rendezvous.Secret{}
	}
	s, err := rendezvous.Parse(p.Rendezvous)
	if err != nil {
		e.log.Warn("trust store: unreadable rendezvous secret; the next contact replaces it", "peer", id.Short(), "err", err)
	}
	return s
}

// settleRendezvous runs at the end of a pairing step with a peer that
// settles rendezvous secrets: when the two fingerprints of the hellos
// (ours, theirs) do not name one secret, a paired device adopts the
// session's. Both sides see the same two fingerprints, so both adopt it or
// neither does (a session cut between the dialer's reveal and its arrival
// leaves them apart until the next contact, whose fingerprints differ and
// settle it again); a device paired before issue #29, which holds none,
// gets it at its next contact. A device not paired yet gets it with the
// user's confirmation (keepRendezvous). Only a paired peer can make us
// write the trust store here.
func (e *Engine) settleRendezvous(id peer.ID, ours, theirs string, s rendezvous.Secret) {
	if rendezvous.SameFingerprint(ours, theirs) {
		return
	}
	if p, ok := e.trust.Get(id); !ok || !p.Paired {
		return
	}
	e.keepRendezvous(id, s)
}

// keepRendezvous stores the secret of a pairing step for a device the user
// paired with.
func (e *Engine) keepRendezvous(id peer.ID, s rendezvous.Secret) {
	if s.IsZero() {
		return
	}
	if err := e.trust.SetRendezvous(id, s.String(), e.now()); err != nil {
		e.log.Warn("trust store", "err", err)
		return
	}
	e.anywherePeersChanged()
}

// anywherePeersChanged tells the relays served through that the paired
// devices with a rendezvous secret changed: a device just paired finds
// this one there at once, not after the presence's period.
func (e *Engine) anywherePeersChanged() {
	e.relays.mu.Lock()
	defer e.relays.mu.Unlock()
	for srv := range e.relays.serving {
		srv.PeersChanged()
	}
}
