package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/ui"
)

func TestToUITransferPairAndKeyChange(t *testing.T) {
	got, ok := toUITransfer(engine.Event{Kind: engine.EventPair, TransferID: "p", Direction: engine.Receiving, State: engine.StateWaiting,
		Peer: engine.PeerInfo{Name: "A", ID: "IDA"}, Pair: &engine.PairInfo{Code: "123 456", Only: true}})
	if !ok || got.Kind != ui.TransferPair || got.Pair == nil || got.Pair.Code != "123 456" || !got.Pair.Only || got.Direction != ui.Incoming {
		t.Fatalf("pair = %+v %+v", got, got.Pair)
	}
	got, ok = toUITransfer(engine.Event{Kind: engine.EventKeyChanged, Direction: engine.Receiving, Peer: engine.PeerInfo{Name: "A", ID: "NEW"},
		KeyChange: &engine.KeyChange{Known: engine.PeerInfo{Name: "A", ID: "OLD", Trusted: true}, PresentedID: "NEW", Warning: "Careful."}})
	if !ok || got.Kind != ui.TransferKeyChanged || got.KeyChange == nil || got.KeyChange.Known.ID != "OLD" || got.KeyChange.PresentedID != "NEW" ||
		got.KeyChange.Warning != "Careful." || !got.KeyChange.Known.Trusted {
		t.Fatalf("key change = %+v %+v", got, got.KeyChange)
	}
	got, _ = toUITransfer(engine.Event{Kind: engine.EventOffer, TransferID: "o", Direction: engine.Receiving, State: engine.StateWaiting,
		Offer: &engine.OfferInfo{Count: 1, PairCode: "654 321"}})
	if got.Offer == nil || got.Offer.PairCode != "654 321" {
		t.Fatalf("offer = %+v", got.Offer)
	}
	if d := toUIDevice(discovery.Peer{ID: "X", Name: "X"}, trust{known: true, trusted: true, paired: true}, true); !d.Paired {
		t.Fatalf("device %+v not paired", d)
	}
	if d := rememberedDevice(engine.TrustedPeer{ID: "X", Paired: true}); !d.Paired {
		t.Fatalf("remembered %+v not paired", d)
	}
}

// pump runs the app's event pump of b, as Run does, and returns what it
// hands the UI.
func pump(t *testing.T, b *backend) <-chan ui.TransferEvent {
	t.Helper()
	out := make(chan ui.TransferEvent, 256)
	devs := make(chan ui.DeviceEvent, 256)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	evs, stop := b.eng.Subscribe(256) // before anything happens, as Run does
	go func() {
		defer close(done)
		defer stop()
		pumpEvents(ctx, evs, b, out, devs)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return out
}

// next waits for the next event of kind on ch (for transfer id, unless "").
func next(t *testing.T, ch <-chan ui.TransferEvent, kind ui.TransferEventKind, id string) ui.TransferEvent {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-ch:
			if ev.Kind == kind && (id == "" || ev.ID == id) {
				return ev
			}
		case <-timeout:
			t.Fatalf("no event of kind %d", kind)
		}
	}
}

// device is how b's UI would list the device of backend other.
func device(t *testing.T, other *backend) ui.Device {
	t.Helper()
	return ui.Device{ID: other.eng.ID(), Name: other.eng.Name(), Addrs: other.eng.Addrs(), Online: true}
}

func pairedWith(b *backend, id string) bool {
	for _, d := range b.KnownDevices() {
		if d.ID == id {
			return d.Paired && d.AutoAccept
		}
	}
	return false
}

// Two apps pair through the app layer: Pair on one, the code on both as
// pairing events, ConfirmPair on both; each ends up trusting the other,
// and nothing goes to the history.
func TestTwoAppsPair(t *testing.T) {
	a := newTestBackend(t, func(o *engine.Options) { o.Name = "Alice" })
	b := newTestBackend(t, func(o *engine.Options) { o.Name = "Bob" })
	if err := b.setReceiving(true); err != nil {
		t.Fatal(err)
	}
	aEvents, bEvents := pump(t, a), pump(t, b)

	id, err := a.Pair(device(t, b))
	if err != nil {
		t.Fatal(err)
	}
	aCode := next(t, aEvents, ui.TransferPair, id)
	bCode := next(t, bEvents, ui.TransferPair, "")
	if !aCode.Pairing || !bCode.Pairing || !aCode.Pair.Only || !bCode.Pair.Only {
		t.Fatalf("pairing events not marked: %+v / %+v", aCode, bCode)
	}
	if aCode.Pair.Code == "" || aCode.Pair.Code != bCode.Pair.Code || len(ui.GroupCode(aCode.Pair.Code)) != 7 {
		t.Fatalf("codes %q and %q", aCode.Pair.Code, bCode.Pair.Code)
	}
	if bCode.Peer.Name != "Alice" || aCode.Peer.ID != b.eng.ID() {
		t.Fatalf("peers: %+v / %+v", aCode.Peer, bCode.Peer)
	}
	if err := b.ConfirmPair(bCode.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := a.ConfirmPair(id, true); err != nil {
		t.Fatal(err)
	}
	aRes := next(t, aEvents, ui.TransferResult, id)
	bRes := next(t, bEvents, ui.TransferResult, bCode.ID)
	if aRes.Result.State != ui.StateDone || bRes.Result.State != ui.StateDone || !aRes.Pairing || !bRes.Pairing {
		t.Fatalf("results: %+v (%v) / %+v (%v)", aRes.Result, aRes.Pairing, bRes.Result, bRes.Pairing)
	}
	if !pairedWith(a, b.eng.ID()) || !pairedWith(b, a.eng.ID()) {
		t.Fatalf("paired: Alice knows %+v; Bob knows %+v", a.KnownDevices(), b.KnownDevices())
	}
	if h := append(a.History(), b.History()...); len(h) != 0 {
		t.Fatalf("a pairing went to the history: %+v", h)
	}
	a.mu.Lock()
	left := len(a.pairings) + len(b.pairings)
	a.mu.Unlock()
	if left != 0 {
		t.Fatal("pairings are still recorded after their results")
	}
}

// A user who sees different codes: the other app's pairing fails with the
// engine's reason, and nobody is trusted.
func TestAppPairingMismatch(t *testing.T) {
	a := newTestBackend(t, func(o *engine.Options) { o.Name = "Alice" })
	b := newTestBackend(t, func(o *engine.Options) { o.Name = "Bob" })
	if err := b.setReceiving(true); err != nil {
		t.Fatal(err)
	}
	aEvents, bEvents := pump(t, a), pump(t, b)
	id, err := a.Pair(device(t, b))
	if err != nil {
		t.Fatal(err)
	}
	next(t, aEvents, ui.TransferPair, id)
	req := next(t, bEvents, ui.TransferPair, "")
	if err := b.ConfirmPair(req.ID, false); err != nil {
		t.Fatal(err)
	}
	res := next(t, aEvents, ui.TransferResult, id)
	if res.Result.State == ui.StateDone || res.Result.Err == "" {
		t.Fatalf("Alice's result after Bob saw different codes: %+v", res.Result)
	}
	if pairedWith(a, b.eng.ID()) || pairedWith(b, a.eng.ID()) {
		t.Fatal("paired after a mismatch")
	}
}

// An offer from a device not trusted yet carries the code to the prompt;
// the receiving user's match trusts the sender, the sending user's the
// receiver (through the app's ConfirmPair).
func TestAppOfferCodeTrustsThroughConfirmPair(t *testing.T) {
	a := newTestBackend(t, func(o *engine.Options) { o.Name = "Alice" })
	b := newTestBackend(t, func(o *engine.Options) { o.Name = "Bob"; o.Accept = engine.AcceptAsk })
	if err := b.setReceiving(true); err != nil {
		t.Fatal(err)
	}
	aEvents, bEvents := pump(t, a), pump(t, b)
	src := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(src, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(device(t, b), ui.Items{Paths: []string{src}}); err != nil {
		t.Fatal(err)
	}
	sent := next(t, aEvents, ui.TransferPair, "")
	offer := next(t, bEvents, ui.TransferOffer, "")
	if sent.Pairing || sent.Direction != ui.Outgoing || offer.Offer.PairCode == "" || offer.Offer.PairCode != sent.Pair.Code {
		t.Fatalf("sender's code %+v (pairing %v), offer's %q", sent.Pair, sent.Pairing, offer.Offer.PairCode)
	}
	if err := b.ConfirmPair(offer.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := b.Decide(offer.ID, ui.Decision{Accept: true, AlwaysAccept: true}); err != nil {
		t.Fatal(err)
	}
	// Bob's prompt showed the code (no window here says it on screen: its
	// decision does); before that, Alice's engine refuses her answer.
	for p := next(t, aEvents, ui.TransferPair, sent.ID); p.Pair.Shown != ui.CodeShownYes; p = next(t, aEvents, ui.TransferPair, sent.ID) {
	}
	if err := a.ConfirmPair(sent.ID, true); err != nil {
		t.Fatal(err)
	}
	if r := next(t, aEvents, ui.TransferResult, sent.ID); r.Result.State != ui.StateDone {
		t.Fatalf("send: %+v", r.Result)
	}
	next(t, bEvents, ui.TransferResult, offer.ID)
	if !pairedWith(a, b.eng.ID()) || !pairedWith(b, a.eng.ID()) {
		t.Fatalf("paired: Alice knows %+v; Bob knows %+v", a.KnownDevices(), b.KnownDevices())
	}
	if len(b.History()) != 1 {
		t.Fatalf("history %+v, want the transfer", b.History())
	}
}

// A device with a new key that calls itself by the name of a paired
// device: the app gets a key-change warning naming the paired device;
// forgetting that device (the warning's action) lets the new one pair.
func TestAppKeyChangeWarnsAndForgetLetsItPair(t *testing.T) {
	a := newTestBackend(t, func(o *engine.Options) { o.Name = "Alice" })
	b := newTestBackend(t, func(o *engine.Options) { o.Name = "Bob" })
	if err := a.setReceiving(true); err != nil {
		t.Fatal(err)
	}
	aEvents, bEvents := pump(t, a), pump(t, b)
	pairBoth := func(from *backend, fromEvents <-chan ui.TransferEvent) ui.TransferEvent {
		t.Helper()
		id, err := from.Pair(device(t, a))
		if err != nil {
			t.Fatal(err)
		}
		next(t, fromEvents, ui.TransferPair, id)
		req := next(t, aEvents, ui.TransferPair, "")
		if err := a.ConfirmPair(req.ID, true); err != nil {
			t.Fatal(err)
		}
		if err := from.ConfirmPair(id, true); err != nil {
			t.Fatal(err)
		}
		return next(t, fromEvents, ui.TransferResult, id)
	}
	if r := pairBoth(b, bEvents); r.Result.State != ui.StateDone {
		t.Fatalf("first pairing: %+v", r.Result)
	}
	// Bob reinstalled: same name, new key.
	b2 := newTestBackend(t, func(o *engine.Options) { o.Name = "Bob" })
	b2Events := pump(t, b2)
	id, err := b2.Pair(device(t, a))
	if err != nil {
		t.Fatal(err)
	}
	warn := next(t, aEvents, ui.TransferKeyChanged, "")
	kc := warn.KeyChange
	if kc == nil || kc.Known.ID != b.eng.ID() || kc.PresentedID != b2.eng.ID() || kc.Warning == "" {
		t.Fatalf("warning %+v", kc)
	}
	if r := next(t, b2Events, ui.TransferResult, id); r.Result.State == ui.StateDone {
		t.Fatal("the new key paired while the old device is known")
	}
	if err := a.ForgetDevice(kc.Known.ID); err != nil {
		t.Fatal(err)
	}
	if r := pairBoth(b2, b2Events); r.Result.State != ui.StateDone {
		t.Fatalf("pairing after Forget: %+v", r.Result)
	}
	if !pairedWith(a, b2.eng.ID()) || pairedWith(a, b.eng.ID()) {
		t.Fatalf("Alice knows %+v", a.KnownDevices())
	}
}
