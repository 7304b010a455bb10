package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSenderResumesAfterReceiverRestart(t *testing.T) {
	skipIfShort(t)
	for _, tp := range transportsUnderTest() {
		t.Run(tp, func(t *testing.T) {
			cfg, dl := t.TempDir(), t.TempDir()
			recv := startReceiver(t, Options{ConfigDir: cfg, DownloadDir: dl, Listen: portToComeBackTo(t)})
			to := target(recv)
			send := testEngine(t, Options{RetryFor: 30 * time.Second, ProgressInterval: 2 * time.Millisecond})
			const size = 128 << 20
			big := filepath.Join(t.TempDir(), "big.bin")
			writeFile(t, big, size)
			events, unsub := send.Subscribe(4096)
			defer unsub()
			tr, err := send.Send(context.Background(), to, []string{big}, SendOptions{Transport: tp})
			if err != nil {
				t.Fatal(err)
			}
			waitProgress(t, events, tr.ID(), size, 0.3)
			recv.Close()
			// The same device comes back on the same address.
			listen := to.Addrs[0].HostPort()
			startReceiver(t, Options{ConfigDir: cfg, DownloadDir: dl, Listen: listen, NoListen: onlyListen(tp)})
			select {
			case <-tr.Done():
			case <-time.After(time.Minute):
				t.Fatal("did not finish after the receiver came back")
			}
			res := tr.Result()
			if res.State != StateDone {
				t.Fatalf("%s: %s", res.State, res.Err)
			}
			sameTree(t, big, dl)
			if res.Bytes > size+size/4 {
				t.Errorf("sent %d bytes in all for a %d-byte file: resume did not save much", res.Bytes, size)
			}
			t.Logf("%s: %d bytes sent for %d", tp, res.Bytes, size)
		})
	}
}

func TestPauseAndResume(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{ProgressInterval: 2 * time.Millisecond})
	const size = 128 << 20
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, size)
	events, unsub := send.Subscribe(4096)
	defer unsub()
	tr, err := send.Send(context.Background(), target(recv), []string{big}, SendOptions{Transport: "quic"})
	if err != nil {
		t.Fatal(err)
	}
	waitProgress(t, events, tr.ID(), size, 0.25)
	if err := send.Pause(tr.ID()); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(30 * time.Second)
	for paused := false; !paused; {
		select {
		case ev := <-events:
			paused = ev.TransferID == tr.ID() && ev.Kind == EventState && ev.State == StatePaused
			if ev.Kind == EventResult {
				t.Fatalf("ended instead of pausing: %+v", ev.Result)
			}
		case <-timeout:
			t.Fatal("never paused")
		}
	}
	if err := send.Resume(tr.ID()); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	res := tr.Result()
	if res.State != StateDone {
		t.Fatalf("%s: %s", res.State, res.Err)
	}
	sameTree(t, big, recv.DownloadDir())
	if res.Bytes > size+size/4 {
		t.Errorf("sent %d bytes in all for %d", res.Bytes, size)
	}
	if err := send.Resume(tr.ID()); err == nil {
		t.Error("Resume of a finished transfer succeeded")
	}
}

// A transfer shows as paused (its state, the event) a moment before its
// sender waits for Resume (core.Outbox.pause): a Resume in that moment
// waits for the sender, where it said "not paused" to a transfer that had
// just said it was (TestPauseAndResume failed so under load). A transfer
// not paused is told at once; one that ended while Resume waited, so.
func TestResumeWaitsForTheSenderThatSaidPaused(t *testing.T) {
	e := testEngine(t, Options{})
	add := func(name string, state State) *Transfer {
		tr := &Transfer{id: fmt.Sprint(name, "-", state), dir: Sending, done: make(chan struct{}), resume: make(chan struct{}),
			pauseNow: make(chan struct{}, 1), state: state, started: time.Now()}
		e.mu.Lock()
		e.transfers[tr.id] = tr
		e.mu.Unlock()
		t.Cleanup(func() { // before the engine closes: nothing runs them
			e.mu.Lock()
			delete(e.transfers, tr.id)
			e.mu.Unlock()
		})
		return tr
	}
	paused := add("waits", StatePaused)
	go func() {
		time.Sleep(100 * time.Millisecond) // the sender, on its way to wait
		<-paused.resume
	}()
	if err := e.Resume(paused.id); err != nil {
		t.Errorf("Resume of a transfer that said it was paused: %v", err)
	}
	if err := e.Resume(add("sends", StateActive).id); err == nil || !strings.Contains(err.Error(), "is not paused") {
		t.Errorf("Resume of an active transfer: %v", err)
	}
	ended := add("ends", StatePaused)
	go func() {
		time.Sleep(100 * time.Millisecond)
		close(ended.done)
	}()
	if err := e.Resume(ended.id); err == nil || !strings.Contains(err.Error(), "has already ended") {
		t.Errorf("Resume of a transfer that ended meanwhile: %v", err)
	}
}
