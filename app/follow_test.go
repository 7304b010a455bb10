package app

import (
	"context"
	"sync"
	"testing"
)

// changes is a fake NetworkChanged: fire closes the channel handed out
// last; took says when the follower took one.
type changes struct {
	mu   sync.Mutex
	ch   chan struct{}
	took chan struct{}
}

func (c *changes) changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.took <- struct{}{}
	return c.ch
}

func (c *changes) fire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.ch)
	c.ch = make(chan struct{})
}

// The status line follows the network on its change events (issue 26,
// finding 6): each change is applied once, on the event, with nothing
// else waking the follower.
func TestFollowNetworkAppliesEachChange(t *testing.T) {
	c := &changes{ch: make(chan struct{}), took: make(chan struct{}, 1)}
	var mu sync.Mutex
	applied := 0
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- followNetwork(ctx, c.changed, func() {
			mu.Lock()
			applied++
			mu.Unlock()
		})
	}()
	for i := range 3 {
		<-c.took // waiting on the current channel
		mu.Lock()
		if applied != i {
			t.Fatalf("after %d changes: applied %d times", i, applied)
		}
		mu.Unlock()
		c.fire()
	}
	<-c.took
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("followNetwork returned %v, want context.Canceled", err)
	}
	if applied != 3 {
		t.Errorf("applied %d times, want 3", applied)
	}
}
