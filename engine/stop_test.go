package engine

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/addr"
)

// StopReceiving takes no new transfers, and the running ones finish: over
// TCP their data streams still join the session at the listener.
func TestStopReceivingLetsRunningTransfersFinish(t *testing.T) {
	t.Parallel()
	for _, tp := range transportsUnderTest() {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			recv := startReceiver(t, Options{Accept: AcceptAsk})
			addrs := recv.Addrs()
			tr, offer, src := offerPending(t, recv, tp)
			if err := recv.StopReceiving(); err != nil {
				t.Fatal(err)
			}
			if recv.Receiving() || recv.Listeners() != nil {
				t.Error("still receiving after StopReceiving")
			}
			if tp == "tcp" {
				// A new sender is refused at once, and told why.
				late := testEngine(t, Options{RetryFor: -1})
				res := sendWait(t, late, Target{Addrs: addrs}, []string{src}, SendOptions{Transport: tp})
				if res.State != StateFailed || !strings.Contains(res.Err, "not taking new transfers") && !strings.Contains(res.Err, "refused") {
					t.Errorf("a new sender: %s: %s", res.State, res.Err)
				}
			}
			if err := recv.Decide(offer.TransferID, Decision{Accept: true}); err != nil {
				t.Fatal(err)
			}
			if res := waitDone(t, tr); res.State != StateDone || res.Verified != 1 {
				t.Fatalf("the running transfer: %s: %s", res.State, res.Err)
			}
			sameTree(t, src, recv.DownloadDir())
		})
	}
}

// Receiving on again while a withdrawn listener still finishes a transfer
// takes that listener back: same port, and the old transfer goes on.
func TestStartAgainWhileDraining(t *testing.T) {
	t.Parallel()
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	before := recv.Addrs()
	tr, offer, _ := offerPending(t, recv, "tcp")
	if err := recv.StopReceiving(); err != nil {
		t.Fatal(err)
	}
	if err := recv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := recv.Addrs(); !slices.Equal(after, before) {
		t.Errorf("listening at %v, was %v", after, before)
	}
	if err := recv.Decide(offer.TransferID, Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	if res := waitDone(t, tr); res.State != StateDone {
		t.Fatalf("the old transfer: %s: %s", res.State, res.Err)
	}
	recv.SetAccept(AcceptAll, false)
	src := filepath.Join(t.TempDir(), "b.bin")
	writeFile(t, src, 1<<20)
	if res := sendWait(t, testEngine(t, Options{}), target(recv), []string{src}, SendOptions{}); res.State != StateDone {
		t.Fatalf("a new transfer: %s: %s", res.State, res.Err)
	}
}

// StopReceivingNow ends the running transfers too, and each sender learns at
// once that the receiver cancelled (QUIC: CONNECTION_CLOSE with the table's
// code; TCP: the protocol's cancel), not after an idle timeout.
func TestStopReceivingNowEndsRunningTransfers(t *testing.T) {
	t.Parallel()
	for _, tp := range transportsUnderTest() {
		t.Run(tp, func(t *testing.T) {
			t.Parallel()
			recv := startReceiver(t, Options{Accept: AcceptAsk})
			q, tc := listening(recv, addr.QUIC), listening(recv, addr.TCP)
			results := receivedResult(t, recv)
			tr, _, _ := offerPending(t, recv, tp)
			if err := recv.StopReceivingNow(); err != nil {
				t.Fatal(err)
			}
			if res := waitDone(t, tr); res.State != StateCancelled || res.Code != "cancelled" || !res.ByPeer || !strings.HasPrefix(res.Err, "Cancelled by ") {
				t.Errorf("sender: %s %s (by peer %v): %s", res.State, res.Code, res.ByPeer, res.Err)
			}
			if res := <-results; res.State != StateCancelled {
				t.Errorf("receiver: %s: %s", res.State, res.Err)
			}
			// The sockets are gone: the ports can be had again.
			pc, err := net.ListenPacket("udp", q)
			if err != nil {
				t.Errorf("QUIC's port is still taken: %v", err)
			} else {
				pc.Close()
			}
			ln, err := net.Listen("tcp", tc)
			if err != nil {
				t.Errorf("TCP's port is still taken: %v", err)
			} else {
				ln.Close()
			}
		})
	}
}

// With RetryFor < 0 the first failure ends the transfer; nothing was "given up".
func TestNoRetryReportsTheFailure(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	send := testEngine(t, Options{RetryFor: -1})
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 1<<10)
	res := sendWait(t, send, targetAt("tcp", addr), []string{src}, SendOptions{Transport: "tcp"})
	if res.State != StateFailed || strings.Contains(res.Err, "ave up") || strings.Contains(res.Err, "-1ns") ||
		res.Err != "Nothing is listening at "+addr+": is Ferry running there?" {
		t.Fatalf("%s: %q", res.State, res.Err)
	}
}
