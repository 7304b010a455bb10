package engine

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/clock"
)

// hold is how long the tests below leave an offer unanswered.
const hold = 500 * time.Millisecond

// answerAfter accepts the first offer e is asked about, hold after it was
// shown.
func answerAfter(t *testing.T, e *Engine) {
	t.Helper()
	events, unsub := e.Subscribe(256)
	go func() {
		defer unsub()
		for ev := range events {
			if ev.Kind == EventOffer && ev.Direction == Receiving {
				time.Sleep(hold)
				if err := e.Decide(ev.TransferID, Decision{Accept: true}); err != nil {
					t.Error(err)
				}
				return
			}
		}
	}()
}

// A result says how long the offer waited for its answer, on both sides,
// so that a speed is not taken over the time a person took to accept (the
// CLI's "in 8.53s (36.9 MB/s)" for 315 MB that moved in under a second).
func TestResultSaysHowLongTheAnswerTook(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{})
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 200_000)
	results := resultsOf(t, recv, Receiving, 1)
	answerAfter(t, recv)
	r := sendWait(t, send, target(recv), []string{src}, SendOptions{})
	got := next(t, results)
	for _, c := range []struct {
		side string
		r    Result
	}{{"sender", r}, {"receiver", got}} {
		if c.r.State != StateDone {
			t.Fatalf("%s: %s %q", c.side, c.r.State, c.r.Err)
		}
		if c.r.Waited < (hold-100*time.Millisecond).Seconds() || c.r.Waited > c.r.Duration {
			t.Errorf("%s waited %.3f s of %.3f s; the answer came %v after the offer", c.side, c.r.Waited, c.r.Duration, hold)
		}
	}

	// Nobody asked: the receiver did not wait on anyone.
	auto := startReceiver(t, Options{Accept: AcceptAll})
	results = resultsOf(t, auto, Receiving, 1)
	if r := sendWait(t, send, target(auto), []string{src}, SendOptions{}); r.State != StateDone {
		t.Fatalf("to a receiver that accepts all: %+v", r)
	}
	if got := next(t, results); got.Waited != 0 {
		t.Errorf("a receiver that accepts all waited %.3f s", got.Waited)
	}
}

// A send to a LocalSend device waits for its owner's answer in "waiting",
// as a send to Ferry does, not in "connecting", and says how long.
func TestLocalSendSendWaitsForTheAnswer(t *testing.T) {
	recv, srv, addr := lsEngine(t, Options{Accept: AcceptAsk}, LocalSendOptions{})
	send := testEngine(t, Options{})
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 70_000)
	events, unsub := send.Subscribe(256)
	defer unsub()
	answerAfter(t, recv)
	tr, err := send.SendLocalSend(context.Background(), LocalSendTarget{Addr: addr, Fingerprint: srv.Fingerprint()}, Items{Paths: []string{src}}, LocalSendSendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	var states []State
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventState {
			states = append(states, ev.State)
		}
	}
	if i, j := slices.Index(states, StateWaiting), slices.Index(states, StateActive); i < 0 || j < i {
		t.Errorf("states %v: no wait for the answer before the files moved", states)
	}
	r := tr.Result()
	if r.State != StateDone || r.Waited < (hold-100*time.Millisecond).Seconds() || r.Waited > r.Duration {
		t.Errorf("result %s %q, waited %.3f s of %.3f s", r.State, r.Err, r.Waited, r.Duration)
	}
}

// offsetClock is the system's clock moved on by what add added.
type offsetClock struct {
	clock.Real
	mu  sync.Mutex
	off time.Duration
}

func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *offsetClock) add(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// A receiver that resumes checks what it kept before the files move: that
// time is said apart from the wait for the answer (Checked), on both
// sides, not as the answer's: the CLI said "the receiver answered after
// 41.0s" of a receiver that accepts by itself and spent the 41 s reading
// back the 9 GB it kept.
func TestResultSaysHowLongTheReceiverChecked(t *testing.T) {
	const check = 5 * time.Second // as long as the check takes, by the clock the two engines share
	clk := &offsetClock{}
	recv := startReceiver(t, Options{Clock: clk})
	send := testEngine(t, Options{Clock: clk})
	const size = 32 << 20
	src := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, src, size)
	interrupt(t, send, recv, []string{src}, "tcp", size)
	recv.restoring = func() { clk.add(check) }
	got := receivedResult(t, recv)
	r := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: "tcp"})
	for _, c := range []struct {
		side string
		r    Result
	}{{"sender", r}, {"receiver", <-got}} {
		if c.r.State != StateDone || c.r.Kept == 0 {
			t.Fatalf("%s: %s %q, kept %d", c.side, c.r.State, c.r.Err, c.r.Kept)
		}
		if c.r.Checked < check.Seconds() || c.r.Waited >= check.Seconds() || c.r.Checked+c.r.Waited > c.r.Duration {
			t.Errorf("%s: checked %.3f s, waited %.3f s of %.3f s; the check took %v, the answer none", c.side, c.r.Checked, c.r.Waited, c.r.Duration, check)
		}
	}
}
