package engine

import (
	"slices"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/internal/clock"
)

// sumWindow is how long what happens under one key is summed up before it
// is told (minuteSums).
const sumWindow = time.Minute

// minuteSums sums up, per key, what a flood could make by the thousand into
// at most one event a minute per key: the first of a key is told at once;
// those that follow within a minute of it are summed up and told at the
// minute's end, and so on every minute while they go on; a quiet minute
// forgets the key, whose next one is told at once. At most max keys are
// counted apart: a new key beyond them, once the keys whose minute passed
// quietly are forgotten, is counted under others(key), the rest together.
// So what it keeps and tells is bounded by max (and the others' keys),
// however many come, and add never blocks on its reader: tell publishes on
// the engine's bus, which drops rather than waits. Sums still waiting for
// their minute's end are told as it closes, the oldest first; nothing is
// told after. EventLocalSendPIN and EventRefused are told so.
type minuteSums[K comparable, S any] struct {
	clock  clock.Clock
	max    int
	others func(K) K
	tell   func(key K, sum S, n int)

	mu     sync.Mutex // guards the fields below
	keys   map[K]*minuteSum[S]
	closed bool
}

// minuteSum is one key's sum not told yet, since its last event (at
// start), and the timer that ends its minute.
type minuteSum[S any] struct {
	sum   S
	n     int // what sum counts; 0: nothing came since the last told
	start time.Time
	first time.Time // when the first that sum counts came
	timer clock.Timer
	gen   int // which timer is this minute's: an older one that fires does nothing
}

// add counts one of key, which count adds to a sum, at now. The time is
// read under the lock, so that the sums take their counts in the order of
// their times: read before it, a count that waited for the lock was added
// after a later one, and a sum's first time came after its last (seen in
// TestFloodRefusalsAreCounted under -race).
func (w *minuteSums[K, S]) add(key K, count func(sum *S, now time.Time)) {
	w.mu.Lock()
	now := w.clock.Now()
	if w.closed {
		w.mu.Unlock()
		return
	}
	if w.keys == nil {
		w.keys = map[K]*minuteSum[S]{}
	}
	t := w.keys[key]
	if t == nil && len(w.keys) >= w.max {
		w.forgetQuietLocked(now)
		if len(w.keys) >= w.max {
			key = w.others(key)
			t = w.keys[key]
		}
	}
	if t != nil && (t.n > 0 || now.Sub(t.start) < sumWindow) {
		if t.n == 0 {
			t.first = now
		}
		count(&t.sum, now)
		t.n++ // told at the minute's end
		w.mu.Unlock()
		return
	}
	// The first in a minute: told at once, and a minute begins.
	if t == nil {
		t = &minuteSum[S]{}
		w.keys[key] = t
	}
	var s S
	count(&s, now)
	w.startLocked(key, t, now)
	w.mu.Unlock()
	w.tell(key, s, 1)
}

// startLocked begins key's minute at now.
func (w *minuteSums[K, S]) startLocked(key K, t *minuteSum[S], now time.Time) {
	if t.timer != nil {
		t.timer.Stop()
	}
	t.gen++
	gen := t.gen
	t.start = now
	t.timer = w.clock.AfterFunc(sumWindow, func() { w.minute(key, gen) })
}

// forgetQuietLocked forgets the keys whose last minute passed with nothing
// (their timers may not have run yet).
func (w *minuteSums[K, S]) forgetQuietLocked(now time.Time) {
	for k, t := range w.keys {
		if t.n == 0 && now.Sub(t.start) >= sumWindow {
			t.timer.Stop()
			delete(w.keys, k)
		}
	}
}

// minute ends key's minute gen: what came in it is told, and another
// minute begins; a quiet minute forgets the key.
func (w *minuteSums[K, S]) minute(key K, gen int) {
	w.mu.Lock()
	t := w.keys[key]
	if w.closed || t == nil || t.gen != gen {
		w.mu.Unlock()
		return
	}
	if t.n == 0 {
		delete(w.keys, key)
		w.mu.Unlock()
		return
	}
	s, n := t.sum, t.n
	var zero S
	t.sum, t.n = zero, 0
	w.startLocked(key, t, w.clock.Now())
	w.mu.Unlock()
	w.tell(key, s, n)
}

// close stops the timers and tells, at once, the sums still waiting for
// their minute's end, the oldest first; nothing is told after.
func (w *minuteSums[K, S]) close() {
	type pending struct {
		key   K
		sum   S
		n     int
		first time.Time
	}
	var left []pending
	w.mu.Lock()
	w.closed = true
	for k, t := range w.keys {
		t.timer.Stop()
		if t.n > 0 {
			left = append(left, pending{k, t.sum, t.n, t.first})
		}
	}
	w.keys = nil
	w.mu.Unlock()
	slices.SortFunc(left, func(a, b pending) int { return a.first.Compare(b.first) })
	for _, p := range left {
		w.tell(p.key, p.sum, p.n)
	}
}

// len is the number of keys counted now (tests).
func (w *minuteSums[K, S]) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.keys)
}
