package app

import (
	"slices"
	"testing"

	"github.com/ferrydrop/ferry/ui"
	"github.com/ferrydrop/ferry/ui/transfer"
)

// rejoinRig feeds transfer events through the rejoin the way pumpTransfers
// does (mark, the model, ended) and plays discovery's appearances by hand.
type rejoinRig struct {
	r       rejoin
	model   *transfer.Model
	retried []string
}

func (g *rejoinRig) feed(evs ...ui.TransferEvent) {
	for _, ev := range evs {
		g.r.mark(&ev)
		if !ev.Pairing {
			for _, me := range ui.DeliveryEvents(ev) {
				g.model.Apply(me)
			}
		}
		g.r.ended(ev, g.model.Get(ev.ID))
	}
}

func (g *rejoinRig) appear(deviceID string) {
	g.r.back(deviceID, func(id string) error {
		g.retried = append(g.retried, id)
		// Retry's own drop (backend.Retry) and the same delivery going on.
		g.r.drop(id)
		g.feed(ui.TransferEvent{Kind: ui.TransferState, ID: id, Direction: ui.Outgoing, State: ui.StateConnecting})
		return nil
	})
}

var bob = ui.Peer{ID: "bob-id", Name: "Bob's laptop"}

// sendTo starts send id to peer and gets a few bytes across.
func sendTo(id string, peer ui.Peer) []ui.TransferEvent {
	return []ui.TransferEvent{
		{Kind: ui.TransferOffer, ID: id, Direction: ui.Outgoing, Peer: peer,
			Offer: &ui.Offer{Files: []ui.FileInfo{{Path: "big.bin", Size: 100 << 20}}, Total: 100 << 20}},
		{Kind: ui.TransferState, ID: id, Direction: ui.Outgoing, Peer: peer, State: ui.StateActive},
		{Kind: ui.TransferProgress, ID: id, Direction: ui.Outgoing, Peer: peer, Progress: &ui.Progress{Bytes: 10 << 20, Total: 100 << 20}},
	}
}

func failed(id string, peer ui.Peer, code ui.Code) ui.TransferEvent {
	return ui.TransferEvent{Kind: ui.TransferResult, ID: id, Direction: ui.Outgoing, Peer: peer, State: ui.StateFailed,
		Result: &ui.Result{State: ui.StateFailed, Code: code}}
}

// A send whose receiver went away is retried once, when discovery sees
// that device again, and only that device; the row says so meanwhile.
func TestRejoinRetriesOnceWhenTheDeviceIsBack(t *testing.T) {
	g := &rejoinRig{model: transfer.New()}
	g.feed(sendTo("s1", bob)...)
	g.feed(failed("s1", bob, ui.CodeConnectionLost))
	d := g.model.Get("s1")
	if want := "Bob's laptop went away. Ferry will send the rest when it is back."; d.Status() != want {
		t.Fatalf("row says %q, want %q", d.Status(), want)
	}
	if acts := d.Actions(); !slices.Equal(acts, []transfer.Action{transfer.ActionRetry, transfer.ActionCancel}) {
		t.Errorf("actions %v, want Retry and Cancel", acts)
	}
	g.appear("carol-id")
	if len(g.retried) != 0 {
		t.Fatalf("another device's appearance retried %v", g.retried)
	}
	g.appear("bob-id")
	if !slices.Equal(g.retried, []string{"s1"}) {
		t.Fatalf("retried %v, want s1 once", g.retried)
	}
	if d := g.model.Get("s1"); d.Phase == transfer.Failed || len(g.model.Deliveries()) != 1 {
		t.Errorf("the same delivery does not go on: %s, %d rows", d.Phase, len(g.model.Deliveries()))
	}
	// Gone again: its one rejoin is spent; Retry is the user's.
	g.feed(failed("s1", bob, ui.CodeConnectionLost))
	g.appear("bob-id")
	if len(g.retried) != 1 {
		t.Errorf("retried %v, want once", g.retried)
	}
	if want := "Bob's laptop went away. Retry sends the rest when it is back."; g.model.Get("s1").Status() != want {
		t.Errorf("after its rejoin the row says %q, want %q", g.model.Get("s1").Status(), want)
	}
}

// Cancel gives up on a send that waits for its device; other failures,
// pairings and devices without an ID are never waited for.
func TestRejoinCancelAndWhatIsNotWaitedFor(t *testing.T) {
	g := &rejoinRig{model: transfer.New()}
	g.feed(sendTo("s1", bob)...)
	g.feed(failed("s1", bob, ui.CodeConnectionLost))
	if !g.r.drop("s1") { // backend.Cancel
		t.Fatal("Cancel found nothing waiting")
	}
	g.model.Apply(transfer.Event{Kind: transfer.ActCancel, Delivery: "s1"})
	if d := g.model.Get("s1"); d.Phase != transfer.Cancelled || d.Status() != "Cancelled by you" {
		t.Errorf("cancelled row: %s %q", d.Phase, d.Status())
	}

	g.feed(sendTo("s2", bob)...)
	g.feed(failed("s2", bob, ui.CodeNoSpace)) // not gone: full
	g.feed(ui.TransferEvent{Kind: ui.TransferState, ID: "s3", Direction: ui.Outgoing, Peer: bob, State: ui.StateConnecting})
	g.feed(failed("s3", bob, ui.CodeIO)) // never reached: unreachable
	anon := ui.Peer{Name: "192.0.2.7"}
	g.feed(sendTo("s4", anon)...)
	g.feed(failed("s4", anon, ui.CodeConnectionLost)) // no ID to know it again
	p := failed("s5", bob, ui.CodeConnectionLost)
	p.Pairing = true
	g.feed(p)
	g.appear("bob-id")
	if len(g.retried) != 0 {
		t.Errorf("retried %v, want none", g.retried)
	}
	if g.r.drop("s2") || g.r.drop("s4") || g.r.drop("s5") {
		t.Error("a send that does not wait for its device was waiting")
	}
}
