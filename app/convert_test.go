package app

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/ui"
	"github.com/ferrydrop/ferry/ui/transfer"

	"github.com/ferrydrop/ferry/engine/addr"
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

	m := &engine.Metrics{Transport: "quic", SmoothedRTTms: 1.5, DatagramsSent: 100, SendCalls: 10, PathMTU: 1441, RecvCalls: 4, RecvDatagrams: 100, GRO: true}
	ev = engine.Event{Time: now, Kind: engine.EventResult, TransferID: "x", Direction: engine.Sending, State: engine.StateDone,
		Result: &engine.Result{State: engine.StateDone, Files: 2, Verified: 2, Bytes: 10, Duration: 2, Transport: "quic", Metrics: m, Resent: 3, Kept: 7, Waited: 0.25, Checked: 1.5, Packed: 8, PackedTo: 2}}
	got, _ = toUITransfer(ev)
	r := got.Result
	if r == nil || r.State != ui.StateDone || r.Resent != 3 || r.Kept != 7 || r.Packed != 8 || r.PackedTo != 2 || r.Duration != 2*time.Second || r.Waited != 250*time.Millisecond || r.Checked != 1500*time.Millisecond || r.Metrics.DatagramsPerCall != 10 || r.Metrics.DatagramsPerRecvCall != 25 || !r.Metrics.GRO || r.Metrics.SmoothedRTT != 1500*time.Microsecond {
		t.Fatalf("result = %+v", r)
	}
	h := historyEntry(got, intent{}, nil)
	if h.ID != "x" || h.Files != 2 || h.State != ui.StateDone || !h.Finished.Equal(now) || h.Duration != 2 {
		t.Fatalf("history entry = %+v", h)
	}
	// Issue 29: the route and the relay reach the row's model.
	got, _ = toUITransfer(engine.Event{Time: now, Kind: engine.EventTransport, TransferID: "x", Direction: engine.Sending,
		Transport: &engine.TransportInfo{Name: "quic", Reason: "through the internet, relayed", Route: engine.RouteRelayed, Relay: "relay.example.org:3478"}})
	if got.Kind != ui.TransferTransport || got.Transport != "quic" || got.Route != engine.RouteRelayed || got.Relay != "relay.example.org:3478" {
		t.Fatalf("transport = %+v", got)
	}
	evs := ui.DeliveryEvents(got)
	if len(evs) != 1 || evs[0].Kind != transfer.EvTransport || evs[0].Route != transfer.RouteRelayed {
		t.Fatalf("model events = %+v", evs)
	}
	// The receiving side's transport event reaches an incoming row.
	got, _ = toUITransfer(engine.Event{Time: now, Kind: engine.EventTransport, TransferID: "r-x", Delivery: "d", Direction: engine.Receiving,
		Transport: &engine.TransportInfo{Name: "quic", Reason: "chosen by the sender", Route: engine.RouteInternet, Relay: "relay.example.org:3478"}})
	if got.Kind != ui.TransferTransport || got.Direction != ui.Incoming || got.Route != engine.RouteInternet || got.Relay != "relay.example.org:3478" {
		t.Fatalf("incoming transport = %+v", got)
	}
	evs = ui.DeliveryEvents(got)
	if len(evs) != 1 || evs[0].Kind != transfer.EvTransport || evs[0].Direction != transfer.Incoming || evs[0].Route != transfer.RouteInternet {
		t.Fatalf("incoming model events = %+v", evs)
	}
	// What a send skipped reaches its row, in the engine's words; an offer
	// that skipped nothing carries none.
	got, _ = toUITransfer(engine.Event{Time: now, Kind: engine.EventOffer, TransferID: "s", Direction: engine.Sending,
		Offer: &engine.OfferInfo{Count: 1, Skipped: &engine.SkippedInfo{Symlinks: 2, EmptyFolders: 1, Examples: []string{"/a/l1", "/a/l2", "/a/e"}}}})
	if s := got.Offer.Skipped; s == nil || s.Summary != "2 symbolic links (not followed), 1 empty folder" || s.Count != 3 || !slices.Equal(s.Examples, []string{"/a/l1", "/a/l2", "/a/e"}) || !s.NotFiles {
		t.Fatalf("skipped = %+v", got.Offer.Skipped)
	}
	// Empty folders a LocalSend device does not take are no "not a file".
	got, _ = toUITransfer(engine.Event{Time: now, Kind: engine.EventOffer, TransferID: "s", Direction: engine.Sending,
		Offer: &engine.OfferInfo{Count: 1, Skipped: &engine.SkippedInfo{EmptyFolders: 1, FilesOnly: true}}})
	if s := got.Offer.Skipped; s == nil || s.Summary != "1 empty folder (LocalSend takes files only)" || s.NotFiles {
		t.Fatalf("skipped = %+v", got.Offer.Skipped)
	}
	got, _ = toUITransfer(engine.Event{Time: now, Kind: engine.EventOffer, TransferID: "s", Direction: engine.Sending,
		Offer: &engine.OfferInfo{Count: 1, Skipped: &engine.SkippedInfo{}}})
	if got.Offer.Skipped != nil {
		t.Fatalf("nothing skipped, yet %+v", got.Offer.Skipped)
	}
	// An offer the engine holds behind its prompts reaches the prompt on
	// screen, which counts it (TestEveryHeldOfferIsCounted).
	if got, ok := toUITransfer(engine.Event{Time: now, Kind: engine.EventQueued, TransferID: "q", Direction: engine.Receiving,
		Peer: engine.PeerInfo{Name: "A", ID: "ID", Trusted: true}, State: engine.StateWaiting}); !ok || got.Kind != ui.TransferQueued || got.Direction != ui.Incoming {
		t.Fatalf("queued = %+v, %v", got, ok)
	}
	if _, ok := toUITransfer(engine.Event{Kind: "something new"}); ok {
		t.Fatal("unknown kinds must be skipped")
	}
}

func TestToUIDevice(t *testing.T) {
	p := discovery.Peer{Name: "B", ID: "ID", Addrs: []netip.Addr{netip.MustParseAddr("10.0.0.2")}, OS: "linux",
		Ports: []discovery.Port{{Kind: addr.QUIC, Port: 4000}, {Kind: addr.TCP, Port: 4001}}}
	d := toUIDevice(p, trust{known: true, trusted: true}, true)
	want := []addr.Addr{addr.New(addr.QUIC, "10.0.0.2:4000"), addr.New(addr.TCP, "10.0.0.2:4001")}
	if !slices.Equal(d.Addrs, want) || !d.Trusted || !d.Online || d.OS != "linux" {
		t.Fatalf("device = %+v", d)
	}
	p.Ports = p.Ports[:1]
	if d := toUIDevice(p, trust{}, false); !slices.Equal(d.Addrs, want[:1]) || d.Online {
		t.Fatalf("QUIC-only device = %+v", d)
	}
	r := rememberedDevice(engine.TrustedPeer{ID: "ID", LastAddr: "10.0.0.3:47800"})
	if !slices.Equal(r.Addrs, engine.AddrsAt("10.0.0.3:47800")) || r.Online {
		t.Fatalf("remembered device = %+v", r)
	}
}

func TestTrustOf(t *testing.T) {
	peers := []engine.TrustedPeer{{ID: "A", AlwaysAccept: true}, {ID: "B"}}
	for _, c := range []struct {
		id   string
		want trust
	}{{"A", trust{known: true, trusted: true}}, {"B", trust{known: true}}, {"C", trust{}}} {
		if got := trustOf(peers, c.id); got != c.want {
			t.Errorf("trustOf(%s) = %+v, want %+v", c.id, got, c.want)
		}
	}
}

// TestFillOutcome: today's engine reports a state and a text; what this
// device did decides who stopped a transfer and why.
func TestFillOutcome(t *testing.T) {
	end := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	offer := &ui.Offer{Files: []ui.FileInfo{{Path: "a", Size: 10}, {Path: "b", Size: 20}}, Total: 30, Expires: end.Add(-time.Second)}
	later := &ui.Offer{Files: offer.Files, Total: 30, Expires: end.Add(time.Minute)}
	for _, c := range []struct {
		name     string
		state    ui.State
		dir      ui.Direction
		in       intent
		quitting bool
		code     ui.Code
		byPeer   bool
		files    int
	}{
		{"done", ui.StateDone, ui.Outgoing, intent{}, false, ui.CodeNone, false, 0},
		{"cancelled here", ui.StateCancelled, ui.Outgoing, intent{cancelled: true}, false, ui.CodeCancelled, false, 0},
		{"cancelled by the sender", ui.StateCancelled, ui.Incoming, intent{}, false, ui.CodeCancelled, true, 0},
		{"withdrawn offer", ui.StateCancelled, ui.Incoming, intent{offer: later}, false, ui.CodeCancelled, true, 2},
		{"cancelled by quitting", ui.StateCancelled, ui.Outgoing, intent{}, true, ui.CodeCancelled, false, 0},
		{"receiver declined", ui.StateDeclined, ui.Outgoing, intent{}, false, ui.CodeDeclined, true, 0},
		{"declined here", ui.StateDeclined, ui.Incoming, intent{decided: true, offer: later}, false, ui.CodeDeclined, false, 2},
		{"prompt expired", ui.StateDeclined, ui.Incoming, intent{decided: true, expired: true, offer: offer}, false, ui.CodeExpired, false, 2},
		{"engine timer expired", ui.StateFailed, ui.Incoming, intent{offer: offer}, false, ui.CodeExpired, false, 2},
		{"lost while asking", ui.StateFailed, ui.Incoming, intent{offer: later}, false, ui.CodeNone, false, 2},
		{"declined by policy", ui.StateDeclined, ui.Incoming, intent{}, false, ui.CodeNone, false, 0},
		{"failed", ui.StateFailed, ui.Outgoing, intent{}, false, ui.CodeNone, false, 0},
	} {
		r := &ui.Result{State: c.state}
		fillOutcome(r, c.dir, c.in, end, c.quitting)
		if r.Code != c.code || r.ByPeer != c.byPeer || r.Files != c.files {
			t.Errorf("%s: code %q by peer %v files %d, want %q %v %d", c.name, r.Code, r.ByPeer, r.Files, c.code, c.byPeer, c.files)
		}
	}
	// A code the engine gave is kept.
	r := &ui.Result{State: ui.StateFailed, Code: ui.CodeNoSpace, ByPeer: true}
	fillOutcome(r, ui.Outgoing, intent{cancelled: true}, end, false)
	if r.Code != ui.CodeNoSpace || !r.ByPeer {
		t.Errorf("engine code overwritten: %+v", r)
	}
}

// History is written from the transfer model (issue 26, findings 3, 4 and
// 5): bytes once across a reconnect, "went away" for a receiver killed
// mid-send, names for a send from the app, "a text" for a declined text.
func TestHistoryFromTheModel(t *testing.T) {
	model := transfer.New()
	feed := func(evs ...ui.TransferEvent) *transfer.Delivery {
		for _, ev := range evs {
			for _, me := range ui.DeliveryEvents(ev) {
				model.Apply(me)
			}
		}
		return model.Get(evs[0].ID)
	}
	bob := ui.Peer{ID: "B", Name: "Bob's laptop"}
	const size = 209_700_000
	offer := ui.TransferEvent{Kind: ui.TransferOffer, ID: "s", Direction: ui.Outgoing, Peer: bob, State: ui.StateConnecting,
		Offer: &ui.Offer{Count: 1, Files: []ui.FileInfo{{Path: "big.bin", Size: size}}, Total: size}}
	prog := func(b int64) ui.TransferEvent {
		return ui.TransferEvent{Kind: ui.TransferProgress, ID: "s", Direction: ui.Outgoing, State: ui.StateActive,
			Progress: &ui.Progress{Bytes: b, Total: size}}
	}
	retrying := ui.TransferEvent{Kind: ui.TransferState, ID: "s", Direction: ui.Outgoing, State: ui.StateRetrying}
	failed := ui.TransferEvent{Kind: ui.TransferResult, ID: "s", Direction: ui.Outgoing, Peer: bob,
		Result: &ui.Result{State: ui.StateFailed, Code: ui.CodeIO, Bytes: 161_500_000, Err: "could not connect: connection refused"}}
	d := feed(offer, prog(80_000_000), retrying, prog(60_000_000), prog(157_300_000), retrying, failed)
	e := historyEntry(failed, intent{}, d)
	if e.Bytes != 157_300_000 {
		t.Errorf("bytes = %d, want 157300000 (each byte once)", e.Bytes)
	}
	if e.Code != ui.Code(transfer.ReasonConnectionLost) {
		t.Errorf("code = %q, want connection_lost", e.Code)
	}
	if !slices.Equal(e.Names, []string{"big.bin"}) {
		t.Errorf("names = %v", e.Names)
	}

	declined := ui.TransferEvent{Kind: ui.TransferResult, ID: "t", Direction: ui.Incoming, Peer: bob,
		Result: &ui.Result{State: ui.StateDeclined, Code: ui.CodeDeclined}}
	d = feed(ui.TransferEvent{Kind: ui.TransferOffer, ID: "t", Direction: ui.Incoming, Peer: bob, State: ui.StateWaiting,
		Offer: &ui.Offer{Text: "hello"}}, declined)
	if e := historyEntry(declined, intent{}, d); !e.HasText || e.Text != "" || e.Files != 0 {
		t.Errorf("declined text: %+v", e)
	}
}
