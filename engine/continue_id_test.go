package engine

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Continue takes a delivery ID as a send makes one (an app keeps it in a
// file a user can edit): anything else is refused before an offer goes
// out, and a delivery it continues keeps its ID on the wire.
func TestContinueTakesOnlyADeliveryID(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	file := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, file, 1<<10)
	for _, id := range []string{"", "abc", "0123456789ABCDEF01234567", "0123456789abcdef0123456", "../../0123456789abcdef", "0123456789abcdefg1234567"} {
		if tr, err := send.Continue(context.Background(), id, target(recv), Items{Paths: []string{file}}, SendOptions{}); err == nil {
			t.Errorf("Continue(%q) started %s", id, tr.ID())
		}
	}
	const id = "0123456789abcdef01234567"
	tr, err := send.Continue(context.Background(), id, target(recv), Items{Paths: []string{file}}, SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	case <-time.After(time.Minute):
		t.Fatal("the send did not end")
	}
	if r := tr.Result(); tr.ID() != id || r.Delivery != id || r.State != StateDone {
		t.Errorf("transfer %s: delivery %s, %s %q", tr.ID(), r.Delivery, r.State, r.Err)
	}
}

// Continue called for one delivery from several goroutines at once (an
// app's Retry and its own resume as the device appears) runs it once: the
// others are told it runs, where each started a transfer of its own under
// the one ID, the engine's table keeping the last.
func TestContinueAtOnceRunsOnce(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{})
	file := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, file, 1<<10)
	const id = "89abcdef0123456789abcdef"
	var wg sync.WaitGroup
	var started, running atomic.Int32
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := send.Continue(context.Background(), id, target(recv), Items{Paths: []string{file}}, SendOptions{})
			switch {
			case err == nil:
				started.Add(1)
			case errors.Is(err, ErrStillRunning):
				running.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if started.Load() != 1 || running.Load() != 7 {
		t.Errorf("%d started, %d told it runs; want 1 and 7", started.Load(), running.Load())
	}
}
