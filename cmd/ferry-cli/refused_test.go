package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
)

// TestRefusedLine: what a refused event says (offers this receiver's
// limits refused before reading them), by what it counts: receive said
// nothing of them, so a flood's senders turned away went unseen.
func TestRefusedLine(t *testing.T) {
	first := time.Date(2030, 1, 1, 14, 2, 11, 0, time.Local)
	devs := func(n int) (d []engine.RefusedDevice) {
		for i := range n {
			d = append(d, engine.RefusedDevice{ID: strings.Repeat(string(rune('A'+i)), 52)})
		}
		return d
	}
	id := strings.Repeat("K", 52)
	for _, c := range []struct {
		peer engine.PeerInfo
		r    engine.Refusals
		want string
	}{
		{engine.PeerInfo{Addr: "192.0.2.7", ID: id}, engine.Refusals{Reason: engine.RefusedBusy, Count: 1, First: first, Devices: devs(1)},
			"refused an offer from KKKK-KKKK at 192.0.2.7 unread: too many devices were offering at once"},
		{engine.PeerInfo{Addr: "192.0.2.7"}, engine.Refusals{Reason: engine.RefusedBusy, Count: 17, First: first, Devices: devs(16), MoreDevices: true},
			"refused 17 offers from 192.0.2.7 (16 devices and more) unread since 14:02:11: too many devices were offering at once"},
		{engine.PeerInfo{Addr: "192.0.2.8", ID: id, Name: "Bad\x1b[2Jname", Protocol: engine.ProtocolLocalSend},
			engine.Refusals{Reason: engine.RefusedMuted, Count: 3, First: first, Devices: devs(1)},
			`refused 3 offers from LocalSend "Bad\x1b[2Jname" (KKKK-KKKK) at 192.0.2.8 unread since 14:02:11: muted: offers from that device were declined a moment ago`},
		{engine.PeerInfo{Addr: "192.0.2.9"}, engine.Refusals{Reason: engine.RefusedNewDevices, Count: 2, First: first, Devices: devs(2)},
			"refused 2 offers from 192.0.2.9 (2 devices) unread since 14:02:11: too many new devices came from that address lately"},
		{engine.PeerInfo{}, engine.Refusals{Reason: engine.RefusedMutedAddress, Count: 500, First: first, Devices: devs(16), MoreDevices: true},
			"refused 500 offers from other addresses (16 devices and more) unread since 14:02:11: muted: offers from other new devices at that address were declined a moment ago"},
	} {
		ev := engine.Event{Kind: engine.EventRefused, Peer: c.peer, Refused: &c.r}
		if got := refusedLine(ev); got != c.want {
			t.Errorf("%+v:\n got %q\nwant %q", c.r, got, c.want)
		}
	}
}

// TestReceiveTellsRefusalsAsItStops: a receive that stops prints, in lines
// or --json, the refusals the engine still summed up and tells as it
// closes, and not the transfers its closing ends. They were lost: receive
// stopped reading before its engine closed.
func TestReceiveTellsRefusalsAsItStops(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		p := newPrinter(&out, asJSON)
		events := make(chan engine.Event, 4)
		closed := false
		tellSums(func() {
			closed = true
			events <- engine.Event{Kind: engine.EventResult, TransferID: "t1", Direction: engine.Receiving,
				Result: &engine.Result{State: engine.StateCancelled}}
			events <- engine.Event{Kind: engine.EventRefused, Direction: engine.Receiving, Peer: engine.PeerInfo{Addr: "192.0.2.7"},
				Refused: &engine.Refusals{Reason: engine.RefusedBusy, Count: 2, Devices: []engine.RefusedDevice{{ID: "A"}, {ID: "B"}}}}
		}, events, p)
		if !closed {
			t.Fatal("the engine was not closed")
		}
		got := out.String()
		if strings.Count(got, "\n") != 1 {
			t.Errorf("json %v: printed %q, want the refusals alone", asJSON, got)
		}
		if !asJSON {
			if !strings.HasPrefix(got, "refused 2 offers from 192.0.2.7 (2 devices) unread") {
				t.Errorf("printed %q", got)
			}
			continue
		}
		var ev struct {
			Kind    string
			Refused struct {
				Reason  string
				Count   int
				Devices []struct{ ID string }
			}
		}
		if err := json.Unmarshal([]byte(got), &ev); err != nil || ev.Kind != "refused" || ev.Refused.Reason != "busy" || ev.Refused.Count != 2 || len(ev.Refused.Devices) != 2 {
			t.Errorf("--json printed %q (%v), want a refused event", got, err)
		}
	}
}
