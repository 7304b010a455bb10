package app

import (
	"context"
	"testing"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/ui"
)

// A UI audit: a send's row said "Ferry was closed on Ferry A: waiting for
// it to be opened again…" while the device list still showed Ferry A
// online: for a second after its goodbye, and a device found by probing
// (added by address, or trusted on another network) until its TTL ran out,
// 45 s. The app knows it is gone: discovery drops it at once, and lists it
// again when it is heard again.
func TestGoingAwayTakesTheDeviceAway(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	b := newTestBackend(t)
	a, err := engine.New(engine.Options{ConfigDir: t.TempDir(), Name: "Ferry A", DownloadDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.disc.AddManual(ctx, listening(a, addr.QUIC)); err != nil {
		t.Fatal(err)
	}
	listed := func() bool {
		for _, p := range b.disc.Peers() {
			if p.ID == a.ID() {
				return true
			}
		}
		return false
	}
	if !listed() {
		t.Fatal("Ferry A is not listed")
	}
	seen, stop := b.disc.Subscribe(16)
	defer stop()

	evs := make(chan engine.Event, 1)
	out := make(chan ui.TransferEvent, 1)
	ctx, cancel := context.WithCancel(ctx)
	pumped := make(chan struct{})
	go func() { defer close(pumped); pumpEvents(ctx, evs, b, out, make(chan ui.DeviceEvent, 16)) }()
	defer func() { cancel(); <-pumped }()
	// What the engine says of a send whose receiver's Ferry is closing.
	evs <- engine.Event{Kind: engine.EventState, TransferID: "s1", Direction: engine.Sending, State: engine.StateRetrying,
		Peer:   engine.PeerInfo{ID: a.ID(), Name: "Ferry A"},
		Result: &engine.Result{State: engine.StateRetrying, Code: string(ui.CodeGoingAway), Err: "Ferry A went away: Ferry was closed there."}}
	if ev := <-out; ev.Result == nil || ev.Result.Code != ui.CodeGoingAway {
		t.Fatalf("the UI got %+v", ev)
	}
	if listed() {
		t.Fatal("Ferry A is still listed once its Ferry said it was closing")
	}
	if ev := <-seen; ev.Kind != discovery.PeerGone || ev.Peer.ID != a.ID() || ev.Reason != "closed" {
		t.Fatalf("discovery said %+v", ev)
	}
	// Heard again (opened again): listed again, as a device that appears.
	if _, err := b.disc.AddManual(ctx, listening(a, addr.QUIC)); err != nil {
		t.Fatal(err)
	}
	if ev := <-seen; ev.Kind != discovery.PeerAppeared || ev.Peer.ID != a.ID() {
		t.Fatalf("heard again, discovery said %+v", ev)
	}
}
