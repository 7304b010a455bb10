package uiloop

import (
	"runtime"
	"testing"
	"time"
)

// TestRunsInOrderAndMeasures: the functions run one at a time in the order
// handed over, Run drains the queue before it returns, and the longest
// function is the stall.
func TestRunsInOrderAndMeasures(t *testing.T) {
	l := New()
	stop := make(chan struct{})
	var got []int
	l.Do(func() { got = append(got, 1) })
	l.Do(func() {
		got = append(got, 2)
		deadline := time.Now().Add(30 * time.Millisecond)
		for time.Now().Before(deadline) { // busy: CPU time as well as wall time
		}
	})
	go l.Run(stop)
	l.Do(func() { got = append(got, 3) })
	close(stop)
	<-l.Done()
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("ran %v, want [1 2 3]", got)
	}
	s := l.Stats()
	if s.Updates != 3 {
		t.Errorf("updates %d, want 3", s.Updates)
	}
	if s.MaxStall < 30*time.Millisecond {
		t.Errorf("longest stall %v, want at least the busy function's 30ms", s.MaxStall)
	}
	if runtime.GOOS == "linux" && s.MaxCPU <= 0 {
		t.Errorf("no CPU time read for the busy function")
	}
	if s.MaxWait <= 0 {
		t.Errorf("no wait measured for functions queued before Run started")
	}
}
