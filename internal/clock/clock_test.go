package clock

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

var start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func fired(c <-chan time.Time) (time.Time, bool) {
	select {
	case at := <-c:
		return at, true
	default:
		return time.Time{}, false
	}
}

func TestFakeTimerFiresAtItsDeadline(t *testing.T) {
	f := NewFake(start)
	tm, c := f.NewTimer(time.Second)
	f.Advance(999 * time.Millisecond)
	if _, ok := fired(c); ok {
		t.Fatal("fired before its deadline")
	}
	f.Advance(time.Millisecond)
	if at, ok := fired(c); !ok || !at.Equal(start.Add(time.Second)) {
		t.Fatalf("fired %v at %v, want at %v", ok, at, start.Add(time.Second))
	}
	if tm.Stop() {
		t.Error("Stop of a fired timer reported it active")
	}
	if tm.Reset(time.Minute) {
		t.Error("Reset of a fired timer reported it active")
	}
	f.Advance(time.Minute)
	if _, ok := fired(c); !ok {
		t.Error("a reset timer did not fire again")
	}
	if n := f.Timers(); n != 0 {
		t.Errorf("%d timers armed after all fired", n)
	}
}

func TestFakeStoppedTimerNeverFires(t *testing.T) {
	f := NewFake(start)
	tm, c := f.NewTimer(time.Second)
	if !tm.Stop() {
		t.Error("Stop of an armed timer reported it inactive")
	}
	f.Advance(time.Hour)
	if _, ok := fired(c); ok {
		t.Error("a stopped timer fired")
	}
	if !f.Now().Equal(start.Add(time.Hour)) {
		t.Errorf("now %v", f.Now())
	}
}

// Timers fire in deadline order, each seeing the clock at its deadline.
func TestFakeFiresInOrder(t *testing.T) {
	f := NewFake(start)
	var order []time.Time
	done := make(chan struct{}, 3)
	for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		f.AfterFunc(d, func() { done <- struct{}{} })
	}
	_, a := f.NewTimer(2500 * time.Millisecond)
	_, b := f.NewTimer(500 * time.Millisecond)
	f.Advance(10 * time.Second)
	for range 3 {
		<-done
	}
	for _, c := range []<-chan time.Time{b, a} {
		at, ok := fired(c)
		if !ok {
			t.Fatal("a timer did not fire")
		}
		order = append(order, at)
	}
	if !order[0].Equal(start.Add(500*time.Millisecond)) || !order[1].Equal(start.Add(2500*time.Millisecond)) {
		t.Errorf("fired at %v", order)
	}
}

// One Advance is one step of a chain of timers, however the goroutines are
// scheduled: what a firing wakes reads the clock at the end of the move,
// and a timer it arms then counts from there, so this move does not fire
// it. (A fake that stepped from deadline to deadline, unlocking between,
// let a quick goroutine read a time on the way and have its next timer
// fired by the same Advance: an outbox made two attempts in one back-off.)
func TestFakeAdvanceIsOneStep(t *testing.T) {
	f := NewFake(start)
	// Timers due on the way keep a move busy, so a goroutine woken early in
	// it has time to look at the clock.
	const onTheWay = 500
	for i := range onTheWay {
		f.NewTimer(time.Second + time.Duration(i)*time.Millisecond)
	}
	woke := make(chan time.Time, 2)
	go func() {
		for range 2 {
			_, c := f.NewTimer(500 * time.Millisecond)
			<-c
			woke <- f.Now()
		}
	}()
	if err := f.WaitTimers(t.Context(), onTheWay+1); err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Minute)
	if at := <-woke; !at.Equal(start.Add(time.Minute)) {
		t.Fatalf("the woken goroutine read %v, a time on the way; want the end of the move, %v", at, start.Add(time.Minute))
	}
	if err := f.WaitTimers(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-woke:
		t.Fatalf("a timer armed after a firing woke its goroutine fired in the same move (read %v)", at)
	default:
	}
	f.Advance(500 * time.Millisecond)
	if at := <-woke; !at.Equal(start.Add(time.Minute + 500*time.Millisecond)) {
		t.Errorf("the second link read %v", at)
	}
}

func TestFakeTicker(t *testing.T) {
	f := NewFake(start)
	tk, c := f.NewTicker(time.Second)
	var ticks int
	for range 5 {
		f.Advance(time.Second)
		if _, ok := fired(c); ok {
			ticks++
		}
	}
	if ticks != 5 {
		t.Errorf("%d ticks in 5 s of 1 s ticks", ticks)
	}
	// A reader that does not keep up misses ticks; it never blocks Advance.
	f.Advance(10 * time.Second)
	if _, ok := fired(c); !ok {
		t.Error("no tick after 10 s")
	}
	if _, ok := fired(c); ok {
		t.Error("the channel held more than one tick")
	}
	tk.Reset(time.Minute)
	f.Advance(59 * time.Second)
	if _, ok := fired(c); ok {
		t.Error("ticked before its new period")
	}
	f.Advance(time.Second)
	if _, ok := fired(c); !ok {
		t.Error("no tick after its new period")
	}
	tk.Stop()
	f.Advance(time.Hour)
	if _, ok := fired(c); ok {
		t.Error("a stopped ticker ticked")
	}
}

// WaitTimers lets a test know a component armed its timer before it moves
// the clock.
func TestFakeWaitTimers(t *testing.T) {
	f := NewFake(start)
	var ran atomic.Bool
	go func() {
		_, c := f.NewTimer(time.Minute)
		<-c
		ran.Store(true)
	}()
	if err := f.WaitTimers(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Minute)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := f.WaitTimers(ctx, 5); err == nil {
		t.Error("WaitTimers returned without five timers or an error")
	}
}

func TestRealIsTheSystemClock(t *testing.T) {
	c := Or(nil)
	if _, ok := c.(Real); !ok {
		t.Fatalf("Or(nil) = %T", c)
	}
	_, ch := c.NewTimer(0)
	<-ch
	done := make(chan struct{})
	c.AfterFunc(0, func() { close(done) })
	<-done
	tk, tc := c.NewTicker(time.Millisecond)
	<-tc
	tk.Stop()
	f := NewFake(start)
	if Or(f) != Clock(f) {
		t.Error("Or replaced a clock")
	}
}

func TestAt(t *testing.T) {
	now := time.Date(2026, 12, 5, 6, 22, 0, 0, time.Local)
	for d, want := range map[time.Duration]string{
		time.Hour:      "07:22",
		17 * time.Hour: "23:22",
		18 * time.Hour: "tomorrow 00:22",
		30 * time.Hour: "tomorrow 12:22",
		48 * time.Hour: "Mon 7 Dec 06:22",
	} {
		if got := At(now.Add(d), now); got != want {
			t.Errorf("in %v: %q, want %q", d, got, want)
		}
	}
	// The last day of a year, and of a month.
	eve := time.Date(2026, 12, 31, 20, 0, 0, 0, time.Local)
	if got := At(eve.Add(6*time.Hour), eve); got != "tomorrow 02:00" {
		t.Errorf("new year: %q", got)
	}
}
