package engine

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// stepClock moves one minute forward every time it is read.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Minute)
	return c.now
}

// What the engine records and reports comes from its clock.
func TestInjectedClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &stepClock{now: start}
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{Clock: clock})
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 64<<10)
	events, unsub := send.Subscribe(256)
	defer unsub()
	tr, err := send.Send(context.Background(), target(recv), []string{src}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Time.Before(start) || ev.Time.After(start.Add(24*time.Hour)) {
			t.Errorf("%s event stamped %v, not by the engine's clock", ev.Kind, ev.Time)
		}
		if ev.Kind == EventResult {
			break
		}
	}
	<-tr.Done()
	// The clock moved a minute per reading: the transfer took whole minutes.
	if d := tr.Result().Duration; d < 60 || d != float64(int(d)) {
		t.Errorf("duration %v s, not measured by the engine's clock", d)
	}
}
