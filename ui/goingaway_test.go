package ui

import (
	"strings"
	"testing"
)

// A send whose receiver's Ferry was closed (with the offer on its screen,
// or mid-way) is tried again for a while, so that a receiver opened again
// gets it: its row said "Reconnecting to vm…" all that time, as if the
// network were at fault, the reason only in Details. The engine's
// retrying state says going_away now, and the row and the tray say what
// it waits for; a connection lost otherwise still reads as reconnecting.
func TestSendToAClosedFerrySaysItWaitsForIt(t *testing.T) {
	u, _, _ := newTestUI(t)
	p := Peer{ID: idAlice, Name: "vm"}
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "s1", Direction: Outgoing, State: StateConnecting, Peer: p,
		Offer: &Offer{Files: []FileInfo{{Path: "a.bin", Size: 1000}}, Total: 1000}})
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "s1", Direction: Outgoing, State: StateWaiting, Peer: p})
	retrying := func(code Code) {
		u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "s1", Direction: Outgoing, State: StateRetrying, Peer: p,
			Result: &Result{State: StateRetrying, Code: code, Err: "vm went away: Ferry was closed there."}})
	}
	v := u.transfers.byID["s1"]
	retrying(CodeGoingAway)
	if got := texts(v.obj); !strings.Contains(got, "Ferry was closed on vm: waiting for it to be opened again…") || strings.Contains(got, "Reconnecting") {
		t.Fatalf("its Ferry closed: the row says %q", got)
	}
	if st := u.transfers.status(v); st.Detail != "vm went away: Ferry was closed there." {
		t.Fatalf("Details: %q", st.Detail)
	}
	if lines, _ := u.underWay(); len(lines) != 1 || lines[0] != "To vm: a.bin · waiting for its Ferry to be opened again" {
		t.Fatalf("the tray says %q", lines)
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "s1", Direction: Outgoing, State: StateWaiting, Peer: p})
	if got := texts(v.obj); !strings.Contains(got, "Waiting for vm to accept") {
		t.Fatalf("opened again and asked: the row says %q", got)
	}
	retrying(CodeConnectionLost)
	if got := texts(v.obj); !strings.Contains(got, "Reconnecting to vm…") {
		t.Fatalf("the connection lost: the row says %q", got)
	}
	if lines, _ := u.underWay(); len(lines) != 1 || lines[0] != "To vm: a.bin · reconnecting" {
		t.Fatalf("the tray says %q", lines)
	}
}
