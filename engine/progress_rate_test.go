package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/clock"
)

// TestRateCountsOnlyBytesMoved: a resumed send's progress counts the
// chunks the receiver already held as in place, but its rate is what
// crossed the network. Before, the first second after a resume that
// skipped 20 MB on a 2.5 MB/s link read 22.5 MB/s (issue 26, seen in the
// slow-link GUI test as "10.5 MB/s · 2 s left" on a 20 Mbit/s link).
func TestRateCountsOnlyBytesMoved(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := testEngine(t, Options{Clock: clk, ProgressInterval: time.Second})
	events, stop := e.Subscribe(16)
	defer stop()
	tr := &Transfer{id: "t-rate", dir: Sending}
	var held, sent atomic.Int64
	held.Store(4 << 20) // known held before the first chunk went out
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	timers := clk.Timers()
	go func() {
		defer close(done)
		e.watchProgressMoved(ctx, tr, func() int64 { return held.Load() + sent.Load() }, sent.Load, 40<<20, func() int { return 0 }, 1)
	}()
	defer func() { cancel(); <-done }()
	if err := clk.WaitTimers(ctx, timers+1); err != nil {
		t.Fatal(err)
	}
	next := func() *Progress {
		t.Helper()
		for {
			select {
			case ev := <-events:
				if ev.Kind == EventProgress && ev.TransferID == "t-rate" {
					return ev.Progress
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no progress event")
			}
		}
	}
	// One second: the scheduler passes 16 MB more of held chunks and
	// 2.5 MB go out.
	held.Add(16 << 20)
	sent.Add(2_500_000)
	clk.Advance(time.Second)
	p := next()
	if p.Bytes != 20<<20+2_500_000 {
		t.Errorf("bytes in place %d, want %d", p.Bytes, 20<<20+2_500_000)
	}
	if p.Rate != 2_500_000 {
		t.Errorf("rate %.0f B/s after one second that moved 2.5 MB, want 2500000", p.Rate)
	}
	sent.Add(2_500_000)
	clk.Advance(time.Second)
	if p = next(); p.Rate != 2_500_000 {
		t.Errorf("rate %.0f B/s, want 2500000", p.Rate)
	}
	if want := float64(40<<20-p.Bytes) / 2_500_000; p.ETA != want {
		t.Errorf("ETA %.2f s, want %.2f", p.ETA, want)
	}
}
