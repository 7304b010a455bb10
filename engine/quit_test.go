package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/internal/core"
)

// wentAway checks that a side whose peer quit Ferry ended as the device
// going away (which the app rejoins), in the peer's words, not as a failure
// of its files (issue 26, finding 4).
func wentAway(t *testing.T, who string, res Result, state State) {
	t.Helper()
	if res.State != state || res.Code != core.CodeConnectionLost || !res.ByPeer || !strings.Contains(res.Err, "Ferry was closed") {
		t.Errorf("%s: %s %s (by peer %v): %s (%s)", who, res.State, res.Code, res.ByPeer, res.Err, res.Detail)
	}
}

// A receiver that quits while its user has not answered the offer tells
// the sender so, over every transport.
func TestReceiverQuitsWhileTheOfferWaits(t *testing.T) {
	t.Parallel()
	for _, tp := range transportsUnderTest() {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			recv := startReceiver(t, Options{Accept: AcceptAsk})
			tr, _, _ := offerPending(t, recv, tp)
			if err := recv.Close(); err != nil {
				t.Fatal(err)
			}
			wentAway(t, "sender", waitDone(t, tr), StateFailed)
		})
	}
}

// Mid-transfer, either side quitting is the device going away for the
// other: the sender fails as "went away", the receiver keeps what arrived
// for the next attempt. Over TCP the receiver's data streams reset before
// its cancel is read: the sender still reads the cancel's reason (no retry
// here, so a reset taken for the reason fails at once). The gate holds the
// data after 2 MiB of 16, so Close comes mid-way for certain.
func TestQuitMidTransfer(t *testing.T) {
	t.Parallel()
	for _, side := range []string{"receiver", "sender"} {
		t.Run(side, func(t *testing.T) {
			t.Parallel()
			recv := startReceiver(t, Options{})
			send := testEngine(t, Options{RetryFor: -1})
			src := filepath.Join(t.TempDir(), "big.bin")
			writeFile(t, src, 16<<20)
			gate := newTCPGate(t, listening(recv, addr.TCP), 2<<20)
			got := resultsOf(t, recv, Receiving, 1)
			events, unsub := recv.Subscribe(4096)
			t.Cleanup(unsub)
			tr, err := send.Send(context.Background(), targetAt(addr.TCP, gate.Addr()), []string{src}, SendOptions{Transport: "tcp"})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-gate.Held():
			case <-tr.Done():
				t.Fatalf("ended before 2 MiB of 16 passed: %+v", tr.Result())
			}
			// A chunk landed and was journaled: the receiver has something to keep.
			for landed := false; !landed; {
				select {
				case ev := <-events:
					landed = ev.Kind == EventProgress && ev.Direction == Receiving && ev.Progress.Bytes > 0
				case <-time.After(30 * time.Second):
					t.Fatal("the receiver landed no chunk of the 2 MiB the gate let through")
				}
			}
			if side == "receiver" {
				if err := recv.Close(); err != nil {
					t.Fatal(err)
				}
				wentAway(t, "sender", waitDone(t, tr), StateFailed)
				return
			}
			if err := send.Close(); err != nil {
				t.Fatal(err)
			}
			gate.Release() // the receiver hears the end
			wentAway(t, "receiver", next(t, got), StateInterrupted)
			if len(recv.Partials()) == 0 {
				t.Error("the receiver kept no resume state")
			}
		})
	}
}

// A receiver that quits is a device going away, not a verdict: the sender
// keeps trying (the app may be restarted a moment later, as
// TestSenderResumesAfterReceiverRestart shows), and when the device stays
// away its last word is the account: it closed Ferry, not "could not
// connect".
func TestSenderRetriesAfterReceiverQuits(t *testing.T) {
	t.Parallel()
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{RetryFor: 1500 * time.Millisecond})
	events, unsub := send.Subscribe(256)
	t.Cleanup(unsub)
	revents, runsub := recv.Subscribe(64)
	t.Cleanup(runsub)
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 1<<20)
	tr, err := send.Send(context.Background(), target(recv), []string{src}, SendOptions{Transport: "quic"})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range revents {
		if ev.Kind == EventOffer {
			break
		}
	}
	if err := recv.Close(); err != nil {
		t.Fatal(err)
	}
	res := waitDone(t, tr)
	wentAway(t, "sender", res, StateFailed)
	if !strings.Contains(res.Detail, "gave up after") {
		t.Errorf("the sender did not retry: %s", res.Detail)
	}
	retried := false
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventState && ev.State == StateRetrying {
			retried = true
		}
	}
	if !retried {
		t.Error("no retrying state before the end")
	}
}

// A receiver that quits with the offer on its screen, then is opened again
// on the same address, is asked about the offer again: its sender kept
// trying. Meanwhile the sender's retrying state says going_away (its row:
// Ferry was closed there, waiting for it to be opened again), where it
// said connection_lost, as of a network that failed.
func TestOfferOnScreenComesBackWithTheReceiver(t *testing.T) {
	t.Parallel()
	cfg, dl := t.TempDir(), t.TempDir()
	recv := startReceiver(t, Options{Accept: AcceptAsk, ConfigDir: cfg, DownloadDir: dl, Listen: portToComeBackTo(t)})
	to := target(recv)
	send := testEngine(t, Options{RetryFor: time.Minute})
	events, unsub := send.Subscribe(256)
	t.Cleanup(unsub)
	rx, runsub := recv.Subscribe(64)
	t.Cleanup(runsub)
	src := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, src, 1000)
	tr, err := send.Send(context.Background(), to, []string{src}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	if err := recv.OfferOnScreen(nextWaitingOffer(t, rx), true); err != nil {
		t.Fatal(err)
	}
	if err := recv.Close(); err != nil {
		t.Fatal(err)
	}
	for timeout := time.After(time.Minute); ; {
		var ev Event
		select {
		case ev = <-events:
		case <-timeout:
			t.Fatal("no retrying state")
		}
		if ev.Kind == EventState && ev.State == StateRetrying {
			if ev.Result == nil || ev.Result.Code != "going_away" || !strings.Contains(ev.Result.Err, "Ferry was closed there") {
				t.Fatalf("retrying: %+v, want going_away", ev.Result)
			}
			break
		}
	}
	again := startReceiver(t, Options{Accept: AcceptAsk, ConfigDir: cfg, DownloadDir: dl, Listen: to.Addrs[0].HostPort(), NoListen: onlyListen("tcp")})
	arx, aunsub := again.Subscribe(64)
	t.Cleanup(aunsub)
	if err := again.Decide(nextWaitingOffer(t, arx), Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	if r := waitDone(t, tr); r.State != StateDone {
		t.Fatalf("%s %q", r.State, r.Err)
	}
}
