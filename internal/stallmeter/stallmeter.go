// Package stallmeter counts stream stalls, the visible cost of head-of-line
// blocking: reads on a stream that had already started and then waited
// longer than a threshold for its next bytes. On one TCP stream a lost
// segment stalls everything behind it for about a round trip; QUIC streams
// and parallel TCP connections stall only the one the loss hit. Counting
// stalls per stream, next to the losses of the same run, shows which.
//
// A read also waits when the flow is limited by its congestion window (data
// comes in bursts once per round trip), so clean paths have stalls too; the
// lab's tables show the clean cells next to the lossy ones for that reason.
package stallmeter

import (
	"io"
	"sync/atomic"
	"time"
)

// Threshold is the wait that counts as a stall on a path whose minimum RTT
// is minRTT: half a round trip, at least 10 ms (below that, scheduling noise
// on a busy machine would count).
func Threshold(minRTT time.Duration) time.Duration { return max(10*time.Millisecond, minRTT/2) }

// Meter adds up the stalls of all the streams it wraps. Safe for
// concurrent use.
type Meter struct {
	threshold atomic.Int64 // ns; 0 until set
	stalls    atomic.Int64
	streams   atomic.Int64 // streams with at least one stall
	total     atomic.Int64 // ns
	longest   atomic.Int64 // ns
	now       func() time.Time
}

// New returns a meter counting waits longer than threshold; a zero
// threshold can be set later (SetThreshold), before which nothing counts.
func New(threshold time.Duration) *Meter {
	m := &Meter{now: time.Now}
	m.threshold.Store(int64(threshold))
	return m
}

// SetThreshold sets the threshold once the path's RTT is known.
func (m *Meter) SetThreshold(d time.Duration) { m.threshold.Store(int64(d)) }

// Stats is what a meter counted.
type Stats struct {
	Stalls         int64   `json:"stalls"`          // reads that waited longer than the threshold
	StalledStreams int64   `json:"stalled_streams"` // streams with at least one stall
	Seconds        float64 `json:"stall_seconds"`   // time spent in those waits, all streams
	LongestSeconds float64 `json:"longest_stall_seconds"`
	ThresholdMs    float64 `json:"stall_threshold_ms"`
}

// Stats returns the totals so far.
func (m *Meter) Stats() Stats {
	return Stats{
		Stalls: m.stalls.Load(), StalledStreams: m.streams.Load(),
		Seconds:        time.Duration(m.total.Load()).Seconds(),
		LongestSeconds: time.Duration(m.longest.Load()).Seconds(),
		ThresholdMs:    float64(m.threshold.Load()) / 1e6,
	}
}

// Reader wraps one stream. The wait for its first bytes is not a stall
// (nothing was flowing yet), nor is the wait that ends in EOF or an error.
func (m *Meter) Reader(r io.Reader) io.Reader { return &reader{r: r, m: m} }

type reader struct {
	r       io.Reader
	m       *Meter
	started bool
	stalled bool
}

func (r *reader) Read(p []byte) (int, error) {
	start := r.m.now()
	n, err := r.r.Read(p)
	if n > 0 {
		if r.started {
			r.m.wait(r.m.now().Sub(start), &r.stalled)
		}
		r.started = true
	}
	return n, err
}

func (m *Meter) wait(d time.Duration, stalled *bool) {
	th := m.threshold.Load()
	if th == 0 || int64(d) <= th {
		return
	}
	m.stalls.Add(1)
	m.total.Add(int64(d))
	if !*stalled {
		*stalled = true
		m.streams.Add(1)
	}
	for cur := m.longest.Load(); int64(d) > cur && !m.longest.CompareAndSwap(cur, int64(d)); cur = m.longest.Load() {
	}
}
