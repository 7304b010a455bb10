package engine

import (
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/fair"
)

// What an incoming session may take before anyone decided to receive from
// it is bounded per source address and per device, and shared fairly
// between sources (package fair), so that a flood keeps no real sender out
// (issue #14): sessions between their arrival and the decision on their
// offer, and offers waiting for the user's answer. A device whose offer
// the user declined is muted for a while, and so is its address, since a
// new identity costs a flooder nothing.
const (
	maxWaitingSessions          = 32 // sessions waiting for their hello, offer or decision
	maxWaitingSessionsPerSource = 8
	maxWaitingSessionsPerDevice = 4
	maxPromptsPerSource         = 2 // offers from one address waiting for an answer; one per device
	defaultMuteDeclined         = 2 * time.Minute
	maxMuted                    = 4096 // devices and addresses remembered as muted
)

// Refusals of the admission, as the sender reads them.
var (
	// errReceiverBusy refuses a session while others hold what it needs.
	errReceiverBusy = &wire.RemoteError{Code: wire.CodeBusy,
		Reason: "too many devices are offering files to this one at once; try again in a moment"}
	// errPromptOpen refuses a second offer from a device whose first waits for an answer.
	errPromptOpen = &wire.RemoteError{Code: wire.CodeBusy,
		Reason: "an earlier offer from this device is still waiting for an answer"}
	// errMuted refuses offers from a device (or address) whose offer the user declined a moment ago.
	errMuted = &wire.RemoteError{Code: wire.CodeDeclined,
		Reason: "the receiver declined an offer from this device a moment ago; try again in a few minutes"}
)

// refusal is the decision that refuses an offer with one of the errors above.
func refusal(err *wire.RemoteError) decision {
	return decision{Decision: Decision{Reason: err.Reason}, code: err.Code}
}

// admission is the receiver's bookkeeping of incoming sessions by source
// address and device. It is safe for concurrent use.
type admission struct {
	now     func() time.Time
	muteFor time.Duration // <= 0: declines mute nobody
	waiting *fair.Slots   // sessions until their offer is decided
	prompts *fair.Slots   // offers waiting for an answer

	mu        sync.Mutex // guards the fields below
	byDevice  map[identity.DeviceID]int
	prompting map[identity.DeviceID]bool
	muted     map[string]time.Time // "device ID" or "@source" -> muted until
}

func newAdmission(maxPrompts int, muteFor time.Duration, now func() time.Time) *admission {
	return &admission{
		now:       now,
		muteFor:   muteFor,
		waiting:   fair.New(fair.Limits{Total: maxWaitingSessions, PerSource: maxWaitingSessionsPerSource}),
		prompts:   fair.New(fair.Limits{Total: maxPrompts, PerSource: maxPromptsPerSource}),
		byDevice:  map[identity.DeviceID]int{},
		prompting: map[identity.DeviceID]bool{},
		muted:     map[string]time.Time{},
	}
}

// ticket is one incoming session's standing with the admission.
type ticket struct {
	a    *admission
	src  string
	peer identity.DeviceID

	mu      sync.Mutex // guards the fields below
	slot    *fair.Slot // held until the offer is decided
	counted bool       // counted in byDevice
}

// arrive admits a new session from remote ("host:port") proven to be peer,
// or refuses it. evict ends the session if a newcomer from a less busy
// source later takes its place.
func (a *admission) arrive(remote string, peer identity.DeviceID, evict func()) (*ticket, *wire.RemoteError) {
	t := &ticket{a: a, src: fair.Source(remote), peer: peer}
	a.mu.Lock()
	if a.byDevice[peer] >= maxWaitingSessionsPerDevice {
		a.mu.Unlock()
		return nil, errReceiverBusy
	}
	a.byDevice[peer]++
	t.counted = true
	a.mu.Unlock()
	t.slot = a.waiting.Take(t.src, evict)
	if t.slot == nil {
		t.decided()
		return nil, errReceiverBusy
	}
	return t, nil
}

// decided gives back what the session held while waiting for a decision
// on its offer; called once it was made, or when the session ends first.
func (t *ticket) decided() {
	t.mu.Lock()
	slot, counted := t.slot, t.counted
	t.slot, t.counted = nil, false
	t.mu.Unlock()
	slot.Release()
	if counted {
		t.a.mu.Lock()
		if t.a.byDevice[t.peer]--; t.a.byDevice[t.peer] <= 0 {
			delete(t.a.byDevice, t.peer)
		}
		t.a.mu.Unlock()
	}
}

// checkMuted refuses an untrusted device, or any untrusted device at an
// address, whose offer the user declined within the mute period.
func (t *ticket) checkMuted(trusted bool) *wire.RemoteError {
	if trusted {
		return nil
	}
	a := t.a
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range []string{t.peer.String(), "@" + t.src} {
		if until, ok := a.muted[k]; ok {
			if now.Before(until) {
				return errMuted
			}
			delete(a.muted, k)
		}
	}
	return nil
}

// declined mutes the device and its address after the user declined its offer.
func (t *ticket) declined() {
	a := t.a
	if a.muteFor <= 0 {
		return
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, until := range a.muted {
		if !now.Before(until) {
			delete(a.muted, k)
		}
	}
	for k := range a.muted {
		if len(a.muted) < maxMuted {
			break
		}
		delete(a.muted, k) // an attacker's many addresses must not grow the map
	}
	until := now.Add(a.muteFor)
	a.muted[t.peer.String()] = until
	a.muted["@"+t.src] = until
}

// promptTicket is an offer's place among those waiting for an answer.
type promptTicket struct {
	t       *ticket
	slot    *fair.Slot
	evicted chan struct{} // closed when a newcomer took the place
	once    sync.Once
}

// prompt gives the session's offer a place among those waiting for the
// user: one per device, a few per address, shared fairly by address.
func (t *ticket) prompt() (*promptTicket, *wire.RemoteError) {
	a := t.a
	a.mu.Lock()
	if a.prompting[t.peer] {
		a.mu.Unlock()
		return nil, errPromptOpen
	}
	a.prompting[t.peer] = true
	a.mu.Unlock()
	p := &promptTicket{t: t, evicted: make(chan struct{})}
	p.slot = a.prompts.Take(t.src, func() { p.once.Do(func() { close(p.evicted) }) })
	if p.slot == nil {
		p.release()
		return nil, errReceiverBusy
	}
	return p, nil
}

// release gives the place back once the offer was answered.
func (p *promptTicket) release() {
	p.slot.Release()
	a := p.t.a
	a.mu.Lock()
	delete(a.prompting, p.t.peer)
	a.mu.Unlock()
}

// refuseEarly refuses a session right after the peer's hello, before
// anything is asked or written: a muted device or address, or an untrusted
// device using the name of a paired one.
func (e *Engine) refuseEarly(tk *ticket, h *wire.Hello, c Conn) *wire.RemoteError {
	if refused := tk.checkMuted(e.isTrusted(c.PeerID())); refused != nil {
		return refused
	}
	return e.checkImpersonation(c.PeerID(), h.Name, c.RemoteAddr())
}
