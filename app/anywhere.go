package app

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/ui"
)

// anywhereHub keeps this device reachable beyond the LAN through the
// relay the settings name (issue #29), and adds that relay to sends to
// paired devices. A relay that cannot be used when the setting is applied
// (the network is not up yet as Ferry starts at login, the relay is
// restarting) is tried again in the background, and why it cannot be used
// now is said in Settings and the status line (AnywhereStatus): until
// 2026-12-07 it was logged alone, and tried again only at the next start
// or save, so a device that started before its network was up stayed
// unreachable beyond the LAN, and nothing said so.
type anywhereHub struct {
	mu      sync.Mutex // guards the fields below
	want    string     // the relay the settings name while receiving ("" when off)
	secret  string     // its relay secret
	relay   string     // the relay served through now ("" when not serving)
	via     string     // the relay sends to paired devices go through ("" when the setting is off)
	problem string     // why want cannot be used now, in a sentence ("" when it can)
	stop    func()
	gen     int           // counts applies: a retry of an earlier one gives up
	quit    chan struct{} // closed by close: retries end
	// changed, when not nil, is told that AnywhereStatus may say
	// something else now (not under mu).
	changed func()
}

// anywhereRetry is the first wait before a relay that could not be used
// is tried again; each failure doubles it, up to anywhereRetryMax.
var anywhereRetry, anywhereRetryMax = 5 * time.Second, time.Minute

// apply serves through the relay s names while receiving is on, and
// stops otherwise. A relay that cannot be used now is tried again in the
// background; the error says why (the setting is kept).
func (h *anywhereHub) apply(e *engine.Engine, s ui.Settings) error {
	// Sends to paired devices go through the relay whenever the setting
	// is on: with receiving off too, and while serving there fails (the
	// send then says what the relay did, where it said "Ferry does not
	// know where this device is").
	via := ""
	var secretErr error // a secret of the wrong form
	if s.Anywhere && s.AnywhereRelay != "" {
		if secretErr = e.SetRelaySecret(s.AnywhereRelay, s.AnywhereSecret); secretErr == nil {
			via = s.AnywhereRelay
		}
	}
	want, secret := "", ""
	if s.Anywhere && s.Policy != ui.PolicyOff {
		want, secret = s.AnywhereRelay, s.AnywhereSecret
	}
	h.mu.Lock()
	h.via = via
	if want == h.want && secret == h.secret && (h.relay != "" || want == "") {
		h.mu.Unlock()
		return nil
	}
	h.gen++
	gen := h.gen
	if h.stop != nil {
		h.stop()
	}
	h.stop, h.relay, h.problem = nil, "", ""
	h.want, h.secret = want, secret
	if h.quit == nil {
		h.quit = make(chan struct{})
	}
	quit := h.quit
	h.mu.Unlock()
	if want == "" {
		h.tell()
		return nil
	}
	if secretErr != nil {
		// A secret of the wrong form: nothing to try again with.
		err := &secretFormError{secretErr}
		h.took(gen, nil, anywhereProblem(want, err).Text)
		return err
	}
	err := h.serve(e, gen, want)
	if err != nil && !errors.Is(err, engine.ErrClosed) {
		go h.retry(e, gen, want, quit)
	}
	return err
}

// serve serves through relay for apply's generation gen (the network
// call outside mu: a relay that does not answer takes seconds).
func (h *anywhereHub) serve(e *engine.Engine, gen int, relay string) error {
	stop, err := e.ServeAnywhere(relay)
	if err != nil {
		h.took(gen, nil, anywhereProblem(relay, err).Text)
		return err
	}
	if !h.took(gen, stop, "") {
		stop() // another apply came meanwhile
	}
	return nil
}

// took records what serving through the relay of generation gen came to:
// serving (stop), or why not. False when another apply came since.
func (h *anywhereHub) took(gen int, stop func(), problem string) bool {
	h.mu.Lock()
	if h.gen != gen {
		h.mu.Unlock()
		return false
	}
	h.problem = problem
	if stop != nil {
		h.stop, h.relay = stop, h.want
	}
	h.mu.Unlock()
	h.tell()
	return true
}

// retry tries relay, of apply's generation gen, again, waiting longer
// after each failure, until it serves, another apply came, or close.
func (h *anywhereHub) retry(e *engine.Engine, gen int, relay string, quit <-chan struct{}) {
	wait := anywhereRetry
	for {
		select {
		case <-quit:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, anywhereRetryMax)
		h.mu.Lock()
		current := h.gen == gen
		h.mu.Unlock()
		if !current {
			return
		}
		if err := h.serve(e, gen, relay); err == nil || errors.Is(err, engine.ErrClosed) {
			return
		}
	}
}

// heard takes the engine's word on the relay served through
// (EventListener): it cannot be reached now, or it answers again.
func (h *anywhereHub) heard(st engine.ListenerStatus) {
	h.mu.Lock()
	if st.Addr != h.relay || h.relay == "" {
		h.mu.Unlock()
		return
	}
	h.problem = relayGoneText(st.Err)
	h.mu.Unlock()
	h.tell()
}

// setChanged sets what is told that AnywhereStatus may say something else.
func (h *anywhereHub) setChanged(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changed = f
}

func (h *anywhereHub) tell() {
	h.mu.Lock()
	f := h.changed
	h.mu.Unlock()
	if f != nil {
		f()
	}
}

// status is the relay the settings name while receiving ("" when off) and
// why it cannot be used now ("" when it can).
func (h *anywhereHub) status() (relay, problem string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.want, h.problem
}

// close stops serving and the retries.
func (h *anywhereHub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
	if h.quit != nil {
		close(h.quit)
		h.quit = nil
	}
	if h.stop != nil {
		h.stop()
		h.stop, h.relay = nil, ""
	}
}

// target adds the relay to a send to a paired device, after its LAN
// addresses (the engine tries those first).
func (h *anywhereHub) target(to engine.Target, dev ui.Device) engine.Target {
	relay := h.sendVia()
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

// sendVia is the relay sends to paired devices go through, after their
// LAN addresses ("" when the setting is off).
func (h *anywhereHub) sendVia() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.via
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

// AnywhereStatus says whether paired devices reach this one through the
// relay now (Settings, the status line).
func (b *backend) AnywhereStatus() (relay, problem string) { return b.anywhere.status() }

// anywhereProblem says why serving through relay failed, and that the
// setting stays: the hub tries again by itself, and at the next start or
// save.
func anywhereProblem(relay string, err error) *ui.Problem {
	text := fmt.Sprintf("Ferry could not reach your paired devices through the relay %s.", relay)
	switch {
	case errors.Is(err, engine.ErrRelayUnreachable):
		text = fmt.Sprintf("The relay %s does not answer: is `ferry-cli relay` running there, and is the address right?", relay)
	case errors.Is(err, engine.ErrRelaySecret):
		text = fmt.Sprintf("The relay %s refused this device's relay secret: give the one the relay was started with (ferry-cli relay --secret-file), or none for a relay without one, and check this computer's clock.", relay)
	}
	var form *secretFormError
	if errors.As(err, &form) {
		// Nothing is tried again with it: it must be given again.
		text := fmt.Sprintf("The relay secret given for %s cannot be used: %s.", relay, strings.TrimSuffix(form.err.Error(), "."))
		return &ui.Problem{Text: text + " The setting is kept; give the secret the relay was started with.", Err: err, Kept: true}
	}
	return &ui.Problem{Text: text + " The setting is kept, and Ferry tries again by itself.", Err: err, Kept: true}
}

// secretFormError is a relay secret of the wrong form (engine.SetRelaySecret).
type secretFormError struct{ err error }

func (e *secretFormError) Error() string { return e.err.Error() }
func (e *secretFormError) Unwrap() error { return e.err }

// relayGoneText says that the relay served through stopped answering as
// it should, in the engine's sentence (EventListener's Err; "" when it
// answers again).
func relayGoneText(why string) string {
	if why == "" {
		return ""
	}
	return strings.ToUpper(why[:1]) + strings.TrimSuffix(why[1:], ".") + ". Ferry keeps trying."
}
