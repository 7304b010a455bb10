package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/ui"
)

// TestBusyRefusalsLeaveOneHistoryEntry: two devices each have an offer
// waiting for the user's answer and send 10 more each, which the
// receiver's limits decline as busy (one offer of a device waits at a
// time): History sums those 20 up in one entry, and the two offers the user
// then declines keep an entry each. Each busy offer had its own entry, as
// a flood of senders left one per refused offer.
func TestBusyRefusalsLeaveOneHistoryEntry(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	r := newTestBackend(t, func(o *engine.Options) { o.Name = "Receiver" })
	if err := r.eng.Start(r.ctx); err != nil {
		t.Fatal(err)
	}
	evs, stop := r.eng.Subscribe(256)
	out := make(chan ui.TransferEvent, 256)
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		pumpEvents(context.Background(), evs, r, out, make(chan ui.DeviceEvent, 1024))
		close(out)
	}()
	offers := make(chan string, 2)
	results := map[ui.Code]int{}
	told := make(chan struct{})
	go func() {
		defer close(told)
		for ev := range out {
			switch ev.Kind {
			case ui.TransferOffer:
				offers <- ev.ID
			case ui.TransferResult:
				results[ev.Result.Code]++
			}
		}
	}()

	file := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(file, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	send := func(eng *engine.Engine) *engine.Transfer {
		t.Helper()
		tr, err := eng.Send(context.Background(), engine.Target{Addrs: r.eng.Addrs()}, []string{file}, engine.SendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	var senders []*engine.Engine
	var first []*engine.Transfer
	var asked []string
	for i := range 2 {
		eng, err := engine.New(engine.Options{ConfigDir: t.TempDir(), Name: fmt.Sprintf("Sender %d", i), Listen: "127.0.0.1:0", RetryFor: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		senders = append(senders, eng)
		first = append(first, send(eng))
		asked = append(asked, <-offers) // it waits for the user
	}
	const more = 10
	for range more {
		for _, eng := range senders {
			tr := send(eng)
			<-tr.Done()
			if res := tr.Result(); ui.Code(res.Code) != ui.CodeBusy {
				t.Fatalf("an offer sent while another waits ended %s/%s (%s), want busy", res.State, res.Code, res.Err)
			}
		}
	}
	for _, id := range asked {
		if err := r.Decide(id, ui.Decision{Reason: "declined"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tr := range first {
		<-tr.Done()
	}
	// Every receiving session has ended, and its events are published,
	// once Close returns; ending the subscription then lets the pump
	// finish with them.
	r.eng.Close()
	stop()
	<-pumped
	<-told

	if results[ui.CodeBusy] != 2*more || results[ui.CodeDeclined] != 2 {
		t.Fatalf("results %v, want %d busy and 2 declined", results, 2*more)
	}
	var busy, declined int
	for _, e := range r.History() {
		switch e.Code {
		case ui.CodeBusy:
			busy++
			if e.Busy != 2*more || e.Files != 2*more || len(e.Senders) != 2 || e.PeerName != "" {
				t.Errorf("busy entry sums up %d offers (%d files) from %d devices (peer %q), want %d from 2 devices", e.Busy, e.Files, len(e.Senders), e.PeerName, 2*more)
			}
		case ui.CodeDeclined:
			declined++
			if e.Busy != 0 || e.PeerName == "" {
				t.Errorf("declined entry %+v: want one offer of a named device", e)
			}
		default:
			t.Errorf("unexpected entry %+v", e)
		}
	}
	if busy != 1 || declined != 2 {
		t.Errorf("history has %d entries of offers declined as busy and %d of declines, want 1 and 2", busy, declined)
	}
}

// TestBusyEntriesJoinWithinTheGap: an offer declined as busy joins the
// latest such entry while it came within busyGap of that entry's last one,
// the sum going on top; later it starts another. What else ends keeps its
// own entry in between.
func TestBusyEntriesJoinWithinTheGap(t *testing.T) {
	h, err := openHistory(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	busy := func(id, peer string, at time.Duration) ui.HistoryEntry {
		return ui.HistoryEntry{ID: id, Direction: ui.Incoming, PeerID: peer, PeerName: "Name " + peer, Files: 1, Bytes: 5,
			State: ui.StateDeclined, Code: ui.CodeBusy, Finished: t0.Add(at), Since: t0.Add(at), Busy: 1,
			Senders: []ui.BusySender{{ID: peer, Name: "Name " + peer}}, Names: []string{"a.txt"}, Items: 1}
	}
	for _, e := range []ui.HistoryEntry{
		busy("b1", "A", 0),
		busy("b2", "A", time.Minute), // same device: still its name
		{ID: "d1", Direction: ui.Incoming, PeerID: "C", PeerName: "Name C", State: ui.StateDeclined, Code: ui.CodeDeclined, Finished: t0.Add(2 * time.Minute)},
		busy("b3", "B", 3*time.Minute),
		busy("b4", "A", 3*time.Minute+busyGap), // within the gap of b3
		busy("b5", "B", 4*time.Minute+2*busyGap),
	} {
		if err := h.add(e); err != nil {
			t.Fatal(err)
		}
		if e.ID == "b2" {
			if got := h.list(); len(got) != 1 || got[0].Busy != 2 || got[0].PeerName != "Name A" || len(got[0].Names) != 0 {
				t.Fatalf("after two offers of A: %+v, want one entry of A summing 2 offers, naming no files", got)
			}
		}
	}
	got := h.list()
	if len(got) != 3 {
		t.Fatalf("history has %d entries, want 3: %+v", len(got), got)
	}
	if e := got[0]; e.ID != "b5" || e.Busy != 1 {
		t.Errorf("newest %+v, want b5 on its own (past the gap)", e)
	}
	if e := got[1]; e.ID != "b1" || e.Busy != 4 || e.Files != 4 || e.Bytes != 20 || e.PeerName != "" || len(e.Senders) != 2 ||
		!e.Since.Equal(t0) || !e.Finished.Equal(t0.Add(3*time.Minute+busyGap)) {
		t.Errorf("second %+v, want b1 summing 4 offers of A and B from t0 to b4", e)
	}
	if e := got[2]; e.ID != "d1" {
		t.Errorf("third %+v, want the decline on its own", e)
	}
}

// TestRefusedOffersJoinTheBusyEntry: offers the engine's limits refused
// before reading them (engine.EventRefused) join History's entry of offers
// declined while busy, counted as unread (and muted), with their devices;
// the UI hears that History changed. They left nothing in History: a flood
// of 48 offers showed 30.
func TestRefusedOffersJoinTheBusyEntry(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	r := newTestBackend(t)
	t0 := time.Now().Add(-time.Minute)
	read := ui.HistoryEntry{ID: "b1", Direction: ui.Incoming, Files: 30, Bytes: 150, State: ui.StateDeclined, Code: ui.CodeBusy,
		Finished: t0, Since: t0, Busy: 30, Senders: []ui.BusySender{{ID: "A", Name: "Alice"}, {ID: "B", Name: "Bob"}}}
	if err := r.history.add(read); err != nil {
		t.Fatal(err)
	}
	var devs []engine.RefusedDevice
	for i := range 16 {
		devs = append(devs, engine.RefusedDevice{ID: fmt.Sprintf("F%d", i)})
	}
	evs := make(chan engine.Event, 2)
	evs <- engine.Event{Kind: engine.EventRefused, Time: t0.Add(30 * time.Second), Peer: engine.PeerInfo{Addr: "192.0.2.7"},
		Refused: &engine.Refusals{Reason: engine.RefusedBusy, Count: 17, First: t0, Last: t0.Add(20 * time.Second), Devices: devs, MoreDevices: true}}
	evs <- engine.Event{Kind: engine.EventRefused, Time: t0.Add(40 * time.Second), Peer: engine.PeerInfo{Addr: "192.0.2.8", ID: "C", Name: "Carol"},
		Refused: &engine.Refusals{Reason: engine.RefusedMuted, Count: 1, First: t0.Add(40 * time.Second), Last: t0.Add(40 * time.Second),
			Devices: []engine.RefusedDevice{{ID: "C", Name: "Carol"}}}}
	close(evs)
	out := make(chan ui.TransferEvent, 8)
	if err := pumpEvents(context.Background(), evs, r, out, make(chan ui.DeviceEvent, 8)); err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatalf("the UI heard %d events, want 2", len(out))
	}
	for range 2 {
		if ev := <-out; ev.Kind != ui.TransferRefused {
			t.Errorf("the UI heard %+v, want TransferRefused", ev)
		}
	}
	got := r.history.list()
	if len(got) != 1 {
		t.Fatalf("history %+v, want the one busy entry", got)
	}
	e := got[0]
	if e.Busy != 48 || e.Unread != 18 || e.Muted != 1 || e.Files != 30 || len(e.Senders) != 19 || !e.MoreSenders ||
		!e.Since.Equal(t0) || !e.Finished.Equal(t0.Add(40*time.Second)) {
		t.Errorf("busy entry %+v, want 48 offers (18 unread, 1 muted) from 19 devices and more", e)
	}
	if i := slices.IndexFunc(e.Senders, func(s ui.BusySender) bool { return s.ID == "C" }); i < 0 || e.Senders[i].Name != "Carol" {
		t.Errorf("senders %+v lack Carol", e.Senders)
	}
}
