package engine

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// A receiver left running goes back to its idle size after a burst (issue
// #14: RSS back under 64 MiB once an attack ended). The Go runtime frees
// dead objects only at its next collection, which an idle process does not
// start, and hands freed memory back to the system only slowly, so after a
// flood of connections (each costing quic-go some hundred KB while it
// lasts) or a session with a large manifest, a receiver would keep tens of
// MB it no longer uses.
//
// While no incoming session is served, trimLoop collects and returns memory
// when the heap grew by trimAbove since it last did, and while the heap
// stays that far above the smallest size it came back to: every trimEvery
// as long as the heap keeps changing (a flood of connections, which the
// engine does not see as sessions), and at growing intervals (up to
// trimMaxWait) once it holds still. A flood that ended is trimmed within
// seconds; a heap that is larger for good (the GUI's) costs a collection
// every few minutes at most.
const (
	trimEvery   = 10 * time.Second
	trimMaxWait = 5 * time.Minute
	trimAbove   = 16 << 20
)

// trimLoop returns unused memory to the system while the receiver is
// idle, until ctx ends.
func (e *Engine) trimLoop(ctx context.Context) {
	t := time.NewTicker(trimEvery)
	defer t.Stop()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
	heap := func() uint64 {
		metrics.Read(sample)
		var n uint64
		for _, s := range sample {
			if s.Value.Kind() == metrics.KindUint64 {
				n += s.Value.Uint64()
			}
		}
		return n
	}
	low := heap() // the smallest heap a trim came back to: the idle size
	last := low   // the heap after the last trim
	wait := trimEvery
	next := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			e.mu.Lock()
			busy := e.serving > 0
			e.mu.Unlock()
			h := heap()
			changed := h > last+trimAbove/4 || h+trimAbove/4 < last
			grew := h >= last+trimAbove
			above := h >= low+trimAbove && (changed || !now.Before(next))
			if busy || !grew && !above {
				continue
			}
			// Two collections: the first leaves what sync.Pools held
			// (quic-go pools its frames: tens of MB after a burst) in
			// their victim caches, the second frees it.
			runtime.GC()
			debug.FreeOSMemory()
			last = heap()
			switch {
			case last < low+trimAbove:
				low, wait = min(low, last), trimEvery
			case changed:
				wait = trimEvery
			default:
				wait = min(2*wait, trimMaxWait)
			}
			next = now.Add(wait)
		}
	}
}
