package weblink

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// LinkOptions are what share and receive links have in common. The zero
// value of every field means its documented default.
type LinkOptions struct {
	// Expire is how long the link stays open (default 1 hour); a receive
	// link lets the uploads going then finish (ReceiveOptions.ExpiryGrace).
	// The link also ends with Stop, and when the server closes (Ferry quits).
	Expire time.Duration
	// PIN, when set, must be typed in the page before anything else is
	// served. It protects a link that leaked, not against someone who reads
	// the network's traffic (see the package documentation).
	PIN string
	// MaxPINTries is how many wrong PINs the link takes, from all devices
	// together, before it refuses every PIN (default 10): with a 4-digit PIN
	// a guesser has a 1 in 1000 chance.
	MaxPINTries int
	// MaxDevices bounds the devices (client IP addresses) that may use the
	// link (default 8).
	MaxDevices int
}

func (o LinkOptions) withDefaults() LinkOptions {
	if o.Expire <= 0 {
		o.Expire = time.Hour
	}
	if o.MaxPINTries <= 0 {
		o.MaxPINTries = 10
	}
	if o.MaxDevices <= 0 {
		o.MaxDevices = 8
	}
	return o
}

// maxPINBytes bounds a PIN (a PIN is typed on a phone).
const maxPINBytes = 64

// Kind tells a share link from a receive link.
type Kind int

// The kinds of link.
const (
	KindShare   Kind = iota + 1 // files go from this device to the browser
	KindReceive                 // files come from the browser to this device
)

// Link is one open link. Its methods are safe for concurrent use.
type Link struct {
	s       *Server
	kind    Kind
	token   string
	opts    LinkOptions
	expires time.Time
	timer   *time.Timer // set and read under mu

	ctx    context.Context // cancelled when the link ends
	cancel context.CancelCauseFunc
	reqs   sync.WaitGroup // requests in flight
	wg     sync.WaitGroup // the clean-up after the end (which waits for reqs)

	share *share    // KindShare
	recv  *receiver // KindReceive

	events chan Event
	nextID atomic.Int64

	mu       sync.Mutex                  // guards the fields below
	devices  map[netip.Addr]bool         // devices seen
	sessions map[string]netip.Addr       // PIN sessions (cookie value -> device)
	pinFails int                         // wrong PINs so far
	away     map[netip.Addr]bool         // devices turned away (MaxDevices), up to maxTurnedAway
	acts     map[int64]*Activity         // live and recent transfers
	order    []int64                     // acts by age
	doneBy   map[netip.Addr]map[int]bool // share: files each device has whole
	parts    map[partKey]*coverage       // share: what each device got of a file (or the zip, -1) by range
}

// maxActivities bounds the transfers a link remembers (the finished ones
// go first).
const maxActivities = 1000

// eventBuffer is the room in a link's event channel; a reader that falls
// further behind misses progress events (Activities has the state).
const eventBuffer = 256

func (s *Server) newLink(kind Kind, opts LinkOptions) (*Link, error) {
	opts = opts.withDefaults()
	if len(opts.PIN) > maxPINBytes {
		return nil, fmt.Errorf("weblink: the PIN is over %d characters", maxPINBytes)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	l := &Link{
		s: s, kind: kind, opts: opts,
		ctx: ctx, cancel: cancel, events: make(chan Event, eventBuffer),
		devices: map[netip.Addr]bool{}, sessions: map[string]netip.Addr{},
		acts: map[int64]*Activity{}, doneBy: map[netip.Addr]map[int]bool{}, parts: map[partKey]*coverage{},
	}
	return l, nil
}

// open registers l and starts its expiry (counted from now: a share's
// files were listed first).
func (l *Link) open() error {
	l.expires = l.s.opts.Now().Add(l.opts.Expire)
	if err := l.s.add(l); err != nil {
		return err
	}
	// Under mu: the timer may run end at once (an expiry over as the link
	// opens), which reads it.
	l.mu.Lock()
	l.timer = time.AfterFunc(l.opts.Expire, func() { l.end(ErrExpired) })
	l.mu.Unlock()
	return nil
}

// Kind says whether the link shares or receives.
func (l *Link) Kind() Kind { return l.kind }

// Path is the link's URL path, "/l/<token>/".
func (l *Link) Path() string { return "/l/" + l.token + "/" }

// Expires is when the link ends by itself.
func (l *Link) Expires() time.Time { return l.expires }

// HasPIN says whether the link asks for a PIN.
func (l *Link) HasPIN() bool { return l.opts.PIN != "" }

// Events delivers what happens on the link; the channel is closed once the
// link ended (after its EventEnded). A reader that falls behind misses
// progress events, never the others up to the channel's room; Activities
// always has the current state.
func (l *Link) Events() <-chan Event { return l.events }

// Done is closed when the link ends.
func (l *Link) Done() <-chan struct{} { return l.ctx.Done() }

// Err is why the link ended (ErrStopped, ErrExpired, ErrOnce, ErrClosed),
// or nil while it is open.
func (l *Link) Err() error {
	if l.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.ctx)
}

// Stop ends the link at once: transfers in flight are cut, uploads not
// finished are discarded (their .partial files removed), and from then on
// the link answers 410. It waits until nothing of the link runs any more.
func (l *Link) Stop() {
	l.end(ErrStopped)
	l.wait()
}

// end ends the link with why, once.
func (l *Link) end(why error) {
	l.mu.Lock()
	if l.ctx.Err() != nil {
		l.mu.Unlock()
		if l.recv != nil && !errors.Is(why, ErrExpired) {
			l.recv.cutGrace() // stopped or closed while uploads finish: cut them
		}
		return
	}
	// A receive link that expires lets the uploads going then finish
	// (ReceiveOptions.ExpiryGrace); it stays the server's until they did,
	// answering 410 to every other request.
	graced := errors.Is(why, ErrExpired) && l.recv != nil && l.recv.beginGrace()
	// Under mu, so that no request joins wg after this (see serve), and
	// the clean-up below joins it before anyone waits for the end.
	l.wg.Add(1)
	l.cancel(why)
	timer := l.timer
	l.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	if !graced {
		l.s.remove(l, why)
	}
	go func() {
		defer l.wg.Done()
		if graced {
			l.recv.finish()
			l.s.remove(l, why)
		}
		// Requests in flight see the cancelled context (and past deadlines,
		// see serve) and return; then what they left is cleaned up, and
		// nothing can emit any more when the channel closes.
		l.reqs.Wait()
		if l.recv != nil {
			l.recv.stop(context.Cause(l.ctx))
		}
		if l.share != nil {
			l.share.close() // its folders, closed before Stop returns
		}
		l.emit(Event{Kind: EventEnded, Err: context.Cause(l.ctx)})
		close(l.events)
	}()
}

// wait returns once the link's requests and goroutines are over.
func (l *Link) wait() { l.wg.Wait() }

// expired reports whether the link's time ran out, by the server's clock
// (which the timer may not have noticed yet).
func (l *Link) expired() bool { return !l.s.opts.Now().Before(l.expires) }

// EventKind says what an Event reports.
type EventKind int

// The kinds of event.
const (
	// EventDevice: a device opened the link for the first time.
	EventDevice EventKind = iota + 1
	// EventPIN: a device typed a wrong PIN (Err says so) or the right one.
	EventPIN
	// EventStart: a download or upload began (Activity says which).
	EventStart
	// EventProgress: bytes moved (coalesced to a few a second per transfer).
	EventProgress
	// EventDone: a transfer ended, whole or not (Activity.Err says why).
	EventDone
	// EventTurnedAway: a device was turned away, the link taking as many
	// as it takes (Guards counts them).
	EventTurnedAway
	// EventEnded: the link ended (Err says why); the last event.
	EventEnded
)

// Event is one thing that happened on a link.
type Event struct {
	Kind     EventKind
	Device   netip.Addr // the browser's address, when one is concerned
	Activity *Activity  // a copy, for EventStart, EventProgress, EventDone
	Err      error
}

// Activity is one download or upload of a link.
type Activity struct {
	ID      int64
	Device  netip.Addr
	Upload  bool   // from the browser (receive link), else to it
	Folder  bool   // an empty folder a page sent (Arrival.Folder), Size 0: made, not written
	Name    string // the file's name, or the zip's
	Zip     bool   // the whole share as one zip
	Size    int64  // bytes in all (-1 when not known)
	Bytes   int64  // bytes moved so far
	Started time.Time
	Done    bool
	// SavedAs is where an upload was saved, relative to the destination,
	// when it differs from Name ("photo (1).jpg").
	SavedAs string
	// LeftOut names what a zip left out, each with why ("a.txt (no such
	// file or directory)"): files deleted or moved since they were shared.
	LeftOut []string
	Err     error // why it did not finish, when Done
}

// Devices returns the addresses of the devices that opened the link.
func (l *Link) Devices() []netip.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]netip.Addr, 0, len(l.devices))
	for d := range l.devices {
		out = append(out, d)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// Activities returns the link's transfers, oldest first.
func (l *Link) Activities() []Activity {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Activity, 0, len(l.order))
	for _, id := range l.order {
		out = append(out, *l.acts[id])
	}
	return out
}

// emit sends an event without ever blocking the link: progress is dropped
// when the reader is behind; other events wait for room only while the
// link is open.
func (l *Link) emit(ev Event) {
	if ev.Kind == EventProgress {
		select {
		case l.events <- ev:
		default:
		}
		return
	}
	select {
	case l.events <- ev:
	default:
		// Full: give the reader a moment without stalling the transfer.
		t := time.NewTimer(100 * time.Millisecond)
		defer t.Stop()
		select {
		case l.events <- ev:
		case <-t.C:
			l.s.opts.Logger.Debug("weblink: event dropped, reader behind", "kind", ev.Kind)
		}
	}
}

// progressEvery is how often a transfer's progress is published at most.
const progressEvery = 250 * time.Millisecond

// tracker follows one transfer's bytes and publishes them.
type tracker struct {
	l    *Link
	id   int64
	last time.Time
}

// track starts an activity and publishes it.
func (l *Link) track(a Activity) *tracker {
	a.ID = l.nextID.Add(1)
	a.Started = l.s.opts.Now()
	l.mu.Lock()
	l.acts[a.ID] = &a
	l.order = append(l.order, a.ID)
	if len(l.order) > maxActivities {
		// Forget the oldest finished one.
		for i, id := range l.order {
			if l.acts[id].Done {
				delete(l.acts, id)
				l.order = append(l.order[:i], l.order[i+1:]...)
				break
			}
		}
	}
	cp := a
	l.mu.Unlock()
	l.emit(Event{Kind: EventStart, Device: a.Device, Activity: &cp})
	// The first bytes are published at once: a row shows it moves.
	return &tracker{l: l, id: a.ID}
}

// add counts n more bytes and publishes the progress now and then.
func (t *tracker) add(n int64) {
	l := t.l
	l.mu.Lock()
	a := l.acts[t.id]
	if a == nil {
		l.mu.Unlock()
		return
	}
	a.Bytes += n
	now := l.s.opts.Now()
	due := now.Sub(t.last) >= progressEvery
	var cp Activity
	if due {
		t.last = now
		cp = *a
	}
	l.mu.Unlock()
	if due {
		l.emit(Event{Kind: EventProgress, Device: cp.Device, Activity: &cp})
	}
}

// set puts the byte count at n (an upload resumed at an offset).
func (t *tracker) set(n int64) {
	t.l.mu.Lock()
	if a := t.l.acts[t.id]; a != nil {
		a.Bytes = n
	}
	t.l.mu.Unlock()
}

// done ends the activity with err (nil: whole) and publishes it.
// leftOut notes what a zip left out (Activity.LeftOut).
func (t *tracker) leftOut(names []string) {
	if len(names) == 0 {
		return
	}
	t.l.mu.Lock()
	if a := t.l.acts[t.id]; a != nil {
		a.LeftOut = names
	}
	t.l.mu.Unlock()
}

func (t *tracker) done(savedAs string, err error) {
	l := t.l
	l.mu.Lock()
	a := l.acts[t.id]
	if a == nil || a.Done {
		l.mu.Unlock()
		return
	}
	a.Done, a.Err = true, err
	if savedAs != a.Name {
		a.SavedAs = savedAs
	}
	cp := *a
	l.mu.Unlock()
	l.emit(Event{Kind: EventDone, Device: cp.Device, Activity: &cp})
}

// maxTurnedAway bounds the devices turned away a link counts.
const maxTurnedAway = 1000

// Guards says what the link kept out: the wrong PINs typed, whether it
// took as many as it takes (no one can type the PIN any more), and the
// devices turned away because it had as many as it takes. Its owner is
// told, so that a link that leaked or is being guessed can be stopped.
func (l *Link) Guards() (wrongPINs int, locked bool, turnedAway int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pinFails, l.opts.PIN != "" && l.pinFails >= l.opts.MaxPINTries, len(l.away)
}

// sessionCookie is the name of the cookie that carries a PIN session.
const sessionCookie = "ferry_pin"

// admit decides whether r may use the link: a device within MaxDevices and,
// with a PIN, one that typed it. It answers the request itself when not.
func (l *Link) admit(w http.ResponseWriter, r *http.Request) (dev netip.Addr, ok bool) {
	dev = remoteAddr(r)
	l.mu.Lock()
	known := l.devices[dev]
	if !known && len(l.devices) >= l.opts.MaxDevices {
		first := !l.away[dev] && len(l.away) < maxTurnedAway
		if first {
			if l.away == nil {
				l.away = map[netip.Addr]bool{}
			}
			l.away[dev] = true
		}
		l.mu.Unlock()
		if first {
			l.emit(Event{Kind: EventTurnedAway, Device: dev})
		}
		page(w, http.StatusTooManyRequests, "Too many devices", "This link is already used by as many devices as it takes. Ask for a new link.")
		return dev, false
	}
	if !known {
		l.devices[dev] = true
	}
	l.mu.Unlock()
	if !known {
		l.emit(Event{Kind: EventDevice, Device: dev})
	}
	return dev, true
}

// authorized reports whether r carries a session of a device that typed the
// PIN (always true for a link without one).
func (l *Link) authorized(r *http.Request) bool {
	if l.opts.PIN == "" {
		return true
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil || len(c.Value) != 32 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.sessions[c.Value]
	return ok
}

// errPINLocked means the link took its MaxPINTries wrong PINs.
var errPINLocked = errors.New("too many wrong PINs")

// errWrongPIN means the PIN typed is not the link's.
var errWrongPIN = errors.New("wrong PIN")

// checkPIN compares a typed PIN, in constant time, and opens a session for
// dev when it is right.
func (l *Link) checkPIN(dev netip.Addr, typed string) (session string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pinFails >= l.opts.MaxPINTries {
		return "", errPINLocked
	}
	if len(typed) > maxPINBytes || subtle.ConstantTimeCompare([]byte(typed), []byte(l.opts.PIN)) != 1 {
		l.pinFails++
		return "", errWrongPIN
	}
	if len(l.sessions) >= 4*l.opts.MaxDevices {
		// A device that types the PIN again and again gets new sessions;
		// the oldest ones are not told apart from the rest: start over.
		clear(l.sessions)
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	session = hex.EncodeToString(b)
	l.sessions[session] = dev
	return session, nil
}
