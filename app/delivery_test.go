package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/ui"
)

// Issue #26, finding 1: the same file sent twice is two history entries on
// both sides, each naming its own delivery, the same on both.
func TestSameFileTwiceIsTwoHistoryEntries(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	sender := newTestBackend(t)
	receiver := newTestBackend(t, func(o *engine.Options) { o.Accept = engine.AcceptAll })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := receiver.eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sent, got := make(chan ui.TransferEvent, 256), make(chan ui.TransferEvent, 256)
	goPump(t, ctx, sender, sent, make(chan ui.DeviceEvent, 16))
	goPump(t, ctx, receiver, got, make(chan ui.DeviceEvent, 16))
	result := func(c <-chan ui.TransferEvent) ui.TransferEvent {
		t.Helper()
		timeout := time.After(time.Minute)
		for {
			select {
			case ev := <-c:
				if ev.Kind == ui.TransferResult {
					return ev
				}
			case <-timeout:
				t.Fatal("no result")
			}
		}
	}

	file := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(file, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := ui.Device{ID: receiver.eng.ID(), Name: "Receiver", Addrs: receiver.eng.Addrs()}
	var deliveries []string
	for range 2 {
		if err := sender.Send(dev, ui.Items{Paths: []string{file}}); err != nil {
			t.Fatal(err)
		}
		s, r := result(sent), result(got)
		if s.Result.State != ui.StateDone || r.Result.State != ui.StateDone {
			t.Fatalf("send %s, receipt %s", s.Result.State, r.Result.State)
		}
		if s.Delivery == "" || s.Delivery != r.Delivery {
			t.Fatalf("the sender's delivery %q, the receiver's %q", s.Delivery, r.Delivery)
		}
		deliveries = append(deliveries, s.Delivery)
	}
	if deliveries[0] == deliveries[1] {
		t.Fatalf("both sends are delivery %s", deliveries[0])
	}
	for who, b := range map[string]*backend{"sender": sender, "receiver": receiver} {
		h := b.history.list()
		if len(h) != 2 || h[0].ID == h[1].ID {
			t.Fatalf("%s's history: %+v", who, h)
		}
		// Newest first.
		if h[0].Delivery != deliveries[1] || h[1].Delivery != deliveries[0] || h[0].State != ui.StateDone || h[1].State != ui.StateDone {
			t.Errorf("%s's history: %+v, want deliveries %v newest first", who, h, deliveries)
		}
	}
}

// A history file written before deliveries had IDs loads as it is, and the
// next entry is added beside its entries.
func TestHistoryWithoutDeliveriesLoads(t *testing.T) {
	dir := t.TempDir()
	old := `[
  {
    "id": "r-5d1c0b4c7b1f2e9a0d3c6b5a49382716",
    "direction": 1,
    "peer_name": "Alice",
    "peer_id": "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGHIJKLMNOPQRST",
    "files": 1,
    "bytes": 314572800,
    "state": "done",
    "transport": "quic",
    "destination": "/home/bob/Downloads",
    "finished": "2026-11-30T10:00:00Z",
    "duration_seconds": 12.5,
    "names": ["big.bin"],
    "items": 1,
    "paths": ["/home/bob/Downloads/big.bin"]
  },
  {
    "id": "0123456789abcdef01234567",
    "direction": 0,
    "peer_name": "Carol",
    "peer_id": "ZYXWVUTSRQPONMLKJIHGFEDCBA765432ZYXWVUTSRQPONMLKJIHG",
    "files": 0,
    "bytes": 0,
    "state": "declined",
    "code": "declined",
    "by_peer": true,
    "error": "Declined by Carol.",
    "finished": "2026-11-29T09:00:00Z",
    "duration_seconds": 3,
    "text": "hello"
  }
]
`
	if err := os.WriteFile(filepath.Join(dir, historyFile), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := openHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := h.list()
	if len(got) != 2 || got[0].ID != "r-5d1c0b4c7b1f2e9a0d3c6b5a49382716" || got[0].Delivery != "" || got[0].Bytes != 314572800 ||
		got[1].Text != "hello" || got[1].Code != ui.CodeDeclined || !got[1].ByPeer {
		t.Fatalf("loaded %+v", got)
	}
	if err := h.add(ui.HistoryEntry{ID: "r-new", Delivery: "fedcba9876543210fedcba98", State: ui.StateDone, Finished: time.Now()}); err != nil {
		t.Fatal(err)
	}
	again, err := openHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l := again.list(); len(l) != 3 || l[0].Delivery != "fedcba9876543210fedcba98" || l[1].ID != got[0].ID {
		t.Fatalf("after one more: %+v", l)
	}
}
