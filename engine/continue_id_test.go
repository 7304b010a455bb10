package engine

import (
	"context"
	"path/filepath"
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
