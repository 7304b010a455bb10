package engine

import (
	"testing"
	"time"
)

// A subscriber that lags by more file events than the bus keeps loses some
// of them, never the result that ends the transfer (ferry-cli's --once
// waits for it).
func TestLaggingSubscriberGetsTheResult(t *testing.T) {
	var b Bus
	events, stop := b.Subscribe(16)
	defer stop()
	const files = 3 * maxOverflow
	for range files {
		b.Publish(Event{Kind: EventFile, TransferID: "t", File: &FileResult{Path: "f", Verified: true}})
	}
	b.Publish(Event{Kind: EventResult, TransferID: "t", Result: &Result{State: StateDone}})
	got := 0
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Kind == EventResult {
				if got > files {
					t.Fatalf("%d file events of %d published", got, files)
				}
				return
			}
			got++
		case <-timeout:
			t.Fatalf("no result after %d file events (of %d published): it was dropped", got, files)
		}
	}
}
