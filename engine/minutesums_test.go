package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/clock"
)

// steppingClock reads a time a second later at each Now; the Now after
// hook is set runs it once before it returns.
type steppingClock struct {
	clock.Real
	at   atomic.Int64
	hook atomic.Pointer[func()]
}

func (c *steppingClock) Now() time.Time {
	t := time.Unix(c.at.Add(1), 0)
	if f := c.hook.Swap(nil); f != nil {
		(*f)()
	}
	return t
}

// A count that read its time before another count is added before it: a
// sum's first time is never after its last, whichever count gets the lock
// first. Its time was read before the lock, and the count that waited was
// added after a later one (TestFloodRefusalsAreCounted failed so under
// -race: "First ... Last" a few milliseconds before it).
func TestMinuteSumsCountInTheOrderOfTheirTimes(t *testing.T) {
	type span struct{ first, last time.Time }
	c := &steppingClock{}
	var told []span
	var mu sync.Mutex
	w := &minuteSums[string, span]{clock: c, max: 4, others: func(string) string { return "" },
		tell: func(_ string, s span, _ int) { mu.Lock(); told = append(told, s); mu.Unlock() }}
	count := func(s *span, now time.Time) {
		if s.first.IsZero() {
			s.first = now
		}
		s.last = now
	}
	w.add("k", count) // the minute begins, told at once
	// The next count reads its time, then another counts while it waits
	// (up to a while: with the time read under the lock, the other waits
	// for this one instead).
	second := make(chan struct{})
	hook := func() {
		go func() { w.add("k", count); close(second) }()
		select {
		case <-second:
		case <-time.After(200 * time.Millisecond):
		}
	}
	c.hook.Store(&hook)
	w.add("k", count)
	<-second
	w.close() // tells the minute's sum now
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 2 {
		t.Fatalf("told %d sums, want 2 (the minute's first, then its sum): %+v", len(told), told)
	}
	if s := told[1]; s.last.Before(s.first) {
		t.Errorf("the minute's sum runs from %v to %v: its first count after its last", s.first.Unix(), s.last.Unix())
	}
}
