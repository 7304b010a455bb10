package engine

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"
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
