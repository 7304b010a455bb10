package engine

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ferrydrop/ferry/engine/store"
)

// An offer this device refuses before anyone is asked is still shown by
// its names and size, in an EventOffer that asks nothing (the state its
// result ends in) right before its EventResult: the row and History read
// "a.txt · 9 MB" as for any other failed receive, where they read "From
// vm", "1 file" (the engine raised no EventOffer for it). The sender is
// told as before. (TestOfferRefusedForRoomIsNamed: no room.)
func TestOfferRefusedUnaskedIsNamed(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  Options
		setup func(recv *Engine)
		state State
	}{
		{"folder not writable", Options{Accept: AcceptAsk}, func(recv *Engine) {
			recv.writable = func(string) error { return fmt.Errorf("%w (read-only file system)", store.ErrNotWritable) }
		}, StateFailed},
		{"file too large for the folder", Options{Accept: AcceptAsk}, func(recv *Engine) {
			recv.fileLimit = func(string) store.FileLimit { return store.FileLimit{Max: 1 << 20, FS: "FAT32"} }
		}, StateDeclined},
		{"trusted devices only", Options{Accept: AcceptTrusted}, func(*Engine) {}, StateDeclined},
	} {
		t.Run(c.name, func(t *testing.T) {
			recv := testEngine(t, c.opts)
			c.setup(recv)
			if err := recv.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			refusedOfferIsNamed(t, recv, c.state)
		})
	}
}

// refusedOfferIsNamed sends recv a.txt of 9 MB, which recv refuses
// unasked, ending in state, and checks that recv's EventOffer named it.
func refusedOfferIsNamed(t *testing.T, recv *Engine, state State) {
	t.Helper()
	const size = 9 << 20
	events, unsub := recv.Subscribe(1024)
	defer unsub()
	a := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, a, size)
	if r := sendWait(t, testEngine(t, Options{}), target(recv), []string{a}, SendOptions{}); r.State == StateDone {
		t.Fatalf("the send was not refused: %+v", r)
	}
	var offer *OfferInfo
	for ev := range events {
		if ev.Direction != Receiving {
			continue
		}
		if ev.Kind == EventOffer {
			if ev.State != state {
				t.Errorf("offer event in %s, want %s (asking nothing)", ev.State, state)
			}
			offer = ev.Offer
		}
		if ev.Kind == EventResult {
			if ev.Result.State != state {
				t.Errorf("result %s %q, want %s", ev.Result.State, ev.Result.Err, state)
			}
			break
		}
	}
	if offer == nil {
		t.Fatal("no offer event before the result: the row and History cannot name what was refused")
	}
	if offer.Count != 1 || len(offer.Files) != 1 || offer.Files[0].Path != "a.txt" || offer.Files[0].Size != size || offer.TotalBytes != size {
		t.Errorf("offer %+v, files %+v; want a.txt of %d bytes", offer, offer.Files, size)
	}
}
