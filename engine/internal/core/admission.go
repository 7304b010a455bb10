package core

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/internal/fair"
)

// What an incoming session may take before anyone decided to receive from
// it is bounded per source address and per device, and shared fairly
// between sources (package fair), so that a flood keeps no real sender out
// (issue #14): sessions between their arrival and the decision on their
// offer, and offers waiting for the user's answer. A device whose offers
// the user declined twice within the mute period is muted for that long,
// and so is an address, for devices this one does not know, whose new
// devices' offers were declined twice, since a new identity costs a
// flooder nothing; one address brings MaxFreshPerSource new devices per
// mute period at most. A device known here (an offer of it was accepted)
// is never muted for its address, so a flooder behind the same NAT does
// not shut it out (issue #27). (Once is forgiven: a user who declined by
// mistake can take the sender's retry.)
const (
	MaxWaitingSessions          = 32 // sessions waiting for their hello, offer or decision
	MaxWaitingSessionsPerSource = 8
	MaxWaitingSessionsPerDevice = 4
	MaxPromptsPerSource         = 2 // offers from one address waiting for an answer; one per device
	DefaultMuteDeclined         = 2 * time.Minute
	maxMuted                    = 4096 // devices and addresses remembered as declined
	StrikesToMute               = 2    // declines within the mute period that mute
)

// The manifests held at once (offers being read, asked about, or received)
// share one budget of memory (ManifestCost: files and name bytes), so many
// large offers cannot add up beyond what one receiver holds: one source may
// hold one offer of the largest size (Options.ManifestBudget), and all of
// them together 1.5 times that.
const (
	// ManifestSlack lets one part more than the largest offer in, so that
	// an offer over it is refused as too large (by the inbox) rather than
	// as busy.
	//
	// It is the largest control message of Ferry's wire (wire.MaxMessage,
	// which package engine checks it against), the largest part in which an
	// offer's file list arrives.
	ManifestSlack = 4 << 20
)

// Refusals of the admission, as the sender reads them.
var (
	// ErrReceiverBusy refuses a session while others hold what it needs.
	ErrReceiverBusy = &errcode.RemoteError{Code: errcode.CodeBusy,
		Reason: "too many devices are offering files to this one at once; try again in a moment"}
	// ErrPromptOpen refuses a second offer from a device whose first waits for an answer.
	ErrPromptOpen = &errcode.RemoteError{Code: errcode.CodeBusy,
		Reason: "an earlier offer from this device is still waiting for an answer"}
	// ErrMuted refuses offers from a device whose offer the user declined a moment ago.
	ErrMuted = &errcode.RemoteError{Code: errcode.CodeDeclined,
		Reason: "the receiver declined an offer from this device a moment ago; try again in a few minutes"}
	// ErrMutedAddress refuses new devices at an address whose new devices'
	// offers the user declined a moment ago (the device itself was not).
	ErrMutedAddress = &errcode.RemoteError{Code: errcode.CodeDeclined,
		Reason: "the receiver declined offers from other new devices at this network address a moment ago; try again in a few minutes"}
	// ErrTooManyNew refuses a new device from an address that brought many lately.
	ErrTooManyNew = &errcode.RemoteError{Code: errcode.CodeBusy,
		Reason: "too many new devices offered files from this network address in the last minutes; try again in a few minutes"}
	// ErrManifestsFull refuses an offer whose manifest does not fit beside the others held.
	ErrManifestsFull = &errcode.RemoteError{Code: errcode.CodeBusy,
		Reason: "the receiver is taking other large offers; try again when they are done, or send fewer files at once"}
)

// Admission is the receiver's bookkeeping of incoming sessions by source
// address and device. It is safe for concurrent use.
type Admission struct {
	now     func() time.Time
	muteFor time.Duration // <= 0: declines mute nobody
	waiting *fair.Slots   // sessions until their offer is decided
	prompts *promptPlaces // offers waiting for an answer (prompts.go)

	mu        sync.Mutex // guards the fields below
	byDevice  map[peer.ID]int
	prompting map[peer.ID]chan struct{} // closed when the device's prompt is given back
	muted     map[string]*declines      // by "device ID" or "@source"
	warned    map[string]time.Time      // warnings given (warnDue), by what they are about
	budget    int64                     // the manifests one source may hold (Options.ManifestBudget)
	held      int64                     // manifests held, in all
	heldBy    map[string]int64          // by source
	idle      map[*Ticket]uint64        // accepted sessions whose sender began nothing, by when (seq)
	idleSeq   uint64
	displaced map[string]time.Time // when an address's idle session was last displaced
	fresh     map[string]*freshIDs // new devices by address, within the mute period
}

// freshIDs are the devices unknown to this one that an address brought
// since a time (issue #27 item 4: a new identity costs a flooder nothing,
// so an address may bring MaxFreshPerSource within the mute period).
type freshIDs struct {
	since time.Time
	ids   map[peer.ID]bool
}

// MaxFreshPerSource bounds the new devices one address brings within the
// mute period: a household behind one address has far fewer.
const MaxFreshPerSource = 32

// declines is what the user declined of one device or address lately.
type declines struct {
	last    time.Time // the latest decline
	strikes int       // declines, each within the mute period of the one before
	until   time.Time // muted until then
}

func NewAdmission(maxPrompts int, muteFor time.Duration, manifestBudget int64, now func() time.Time) *Admission {
	return &Admission{
		now:       now,
		muteFor:   muteFor,
		budget:    manifestBudget,
		waiting:   fair.New(fair.Limits{Total: MaxWaitingSessions, PerSource: MaxWaitingSessionsPerSource, Floor: 2}),
		prompts:   newPromptPlaces(maxPrompts, MaxPromptsPerSource),
		byDevice:  map[peer.ID]int{},
		prompting: map[peer.ID]chan struct{}{},
		muted:     map[string]*declines{},
		warned:    map[string]time.Time{},
		heldBy:    map[string]int64{},
		idle:      map[*Ticket]uint64{},
		displaced: map[string]time.Time{},
		fresh:     map[string]*freshIDs{},
	}
}

// Ticket is one incoming session's standing with the admission.
type Ticket struct {
	a    *Admission
	src  string
	peer peer.ID

	mu       sync.Mutex // guards the fields below
	known    bool       // the device is in the trust store (refuseEarly)
	slot     *fair.Slot // held until the offer is decided
	counted  bool       // counted in byDevice
	manifest int64      // manifest cost held

	// Guarded by a.mu: an accepted session whose sender began no upload
	// (idleAccepted) may be displaced (evictIdle) by another's offer.
	evictIdle func()
	displaced bool
}

// Arrive admits a new session from remote ("host:port") proven to be peer,
// or refuses it. evict ends the session if a newcomer from a less busy
// source later takes its place.
func (a *Admission) Arrive(remote string, peer peer.ID, evict func()) (*Ticket, *errcode.RemoteError) {
	t := &Ticket{a: a, src: fair.Source(remote), peer: peer}
	a.mu.Lock()
	if a.byDevice[peer] >= MaxWaitingSessionsPerDevice {
		a.mu.Unlock()
		return nil, ErrReceiverBusy
	}
	a.byDevice[peer]++
	t.counted = true
	a.mu.Unlock()
	t.slot = a.waiting.Take(t.src, evict)
	if t.slot == nil {
		t.Decided()
		return nil, ErrReceiverBusy
	}
	return t, nil
}

// Source is the address (package fair's source) the session came from:
// what the budgets per address count by; "" for a nil ticket.
func (t *Ticket) Source() string {
	if t == nil {
		return ""
	}
	return t.src
}

// Decided gives back what the session held while waiting for a decision
// on its offer; called once it was made, or when the session ends first.
func (t *Ticket) Decided() {
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

// End gives back everything the session held; called when it ended.
func (t *Ticket) End() {
	t.Decided()
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.idle, t)
	a.releaseManifestLocked(t)
}

// releaseManifestLocked gives back the manifest cost t holds.
func (a *Admission) releaseManifestLocked(t *Ticket) {
	t.mu.Lock()
	m := t.manifest
	t.manifest = 0
	t.mu.Unlock()
	if m == 0 {
		return
	}
	a.held -= m
	if a.heldBy[t.src] -= m; a.heldBy[t.src] <= 0 {
		delete(a.heldBy, t.src)
	}
}

// HoldManifest charges cost (ManifestCost) of the session's offer to the
// manifest budget, as its parts arrive, or refuses the offer. When the
// total is full, the offer takes the budget of accepted sessions whose
// senders began no upload (displaceLocked), by fair shares between
// addresses. A nil ticket (a receiver outside an engine, in tests)
// charges nothing.
func (t *Ticket) HoldManifest(cost int64) *errcode.RemoteError {
	if t == nil {
		return nil
	}
	a := t.a
	a.mu.Lock()
	if a.heldBy[t.src]+cost > a.budget+ManifestSlack {
		a.mu.Unlock()
		return ErrManifestsFull
	}
	victims := a.displaceLocked(t.src, a.held+cost-(a.budget*3/2+ManifestSlack))
	if a.held+cost > a.budget*3/2+ManifestSlack {
		a.mu.Unlock()
		return ErrManifestsFull
	}
	a.heldBy[t.src] += cost
	a.held += cost
	t.mu.Lock()
	t.manifest += cost
	t.mu.Unlock()
	a.mu.Unlock()
	for _, v := range victims {
		v.evictIdle() // ends the session (errDisplaced); its budget is ours already
	}
	return nil
}

// IdleAccepted marks the session's offer accepted with no upload begun:
// until uploading, another's offer may take its manifest budget, ending
// the session with evict. A sender that accepted offers hold no place
// for otherwise fills the budget from many addresses and keeps real
// senders out (docs/localsend.md, floods).
func (t *Ticket) IdleAccepted(evict func()) {
	if t == nil {
		return
	}
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.displaced {
		return
	}
	a.idleSeq++
	t.evictIdle = evict
	a.idle[t] = a.idleSeq
}

// Uploading marks the session's sender as uploading: it is never
// displaced from now on. False: it was displaced already.
func (t *Ticket) Uploading() bool {
	if t == nil {
		return true
	}
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.idle, t)
	return !t.displaced
}

// displacedFor is how long an address whose idle accepted session was
// displaced counts it as still held (the StartGrace the session would
// have had): otherwise the flood's addresses displace each other's
// sessions as fast as they post offers, and the churn of 2000-file
// manifests alone took the receiver's peak memory over its limit.
const displacedFor = 10 * time.Second

// displaceLocked frees at least need bytes of the manifest budget for an
// offer from src by taking it from idle accepted sessions, or takes
// nothing when they cannot free that much. Fair shares: each victim is
// the oldest idle session of the address holding the most of them, and
// that address must hold more than src does (counting, for
// displacedFor, one that src lost so).
func (a *Admission) displaceLocked(src string, need int64) []*Ticket {
	if need <= 0 || len(a.idle) == 0 {
		return nil
	}
	now := a.now()
	bySrc := map[string][]*Ticket{}
	for t := range a.idle {
		bySrc[t.src] = append(bySrc[t.src], t)
	}
	for _, ts := range bySrc {
		slices.SortFunc(ts, func(x, y *Ticket) int { return cmp.Compare(a.idle[x], a.idle[y]) })
	}
	mine := len(bySrc[src])
	if at, ok := a.displaced[src]; ok && now.Sub(at) < displacedFor {
		mine++
	}
	var victims []*Ticket
	freed := int64(0)
	for freed < need {
		from, found := "", false
		for s, ts := range bySrc {
			if len(ts) <= mine {
				continue
			}
			if best := bySrc[from]; found && (len(ts) < len(best) || len(ts) == len(best) && a.idle[ts[0]] > a.idle[best[0]]) {
				continue
			}
			from, found = s, true
		}
		if !found {
			return nil // not enough to take fairly: take nothing
		}
		v := bySrc[from][0]
		if bySrc[from] = bySrc[from][1:]; len(bySrc[from]) == 0 {
			delete(bySrc, from)
		}
		v.mu.Lock()
		freed += v.manifest
		v.mu.Unlock()
		victims = append(victims, v)
	}
	for k, at := range a.displaced {
		if len(a.displaced) < maxMuted {
			break
		}
		if now.Sub(at) >= displacedFor || len(a.displaced) >= maxMuted {
			delete(a.displaced, k) // many addresses must not grow the map
		}
	}
	for _, v := range victims {
		delete(a.idle, v)
		v.displaced = true
		a.displaced[v.src] = now
		a.releaseManifestLocked(v)
	}
	return victims
}

// CheckMuted refuses an untrusted device that is muted, and a device this
// one does not know (a fresh identity) at an address that is muted or
// brought too many of them lately. A device that is known (an offer of it
// was accepted once) is never muted for its address: the flooder next to
// it on the same network cannot shut it out.
func (t *Ticket) CheckMuted(trusted, known bool) *errcode.RemoteError {
	if trusted {
		return nil
	}
	a := t.a
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	t.mu.Lock()
	t.known = known
	t.mu.Unlock()
	if d := a.muted[t.peer.String()]; d != nil && now.Before(d.until) {
		return ErrMuted
	}
	if known {
		return nil
	}
	if d := a.muted["@"+t.src]; d != nil && now.Before(d.until) {
		return ErrMutedAddress
	}
	return a.freshLocked(t.src, t.peer, now)
}

// freshLocked counts a new device at src, or refuses it when src brought
// MaxFreshPerSource within the mute period.
func (a *Admission) freshLocked(src string, id peer.ID, now time.Time) *errcode.RemoteError {
	if a.muteFor <= 0 {
		return nil
	}
	f := a.fresh[src]
	if f == nil || now.Sub(f.since) >= a.muteFor {
		if len(a.fresh) >= maxMuted {
			for k, g := range a.fresh {
				if now.Sub(g.since) >= a.muteFor || len(a.fresh) >= maxMuted {
					delete(a.fresh, k) // many addresses must not grow the map
				}
			}
		}
		f = &freshIDs{since: now, ids: map[peer.ID]bool{}}
		a.fresh[src] = f
	}
	if f.ids[id] {
		return nil
	}
	if len(f.ids) >= MaxFreshPerSource {
		return ErrTooManyNew
	}
	f.ids[id] = true
	return nil
}

// Declined counts a decline by the user against the device, and against
// its address when the device was new; the second within the mute period
// mutes them.
func (t *Ticket) Declined() {
	a := t.a
	if a.muteFor <= 0 {
		return
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.muted) >= maxMuted {
		for k, d := range a.muted {
			if now.Sub(d.last) > a.muteFor && !now.Before(d.until) {
				delete(a.muted, k)
			}
		}
		for k := range a.muted {
			if len(a.muted) < maxMuted {
				break
			}
			delete(a.muted, k) // an attacker's many addresses must not grow the map
		}
	}
	keys := []string{t.peer.String()}
	t.mu.Lock()
	if !t.known {
		keys = append(keys, "@"+t.src)
	}
	t.mu.Unlock()
	for _, k := range keys {
		d := a.muted[k]
		if d == nil || now.Sub(d.last) > a.muteFor {
			d = &declines{}
			a.muted[k] = d
		}
		d.last = now
		if d.strikes++; d.strikes >= StrikesToMute {
			d.until = now.Add(a.muteFor)
		}
	}
}

// PromptTicket is an offer's place among those waiting for an answer.
type PromptTicket struct {
	t     *Ticket
	held  chan struct{} // the device's mark in prompting, closed by Release
	place func()        // gives the place back
}

// PromptHandover is how long a second offer from a device whose first
// waits for an answer waits for that first one to end, before it is refused
// as busy (ErrPromptOpen). A sender that withdrew its offer and offered
// again at once (its user cancelled and sent again, or paired again) is
// ahead of this side's reading of the withdrawal: its new offer was refused
// "busy" while the old one's end was a few milliseconds away, on a loaded
// machine. The new session holds one of its device's waiting places
// (MaxWaitingSessionsPerDevice) meanwhile, as any session does.
const PromptHandover = 2 * time.Second

// Prompt gives the session's offer a place among those waiting for the
// user (one per device, a few per address: see promptPlaces), waiting for
// one until ctx ends; queued, when not nil, is told if it waits, with the
// offers waiting for the user before it. A device's second offer waits
// PromptHandover at most for its first to end.
func (t *Ticket) Prompt(ctx context.Context, queued func(ahead int)) (*PromptTicket, *errcode.RemoteError) {
	a := t.a
	var handover <-chan time.Time
	a.mu.Lock()
	for {
		earlier, open := a.prompting[t.peer]
		if !open {
			break
		}
		a.mu.Unlock()
		if handover == nil {
			timer := time.NewTimer(PromptHandover)
			defer timer.Stop()
			handover = timer.C
		}
		select {
		case <-earlier:
		case <-handover:
			return nil, ErrPromptOpen
		case <-ctx.Done():
			return nil, ErrPromptOpen
		}
		a.mu.Lock()
	}
	p := &PromptTicket{t: t, held: make(chan struct{})}
	a.prompting[t.peer] = p.held
	a.mu.Unlock()
	place, refused := a.prompts.take(ctx, t.src, queued)
	if refused != nil {
		p.Release()
		return nil, refused
	}
	p.place = place
	return p, nil
}

// Release gives the place back once the offer was answered.
func (p *PromptTicket) Release() {
	if p.place != nil {
		p.place()
	}
	a := p.t.a
	a.mu.Lock()
	if a.prompting[p.t.peer] == p.held {
		delete(a.prompting, p.t.peer)
		close(p.held)
	}
	a.mu.Unlock()
}

// HeldManifests is the manifest cost held now.
func (a *Admission) HeldManifests() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held
}

// WarnDue reports whether a warning about key may be given now: once a
// minute at most, so that a peer repeating what raised it cannot flood the
// user with warnings.
func (a *Admission) WarnDue(key string) bool {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if last, ok := a.warned[key]; ok && now.Sub(last) < time.Minute {
		return false
	}
	for k := range a.warned {
		if len(a.warned) < maxMuted {
			break
		}
		delete(a.warned, k)
	}
	a.warned[key] = now
	return true
}

// IdleSessions is the number of accepted sessions whose sender began no
// upload (tests).
func (a *Admission) IdleSessions() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.idle)
}

// Waiting is the number of sessions waiting for a decision, in all and
// from source (tests).
func (a *Admission) Waiting(source string) (all, bySource int) {
	return a.waiting.Held(), a.waiting.HeldBy(source)
}

// Prompts is the number of prompts shown and of offers queued for a place (tests).
func (a *Admission) Prompts() (shown, queued int) {
	return a.prompts.shown(), a.prompts.queued()
}
