package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/pairing"
	"github.com/ferrydrop/ferry/engine/wire"

	"github.com/ferrydrop/ferry/engine/addr"
)

// firstEvent waits for the first event of kind on ch.
func firstEvent(t testing.TB, ch <-chan Event, kind EventKind) Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-ch:
			if ev.Kind == kind {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event", kind)
		}
	}
}

// showOffer has the receiver's client say that offer is on screen, as the
// app and ferry-cli receive do, and waits for the sender of transfer id to
// be told: only then may its user compare the code (ConfirmPair).
func showOffer(t *testing.T, recv *Engine, offer string, txEvents <-chan Event, id string) {
	t.Helper()
	if err := recv.OfferOnScreen(offer, true); err != nil {
		t.Fatal(err)
	}
	for {
		if ev := firstEvent(t, txEvents, EventPair); ev.TransferID == id && ev.Pair.Shown == CodeShownPending {
			return
		}
	}
}

func trusts(e *Engine, id string) bool {
	for _, p := range e.Trusted() {
		if p.ID == id {
			return p.AlwaysAccept
		}
	}
	return false
}

// On first contact both screens show the same code; each side's user
// confirming it makes the other device trusted there.
func TestPairingCodeOnFirstContact(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{})
	rxEvents, unsub := recv.Subscribe(256)
	defer unsub()
	txEvents, unsub2 := send.Subscribe(256)
	defer unsub2()
	src := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, src, 100)
	tr, err := send.Send(t.Context(), target(recv), []string{src}, SendOptions{Transport: "quic"})
	if err != nil {
		t.Fatal(err)
	}
	txPair := firstEvent(t, txEvents, EventPair)
	rxPair := firstEvent(t, rxEvents, EventPair)
	offer := firstEvent(t, rxEvents, EventOffer)
	if txPair.Pair.Code == "" || txPair.Pair.Code != rxPair.Pair.Code || offer.Offer.PairCode != rxPair.Pair.Code {
		t.Fatalf("codes: sender %q, receiver %q, offer %q", txPair.Pair.Code, rxPair.Pair.Code, offer.Offer.PairCode)
	}
	if offer.Peer.Trusted {
		t.Fatal("an unpaired sender is shown as trusted")
	}
	// "Always accept" without a confirmed code trusts nobody.
	if err := recv.Decide(offer.TransferID, Decision{Accept: true, AlwaysAccept: true}); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if r := tr.Result(); r.State != StateDone {
		t.Fatalf("%s: %s", r.State, r.Err)
	}
	if trusts(recv, send.ID()) {
		t.Fatal("the sender became trusted without its code being confirmed")
	}

	// Second transfer: both users confirm the code.
	tr, err = send.Send(t.Context(), target(recv), []string{src}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	for txPair = firstEvent(t, txEvents, EventPair); txPair.TransferID != tr.ID(); txPair = firstEvent(t, txEvents, EventPair) {
		// the first transfer's code again, with what its receiver said of it
	}
	offer = firstEvent(t, rxEvents, EventOffer)
	if offer.Offer.PairCode != txPair.Pair.Code {
		t.Fatalf("codes: sender %q, receiver %q", txPair.Pair.Code, offer.Offer.PairCode)
	}
	showOffer(t, recv, offer.TransferID, txEvents, tr.ID())
	if err := send.ConfirmPair(tr.ID(), true); err != nil {
		t.Fatal(err)
	}
	if err := recv.ConfirmPair(offer.TransferID, true); err != nil {
		t.Fatal(err)
	}
	if err := recv.Decide(offer.TransferID, Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if r := tr.Result(); r.State != StateDone {
		t.Fatalf("%s: %s", r.State, r.Err)
	}
	if !trusts(recv, send.ID()) || !trusts(send, recv.ID()) {
		t.Fatal("confirmed codes did not make the devices trusted")
	}
	for _, p := range recv.Trusted() {
		if p.ID == send.ID() && !p.Paired {
			t.Error("the sender is not listed as paired")
		}
	}
	// Trusted now: no code is shown any more.
	recv.SetAccept(AcceptAsk, true)
	if r := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: "quic"}); r.State != StateDone {
		t.Fatalf("trusted sender: %s %s", r.State, r.Err)
	}
	for len(txEvents) > 0 {
		if ev := <-txEvents; ev.Kind == EventPair {
			t.Fatal("a code was shown for a trusted device")
		}
	}
}

// A user who sees different codes stops the transfer; nothing is trusted
// and the other side is told why.
func TestPairingMismatchStopsTransfer(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{})
	rxEvents, unsub := recv.Subscribe(256)
	defer unsub()
	txEvents, unsub2 := send.Subscribe(256)
	defer unsub2()
	src := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, src, 100)
	tr, err := send.Send(t.Context(), target(recv), []string{src}, SendOptions{Transport: "quic"})
	if err != nil {
		t.Fatal(err)
	}
	offer := firstEvent(t, rxEvents, EventOffer)
	showOffer(t, recv, offer.TransferID, txEvents, tr.ID())
	if err := send.ConfirmPair(tr.ID(), false); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if r := tr.Result(); r.State != StateFailed || !strings.Contains(r.Err, "did not match") {
		t.Fatalf("sender: %s %q", r.State, r.Err)
	}
	res := firstEvent(t, rxEvents, EventResult)
	if res.TransferID != offer.TransferID || res.Result.State == StateDone {
		t.Fatalf("receiver: %+v", res.Result)
	}
	if trusts(recv, send.ID()) || trusts(send, recv.ID()) {
		t.Fatal("a device was trusted after a mismatch")
	}
}

// The receiver's user saying the codes differ, before or after accepting
// the offer, ends the send as that: "did not confirm the verification
// code" (not_paired), never as the receiver's trust policy ("only accepts
// files from trusted devices"), over either transport. And the receiver
// says what its own user did.
func TestPairingMismatchByTheReceiver(t *testing.T) {
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 64<<20) // still on its way when the answer comes
	for _, c := range []struct {
		transport   string
		acceptFirst bool
	}{{"quic", false}, {"quic", true}, {"tcp", false}, {"tcp", true}} {
		t.Run(fmt.Sprintf("%s/accepted-first=%v", c.transport, c.acceptFirst), func(t *testing.T) {
			recv := startReceiver(t, Options{Accept: AcceptAsk})
			send := testEngine(t, Options{})
			rxEvents, unsub := recv.Subscribe(256)
			defer unsub()
			tr, err := send.Send(t.Context(), target(recv), []string{src}, SendOptions{Transport: c.transport})
			if err != nil {
				t.Fatal(err)
			}
			offer := firstEvent(t, rxEvents, EventOffer)
			if c.acceptFirst {
				if err := recv.Decide(offer.TransferID, Decision{Accept: true}); err != nil {
					t.Fatal(err)
				}
			}
			if err := recv.ConfirmPair(offer.TransferID, false); err != nil {
				t.Fatal(err)
			}
			<-tr.Done()
			r := tr.Result()
			if r.State != StateFailed || r.Code != string(wire.CodeNotPaired) || !strings.Contains(r.Err, "did not confirm the verification code") {
				t.Fatalf("sender: %s %s %q", r.State, r.Code, r.Err)
			}
			res := firstEvent(t, rxEvents, EventResult)
			if res.Result.State == StateDone || !strings.Contains(res.Result.Err, "did not match") {
				t.Fatalf("receiver: %s %q", res.Result.State, res.Result.Err)
			}
		})
	}
}

// Pairing alone (ferry-cli pair): both users must confirm; each device then
// trusts the other.
func TestPairOnly(t *testing.T) {
	for _, c := range []struct {
		name             string
		dialer, listener bool
	}{
		{"both confirm", true, true},
		{"listener refuses", true, false},
		{"dialer refuses", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			recv := startReceiver(t, Options{Accept: AcceptAsk})
			a := testEngine(t, Options{})
			rxEvents, unsub := recv.Subscribe(256)
			defer unsub()
			txEvents, unsub2 := a.Subscribe(256)
			defer unsub2()
			tr, err := a.Pair(t.Context(), target(recv))
			if err != nil {
				t.Fatal(err)
			}
			txPair := firstEvent(t, txEvents, EventPair)
			rxPair := firstEvent(t, rxEvents, EventPair)
			if !txPair.Pair.Only || !rxPair.Pair.Only || txPair.Pair.Code != rxPair.Pair.Code {
				t.Fatalf("pair events: %+v, %+v", txPair.Pair, rxPair.Pair)
			}
			if err := recv.ConfirmPair(rxPair.TransferID, c.listener); err != nil {
				t.Fatal(err)
			}
			if err := a.ConfirmPair(tr.ID(), c.dialer); err != nil {
				t.Fatal(err)
			}
			<-tr.Done()
			rxRes := firstEvent(t, rxEvents, EventResult)
			ok := c.dialer && c.listener
			if got := tr.Result().State == StateDone; got != ok {
				t.Fatalf("dialer: %s %q", tr.Result().State, tr.Result().Err)
			}
			if got := rxRes.Result.State == StateDone; got != ok {
				t.Fatalf("listener: %s %q", rxRes.Result.State, rxRes.Result.Err)
			}
			if trusts(recv, a.ID()) != ok || trusts(a, recv.ID()) != ok {
				t.Fatalf("trusted: listener %v, dialer %v; want %v", trusts(recv, a.ID()), trusts(a, recv.ID()), ok)
			}
			if ok {
				return
			}
			// Issue 26, finding 4: a failed pairing says so, on both sides,
			// and never blames a trust policy (this receiver asks).
			for who, r := range map[string]Result{"dialer": tr.Result(), "listener": *rxRes.Result} {
				refused := who == "dialer" && !c.dialer || who == "listener" && !c.listener
				if r.Code != string(wire.CodeNotPaired) || strings.Contains(r.Err, "trusted devices") {
					t.Errorf("%s: code %q, %q", who, r.Code, r.Err)
				}
				if r.ByPeer == refused {
					t.Errorf("%s (refused: %v): by peer %v, %q", who, refused, r.ByPeer, r.Err)
				}
			}
		})
	}
}

// A device that does not trust the sender yet but calls itself by the name
// of a paired device is refused, with a warning event.
func TestPairedNameWithNewKeyIsRefused(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAll})
	events, unsub := recv.Subscribe(64)
	defer unsub()
	desk := newIdentity(t)
	if err := recv.trust.Pair(desk.ID.Peer(), "mallory", "", time.Now()); err != nil { // rawPeer's hello says "mallory"
		t.Fatal(err)
	}
	_, ch := offerFrom(t, recv, newIdentity(t), "192.0.2.1:1")
	a := waitAnswer(t, ch)
	if !errors.Is(a.err, wire.ErrUntrusted) {
		t.Fatalf("an impostor of a paired name: %+v, %v", a.d, a.err)
	}
	ev := firstEvent(t, events, EventKeyChanged)
	if ev.KeyChange.Known.ID != desk.ID.String() || ev.KeyChange.Warning == "" {
		t.Fatalf("warning: %+v", ev.KeyChange)
	}
	// The short ID as the app and ferry-cli show it ("PT27-TYCL"; it read "PT27TYCL").
	if id := desk.ID.String(); !strings.Contains(ev.KeyChange.Warning, "("+id[:4]+"-"+id[4:8]+")") {
		t.Fatalf("warning %q does not name %s as the app shows it", ev.KeyChange.Warning, id[:8])
	}
	// The paired device itself is welcome.
	_, ch = offerFrom(t, recv, desk, "192.0.2.1:1")
	if a := waitAnswer(t, ch); a.err != nil || !a.d.Accept {
		t.Fatalf("the paired device: %+v, %v", a.d, a.err)
	}
}

// A sender whose known receiver presents another key fails hard, with a
// warning event (the CLI prints it).
func TestKeyChangeWarning(t *testing.T) {
	recv := startReceiver(t, Options{NoListen: onlyListen("quic")})
	send := testEngine(t, Options{})
	events, unsub := send.Subscribe(64)
	defer unsub()
	p := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, p, 10)
	to := target(recv)
	if res := sendWait(t, send, to, []string{p}, SendOptions{Transport: "quic"}); res.State != StateDone {
		t.Fatal(res.Err)
	}
	recv.Close()
	startReceiver(t, Options{Listen: hostPortOf(to, addr.QUIC), NoListen: onlyListen("quic")})
	res := sendWait(t, send, targetAt(addr.QUIC, hostPortOf(to, addr.QUIC)), []string{p}, SendOptions{Transport: "quic"})
	if res.State != StateFailed {
		t.Fatalf("%s %q", res.State, res.Err)
	}
	ev := firstEvent(t, events, EventKeyChanged)
	if ev.KeyChange.Known.ID != recv.ID() || ev.KeyChange.Warning == "" {
		t.Fatalf("warning: %+v", ev.KeyChange)
	}
}

// A dialer that reveals another nonce than it committed to (a man in the
// middle trying to pick its nonce after seeing the listener's) is refused.
func TestPairRevealMustMatchCommitment(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAll})
	p, done := connectRaw(t, recv)
	committed, other := pairing.NewNonce(), pairing.NewNonce()
	go func() {
		s, err := p.conn.OpenStream(context.Background())
		if err != nil {
			return
		}
		s.Write([]byte{wire.KindControl})
		p.ctl = newControl(s)
		p.ctl.send(&wire.Hello{Version: wire.Version, Name: "mallory", ID: p.id.ID.String(),
			Features: []string{featurePair}, Pair: pairing.Commit(committed)})
		if _, err := expect[*wire.Hello](p.ctl.recv()); err != nil {
			return
		}
		p.ctl.send(&wire.PairReveal{Nonce: other.String()})
		p.offer(wire.FileEntry{Path: "a.txt", Size: 1})
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the receiver kept a session whose reveal does not match")
	}
	if n := len(recv.Trusted()); n != 0 {
		t.Fatalf("%d devices recorded", n)
	}
}

// An offer accepted without asking (a trusted sender, "accept all") still
// raises its offer event, asking nothing (StateActive), so that the row
// and the history name what arrives; it named nothing before.
func TestOfferAcceptedUnaskedIsShown(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAll})
	send := testEngine(t, Options{})
	events, unsub := recv.Subscribe(256)
	defer unsub()
	src := filepath.Join(t.TempDir(), "report.pdf")
	writeFile(t, src, 100)
	if r := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: "quic"}); r.State != StateDone {
		t.Fatalf("%s %q", r.State, r.Err)
	}
	var offer *Event
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventOffer && ev.Direction == Receiving {
			if offer != nil {
				t.Fatal("two offer events")
			}
			offer = &ev
		}
	}
	if offer == nil || offer.State != StateActive || offer.Offer.Count != 1 || len(offer.Offer.Files) != 1 || offer.Offer.Files[0].Path != "report.pdf" {
		t.Fatalf("offer event %+v", offer)
	}
}

// Pairing again with a device paired before, where one user says the
// codes differ: the devices stay paired as they were (the session proved
// the paired key, so no one can be in the middle), and neither side says
// they are "not paired" or "not trusted" (ferry-cli pair printed "Bee did
// not confirm the verification code, so the devices are not paired.",
// then `devices` listed Bee as paired).
func TestPairAgainRefusedKeepsThePairing(t *testing.T) {
	for _, c := range []struct {
		name             string
		dialer, listener bool
	}{
		{"listener refuses", true, false},
		{"dialer refuses", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			recv := startReceiver(t, Options{Accept: AcceptAsk})
			a := testEngine(t, Options{})
			pairEngines(t, a, recv)
			rxEvents, unsub := recv.Subscribe(256)
			defer unsub()
			txEvents, unsub2 := a.Subscribe(256)
			defer unsub2()
			tr, err := a.Pair(t.Context(), target(recv))
			if err != nil {
				t.Fatal(err)
			}
			firstEvent(t, txEvents, EventPair)
			rxPair := firstEvent(t, rxEvents, EventPair)
			if err := recv.ConfirmPair(rxPair.TransferID, c.listener); err != nil {
				t.Fatal(err)
			}
			if err := a.ConfirmPair(tr.ID(), c.dialer); err != nil {
				t.Fatal(err)
			}
			<-tr.Done()
			rxRes := firstEvent(t, rxEvents, EventResult)
			if !trusts(recv, a.ID()) || !trusts(a, recv.ID()) {
				t.Fatalf("trusted after the refusal: listener %v, dialer %v; want both still", trusts(recv, a.ID()), trusts(a, recv.ID()))
			}
			for who, r := range map[string]Result{"dialer": tr.Result(), "listener": *rxRes.Result} {
				if r.State != StateFailed {
					t.Errorf("%s: %s, want failed", who, r.State)
				}
				if strings.Contains(r.Err, "not paired") || strings.Contains(r.Err, "not trusted") || !strings.Contains(r.Err, "stay paired") {
					t.Errorf("%s says %q; want that the devices stay paired", who, r.Err)
				}
				// The app words its rows from the code alone: not_paired's
				// say "so the devices are not paired".
				if r.Code != string(wire.CodePairedBefore) {
					t.Errorf("%s: code %q, want %q", who, r.Code, wire.CodePairedBefore)
				}
			}
		})
	}
}

// A sender refused as an impostor of a paired name reads why in one
// sentence: it read "the other device only accepts files from trusted
// devices: the receiver only accepts files from trusted devices: this
// receiver has paired with another device…" (the refusal's words carried
// its code's words, and the ending added them again).
func TestImpostorRefusalSaysItOnce(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAll})
	send := testEngine(t, Options{Name: "mallory"})
	if err := recv.trust.Pair(newIdentity(t).ID.Peer(), "mallory", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, src, 100)
	r := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: "tcp"})
	if r.State != StateDeclined || strings.Count(r.Err, "only accepts files from trusted devices") != 1 ||
		!strings.Contains(r.Err, "paired with another device named like this one") || strings.Count(r.Err, ":") > 1 {
		t.Fatalf("%s %q", r.State, r.Err)
	}
}
