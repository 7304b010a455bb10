package ui

import (
	"testing"
	"time"
)

// Issue 29: the row and Details say the way a transfer goes, with the
// path's round-trip time and throughput, and a send that leaves the LAN
// says it continues over the internet.
func TestRowSaysThePathAndLeavingTheNetwork(t *testing.T) {
	u, _, _ := newTestUI(t)
	id := "far"
	desk := Peer{ID: idAlice, Name: "Desktop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferTransport, ID: id, Direction: Outgoing, State: StateActive, Peer: desk,
		Transport: "quic", Reason: "preferred", Route: "lan"})
	u.ApplyTransfer(TransferEvent{Kind: TransferMetrics, ID: id, Direction: Outgoing, State: StateActive,
		Metrics: &Metrics{Transport: "quic", SmoothedRTT: 3 * time.Millisecond, MinRTT: 2 * time.Millisecond}})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: id, Direction: Outgoing, State: StateActive,
		Progress: &Progress{Bytes: 10e6, Total: 100e6, TotalFiles: 1, Rate: 50e6}})
	v := u.transfers.byID[id]
	if !contains(v.sub.Text, "QUIC", "direct, 3.00 ms round trip", "50.0 MB/s") || v.stateLbl.Text != "Sending 1 file" {
		t.Errorf("on the LAN: sub %q state %q", v.sub.Text, v.stateLbl.Text)
	}

	// The LAN is gone: the engine reconnects through the relay.
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StateRetrying,
		Result: &Result{State: StateRetrying, Err: "this device's address is gone"}})
	u.ApplyTransfer(TransferEvent{Kind: TransferTransport, ID: id, Direction: Outgoing, State: StateActive,
		Transport: "quic", Reason: "through the internet, relayed (relay 7.0.0.1:50000 <-> srflx 7.0.2.2:4000)",
		Route: "relayed", Relay: "relay.example.org:3478"})
	if want := "Left the network — continuing over the internet"; v.stateLbl.Text != want {
		t.Errorf("after the move: state %q, want %q", v.stateLbl.Text, want)
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferMetrics, ID: id, Direction: Outgoing, State: StateActive,
		Metrics: &Metrics{Transport: "quic", SmoothedRTT: 80 * time.Millisecond, MinRTT: 79 * time.Millisecond}})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: id, Direction: Outgoing, State: StateActive,
		Progress: &Progress{Bytes: 20e6, Total: 100e6, TotalFiles: 1, Rate: 12e6}})
	if !contains(v.sub.Text, "relayed via relay.example.org, 80ms round trip", "12.0 MB/s") {
		t.Errorf("relayed: sub %q", v.sub.Text)
	}
	if want := "Left the network — continuing over the internet · Sending 1 file"; v.stateLbl.Text != want {
		t.Errorf("relayed: state %q, want %q", v.stateLbl.Text, want)
	}
	got := detailsText(v)
	if !contains(got, "Path: relayed via relay.example.org", "Throughput: 12.0 MB/s", "Round-trip time: 80ms") {
		t.Errorf("details %q", got)
	}

	// Done: the path stays, the live figures go.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Direction: Outgoing, State: StateDone,
		Result: &Result{State: StateDone, Files: 1, Verified: 1, Bytes: 100e6, Transport: "quic"}})
	if !contains(v.sub.Text, "relayed via relay.example.org") || contains(v.sub.Text, "round trip") {
		t.Errorf("done: sub %q", v.sub.Text)
	}
	if got := detailsText(v); contains(got, "Throughput") {
		t.Errorf("done: details %q still show a live throughput", got)
	}
}

// A transfer whose engine does not say the route (LocalSend, an older
// engine) shows no path words.
func TestRowWithoutRouteSaysNoPath(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.ApplyTransfer(TransferEvent{Kind: TransferTransport, ID: "x", Direction: Outgoing, State: StateActive,
		Peer: Peer{ID: idAlice, Name: "Alice"}, Transport: "quic", Reason: "preferred"})
	v := u.transfers.byID["x"]
	if contains(v.sub.Text, "direct") || contains(detailsText(v), "Path:") {
		t.Errorf("sub %q details %q", v.sub.Text, detailsText(v))
	}
}

// TestIncomingRowSaysThePath: the receiving side's row and Details say the
// path as the sending side's do, and "left the network" when the sender
// comes back through the relay after the LAN went away.
func TestIncomingRowSaysThePath(t *testing.T) {
	u, _, _ := newTestUI(t)
	id := "from-far"
	desk := Peer{ID: idAlice, Name: "Desktop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: id, Direction: Incoming, State: StateWaiting, Peer: desk,
		Offer: &Offer{Files: []FileInfo{{Path: "far.bin", Size: 100e6}}, Total: 100e6}})
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Incoming, State: StateActive})
	u.ApplyTransfer(TransferEvent{Kind: TransferTransport, ID: id, Direction: Incoming, State: StateActive,
		Transport: "quic", Reason: "chosen by the sender", Route: "lan"})
	u.ApplyTransfer(TransferEvent{Kind: TransferMetrics, ID: id, Direction: Incoming, State: StateActive,
		Metrics: &Metrics{Transport: "quic", SmoothedRTT: 3 * time.Millisecond, MinRTT: 2 * time.Millisecond}})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: id, Direction: Incoming, State: StateActive,
		Progress: &Progress{Bytes: 10e6, Total: 100e6, TotalFiles: 1, Rate: 50e6}})
	v := u.transfers.byID[id]
	if v == nil {
		t.Fatal("no row")
	}
	if !contains(v.sub.Text, "direct, 3.00 ms round trip", "50.0 MB/s") {
		t.Errorf("on the LAN: sub %q", v.sub.Text)
	}
	if got := detailsText(v); !contains(got, "Transport: QUIC (chosen by the sender)", "Path: direct") {
		t.Errorf("on the LAN: details %q", got)
	}

	// The sender left the LAN and reconnected through the relay: a new
	// session of the same delivery, relayed.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Direction: Incoming, State: StateFailed,
		Result: &Result{State: StateFailed, Err: "connection lost", Bytes: 25e6}})
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: id, Direction: Incoming, State: StateWaiting, Peer: desk,
		Offer: &Offer{Files: []FileInfo{{Path: "far.bin", Size: 100e6}}, Total: 100e6}})
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Incoming, State: StateActive})
	u.ApplyTransfer(TransferEvent{Kind: TransferTransport, ID: id, Direction: Incoming, State: StateActive,
		Transport: "quic", Reason: "chosen by the sender", Route: "relayed", Relay: "relay.example.org:3478"})
	u.ApplyTransfer(TransferEvent{Kind: TransferMetrics, ID: id, Direction: Incoming, State: StateActive,
		Metrics: &Metrics{Transport: "quic", SmoothedRTT: 80 * time.Millisecond, MinRTT: 79 * time.Millisecond}})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: id, Direction: Incoming, State: StateActive,
		Progress: &Progress{Bytes: 30e6, Total: 100e6, TotalFiles: 1, Rate: 12e6}})
	if !contains(v.sub.Text, "relayed via relay.example.org, 80ms round trip", "12.0 MB/s") {
		t.Errorf("relayed: sub %q", v.sub.Text)
	}
	if !contains(v.stateLbl.Text, "Left the network — continuing over the internet") {
		t.Errorf("relayed: state %q", v.stateLbl.Text)
	}
	if got := detailsText(v); !contains(got, "Path: relayed via relay.example.org", "Round-trip time: 80ms") {
		t.Errorf("relayed: details %q", got)
	}
}
