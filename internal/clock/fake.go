package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Fake is a Clock that moves only when told (Advance, Set). It moves in
// one step: the timers that fall due on the way fire in the order of their
// deadlines, each sending its deadline, and whatever they wake reads the
// clock at the end of the move, never a time on the way. So a timer armed
// by a goroutine that a firing woke counts from the end, and one Advance
// is one step of a chain of timers (a back-off, then the next attempt's),
// however the goroutines are scheduled. A ticker fires once per period
// passed; its channel holds one tick, like time.Ticker's, so a reader that
// has not taken the last one misses the next (one Advance over many periods
// delivers one tick). A test that must know a component armed its timer before
// it moves the clock waits with WaitTimers, never with a sleep. Safe for
// concurrent use.
type Fake struct {
	mu     sync.Mutex // guards the fields below
	now    time.Time
	timers []*fakeTimer  // armed, in no order
	armed  chan struct{} // closed and replaced whenever a timer is armed
}

// NewFake returns a fake clock that reads start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, armed: make(chan struct{})}
}

type fakeTimer struct {
	f      *Fake
	when   time.Time
	period time.Duration // > 0 for a ticker
	ch     chan time.Time
	fn     func() // AfterFunc
	active bool   // guarded by f.mu
}

// Now is the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer that fires when the clock reaches Now()+d.
func (f *Fake) NewTimer(d time.Duration) (Timer, <-chan time.Time) {
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1)}
	f.arm(t, d)
	return t, t.ch
}

// NewTicker returns a ticker that fires every d of fake time.
func (f *Fake) NewTicker(d time.Duration) (Ticker, <-chan time.Time) {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	t := &fakeTimer{f: f, period: d, ch: make(chan time.Time, 1)}
	f.arm(t, d)
	return fakeTicker{t}, t.ch
}

// AfterFunc runs fn in its own goroutine once the clock reaches Now()+d.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	t := &fakeTimer{f: f, fn: fn}
	f.arm(t, d)
	return t
}

func (f *Fake) arm(t *fakeTimer, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armLocked(t, d)
}

func (f *Fake) armLocked(t *fakeTimer, d time.Duration) {
	t.when = f.now.Add(d)
	if !t.active {
		t.active = true
		f.timers = append(f.timers, t)
	}
	close(f.armed)
	f.armed = make(chan struct{})
}

func (f *Fake) disarmLocked(t *fakeTimer) bool {
	if !t.active {
		return false
	}
	t.active = false
	f.timers = slices.DeleteFunc(f.timers, func(x *fakeTimer) bool { return x == t })
	return true
}

// Timers is how many timers, tickers and AfterFuncs are armed now.
func (f *Fake) Timers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitTimers returns once at least n timers are armed, or with ctx's error.
func (f *Fake) WaitTimers(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		have, armed := len(f.timers), f.armed
		f.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-armed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Advance moves the clock on by d, firing what falls due on the way.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	end := f.now.Add(d)
	f.mu.Unlock()
	f.Set(end)
}

// Set moves the clock to t (never back), firing what falls due on the way.
func (f *Fake) Set(t time.Time) {
	// The timers fire and the clock moves under one lock (a send never
	// blocks; an AfterFunc runs in its own goroutine): a goroutine a firing
	// wakes must not read a time on the way, nor arm a timer that this move
	// fires too. Stepping the clock from deadline to deadline, unlocked in
	// between, let one Advance run two back-offs when the woken goroutine
	// was quick (TestOutboxGivesUp under -race and load).
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		var next *fakeTimer
		for _, x := range f.timers {
			if !x.when.After(t) && (next == nil || x.when.Before(next.when)) {
				next = x
			}
		}
		if next == nil {
			break
		}
		at := next.when
		if f.now.After(at) { // armed with a negative duration: due at once
			at = f.now
		}
		if next.period > 0 {
			next.when = next.when.Add(next.period)
		} else {
			f.disarmLocked(next)
		}
		switch {
		case next.fn != nil:
			go next.fn()
		default:
			select {
			case next.ch <- at:
			default: // the reader has not taken the last one: like time's, it misses this one
			}
		}
	}
	if t.After(f.now) {
		f.now = t
	}
}

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.f.disarmLocked(t)
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.active
	if t.period > 0 {
		t.period = d
	}
	t.f.armLocked(t, d)
	return was
}

// fakeTicker is a ticker's face of its timer (no results).
type fakeTicker struct{ t *fakeTimer }

func (t fakeTicker) Stop()                 { t.t.Stop() }
func (t fakeTicker) Reset(d time.Duration) { t.t.Reset(d) }
