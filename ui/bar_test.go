package ui

import (
	"testing"

	"fyne.io/fyne/v2/test"
)

// TestEndedWithNothingMovedHasNoBar: a row that ended before a byte moved
// (declined, withdrawn, cancelled, failed to start) shows no progress bar;
// it showed an empty 0 % one, as if something were still to come. A row
// that moved bytes keeps its bar where they stopped, a done one full, and a
// cancelled send resumed shows its bar again.
func TestEndedWithNothingMovedHasNoBar(t *testing.T) {
	u, _, _ := newTestUI(t)
	alice := Peer{ID: idAlice, Name: "Alice"}
	end := func(id string, dir Direction, r *Result) *transferView {
		t.Helper()
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Direction: dir, State: r.State, Peer: alice, Result: r})
		return u.transfers.byID[id]
	}

	// Offers this user declined and the sender withdrew.
	u.ApplyTransfer(offerEvent("in-declined", 2))
	u.ApplyTransfer(offerEvent("in-withdrawn", 1))
	u.ApplyTransfer(offerEvent("in-failed", 1))
	// A receive cancelled half-way, one done.
	u.ApplyTransfer(offerEvent("in-half", 1))
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "in-half", Direction: Incoming, State: StateActive, Peer: alice,
		Progress: &Progress{Bytes: 500, Total: 1000}})
	u.ApplyTransfer(offerEvent("in-done", 1))
	for _, c := range []struct {
		v    *transferView
		bar  bool
		want float64
	}{
		{end("in-declined", Incoming, &Result{State: StateDeclined, Code: CodeDeclined}), false, 0},
		{end("in-withdrawn", Incoming, &Result{State: StateCancelled, Code: CodeCancelled, ByPeer: true}), false, 0},
		{end("in-failed", Incoming, &Result{State: StateFailed, Err: "The connection was lost."}), false, 0},
		{end("out-declined", Outgoing, &Result{State: StateDeclined, Code: CodeDeclined, ByPeer: true}), false, 0},
		{end("out-cancelled", Outgoing, &Result{State: StateCancelled, Code: CodeCancelled}), false, 0},
		{end("in-half", Incoming, &Result{State: StateCancelled, Code: CodeCancelled}), true, 0.5},
		{end("in-done", Incoming, &Result{State: StateDone, Files: 1, Bytes: 1000}), true, 1},
	} {
		if c.v.bar.Visible() != c.bar || c.bar && c.v.bar.Value != c.want {
			t.Errorf("%s (%s): bar shown %v at %v, want shown %v at %v", c.v.id, c.v.stateLbl.Text, c.v.bar.Visible(), c.v.bar.Value, c.bar, c.want)
		}
	}

	// The cancelled send runs again: its bar is back.
	test.Tap(u.transfers.byID["out-cancelled"].retry)
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "out-cancelled", Direction: Outgoing, State: StateActive})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "out-cancelled", Direction: Outgoing, State: StateActive, Peer: alice,
		Progress: &Progress{Bytes: 100, Total: 1000}})
	if v := u.transfers.byID["out-cancelled"]; !v.bar.Visible() || v.bar.Value != 0.1 {
		t.Errorf("the cancelled send running again (%s): bar shown %v at %v", v.stateLbl.Text, v.bar.Visible(), v.bar.Value)
	}
}

// TestEndedWithNothingMovedNamesNoTransport: a row that ended before a byte
// moved says no transport in its second line ("1 file · 1.0 kB", not
// "... · TCP"): nothing travelled over it. A row that moved bytes, done or
// stopped half-way, still names it.
func TestEndedWithNothingMovedNamesNoTransport(t *testing.T) {
	u, _, _ := newTestUI(t)
	alice := Peer{ID: idAlice, Name: "Alice"}
	for _, c := range []struct {
		id    string
		moved int64
		r     *Result
		tcp   bool
	}{
		{"declined", 0, &Result{State: StateDeclined, Code: CodeDeclined, ByPeer: true, Transport: "tcp"}, false},
		{"cancelled", 0, &Result{State: StateCancelled, Code: CodeCancelled, Transport: "tcp"}, false},
		{"expired", 0, &Result{State: StateDeclined, Code: "expired", Transport: "tcp"}, false},
		{"failed", 0, &Result{State: StateFailed, Err: "The connection was lost.", Transport: "tcp"}, false},
		{"half", 500, &Result{State: StateCancelled, Code: CodeCancelled, Transport: "tcp"}, true},
		{"done", 1000, &Result{State: StateDone, Files: 1, Bytes: 1000, Transport: "tcp"}, true},
	} {
		u.ApplyTransfer(TransferEvent{Kind: TransferTransport, ID: c.id, Direction: Outgoing, State: StateActive, Peer: alice, Transport: "tcp"})
		u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: c.id, Direction: Outgoing, State: StateActive, Peer: alice,
			Progress: &Progress{Bytes: c.moved, Total: 1000, TotalFiles: 1}})
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: c.id, Direction: Outgoing, State: c.r.State, Peer: alice, Result: c.r})
		v := u.transfers.byID[c.id]
		if got := contains(v.sub.Text, "TCP"); got != c.tcp {
			t.Errorf("%s (%s): second line %q, names TCP %v, want %v", c.id, v.stateLbl.Text, v.sub.Text, got, c.tcp)
		}
	}
}

// TestNothingMovedYetHasNoBar: a row waiting for an answer (an offer here,
// a send waiting for the receiver or for the PIN a LocalSend device asks
// for) or connecting shows no progress bar: Fyne draws a 0 % bar's track
// across its whole width in the primary colour at half strength, which read
// as a full dark-blue bar with "0%" on it. The bar comes with the first
// bytes, at their share.
func TestNothingMovedYetHasNoBar(t *testing.T) {
	u, _, _ := newTestUI(t)
	phone := Peer{ID: idAlice, Name: "Galaxy S24"}
	u.ApplyTransfer(offerEvent("offered", 1))
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "pin", Direction: Outgoing, State: StateWaiting, Peer: phone})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "pin", Direction: Outgoing, State: StateWaiting, Peer: phone,
		Progress: &Progress{Total: 3e6, TotalFiles: 1}})
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "connecting", Direction: Outgoing, State: StateConnecting, Peer: phone})
	for _, id := range []string{"offered", "pin", "connecting"} {
		if v := u.transfers.byID[id]; v.bar.Visible() {
			t.Errorf("%s (%s): a bar at %v before a byte moved", id, v.stateLbl.Text, v.bar.Value)
		}
	}

	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "pin", Direction: Outgoing, State: StateActive, Peer: phone})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "pin", Direction: Outgoing, State: StateActive, Peer: phone,
		Progress: &Progress{Bytes: 3e5, Total: 3e6, TotalFiles: 1}})
	if v := u.transfers.byID["pin"]; !v.bar.Visible() || v.bar.Value != 0.1 {
		t.Errorf("sending (%s): bar shown %v at %v, want shown at 0.1", v.stateLbl.Text, v.bar.Visible(), v.bar.Value)
	}
}
