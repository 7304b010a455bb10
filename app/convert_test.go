package app

import (
	"net/netip"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/ui"
)

func TestToUITransfer(t *testing.T) {
	now := time.Now()
	ev := engine.Event{Time: now, Kind: engine.EventProgress, TransferID: "x", Direction: engine.Receiving,
		Peer: engine.PeerInfo{Name: "A", ID: "ID"}, State: engine.StateActive,
		Progress: &engine.Progress{Bytes: 5, TotalBytes: 10, Files: 1, TotalFiles: 2, Rate: 100, ETA: 1.5}}
	got, ok := toUITransfer(ev)
	if !ok || got.Kind != ui.TransferProgress || got.Direction != ui.Incoming || got.Progress.ETA != 1500*time.Millisecond || got.Progress.Total != 10 {
		t.Fatalf("progress = %+v %+v", got, got.Progress)
	}

	m := &engine.Metrics{Transport: "quic", SmoothedRTTms: 1.5, DatagramsSent: 100, SendCalls: 10, PathMTU: 1441}
	ev = engine.Event{Time: now, Kind: engine.EventResult, TransferID: "x", Direction: engine.Sending, State: engine.StateDone,
		Result: &engine.Result{State: engine.StateDone, Files: 2, Verified: 2, Bytes: 10, Duration: 2, Transport: "quic", Metrics: m}}
	got, _ = toUITransfer(ev)
	r := got.Result
	if r == nil || r.State != ui.StateDone || r.Duration != 2*time.Second || r.Metrics.DatagramsPerCall != 10 || r.Metrics.SmoothedRTT != 1500*time.Microsecond {
		t.Fatalf("result = %+v", r)
	}
	h := historyEntry(got)
	if h.ID != "x" || h.Files != 2 || h.State != ui.StateDone || !h.Finished.Equal(now) || h.Duration != 2 {
		t.Fatalf("history entry = %+v", h)
	}
	if _, ok := toUITransfer(engine.Event{Kind: "something new"}); ok {
		t.Fatal("unknown kinds must be skipped")
	}
}

func TestToUIDevice(t *testing.T) {
	p := discovery.Peer{Name: "B", ID: "ID", Addrs: []netip.Addr{netip.MustParseAddr("10.0.0.2")}, QUICPort: 4000, TCPPort: 4001, OS: "linux"}
	d := toUIDevice(p, trust{known: true, trusted: true}, true)
	if d.QUICAddr != "10.0.0.2:4000" || d.TCPAddr != "10.0.0.2:4001" || !d.Trusted || !d.Online || d.OS != "linux" {
		t.Fatalf("device = %+v", d)
	}
	p.TCPPort = 0
	if d := toUIDevice(p, trust{}, false); d.TCPAddr != "" || d.Online {
		t.Fatalf("QUIC-only device = %+v", d)
	}
}

func TestTrustOf(t *testing.T) {
	peers := []engine.TrustedPeer{{ID: "A", AlwaysAccept: true}, {ID: "B"}}
	for _, c := range []struct {
		id   string
		want trust
	}{{"A", trust{true, true}}, {"B", trust{known: true}}, {"C", trust{}}} {
		if got := trustOf(peers, c.id); got != c.want {
			t.Errorf("trustOf(%s) = %+v, want %+v", c.id, got, c.want)
		}
	}
}
