package app

import (
	"sync"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/ui"
)

// anywhereHub keeps this device reachable beyond the LAN through the
// relay the settings name (issue #29), and adds that relay to sends to
// paired devices.
type anywhereHub struct {
	mu     sync.Mutex // guards the fields below
	relay  string     // the relay served through now ("" when off)
	secret string     // its relay secret
	stop   func()
}

// apply serves through the relay s names while receiving is on, and
// stops otherwise.
func (h *anywhereHub) apply(e *engine.Engine, s ui.Settings) error {
	want, secret := "", ""
	if s.Anywhere && s.Policy != ui.PolicyOff {
		want, secret = s.AnywhereRelay, s.AnywhereSecret
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if want == h.relay && secret == h.secret {
		return nil
	}
	if h.stop != nil {
		h.stop()
		h.stop, h.relay, h.secret = nil, "", ""
	}
	if want == "" {
		return nil
	}
	if err := e.SetRelaySecret(want, secret); err != nil {
		return err
	}
	stop, err := e.ServeAnywhere(want)
	if err != nil {
		return err
	}
	h.stop, h.relay, h.secret = stop, want, secret
	return nil
}

// target adds the relay to a send to a paired device, after its LAN
// addresses (the engine tries those first).
func (h *anywhereHub) target(to engine.Target, dev ui.Device) engine.Target {
	h.mu.Lock()
	relay := h.relay
	h.mu.Unlock()
	if relay == "" || to.ID == "" || !dev.Trusted {
		return to
	}
	to.Addrs = append(append([]addr.Addr(nil), to.Addrs...), addr.NewRendezvous(relay))
	return to
}

// relayNow is the relay served through now ("" when off).
func (h *anywhereHub) relayNow() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.relay
}

// applyAnywhere runs the beyond-the-LAN part of the settings.
func (b *backend) applyAnywhere(s ui.Settings) error { return b.anywhere.apply(b.eng, s) }
