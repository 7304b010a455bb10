package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/clock"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// Issue #15: each end reads in honest words on both sides, with who did it.
func TestHonestEnds(t *testing.T) {
	t.Run("declined", func(t *testing.T) {
		recv := startReceiver(t, Options{Accept: AcceptAsk, Name: "Anna"})
		got := resultsOf(t, recv, Receiving, 1)
		tr, offer, _ := offerPending(t, recv, "tcp")
		recv.Decide(offer.TransferID, Decision{Accept: false})
		s, r := waitDone(t, tr), next(t, got)
		if s.State != StateDeclined || s.Code != "declined" || !s.ByPeer || s.Err != "Declined by Anna." || s.Files != 1 || s.TotalBytes != 2<<20 {
			t.Errorf("sender: %+v", s)
		}
		if r.State != StateDeclined || r.Code != "declined" || r.ByPeer || r.Err != "Declined by you." || r.Files != 1 {
			t.Errorf("receiver: %+v", r)
		}
	})
	t.Run("expired", func(t *testing.T) {
		// The prompt's two minutes pass on the receiver's clock, at once.
		start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		clk := clock.NewFake(start)
		recv := startReceiver(t, Options{Accept: AcceptAsk, Name: "Anna", Clock: clk})
		idle := clk.Timers() // the receiver's own (the partials' ageing)
		got := resultsOf(t, recv, Receiving, 1)
		tr, offer, _ := offerPending(t, recv, "quic")
		if want := start.Add(2 * time.Minute); !offer.Offer.Expires.Equal(want) {
			t.Errorf("the offer expires at %v, want %v", offer.Offer.Expires, want)
		}
		if err := clk.WaitTimers(t.Context(), idle+1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(2*time.Minute - time.Nanosecond)
		if clk.Timers() != idle+1 {
			t.Fatal("the prompt's timer fired before two minutes passed")
		}
		clk.Advance(time.Nanosecond)
		s, r := waitDone(t, tr), next(t, got)
		if s.State != StateDeclined || s.Code != "expired" || !s.ByPeer || !strings.HasPrefix(s.Err, "Expired: Anna did not answer") {
			t.Errorf("sender: %+v", s)
		}
		if r.State != StateDeclined || r.Code != "expired" || r.ByPeer || r.Files != 1 {
			t.Errorf("receiver: %+v", r)
		}
	})
	t.Run("cancelled by the sender while waiting", func(t *testing.T) {
		recv := startReceiver(t, Options{Accept: AcceptAsk})
		got := resultsOf(t, recv, Receiving, 1)
		tr, _, _ := offerPending(t, recv, "tcp")
		tr.Cancel()
		s, r := waitDone(t, tr), next(t, got)
		if s.State != StateCancelled || s.ByPeer || s.Err != "Cancelled by you." {
			t.Errorf("sender: %+v", s)
		}
		if r.State != StateCancelled || r.Code != "cancelled" || !r.ByPeer || !strings.HasPrefix(r.Err, "Cancelled by ") {
			t.Errorf("receiver: %+v", r)
		}
	})
}

// A pause shows on the receiver as "Paused by <sender>", and the resumed
// session continues the same receiving transfer (one ID, one row), whose
// final result counts every byte that arrived.
func TestPauseShowsAsPausedAndResumesTheSameTransfer(t *testing.T) {
	recv := startReceiver(t, Options{Name: "Anna"})
	send := testEngine(t, Options{Name: "Bob", ProgressInterval: 2 * time.Millisecond})
	const size = 96 << 20
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, size)
	got := resultsOf(t, recv, Receiving, 2)
	events, unsub := send.Subscribe(4096)
	defer unsub()
	tr, err := send.Send(context.Background(), target(recv), []string{big}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	waitProgress(t, events, tr.ID(), size, 0.25)
	if err := send.Pause(tr.ID()); err != nil {
		t.Fatal(err)
	}
	paused := next(t, got)
	if paused.State != StatePaused || paused.Code != "paused" || !paused.ByPeer || paused.Err != "Paused by Bob." {
		t.Errorf("receiver while paused: %+v", paused)
	}
	// The receiver hears of the pause as the sender's attempt winds down:
	// Resume takes once the sender waits for it.
	testutil.WaitFor(t, "the sender to wait for Resume", func() bool { return send.Resume(tr.ID()) == nil })
	<-tr.Done()
	final := next(t, got)
	if final.State != StateDone || final.Bytes != size {
		t.Errorf("receiver at the end: %+v", final)
	}
	if s := tr.Result(); s.State != StateDone || s.Bytes > size+size/4 {
		t.Errorf("sender: %+v", s)
	}
}

// A receiver that loses its sender says it will resume, and the sender's
// Retry continues the same transfer: same ID, totals over both sessions.
func TestInterruptedThenRetriedIsOneTransfer(t *testing.T) {
	skipIfShort(t)
	recv := startReceiver(t, Options{Name: "Anna"})
	send := testEngine(t, Options{RetryFor: -1, ProgressInterval: 2 * time.Millisecond})
	const size = 64 << 20
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, size)
	first := interrupt(t, send, recv, []string{big}, "quic", size)
	if first.State != StateCancelled {
		t.Fatalf("first session: %+v", first)
	}
	ids := map[string]bool{}
	revents, unsub := recv.Subscribe(4096)
	defer unsub()
	id := firstID(t, send)
	again, err := send.Retry(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID() != id {
		t.Errorf("Retry gave a new ID %s for %s", again.ID(), id)
	}
	<-again.Done()
	res := again.Result()
	if res.State != StateDone || res.Bytes < first.Bytes || res.Bytes > size+size/4 {
		t.Errorf("after Retry: %+v (first session sent %d)", res, first.Bytes)
	}
	for len(revents) > 0 {
		if ev := <-revents; ev.Direction == Receiving {
			ids[ev.TransferID] = true
		}
	}
	if len(ids) != 1 {
		t.Errorf("the receiver reported %d transfer IDs for one resumed transfer: %v", len(ids), ids)
	}
	sameTree(t, big, recv.DownloadDir())
}

// firstID is the ID of the one transfer an engine sent.
func firstID(t *testing.T, e *Engine) string {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, tr := range e.transfers {
		if tr.dir == Sending {
			return id
		}
	}
	t.Fatal("no sending transfer")
	return ""
}

// The words this build sends with its own ends only repeat their codes, so
// the other side shows no reason for them; a real reason is kept.
func TestOwnReasonsOnlyRepeatTheCode(t *testing.T) {
	for _, err := range []error{errCancelledByUser, errPaused, wire.ErrDeclined, wire.ErrCancelled, wire.ErrPaused} {
		re := &wire.RemoteError{Code: closeCode(err), Reason: errcode.Reason(err)}
		if r := core.ReasonOf(re); r != "" {
			t.Errorf("%v reads as the reason %q", err, r)
		}
	}
	re := &wire.RemoteError{Code: wire.CodeCancelled, Reason: errcode.Reason(errStoppedReceiving)}
	if r := core.ReasonOf(re); r != "receiving was turned off" {
		t.Errorf("reason %q", r)
	}
}
