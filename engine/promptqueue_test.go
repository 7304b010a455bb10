package engine

import (
	"path/filepath"
	"testing"
	"time"
)

// TestQueuedOfferWhenTheReceiverQuits: a receiver that quits (Close) with
// an offer on screen and another in its own queue (Options.MaxPrompts)
// told the queued one's sender it was busy ("The receiver is busy: too
// many devices are offering files to this one at once"), a refusal its
// sender did not try again, and wrote that refusal in its own history,
// while the offer on screen ended as closed on both sides ("Ferry was
// closed before the transfer finished.", its sender trying again). The
// queued one now ends as the one on screen does.
func TestQueuedOfferWhenTheReceiverQuits(t *testing.T) {
	recv, rx, src := askingReceiver(t, 1)
	send := func(queued bool) (*Transfer, <-chan Event) {
		t.Helper()
		e, tr, tx := sendWaiting(t, recv, src)
		if queued {
			if p := nextPair(t, tx, tr.ID()); p.Shown != CodeShownQueued || p.Ahead != 1 {
				t.Fatalf("queued: %+v, want it behind 1", p)
			}
		}
		t.Cleanup(func() { e.Cancel(tr.ID()); <-tr.Done() })
		return tr, tx
	}
	send(false)
	for ev := range rx {
		if ev.Kind == EventOffer && ev.Direction == Receiving {
			break
		}
	}
	queued, tx := send(true)
	recv.Close()
	for timeout := time.After(time.Minute); ; {
		select {
		case ev := <-tx:
			if ev.TransferID != queued.ID() {
				continue
			}
			if ev.Kind == EventResult {
				t.Fatalf("the queued offer's sender was told %s %q, want it to try again", ev.Result.State, ev.Result.Err)
			}
			if ev.Kind == EventState && ev.State == StateRetrying {
				goto told
			}
		case <-timeout:
			t.Fatal("the queued offer's sender was told nothing")
		}
	}
told:
	for results, timeout := 0, time.After(time.Minute); results < 2; {
		select {
		case ev := <-rx:
			if ev.Kind != EventResult {
				continue
			}
			results++
			if ev.Result.State != StateCancelled || ev.Result.Err != "Ferry was closed before the transfer finished." {
				t.Fatalf("the receiver's result of an offer: %s %q, want it closed", ev.Result.State, ev.Result.Err)
			}
		case <-timeout:
			t.Fatal("the receiver's results did not come")
		}
	}
}

// Offers from devices the receiver accepts without asking (trusted, with
// AutoAcceptTrusted) take no place among the prompts: they run at once
// while the prompts shown are unanswered and others queue for a place, so
// there is no place in a queue to tell their senders (none is told one).
func TestTrustedOffersDoNotWaitBehindPrompts(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk, AutoAcceptTrusted: true, MaxPrompts: 1})
	rx, unsub := recv.Subscribe(256)
	defer unsub()
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 1<<20)
	for range 2 { // one prompt shown, one offer queued behind it
		if _, err := testEngine(t, Options{}).Send(t.Context(), target(recv), []string{src}, SendOptions{Transport: "tcp"}); err != nil {
			t.Fatal(err)
		}
	}
	nextWaitingOffer(t, rx)
	waitUntil(t, func() bool { _, queued := recv.admit.Prompts(); return queued == 1 })
	type sent struct {
		tr *Transfer
		tx <-chan Event
	}
	var trusted []sent
	for range 3 {
		e := testEngine(t, Options{})
		if err := recv.SetTrusted(e.ID(), true); err != nil {
			t.Fatal(err)
		}
		tx, unsub := e.Subscribe(256)
		t.Cleanup(unsub)
		tr, err := e.Send(t.Context(), target(recv), []string{src}, SendOptions{Transport: "tcp"})
		if err != nil {
			t.Fatal(err)
		}
		trusted = append(trusted, sent{tr, tx})
	}
	for _, s := range trusted {
		if r := waitDone(t, s.tr); r.State != StateDone {
			t.Fatalf("a trusted sender: %s %q", r.State, r.Err)
		}
		for len(s.tx) > 0 {
			if ev := <-s.tx; ev.Pair != nil && ev.Pair.Shown == CodeShownQueued {
				t.Errorf("a trusted sender was told a place: %+v", ev.Pair)
			}
		}
	}
	if shown, queued := recv.admit.Prompts(); shown != 1 || queued != 1 {
		t.Fatalf("the receiver shows %d prompts and queues %d offers, want 1 and 1 still", shown, queued)
	}
}

// An offer the receiver queues behind its prompts (Options.MaxPrompts
// are shown) was told to its client only by its sender's verification
// code (EventPair), announced before the offer is asked about, so the
// app's prompt on screen counted it among the offers waiting; an offer
// from a device that is trusted but not accepted without asking
// (AutoAcceptTrusted off) has no code to announce, and its client heard
// nothing of it until its turn. Every queued offer is told now, once, as
// it queues (EventQueued), before its offer event.
func TestQueuedOfferIsToldToTheClient(t *testing.T) {
	recv, rx, src := askingReceiver(t, 1)
	_, shownTr, _ := sendWaiting(t, recv, src)
	shown := nextWaitingOffer(t, rx)
	trusted := testEngine(t, Options{})
	if err := recv.SetTrusted(trusted.ID(), true); err != nil {
		t.Fatal(err)
	}
	tr, err := trusted.Send(t.Context(), target(recv), []string{src}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { _, queued := recv.admit.Prompts(); return queued == 1 })
	if err := recv.Decide(shown, Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	<-shownTr.Done()
	queued := 0
	for timeout := time.After(time.Minute); ; {
		select {
		case ev := <-rx:
			if ev.Peer.ID != trusted.ID() {
				continue
			}
			switch ev.Kind {
			case EventQueued:
				queued++
			case EventPair:
				t.Fatalf("a trusted sender's code was announced: %+v", ev.Pair)
			case EventOffer:
				if queued != 1 || ev.State != StateWaiting {
					t.Fatalf("the trusted sender's offer (%s) came after %d queued events, want 1", ev.State, queued)
				}
				if err := recv.Decide(ev.TransferID, Decision{Accept: true}); err != nil {
					t.Fatal(err)
				}
				if r := waitDone(t, tr); r.State != StateDone {
					t.Fatalf("%s %q", r.State, r.Err)
				}
				return
			}
		case <-timeout:
			t.Fatalf("no offer from the trusted sender (%d queued events)", queued)
		}
	}
}
