package stallmeter

import (
	"io"
	"testing"
	"time"
)

// clock is a fake clock that only gappy readers move, so a busy machine's
// scheduling cannot add a stall.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// gappy yields its pieces with the given waits before each, on clock.
type gappy struct {
	clock *clock
	waits []time.Duration
	i     int
}

func (g *gappy) Read(p []byte) (int, error) {
	if g.i == len(g.waits) {
		return 0, io.EOF
	}
	g.clock.t = g.clock.t.Add(g.waits[g.i])
	g.i++
	p[0] = 1
	return 1, nil
}

func TestMeterCountsOnlyLongWaitsAfterTheStart(t *testing.T) {
	m := New(Threshold(40 * time.Millisecond)) // 20 ms
	c := &clock{t: time.Unix(1e9, 0)}
	m.now = c.now
	if th := m.Stats().ThresholdMs; th != 20 {
		t.Fatalf("threshold %v ms, want 20", th)
	}
	// First wait (start) is long but does not count; then 2 stalls of
	// ~60 ms and short waits that do not count.
	a := m.Reader(&gappy{clock: c, waits: []time.Duration{80 * time.Millisecond, 0, 60 * time.Millisecond, time.Millisecond, 60 * time.Millisecond}})
	b := m.Reader(&gappy{clock: c, waits: []time.Duration{0, time.Millisecond, 2 * time.Millisecond}})
	for _, r := range []io.Reader{a, b} {
		if _, err := io.ReadAll(r); err != nil {
			t.Fatal(err)
		}
	}
	s := m.Stats()
	if s.Stalls != 2 || s.StalledStreams != 1 {
		t.Fatalf("stats %+v, want 2 stalls on 1 stream", s)
	}
	if s.Seconds != 0.12 || s.LongestSeconds != 0.06 {
		t.Fatalf("durations %+v", s)
	}
}

func TestMeterWithoutThresholdCountsNothing(t *testing.T) {
	m := New(0)
	c := &clock{t: time.Unix(1e9, 0)}
	m.now = c.now
	io.ReadAll(m.Reader(&gappy{clock: c, waits: []time.Duration{0, 30 * time.Millisecond}}))
	if s := m.Stats(); s.Stalls != 0 {
		t.Fatalf("counted %+v before a threshold was set", s)
	}
	if Threshold(time.Millisecond) != 10*time.Millisecond || Threshold(120*time.Millisecond) != 60*time.Millisecond {
		t.Fatal("Threshold rule changed")
	}
}
