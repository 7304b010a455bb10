package pack

import (
	"sync"
	"sync/atomic"
	"time"
)

// Window is how often a Gate looks at what its session's chunks took.
const Window = 250 * time.Millisecond

// defaultPackRate is what a Gate takes one core to pack, in bytes of
// chunk a second, before it has packed anything: about this VM's figure
// for source code (240 MB/s), rounded down.
const defaultPackRate = 200e6

// Sample is what one chunk took its data stream.
type Sample struct {
	Bytes   int           // the chunk's length
	Wire    int           // what went on the wire for it (header and payload)
	Busy    time.Duration // from reading it to its last write
	Blocked time.Duration // of Busy, its writes (waiting on the link)
	// Packed: it was packed, which took PackTime (the gate's measure of
	// what one core packs).
	Packed   bool
	PackTime time.Duration
}

// Gate decides, for one sending session in Auto, whether its chunks are
// packed. Every data stream reports each chunk it sent (Sent); once a
// Window with enough work in it has passed, the gate looks at it:
//
//   - Packing off: when the sender waited on the link most of the time
//     (its writes blocked for at least half of its busy time) and the
//     link carried less than what one core packs (measured; 200 MB/s
//     until then), packing pays: on. A sender held by its own CPU or
//     disk leaves packing off: it would only add to the load. That window's
//     rate is kept as what the session moves unpacked.
//   - Packing on: it stays on while the link is still what the sender
//     waits on and carries less than a core packs (packing can only have
//     helped), or, held by its CPU, while the chunks' bytes move at least a
//     tenth faster than they did unpacked within the last RawMaxAge; else
//     off, and the next windows measure again.
//
// A window with little work in it (the sender waiting for the receiver)
// changes nothing, so a session starts unpacked and is judged on what it
// moves. Packing is safe from any goroutine.
type Gate struct {
	mode Mode
	on   atomic.Bool

	mu        sync.Mutex // guards the fields below
	start     time.Time  // of the current window
	bytes     int64      // the chunks' bytes in the current window
	wire      int64      // what went on the wire in it
	busy      int64      // ns, summed over the streams
	blocked   int64      // ns of busy spent in writes
	packIn    int64      // bytes packed (that shrank), in all windows
	packNanos int64      // the time packing them took
	rawRate   float64    // bytes a second of the last link-bound window unpacked (0: none yet)
	rawAt     time.Time  // when rawRate was measured
	turns     int        // times the gate turned on or off (tests, logs)
}

// NewGate returns a gate for a session in mode, its first window starting
// at now.
func NewGate(mode Mode, now time.Time) *Gate {
	g := &Gate{mode: mode, start: now}
	g.on.Store(mode == Always)
	return g
}

// Packing reports whether chunks are packed now.
func (g *Gate) Packing() bool { return g.on.Load() }

// Turns is how many times the gate turned packing on or off.
func (g *Gate) Turns() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.turns
}

// Sent records one chunk's sample at now, and judges the window once it
// is over.
func (g *Gate) Sent(now time.Time, s Sample) {
	if g.mode != Auto {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bytes += int64(s.Bytes)
	g.wire += int64(s.Wire)
	g.busy += int64(s.Busy)
	g.blocked += int64(s.Blocked)
	if s.Packed {
		g.packIn += int64(s.Bytes)
		g.packNanos += int64(s.PackTime)
	}
	elapsed := now.Sub(g.start)
	if elapsed < Window {
		return
	}
	g.judge(now, elapsed)
	g.start = now
	g.bytes, g.wire, g.busy, g.blocked = 0, 0, 0, 0
}

// judge decides on the window just over at now (see Gate); mu is held.
func (g *Gate) judge(now time.Time, elapsed time.Duration) {
	if g.busy < int64(elapsed)/4 {
		return // mostly waiting on something else than sending
	}
	linkBound := 2*g.blocked >= g.busy
	secs := elapsed.Seconds()
	rate := float64(g.wire) / secs
	on := g.on.Load()
	want := on
	switch {
	case !on && linkBound:
		g.rawRate, g.rawAt = float64(g.bytes)/secs, now
		want = rate < g.packRate()
	case on && linkBound:
		// The link is still the limit, unless it now carries more than
		// packing makes (the path moved to a faster one).
		want = rate < g.packRate()
	case on:
		// Held by the CPU: packing stays while it moves the chunks'
		// bytes faster than they moved unpacked, measured lately; an
		// old measure (the path may have changed) is taken again.
		want = g.rawRate > 0 && now.Sub(g.rawAt) < RawMaxAge && float64(g.bytes)/secs >= 1.1*g.rawRate
	}
	if want != on {
		g.on.Store(want)
		g.turns++
	}
}

// RawMaxAge is how long a Gate trusts what a session moved unpacked
// before it sends unpacked again to measure it (a window's worth).
const RawMaxAge = 10 * time.Second

// packRate is what one core packs, in bytes a second.
func (g *Gate) packRate() float64 {
	if g.packIn < 1<<20 || g.packNanos <= 0 {
		return defaultPackRate
	}
	return float64(g.packIn) / time.Duration(g.packNanos).Seconds()
}
