package ui

import (
	"strings"
	"testing"
	"time"
)

// TestDetailsSayWhenTheTransportsReasonWasMeasured: auto's reason carries
// the round-trip time measured when it chose (under load, 44.74 ms), and
// Details put it next to the later round-trip time in parentheses of their
// own: "Transport: TCP (clean low-latency path (RTT 44.74 ms): ...)" above
// "Round-trip time: 0.10 ms" read as a contradiction, with parentheses
// nested. A reason with figures gets its own line naming the moment; a
// short one stays in parentheses after the transport.
func TestDetailsSayWhenTheTransportsReasonWasMeasured(t *testing.T) {
	for _, c := range []struct {
		name, reason string
		want         []string
	}{
		{"measured", "clean low-latency path (RTT 44.74 ms): TCP moves more bytes per second here",
			[]string{"Transport: TCP\nWhy, when it connected: clean low-latency path (RTT 44.74 ms): TCP moves more bytes per second here\n",
				"Round-trip time: 0.10 ms"}},
		{"short", "chosen by the sender", []string{"Transport: TCP (chosen by the sender)\n", "Round-trip time: 0.10 ms"}},
		{"none", "", []string{"Transport: TCP\nRound-trip time: 0.10 ms"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, _, _ := newTestUI(t)
			id := "t-" + c.name
			u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: id, Direction: Outgoing, State: StateWaiting, Peer: Peer{ID: idAlice, Name: "Alice"},
				Offer: &Offer{Files: []FileInfo{{Path: "a.bin", Size: 100e6}}, Total: 100e6}})
			u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StateActive})
			u.ApplyTransfer(TransferEvent{Kind: TransferTransport, ID: id, Direction: Outgoing, State: StateActive,
				Transport: "tcp", Reason: c.reason})
			u.ApplyTransfer(TransferEvent{Kind: TransferMetrics, ID: id, Direction: Outgoing, State: StateActive,
				Metrics: &Metrics{Transport: "tcp", SmoothedRTT: 100 * time.Microsecond, MinRTT: 80 * time.Microsecond}})
			got := detailsText(u.transfers.byID[id])
			if !contains(got, c.want...) {
				t.Errorf("details:\n%s\nwant %q", got, c.want)
			}
			if strings.Contains(got, "((") || strings.Contains(got, "(clean") {
				t.Errorf("nested parentheses:\n%s", got)
			}
		})
	}
}
