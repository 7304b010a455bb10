package app

import (
	"errors"
	"fmt"
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

// applyAnywhere runs the beyond-the-LAN part of the settings. A relay that
// cannot be used is said in a sentence, the engine's words behind Details
// (the settings message was an empty "Could not save the settings").
func (b *backend) applyAnywhere(s ui.Settings) error {
	if err := b.anywhere.apply(b.eng, s); err != nil {
		return anywhereProblem(s.AnywhereRelay, err)
	}
	return nil
}

// anywhereProblem says why serving through relay failed, and that the
// setting stays: the hub tries again at the next start or save.
func anywhereProblem(relay string, err error) *ui.Problem {
	text := fmt.Sprintf("Ferry could not reach your paired devices through the relay %s.", relay)
	switch {
	case errors.Is(err, engine.ErrRelayUnreachable):
		text = fmt.Sprintf("The relay %s does not answer: is `ferry-cli relay` running there, and is the address right?", relay)
	case errors.Is(err, engine.ErrRelaySecret):
		text = fmt.Sprintf("The relay %s refused this device's relay secret: give the one the relay was started with (ferry-cli relay --secret-file), or none for a relay without one, and check this computer's clock.", relay)
	}
	return &ui.Problem{Text: text + " The setting is kept, and tried again when Ferry starts or the settings are saved.", Err: err, Kept: true}
}
