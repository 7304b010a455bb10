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

// An offer from a device trusted but not accepted without asking, which
// the receiving engine holds behind the prompt it shows (MaxPrompts 1),
// reaches the UI as held (TransferQueued, counted by the prompt on screen:
// TestEveryHeldOfferIsCounted), with no offer event to draw a row; its
// sender withdrawing it ends it with a result the UI takes without a row
// (TestHeldOfferWithdrawnLeavesNoRow), and History keeps its entry. The
// UI heard nothing of it before its turn.
func TestHeldOfferOfATrustedDeviceReachesTheUI(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	r := newTestBackend(t, func(o *engine.Options) { o.Name = "Receiver"; o.Accept = engine.AcceptAsk; o.MaxPrompts = 1 })
	if err := r.eng.Start(r.ctx); err != nil {
		t.Fatal(err)
	}
	out := make(chan ui.TransferEvent, 256)
	goPump(t, r.ctx, r, out, make(chan ui.DeviceEvent, 256))
	file := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(file, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	sender := func(name string) *engine.Engine {
		t.Helper()
		eng, err := engine.New(engine.Options{ConfigDir: t.TempDir(), Name: name, Listen: "127.0.0.1:0", RetryFor: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		return eng
	}
	next := func(want ui.TransferEventKind, from string) ui.TransferEvent {
		t.Helper()
		for timeout := time.After(time.Minute); ; {
			select {
			case ev := <-out:
				if ev.Direction != ui.Incoming || ev.Peer.ID != from {
					continue
				}
				if ev.Kind == want {
					return ev
				}
				if ev.Kind == ui.TransferOffer || ev.Kind == ui.TransferResult {
					t.Fatalf("waiting for kind %d from %s: got %d (%+v)", want, from, ev.Kind, ev.Result)
				}
			case <-timeout:
				t.Fatalf("no event of kind %d from %s", want, from)
			}
		}
	}
	shown := sender("Shown")
	if _, err := shown.Send(context.Background(), engine.Target{Addrs: r.eng.Addrs()}, []string{file}, engine.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	next(ui.TransferOffer, shown.ID())
	trusted := sender("Trusted")
	if err := r.eng.SetTrusted(trusted.ID(), true); err != nil {
		t.Fatal(err)
	}
	tr, err := trusted.Send(context.Background(), engine.Target{Addrs: r.eng.Addrs()}, []string{file}, engine.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held := next(ui.TransferQueued, trusted.ID())
	if !held.Peer.Trusted {
		t.Fatalf("held: %+v, want it from a trusted device", held.Peer)
	}
	if err := trusted.Cancel(tr.ID()); err != nil {
		t.Fatal(err)
	}
	end := next(ui.TransferResult, trusted.ID())
	if end.ID != held.ID || end.Result.State != ui.StateCancelled || !end.Result.ByPeer {
		t.Fatalf("withdrawn: %s %+v", end.ID, end.Result)
	}
	for _, e := range r.History() {
		if e.ID == held.ID {
			if e.State != ui.StateCancelled || !e.ByPeer || e.Direction != ui.Incoming {
				t.Fatalf("History: %+v", e)
			}
			return
		}
	}
	t.Fatalf("History has no entry of the withdrawn offer: %+v", r.History())
}
