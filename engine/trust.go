package engine

import "github.com/ferrydrop/ferry/engine/peer"

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
