package engine

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
)

// Issue #26, finding 1: the same file sent twice is two deliveries on both
// sides (two IDs, two results), and a pause and resume of the second is
// still that second delivery, continuing from its partial data.
func TestSameFilesTwiceAreTwoDeliveries(t *testing.T) {
	skipIfShort(t)
	recv := startReceiver(t, Options{Name: "Anna"})
	send := testEngine(t, Options{Name: "Bob"})
	const size = 96 << 20
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, size)
	got := receivedResults(t, recv, 3)

	first := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "tcp"})
	r1 := nextEvent(t, got)
	if first.State != StateDone || first.Delivery == "" {
		t.Fatalf("first send: %+v", first)
	}
	if r1.Result.State != StateDone || r1.Delivery != first.Delivery || r1.Result.Delivery != first.Delivery {
		t.Fatalf("first receipt: delivery %q (result %q), sender's %q, state %s", r1.Delivery, r1.Result.Delivery, first.Delivery, r1.Result.State)
	}

	// The second goes through a gate that holds it after 8 MiB: paused
	// mid-way for certain, whatever the machine's speed.
	tcpAddr := listening(recv, addr.TCP)
	gate := newTCPGate(t, tcpAddr, 8<<20)
	events, unsub := send.Subscribe(4096)
	defer unsub()
	recvEvents, unsubRecv := recv.Subscribe(4096)
	defer unsubRecv()
	tr, err := send.Send(context.Background(), Target{Addrs: []addr.Addr{addr.New(addr.TCP, gate.Addr())}, ID: recv.ID()}, []string{big}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Delivery() == first.Delivery || tr.Delivery() != tr.ID() {
		t.Fatalf("second send: delivery %q, transfer %q; the first was %q", tr.Delivery(), tr.ID(), first.Delivery)
	}
	select {
	case <-gate.Held():
	case <-tr.Done():
		t.Fatalf("ended before 8 MiB passed: %+v", tr.Result())
	}
	// The receiver counts a chunk once it landed and was journaled: wait for
	// one of this delivery's, or (on a loaded machine) the pause may come
	// before any chunk landed, and there is rightly nothing to keep (2 runs
	// in 40 before this wait).
	for landed := false; !landed; {
		select {
		case ev := <-recvEvents:
			landed = ev.Kind == EventProgress && ev.Direction == Receiving && ev.TransferID != r1.TransferID && ev.Progress.Bytes > 0
		case <-time.After(30 * time.Second):
			t.Fatal("the receiver landed no chunk of the 8 MiB the gate let through")
		}
	}
	if err := send.Pause(tr.ID()); err != nil {
		t.Fatal(err)
	}
	gate.Release() // the receiver hears of the pause
	r2 := nextEvent(t, got)
	if r2.Result.State != StatePaused || r2.Delivery != tr.Delivery() {
		t.Fatalf("second receipt while paused: %s, delivery %q (want %q)", r2.Result.State, r2.Delivery, tr.Delivery())
	}
	if r2.TransferID == r1.TransferID {
		t.Fatalf("the receiver filed both deliveries as transfer %s", r1.TransferID)
	}
	// The receiver keeps what arrived, for this delivery's resume.
	if ps := recv.Partials(); len(ps) != 1 || ps[0].Bytes == 0 {
		t.Fatalf("partials while paused: %+v", ps)
	}
	// The sender is paused once it says so (the receiver may hear of it first).
	for ev := range events {
		if ev.TransferID == tr.ID() && ev.Kind == EventState && ev.State == StatePaused {
			break
		}
	}
	if err := send.Resume(tr.ID()); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	r3 := nextEvent(t, got)
	if r3.Result.State != StateDone || r3.TransferID != r2.TransferID || r3.Delivery != tr.Delivery() {
		t.Fatalf("second receipt at the end: %s, transfer %s (paused as %s), delivery %q", r3.Result.State, r3.TransferID, r2.TransferID, r3.Delivery)
	}
	second := tr.Result()
	if second.State != StateDone || second.Delivery != tr.Delivery() {
		t.Fatalf("second send: %+v", second)
	}
	sameTree(t, big, recv.DownloadDir()) // the first copy
	if ps := recv.Partials(); len(ps) != 0 {
		t.Errorf("partials left after the resumed delivery finished: %+v", ps)
	}
}

// A Retry of an unfinished send is the same delivery; a Retry of a finished
// one is a new delivery.
func TestRetryKeepsTheDeliveryUntilDone(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{RetryFor: -1})
	p := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, p, 64<<10)
	tr, err := send.Send(context.Background(), target(recv), []string{p}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if r := tr.Result(); r.State != StateDone {
		t.Fatalf("%+v", r)
	}
	again, err := send.Retry(context.Background(), tr.ID())
	if err != nil {
		t.Fatal(err)
	}
	<-again.Done()
	if again.ID() == tr.ID() || again.Delivery() == tr.Delivery() || again.Result().Delivery != again.Delivery() {
		t.Errorf("a finished send retried kept its delivery: %q then %q", tr.Delivery(), again.Delivery())
	}
	if r := again.Result(); r.State != StateDone || r.Bytes != 64<<10 {
		t.Errorf("the re-send: %+v", r)
	}

	// An unfinished one (nobody listens there) keeps its ID.
	gone := Target{Addrs: AddrsAt("127.0.0.1:1")}
	failed, err := send.Send(context.Background(), gone, []string{p}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	<-failed.Done()
	if r := failed.Result(); r.State == StateDone {
		t.Fatalf("a send to nowhere: %+v", r)
	}
	retried, err := send.Retry(context.Background(), failed.ID())
	if err != nil {
		t.Fatal(err)
	}
	<-retried.Done()
	if retried.ID() != failed.ID() || retried.Delivery() != failed.Delivery() {
		t.Errorf("a failed send retried as %q/%q, not %q", retried.ID(), retried.Delivery(), failed.ID())
	}
}

// A receiver drops a finished delivery's resume state before the sender
// hears that every file is saved: a Retry the sender starts on hearing it
// is a new delivery (its bytes sent again, the copy saved anew), never a
// resume of the finished one (TestRetryKeepsTheDeliveryUntilDone met that
// in 2 of 300 runs), and it does not end the finished session as taken over.
func TestFinishedDeliveryLeavesNoResumeState(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{RetryFor: -1})
	p := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, p, 64<<10)
	for i := range 20 {
		tr, err := send.Send(context.Background(), target(recv), []string{p}, SendOptions{Transport: "tcp"})
		if err != nil {
			t.Fatal(err)
		}
		<-tr.Done()
		if r := tr.Result(); r.State != StateDone || r.Bytes != 64<<10 {
			t.Fatalf("send %d: %+v", i, r)
		}
		if ps := recv.Partials(); len(ps) != 0 {
			t.Fatalf("send %d: the sender heard done while the receiver still held resume state: %+v", i, ps)
		}
	}
}
