package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/ui"
)

// side is one device of a two-engine test: its backend and the UI events
// it produces.
type side struct {
	b   *backend
	out chan ui.TransferEvent
}

func newSide(t *testing.T, name string, tune ...func(*engine.Options)) *side {
	t.Helper()
	tune = append([]func(*engine.Options){func(o *engine.Options) { o.Name = name }}, tune...)
	b := newTestBackend(t, tune...)
	s := &side{b: b, out: make(chan ui.TransferEvent, 256)}
	goPump(t, b.ctx, b, s.out, make(chan ui.DeviceEvent, 64))
	return s
}

// next returns the next event of kind.
func (s *side) next(t *testing.T, kind ui.TransferEventKind) ui.TransferEvent {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-s.out:
			if ev.Kind == kind {
				return ev
			}
		case <-timeout:
			t.Fatalf("no event of kind %d", kind)
		}
	}
}

// offerFromTo sends a 5-byte file from s to r and returns the offer r got
// and the ID of s's transfer.
func offerFromTo(t *testing.T, s, r *side) (ui.TransferEvent, string) {
	t.Helper()
	if err := r.b.eng.Start(r.b.ctx); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(file, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.b.Send(ui.Device{ID: r.b.eng.ID(), Name: r.b.eng.Name(), Addrs: r.b.eng.Addrs()}, ui.Items{Paths: []string{file}}); err != nil {
		t.Fatal(err)
	}
	offer := r.next(t, ui.TransferOffer)
	var sendID string
	for sendID == "" {
		if ev := s.next(t, ui.TransferState); ev.State == ui.StateWaiting {
			sendID = ev.ID
		}
	}
	return offer, sendID
}

type want struct {
	state  ui.State
	code   ui.Code
	byPeer bool
}

// check compares the next result of s with one of ws, and the history
// entry it left. The receiving side knows the offered files (1 file, 5
// bytes) even when it never accepted them.
func check(t *testing.T, who string, s *side, ws ...want) {
	t.Helper()
	ev := s.next(t, ui.TransferResult)
	r := ev.Result
	var w want
	for _, w = range ws {
		if r.State == w.state && r.Code == w.code && r.ByPeer == w.byPeer {
			break
		}
	}
	if r.State != w.state || r.Code != w.code || r.ByPeer != w.byPeer {
		t.Errorf("%s: result %s/%q by peer %v, want one of %+v (engine said %q)", who, r.State, r.Code, r.ByPeer, ws, r.Err)
	}
	h := s.b.History()
	if len(h) == 0 || h[0].ID != ev.ID {
		t.Fatalf("%s: history %+v lacks %s", who, h, ev.ID)
	}
	e := h[0]
	if e.State != r.State || e.Code != r.Code || e.ByPeer != r.ByPeer {
		t.Errorf("%s: history entry %+v differs from the result %+v", who, e, r)
	}
	if ev.Direction == ui.Incoming && (e.Files != 1 || e.Bytes != 5) {
		t.Errorf("%s: history entry %+v, want the offered 1 file of 5 bytes", who, e)
	}
}

// TestEndsAreToldOnBothSides runs real engines on loopback: a decline, an
// expired prompt (the UI's and the engine's own timer) and a withdrawn
// offer each read right on both sides, and the history keeps the offered
// files, not "0 files".
func TestEndsAreToldOnBothSides(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Run("declined", func(t *testing.T) {
		s, r := newSide(t, "Sender"), newSide(t, "Receiver")
		offer, _ := offerFromTo(t, s, r)
		if err := r.b.Decide(offer.ID, ui.Decision{Reason: "declined"}); err != nil {
			t.Fatal(err)
		}
		check(t, "receiver", r, want{ui.StateDeclined, ui.CodeDeclined, false})
		check(t, "sender", s, want{ui.StateDeclined, ui.CodeDeclined, true})
	})
	t.Run("prompt expired", func(t *testing.T) {
		s, r := newSide(t, "Sender"), newSide(t, "Receiver")
		offer, _ := offerFromTo(t, s, r)
		if err := r.b.Decide(offer.ID, ui.Decision{Expired: true, Reason: "the offer was not answered in time"}); err != nil {
			t.Fatal(err)
		}
		check(t, "receiver", r, want{ui.StateDeclined, ui.CodeExpired, false})
		check(t, "sender", s, want{ui.StateDeclined, ui.CodeExpired, true})
	})
	t.Run("engine timer expired", func(t *testing.T) {
		s := newSide(t, "Sender")
		r := newSide(t, "Receiver", func(o *engine.Options) { o.PromptTimeout = 300 * time.Millisecond })
		offerFromTo(t, s, r)
		check(t, "receiver", r, want{ui.StateDeclined, ui.CodeExpired, false})
		check(t, "sender", s, want{ui.StateDeclined, ui.CodeExpired, true})
	})
	t.Run("withdrawn", func(t *testing.T) {
		s, r := newSide(t, "Sender"), newSide(t, "Receiver")
		_, id := offerFromTo(t, s, r)
		if err := s.b.Cancel(id); err != nil {
			t.Fatal(err)
		}
		check(t, "sender", s, want{ui.StateCancelled, ui.CodeCancelled, false})
		check(t, "receiver", r, want{ui.StateCancelled, ui.CodeCancelled, true})
	})
}
