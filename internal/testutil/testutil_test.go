package testutil

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	WaitFor(t, "the third call", func() bool { return n.Add(1) >= 3 })
	if got := n.Load(); got != 3 {
		t.Errorf("cond called %d times, want 3", got)
	}
}

// A condition that never holds fails the test with what was awaited.
func TestWaitForFailsWithItsReason(t *testing.T) {
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		WaitForWithin(ft, "Godot", 20*time.Millisecond, func() bool { return false })
	}()
	<-done
	if ft.msg != "timed out after 20ms waiting for Godot" {
		t.Errorf("failure %q", ft.msg)
	}
}

// fakeT records a Fatalf and ends its goroutine, as testing.T would.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// parked waits until stop closes: a goroutine for TestStacks to find.
func parked(stop chan struct{}) { <-stop }

func TestStacks(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go parked(stop)
	for range 100 {
		if got := Stacks("testutil.parked"); strings.Contains(got, "chan receive") {
			if strings.Contains(Stacks("no/such/package"), "goroutine") {
				t.Error("Stacks of no package returned goroutines")
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the parked goroutine is not among the stacks:\n%s", Stacks("testutil"))
}
