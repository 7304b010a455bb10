package engine

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// TestAcceptedTransferContinuesWithoutAskingAgain: a user who accepted an
// offer is not asked about it again when the same delivery comes back after
// its session ended (here: paused and resumed by the sender; a sleep, a
// network change or a crash end it the same way), and it goes on into the
// folder that was chosen for it. Before, every new session of the delivery
// prompted again, and the resumed transfer of someone who had walked away
// from the screen expired after two minutes ("Expired: not answered in
// time"). A new send of the same files (a delivery of its own) asks again.
func TestAcceptedTransferContinuesWithoutAskingAgain(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{ProgressInterval: 2 * time.Millisecond})
	chosen := t.TempDir() // the folder the user picked in the prompt
	var prompts atomic.Int32
	events, unsub := recv.Subscribe(4096)
	defer unsub()
	go func() {
		for ev := range events {
			if ev.Kind == EventOffer && ev.Direction == Receiving && ev.State == StateWaiting {
				prompts.Add(1)
				recv.Decide(ev.TransferID, Decision{Accept: true, Dest: chosen})
			}
		}
	}()
	src := t.TempDir()
	const size = 64 << 20
	big := filepath.Join(src, "big.bin")
	writeFile(t, big, size)

	sevents, sunsub := send.Subscribe(4096)
	defer sunsub()
	tr, err := send.Send(context.Background(), target(recv), []string{big}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range sevents {
		if ev.TransferID == tr.ID() && ev.Kind == EventProgress && ev.Progress.Bytes > size/4 {
			if err := send.Pause(tr.ID()); err != nil {
				t.Fatal(err)
			}
			break
		}
		if ev.TransferID == tr.ID() && ev.Kind == EventResult {
			t.Fatal("finished before it could be paused")
		}
	}
	for ev := range sevents {
		if ev.TransferID == tr.ID() && ev.Kind == EventState && ev.State == StatePaused {
			break
		}
	}
	testutil.WaitFor(t, "the receiver to keep the paused transfer", func() bool { return len(recv.Partials()) == 1 })
	if err := send.Resume(tr.ID()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	case <-time.After(time.Minute):
		t.Fatal("the resumed transfer did not end")
	}
	if r := tr.Result(); r.State != StateDone {
		t.Fatalf("resumed: %s %q", r.State, r.Err)
	}
	if n := prompts.Load(); n != 1 {
		t.Errorf("the user was asked %d times about one delivery, want once", n)
	}
	if _, err := os.Stat(filepath.Join(chosen, "big.bin")); err != nil {
		t.Errorf("not in the folder chosen at the prompt: %v", err)
	}

	// The same files sent anew are a delivery of their own: asked about.
	if res := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "tcp"}); res.State != StateDone {
		t.Fatalf("a new send: %s %q", res.State, res.Err)
	}
	if n := prompts.Load(); n != 2 {
		t.Errorf("the user was asked %d times in all after a new send of the same files, want 2", n)
	}
}

// A transfer to a FAT32 stick whose offer had a file over its limit
// (refused there with the offer) continues without asking again after its
// session ended, as one without such a file does: the accepted count its
// first session kept left that file out, while the check counted only the
// names refused, so the user was asked again.
func TestTransferWithAFileOverTheLimitContinuesWithoutAskingAgain(t *testing.T) {
	stick := t.TempDir()
	recv := testEngine(t, Options{Accept: AcceptAsk, DownloadDir: stick})
	recv.fileLimit = func(dir string) store.FileLimit {
		if dir == stick {
			return store.FileLimit{Max: 80 << 20, FS: "FAT32"}
		}
		return store.FileLimit{}
	}
	if err := recv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	send := testEngine(t, Options{ProgressInterval: 2 * time.Millisecond})
	var prompts atomic.Int32
	events, unsub := recv.Subscribe(4096)
	defer unsub()
	go func() {
		for ev := range events {
			if ev.Kind == EventOffer && ev.Direction == Receiving && ev.State == StateWaiting {
				prompts.Add(1)
				recv.Decide(ev.TransferID, Decision{Accept: true})
			}
		}
	}()
	src := t.TempDir()
	film := filepath.Join(src, "film.mkv")
	if err := os.WriteFile(film, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(film, 100<<20); err != nil { // over the stand-in limit
		t.Fatal(err)
	}
	const size = 64 << 20
	notes := filepath.Join(src, "notes.bin")
	writeFile(t, notes, size)
	sevents, sunsub := send.Subscribe(4096)
	defer sunsub()
	tr, err := send.Send(context.Background(), target(recv), []string{film, notes}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range sevents {
		if ev.TransferID == tr.ID() && ev.Kind == EventProgress && ev.Progress.Bytes > size/4 {
			if err := send.Pause(tr.ID()); err != nil {
				t.Fatal(err)
			}
			break
		}
		if ev.TransferID == tr.ID() && ev.Kind == EventResult {
			t.Fatalf("finished before it could be paused: %+v", ev.Result)
		}
	}
	for ev := range sevents {
		if ev.TransferID == tr.ID() && ev.Kind == EventState && ev.State == StatePaused {
			break
		}
	}
	testutil.WaitFor(t, "the receiver to keep the paused transfer", func() bool { return len(recv.Partials()) == 1 })
	if err := send.Resume(tr.ID()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	case <-time.After(time.Minute):
		t.Fatal("the resumed transfer did not end")
	}
	if r := tr.Result(); r.State != StateDone || r.Verified != 1 || r.Refused != 1 {
		t.Fatalf("resumed: %s %q, %d verified, %d refused", r.State, r.Err, r.Verified, r.Refused)
	}
	if n := prompts.Load(); n != 1 {
		t.Errorf("the user was asked %d times about one delivery, want once", n)
	}
	if _, err := os.Stat(filepath.Join(stick, "film.mkv")); !os.IsNotExist(err) {
		t.Errorf("the file over the limit is there: %v", err)
	}
}

// TestCancelledHereAsksAgain: the receiving user who cancelled a transfer
// took the yes back: the sender's Retry of the same delivery is asked
// about again (and, accepted, goes on from what arrived).
func TestCancelledHereAsksAgain(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk, ProgressInterval: time.Millisecond})
	send := testEngine(t, Options{})
	var prompts atomic.Int32
	events, unsub := recv.Subscribe(4096)
	defer unsub()
	go func() {
		for ev := range events {
			switch {
			case ev.Kind == EventOffer && ev.Direction == Receiving && ev.State == StateWaiting:
				prompts.Add(1)
				recv.Decide(ev.TransferID, Decision{Accept: true})
			case ev.Kind == EventProgress && ev.Direction == Receiving && ev.Progress.Bytes > 0 && prompts.Load() == 1:
				recv.Cancel(ev.TransferID) // the user here, part-way
			}
		}
	}()
	src := t.TempDir()
	big := filepath.Join(src, "big.bin")
	writeFile(t, big, 128<<20)
	tr, err := send.Send(context.Background(), target(recv), []string{big}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if r := tr.Result(); r.State != StateCancelled {
		t.Fatalf("first session: %s %q, want cancelled by the receiver", r.State, r.Err)
	}
	testutil.WaitFor(t, "the receiver to keep what arrived", func() bool { return len(recv.Partials()) == 1 && !recv.Partials()[0].Receiving })
	again, err := send.Retry(context.Background(), tr.ID())
	if err != nil {
		t.Fatal(err)
	}
	<-again.Done()
	if r := again.Result(); r.State != StateDone {
		t.Fatalf("retry: %s %q", r.State, r.Err)
	}
	if n := prompts.Load(); n != 2 {
		t.Errorf("asked %d times, want twice: a cancel here takes the yes back", n)
	}
}
