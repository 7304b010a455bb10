package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
)

func TestSenderResumesAfterReceiverRestart(t *testing.T) {
	skipIfShort(t)
	const size = 128 << 20
	big := filepath.Join(t.TempDir(), "big.bin") // one source for both transports: only read
	writeFile(t, big, size)
	for _, tp := range transportsUnderTest() {
		t.Run(tp, func(t *testing.T) {
			cfg, dl := t.TempDir(), t.TempDir()
			recv := startReceiver(t, Options{ConfigDir: cfg, DownloadDir: dl, Listen: portToComeBackTo(t)})
			to := target(recv)
			send := testEngine(t, Options{RetryFor: 30 * time.Second, ProgressInterval: 2 * time.Millisecond})
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

// A client that acts on a send's result at once (the app's rejoin retries
// a send as its device is seen again) goes on with the delivery: Retry and
// Continue take a transfer whose result is out as ended, where they said
// "still running" until its Done closed a moment later, and the app left
// the send alone. afterResult calls them in that moment: the first
// attempt found nothing listening, the receiver is there for the second,
// which delivers, under the same ID, its events after the first's result.
func TestRetryAsTheResultIsOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		again func(e *Engine, tr *Transfer) (*Transfer, error)
	}{
		{"Retry", func(e *Engine, tr *Transfer) (*Transfer, error) { return e.Retry(context.Background(), tr.ID()) }},
		{"Continue", func(e *Engine, tr *Transfer) (*Transfer, error) {
			return e.Continue(context.Background(), tr.ID(), tr.target, tr.Items(), tr.opts)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := portToComeBackTo(t)
			src := filepath.Join(t.TempDir(), "a.bin")
			writeFile(t, src, 64<<10)
			send := testEngine(t, Options{RetryFor: -1})
			type next struct {
				tr  *Transfer
				err error
			}
			out, goOn, got := make(chan *Transfer, 1), make(chan struct{}), make(chan next, 1)
			var once sync.Once
			send.afterResult = func(tr *Transfer) {
				once.Do(func() {
					out <- tr
					<-goOn
					n, err := tc.again(send, tr)
					got <- next{n, err}
				})
			}
			events, unsub := send.Subscribe(1024)
			defer unsub()
			first, err := send.Send(context.Background(), targetAt(addr.TCP, port), []string{src}, SendOptions{Transport: "tcp"})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case tr := <-out:
				if tr != first || tr.Result().State != StateFailed {
					t.Fatalf("first result: %s (%s)", tr.Result().State, tr.Result().Err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the send to a closed port did not end")
			}
			recv := startReceiver(t, Options{Listen: port})
			close(goOn)
			n := <-got
			if n.err != nil {
				t.Fatalf("%s as the result was out: %v", tc.name, n.err)
			}
			if n.tr == first || n.tr.ID() != first.ID() {
				t.Fatalf("%s made transfer %s, not a new run of %s", tc.name, n.tr.ID(), first.ID())
			}
			if r := waitDone(t, n.tr); r.State != StateDone {
				t.Fatalf("the delivery that went on: %s (%s)", r.State, r.Err)
			}
			sameTree(t, src, recv.DownloadDir())
			var kinds []string // Done closes after the result is out: all four are there
			for len(kinds) < 4 {
				if ev := nextEvent(t, events); ev.TransferID == first.ID() && (ev.Kind == EventResult || ev.Kind == EventOffer) {
					kinds = append(kinds, fmt.Sprint(ev.Kind, ":", ev.State))
				}
			}
			if want := []string{
				fmt.Sprint(EventOffer, ":", StateConnecting), fmt.Sprint(EventResult, ":", StateFailed),
				fmt.Sprint(EventOffer, ":", StateConnecting), fmt.Sprint(EventResult, ":", StateDone),
			}; !slices.Equal(kinds, want) {
				t.Errorf("events of the delivery: %v, want %v", kinds, want)
			}
		})
	}
}
