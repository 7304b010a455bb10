package ui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/uitree"
)

const mismatchErr = "Cancelled by the user: the verification codes on the two screens did not match, so another device may be " +
	"intercepting the connection; the transfer was stopped and the device is not trusted."

// untrustedOffer is an offer from a sender not trusted yet, with its code.
func untrustedOffer(id string) TransferEvent {
	ev := offerEvent(id, 2)
	ev.Offer.PairCode = "482 913"
	return ev
}

func TestGroupCode(t *testing.T) {
	for in, want := range map[string]string{
		"482913": "482 913", "482 913": "482 913", " 482913": "482 913", "48291": "48291", "abcdef": "abcdef", "": "",
	} {
		if got := GroupCode(in); got != want {
			t.Errorf("GroupCode(%q) = %q, want %q", in, got, want)
		}
	}
}

// The prompt shows an untrusted sender's code; accepting the files does not
// need it, but "Always accept" asks whether the codes match first.
func TestPromptShowsCodeAndAlwaysAcceptChecksIt(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyTransfer(untrustedOffer("t1"))
	p := u.prompts.queue[0]
	if p.code == nil || p.code.Text != "482 913" {
		t.Fatalf("prompt code = %v", p.code)
	}
	if txt := renderedText(p.scroll.Content); !contains(txt, "Verification code", "Check that Alice shows the same code before you trust it.") {
		t.Fatalf("prompt text:\n%s", txt)
	}
	p.always.SetChecked(true)
	test.Tap(p.accept)
	if len(be.decisions) != 0 || len(be.confirms) != 0 {
		t.Fatalf("accepted before the codes were compared: %+v %+v", be.decisions, be.confirms)
	}
	if p.check == nil {
		t.Fatal("no code check after Accept with Always accept")
	}
	if u.win.Canvas().Focused() != fyne.Focusable(p.checkBtns[0]) {
		t.Fatal("the code check does not start on Codes differ")
	}
	press(u, fyne.KeyEscape) // back to the prompt
	if p.check != nil || len(be.confirms) != 0 || len(u.prompts.queue) != 1 {
		t.Fatalf("Escape on the code check: check %v, confirms %+v, queue %d", p.check, be.confirms, len(u.prompts.queue))
	}
	test.Tap(p.accept)
	test.Tap(p.checkBtns[1]) // Codes match
	if len(be.confirms) != 1 || be.confirms[0] != (pairAnswer{"t1", true}) {
		t.Fatalf("confirms = %+v", be.confirms)
	}
	if d, ok := be.decisions["t1"]; !ok || !d.Accept || !d.AlwaysAccept {
		t.Fatalf("decision = %+v %v, want accept+always after the match", d, ok)
	}
	if len(u.prompts.queue) != 0 || overlays(u) != 0 {
		t.Fatalf("queue %d, overlays %d after the answer", len(u.prompts.queue), overlays(u))
	}
}

// TestOfferNotificationCarriesTheCode: the notification of an offer from a
// device not trusted yet has Accept, and the engine tells the sender that
// this device showed the code whenever it asked with it: the code is in
// the notification too, or a user who accepted there never saw it.
func TestOfferNotificationCarriesTheCode(t *testing.T) {
	u, _, _ := newTestUI(t)
	test.AssertNotificationSent(t, fyne.NewNotification("Incoming files", "Alice wants to send you 2 files (2.0 kB). Verification code 482 913."), func() {
		u.ApplyTransfer(untrustedOffer("t1"))
	})
}

// Accepting without "Always accept" leaves the code alone.
func TestPromptAcceptWithoutTrustAsksNoCode(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyTransfer(untrustedOffer("t1"))
	test.Tap(u.prompts.queue[0].accept)
	if d, ok := be.decisions["t1"]; !ok || !d.Accept || d.AlwaysAccept || len(be.confirms) != 0 {
		t.Fatalf("decision %+v %v, confirms %+v", d, ok, be.confirms)
	}
}

// "Codes differ" stops the transfer (the engine does; the UI gives no
// answer to the offer) and the row shows the engine's reason.
func TestCodesDifferStopsTheOfferWithTheEnginesReason(t *testing.T) {
	u, be, c := newTestUI(t)
	u.ApplyTransfer(untrustedOffer("t1"))
	p := u.prompts.queue[0]
	p.always.SetChecked(true)
	test.Tap(p.accept)
	test.Tap(p.checkBtns[0]) // Codes differ
	if len(be.confirms) != 1 || be.confirms[0] != (pairAnswer{"t1", false}) {
		t.Fatalf("confirms = %+v", be.confirms)
	}
	if len(be.decisions) != 0 || len(u.prompts.queue) != 0 || overlays(u) != 0 {
		t.Fatalf("decisions %+v, queue %d, overlays %d", be.decisions, len(u.prompts.queue), overlays(u))
	}
	res := TransferEvent{Kind: TransferResult, ID: "t1", Direction: Incoming, State: StateFailed, Peer: Peer{ID: idAlice, Name: "Alice"},
		Time: c.t, Result: &Result{State: StateFailed, Code: CodeNotPaired, Err: mismatchErr}}
	test.AssertNotificationSent(t, nil, func() { u.ApplyTransfer(res) })
	v := u.transfers.byID["t1"]
	if !strings.Contains(v.stateLbl.Text, "You said the verification codes differ") || v.stateLbl.Importance != widget.DangerImportance {
		t.Fatalf("row says %q (%v)", v.stateLbl.Text, v.stateLbl.Importance)
	}

	// The other side: its user saw different codes; the row and a
	// notification give the engine's reason.
	out := TransferEvent{Kind: TransferPair, ID: "s1", Direction: Outgoing, State: StateWaiting, Peer: Peer{ID: idAlice, Name: "Alice"},
		Pair: &PairCode{Code: "482 913"}}
	u.ApplyTransfer(out)
	reason := "Untrusted: the verification codes on the two screens did not match."
	test.AssertNotificationSent(t, fyne.NewNotification("Transfer stopped", reason), func() {
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "s1", Direction: Outgoing, State: StateDeclined, Peer: out.Peer,
			Result: &Result{State: StateDeclined, Code: CodeUntrusted, ByPeer: true, Err: reason}})
	})
	if s := u.transfers.byID["s1"]; !strings.Contains(s.stateLbl.Text, "did not match") || s.pair.obj.Visible() {
		t.Fatalf("sender row says %q, code still asked: %v", s.stateLbl.Text, s.pair.obj.Visible())
	}
}

// A sending transfer to a device not trusted yet shows the code in its row
// with Codes match and Codes differ.
func TestSendingRowAsksAboutTheCode(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	peer := Peer{ID: idAlice, Name: "Alice's laptop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "s1", Direction: Outgoing, State: StateConnecting, Peer: peer})
	v := u.transfers.byID["s1"]
	if v.pair.obj.Visible() {
		t.Fatal("code strip shown before any code")
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "s1", Direction: Outgoing, State: StateWaiting, Peer: peer, Pair: &PairCode{Code: "105 277"}})
	if !v.pair.obj.Visible() || v.pair.code.Text != "105 277" || !strings.Contains(v.pair.line.Text, "Check that Alice's laptop shows the same code.") {
		t.Fatalf("strip visible %v, code %q, line %q", v.pair.obj.Visible(), v.pair.code.Text, v.pair.line.Text)
	}
	// It stays askable once the files arrived: the code was that session's.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "s1", Direction: Outgoing, State: StateDone, Peer: peer,
		Result: &Result{State: StateDone, Files: 1, Verified: 1}})
	if !v.pair.obj.Visible() {
		t.Fatal("the code went away when the transfer finished")
	}
	test.Tap(v.pair.match)
	if len(be.confirms) != 1 || be.confirms[0] != (pairAnswer{"s1", true}) {
		t.Fatalf("confirms = %+v", be.confirms)
	}
	if v.pair.obj.Visible() {
		t.Fatal("the code is still asked after the answer")
	}
	if d := u.devices.devices[idAlice]; !d.Paired || !d.Trusted {
		t.Fatalf("device after the match: %+v", d)
	}
	if !strings.Contains(rowText(u.devices.rows[0]), "paired") {
		t.Fatalf("device row: %q", rowText(u.devices.rows[0]))
	}

	// Codes differ on another transfer.
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "s2", Direction: Outgoing, State: StateWaiting, Peer: peer, Pair: &PairCode{Code: "105 277"}})
	test.Tap(u.transfers.byID["s2"].pair.differ)
	if len(be.confirms) != 2 || be.confirms[1] != (pairAnswer{"s2", false}) {
		t.Fatalf("confirms = %+v", be.confirms)
	}
}

// Pair… on a device: the dialog connects, shows the code, sends the
// verdict, waits for the other user and says how it ended.
func TestPairWithADevice(t *testing.T) {
	u, be, _ := newTestUI(t)
	dev := alice(true)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: dev})
	if !canPair(dev) {
		t.Fatal("Pair… not offered for an online device not paired yet")
	}
	if d := dev; func() bool { d.Paired = true; return canPair(d) }() {
		t.Fatal("Pair… offered for a paired device")
	}
	u.pairWith(dev)
	if len(be.paired) != 1 || be.paired[0].ID != idAlice {
		t.Fatalf("Pair calls: %+v", be.paired)
	}
	v := u.pairs["pair-1"]
	if v == nil || !v.shown || v.box.Visible() || !strings.Contains(v.status.Text, "Connecting to Alice's laptop") {
		t.Fatalf("pair dialog before the code: %+v", v)
	}
	if u.win.Canvas().Focused() != fyne.Focusable(v.cancel) {
		t.Fatal("the dialog does not start on Cancel")
	}
	peer := Peer{ID: idAlice, Name: "Alice's laptop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "pair-1", Direction: Outgoing, State: StateConnecting, Peer: peer, Pairing: true})
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "pair-1", Direction: Outgoing, State: StateWaiting, Peer: peer, Pairing: true,
		Pair: &PairCode{Code: "771 204", Only: true}})
	if len(u.transfers.byID) != 0 {
		t.Fatal("a pairing became a transfer row")
	}
	if !v.box.Visible() || v.code.Text != "771 204" || !v.match.Visible() || !v.differ.Visible() || v.cancel.Visible() {
		t.Fatalf("code %q shown %v; buttons match %v differ %v cancel %v", v.code.Text, v.box.Visible(), v.match.Visible(), v.differ.Visible(), v.cancel.Visible())
	}
	if u.win.Canvas().Focused() != fyne.Focusable(v.differ) {
		t.Fatal("the code does not start on Codes differ")
	}
	test.FocusNext(u.win.Canvas()) // Tab to Codes match, Enter presses it
	press(u, fyne.KeyReturn)
	if len(be.confirms) != 1 || be.confirms[0] != (pairAnswer{"pair-1", true}) {
		t.Fatalf("confirms = %+v", be.confirms)
	}
	if !strings.Contains(v.status.Text, "Waiting for Alice's laptop to confirm") {
		t.Fatalf("status after the match: %q", v.status.Text)
	}
	test.AssertNotificationSent(t, nil, func() {
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "pair-1", Direction: Outgoing, State: StateDone, Peer: peer, Pairing: true,
			Result: &Result{State: StateDone}})
	})
	if !strings.HasPrefix(v.status.Text, "Paired with Alice's laptop.") || !v.done.Visible() {
		t.Fatalf("status at the end: %q", v.status.Text)
	}
	if d := u.devices.devices[idAlice]; !d.Paired {
		t.Fatal("the device is not marked paired")
	}
	press(u, fyne.KeyEscape)
	if overlays(u) != 0 || len(u.pairs) != 0 || len(be.cancels) != 0 {
		t.Fatalf("after closing: overlays %d, views %d, cancels %v", overlays(u), len(u.pairs), be.cancels)
	}
}

// Issue 26, finding 4: Pair… with a device whose user did not confirm the
// code says so, not that the receiver only takes trusted devices (it may
// accept everyone), in the dialog and, when it is closed, the notification.
func TestPairRejectedByThePeerSaysSo(t *testing.T) {
	u, _, _ := newTestUI(t)
	peer := Peer{ID: idAlice, Name: "Alice's laptop"}
	want := "Alice's laptop did not confirm the verification code, so the devices are not paired. Compare the codes on both screens and try again."
	rejected := func(id string) TransferEvent {
		return TransferEvent{Kind: TransferResult, ID: id, Direction: Outgoing, State: StateFailed, Peer: peer, Pairing: true,
			Result: &Result{State: StateFailed, Code: CodeNotPaired, ByPeer: true,
				Err: "Alice's laptop did not confirm the verification code, so the devices are not paired."}}
	}
	u.pairWith(alice(true))
	v := u.pairs["pair-1"]
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "pair-1", Direction: Outgoing, State: StateWaiting, Peer: peer, Pairing: true,
		Pair: &PairCode{Code: "771 204", Only: true}})
	test.Tap(v.match)
	u.ApplyTransfer(rejected("pair-1"))
	if v.status.Text != "Not paired. "+want || v.status.Importance != widget.DangerImportance {
		t.Fatalf("dialog says %q, want %q", v.status.Text, "Not paired. "+want)
	}
	press(u, fyne.KeyEscape)
	u.pairWith(alice(true))
	press(u, fyne.KeyEscape) // closed: the end is a notification
	test.AssertNotificationSent(t, fyne.NewNotification("Not paired", want), func() { u.ApplyTransfer(rejected("pair-2")) })
}

// Escape before the verdict stops pairing.
func TestEscapeStopsPairing(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.pairWith(alice(true))
	press(u, fyne.KeyEscape)
	if len(be.cancels) != 1 || be.cancels[0] != "pair-1" || overlays(u) != 0 {
		t.Fatalf("cancels %v, overlays %d", be.cancels, overlays(u))
	}
	// Its result, a cancel by this user, needs no word.
	test.AssertNotificationSent(t, nil, func() {
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "pair-1", Direction: Outgoing, State: StateCancelled, Pairing: true,
			Result: &Result{State: StateCancelled, Code: CodeCancelled}})
	})
}

// A device asking to pair gets a prompt like an offer: queued, bounded,
// expiring; its verdict reaches the backend, its end shows in the dialog.
func TestPairRequestPrompt(t *testing.T) {
	u, be, c := newTestUI(t)
	peer := Peer{ID: idAlice, Name: "Alice"}
	req := func(id string) TransferEvent {
		return TransferEvent{Kind: TransferPair, ID: id, Direction: Incoming, State: StateWaiting, Peer: peer, Pairing: true,
			Pair: &PairCode{Code: "330 118", Only: true}}
	}
	test.AssertNotificationSent(t, fyne.NewNotification("Pairing request", "Alice asks to pair. Compare the codes on both screens."), func() {
		u.ApplyTransfer(req("r1"))
	})
	u.ApplyTransfer(offerEvent("t1", 1)) // an offer waits behind it
	v := u.pairs["r1"]
	if len(u.prompts.queue) != 2 || v == nil || v.code.Text != "330 118" || !v.shown {
		t.Fatalf("queue %d, view %+v", len(u.prompts.queue), v)
	}
	if txt := renderedText(v.content); !contains(txt, "Check that Alice shows the same code.", "1 more request(s) waiting", "Expires in 2:00") {
		t.Fatalf("pairing prompt:\n%s", txt)
	}
	test.Tap(v.differ)
	if len(be.confirms) != 1 || be.confirms[0] != (pairAnswer{"r1", false}) {
		t.Fatalf("confirms = %+v", be.confirms)
	}
	if len(u.prompts.queue) != 1 || u.prompts.queue[0].ev.ID != "t1" || u.prompts.queue[0].dlg == nil {
		t.Fatal("the offer behind the pairing request is not shown after the verdict")
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r1", Direction: Incoming, State: StateFailed, Peer: peer, Pairing: true,
		Result: &Result{State: StateFailed, Code: CodeNotPaired, Err: mismatchErr}})
	if want := "Not paired. You said the verification codes differ, so this device does not trust Alice."; v.status.Text != want {
		t.Fatalf("status at the end: %q, want %q", v.status.Text, want)
	}
	test.Tap(u.prompts.queue[0].decline)

	// Nobody answers: it expires as a cancel, with a word.
	u.ApplyTransfer(req("r2"))
	test.AssertNotificationSent(t, fyne.NewNotification("Pairing request expired",
		"The pairing request from Alice was declined because nobody answered in 2 minutes."), func() {
		u.ExpirePrompts(c.t.Add(2 * time.Minute))
	})
	if len(be.cancels) != 1 || be.cancels[0] != "r2" || len(u.prompts.queue) != 0 {
		t.Fatalf("cancels %v, queue %d", be.cancels, len(u.prompts.queue))
	}

	// The peer gives up while the request waits: it goes, with a word.
	u.ApplyTransfer(req("r3"))
	test.AssertNotificationSent(t, fyne.NewNotification("Not paired", "Pairing with Alice did not finish. Cancelled by Alice."), func() {
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r3", Direction: Incoming, State: StateCancelled, Peer: peer, Pairing: true,
			Result: &Result{State: StateCancelled, Code: CodeCancelled, ByPeer: true, Err: "Cancelled by Alice."}})
	})
	if len(u.prompts.queue) != 0 || len(be.cancels) != 1 {
		t.Fatalf("queue %d, cancels %v", len(u.prompts.queue), be.cancels)
	}
}

// Once answered, a pairing request's dialog no longer counts down to its
// expiry nor counts the prompts behind it: "Expires in 1:57" stayed under
// "Paired with Bob", for good.
func TestAnsweredPairRequestStopsCountingDown(t *testing.T) {
	u, _, _ := newTestUI(t)
	peer := Peer{ID: idAlice, Name: "Alice"}
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "r1", Direction: Incoming, State: StateWaiting, Peer: peer, Pairing: true,
		Pair: &PairCode{Code: "330 118", Only: true}})
	u.ApplyTransfer(offerEvent("t1", 1)) // waits behind it
	v := u.pairs["r1"]
	p := u.prompts.queue[0]
	if !p.countdown.Visible() || !p.more.Visible() {
		t.Fatal("the request does not say when it expires, or what waits behind it")
	}
	test.Tap(v.match)
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r1", Direction: Incoming, State: StateDone, Peer: peer, Pairing: true,
		Result: &Result{State: StateDone}})
	if !strings.HasPrefix(v.status.Text, "Paired with Alice") {
		t.Fatalf("status %q", v.status.Text)
	}
	if p.countdown.Visible() || p.more.Visible() {
		t.Errorf("after the answer the dialog still says %q / %q", p.countdown.Text, p.more.Text)
	}
}

// Requests beyond the queue's bound are refused at once.
func TestPairRequestsAreBounded(t *testing.T) {
	u, be, _ := newTestUI(t)
	for i := range 10 {
		u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "r" + string(rune('0'+i)), Direction: Incoming, State: StateWaiting,
			Peer: Peer{ID: idAlice, Name: "Alice"}, Pairing: true, Pair: &PairCode{Code: "330 118", Only: true}})
	}
	if len(u.prompts.queue) != 8 || len(be.cancels) != 2 {
		t.Fatalf("queue %d, cancels %v", len(u.prompts.queue), be.cancels)
	}
}

// A known device with a new key: a warning dialog on screen that can
// forget the old device; a notification while the window is hidden.
func TestKeyChangedWarns(t *testing.T) {
	u, be, _ := newTestUI(t)
	be.known = []KnownDevice{{ID: idAlice, Name: "Alice", Paired: true}}
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idAlice, Name: "Alice", Online: true, Trusted: true, Known: true, Paired: true,
		Addrs: reach("10.0.0.2:4000", addr.QUIC)}})
	warning := `"Alice" (AAAABBBB) answered with another key (BOBBBBBB): if it was reinstalled, forget it here and pair again; otherwise someone may be pretending to be it.`
	ev := TransferEvent{Kind: TransferKeyChanged, ID: "s1", Direction: Outgoing, Peer: Peer{ID: idBob, Name: "Alice"},
		KeyChange: &KeyChange{Known: Peer{ID: idAlice, Name: "Alice", Trusted: true}, PresentedID: idBob, Warning: warning}}
	test.AssertNotificationSent(t, nil, func() { u.ApplyTransfer(ev) })
	if overlays(u) != 1 || !strings.Contains(renderedText(u.win.Canvas().Overlays().Top()), warning) {
		t.Fatalf("overlays %d:\n%s", overlays(u), renderedText(u.win.Canvas().Overlays().Top()))
	}
	if len(u.transfers.byID) != 0 {
		t.Fatal("the warning made a transfer row")
	}
	u.ApplyTransfer(ev) // the same warning again: not stacked
	if overlays(u) != 1 {
		t.Fatalf("overlays %d after the same warning again", overlays(u))
	}
	dangerButton(t, u).OnTapped() // Forget Alice
	if len(be.forgotten) != 1 || be.forgotten[0] != idAlice {
		t.Fatalf("forgotten %v", be.forgotten)
	}
	if d := u.devices.devices[idAlice]; d.Trusted || d.Known {
		t.Fatalf("device after Forget: %+v", d)
	}
	press(u, fyne.KeyEscape) // the "forgotten" message
	if overlays(u) != 0 {
		t.Fatalf("overlays %d", overlays(u))
	}

	// Hidden in the tray: a notification, whose Forget button works.
	var got []NoticeAction
	u.opt.NotifyActions = func(title, body string, actions []NoticeAction) {
		if title != "Device key changed" || body != warning {
			t.Errorf("notification %q: %q", title, body)
		}
		got = actions
	}
	u.SetWindowShown(false)
	u.ApplyTransfer(ev)
	if overlays(u) != 0 || len(got) != 2 {
		t.Fatalf("hidden: overlays %d, actions %+v", overlays(u), got)
	}
	got[1].Do()
	if len(be.forgotten) != 2 {
		t.Fatalf("forgotten %v", be.forgotten)
	}
	press(u, fyne.KeyEscape)
	got[0].Do() // Show: the dialog
	if overlays(u) != 1 || u.hidden {
		t.Fatalf("Show: overlays %d, hidden %v", overlays(u), u.hidden)
	}
}

// The Devices page marks paired devices and offers Pair… on the others.
func TestDevicesPagePairs(t *testing.T) {
	u, be, _ := newTestUI(t)
	be.known = []KnownDevice{
		{ID: idAlice, Name: "Alice", Announced: "Alice", LastAddr: "10.0.0.2:4000", Addrs: reach("10.0.0.2:4000", addr.QUIC, addr.TCP)},
		{ID: idBob, Name: "Bob", Announced: "Bob", Paired: true, AutoAccept: true},
	}
	u.known.reload()
	a, b := u.known.rows[0], u.known.rows[1]
	if !a.pair.Visible() || a.pair.Disabled() || b.pair.Visible() {
		t.Fatalf("Pair… on Alice %v (disabled %v), on Bob %v", a.pair.Visible(), a.pair.Disabled(), b.pair.Visible())
	}
	if !strings.HasPrefix(b.paired.Text, "Paired") || !strings.HasPrefix(a.paired.Text, "Not paired") {
		t.Fatalf("labels %q / %q", a.paired.Text, b.paired.Text)
	}
	test.Tap(a.pair)
	if len(be.paired) != 1 || be.paired[0].ID != idAlice || !slices.Equal(be.paired[0].Addrs, reach("10.0.0.2:4000", addr.QUIC, addr.TCP)) {
		t.Fatalf("Pair calls %+v", be.paired)
	}
	if v := u.pairs["pair-1"]; v == nil || !v.shown {
		t.Fatal("no pairing dialog")
	}
	// A second Pair… on the same device shows the same dialog.
	test.Tap(a.pair)
	if len(be.paired) != 1 {
		t.Fatalf("Pair calls %+v", be.paired)
	}
}

// Once a device is paired (here through Pair…), rows of earlier sends to
// it stop asking about their codes.
func TestPairedDeviceRowsStopAsking(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	peer := Peer{ID: idAlice, Name: "Alice's laptop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "s1", Direction: Outgoing, State: StateWaiting, Peer: peer, Pair: &PairCode{Code: "105 277"}})
	v := u.transfers.byID["s1"]
	if !v.pair.obj.Visible() {
		t.Fatal("no code asked")
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "p1", Direction: Outgoing, State: StateDone, Peer: peer, Pairing: true,
		Result: &Result{State: StateDone}})
	if v.pair.obj.Visible() {
		t.Fatal("the row still asks about the code of a paired device")
	}
}

// Issue 26, finding 6: after Forget the device is no longer "paired" and
// Pair… is offered at once; a rename shows at once in Nearby and in the
// rows of its transfers. No discovery event is needed for either.
func TestForgetAndRenameShowAtOnce(t *testing.T) {
	u, be, _ := newTestUI(t)
	be.known = []KnownDevice{{ID: idAlice, Name: "Alice", Announced: "Alice", Paired: true}}
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idAlice, Name: "Alice", Online: true, Trusted: true, Known: true, Paired: true,
		Addrs: reach("10.0.0.2:4000", addr.QUIC)}})
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "s", Direction: Outgoing, State: StateActive, Peer: Peer{ID: idAlice, Name: "Alice"}})
	if canPair(u.devices.devices[idAlice]) {
		t.Fatal("a paired device offers Pair…")
	}

	u.known.showRename(be.known[0])
	u.win.Canvas().Focused().(*entry).SetText("Alice's laptop")
	press(u, fyne.KeyReturn)
	if d := u.devices.devices[idAlice]; d.Name != "Alice's laptop" {
		t.Errorf("Nearby after the rename: %q", d.Name)
	}
	v := u.transfers.byID["s"]
	if !strings.Contains(v.title.Text, "Alice's laptop") {
		t.Errorf("transfer row after the rename: %q", v.title.Text)
	}
	if v.d.Peer != "Alice's laptop" {
		t.Errorf("the model's name after the rename: %q", v.d.Peer)
	}

	u.known.confirmForget(be.known[0])
	dangerButton(t, u).OnTapped()
	d := u.devices.devices[idAlice]
	if d.Paired || d.Known || d.Trusted || !canPair(d) {
		t.Fatalf("right after Forget: %+v, Pair… offered %v", d, canPair(d))
	}
}

// A remembered device that is not here leaves Nearby when it is forgotten:
// it stayed listed, "Offline · last seen 12 min ago", though the Devices
// page no longer had it. One that is online stays, as new.
func TestForgottenOfflineDeviceLeavesNearby(t *testing.T) {
	const idCarol = "CAROLLLLCCCCDDDDEEEEFFFFGGGGHHHHIIIIJJJJKKKKLLLLMMMQ"
	u, be, _ := newTestUI(t)
	rows := func(u *UI) []string {
		var out []string
		for _, r := range u.devices.rows {
			out = append(out, rowText(r))
		}
		return out
	}
	be.known = []KnownDevice{{ID: idAlice, Name: "Alice", Announced: "Alice"}, {ID: idCarol, Name: "Carol", Announced: "Carol"}}
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idAlice, Name: "Alice", Known: true, Source: "remembered",
		LastSeen: time.Date(2026, 11, 29, 11, 48, 0, 0, time.UTC)}})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idCarol, Name: "Carol", Known: true, Online: true,
		Addrs: reach("10.0.0.3:4000", addr.QUIC)}})
	for _, id := range []string{idAlice, idCarol} {
		u.known.confirmForget(be.known[0])
		dangerButton(t, u).OnTapped()
		if len(be.forgotten) == 0 || be.forgotten[len(be.forgotten)-1] != id {
			t.Fatalf("forgotten %v, want %s last", be.forgotten, id)
		}
	}
	if _, ok := u.devices.devices[idAlice]; ok {
		t.Errorf("the offline device is still listed after Forget: %q", rows(u))
	}
	if d, ok := u.devices.devices[idCarol]; !ok || d.Known || !d.Online {
		t.Errorf("the online device after Forget: %+v (listed %v)", d, ok)
	}
	if n := len(u.devices.rows); n != 1 {
		t.Errorf("%d rows drawn, want 1: %q", n, rows(u))
	}
}

// A send that reconnects does not keep asking about the session that
// ended: its code goes with it (the next session's shows its own), and
// Codes match/differ on the old one answered nothing.
func TestReconnectingRowDropsTheOldCode(t *testing.T) {
	u, _, _ := newTestUI(t)
	peer := Peer{ID: idAlice, Name: "Alice's laptop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "s1", Direction: Outgoing, State: StateWaiting, Peer: peer, Pair: &PairCode{Code: "910 033"}})
	v := u.transfers.byID["s1"]
	if !v.pair.obj.Visible() {
		t.Fatal("no code shown")
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "s1", Direction: Outgoing, State: StateRetrying, Peer: peer})
	if v.pair.obj.Visible() {
		t.Fatalf("the ended session's code %q is still asked while reconnecting", v.pair.code.Text)
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "s1", Direction: Outgoing, State: StateWaiting, Peer: peer, Pair: &PairCode{Code: "085 522"}})
	if !v.pair.obj.Visible() || v.pair.code.Text != "085 522" {
		t.Fatalf("the new session's code: shown %v, %q", v.pair.obj.Visible(), v.pair.code.Text)
	}
}

// The Devices page says a device the Nearby list has online is online now;
// it said "Last seen 13 min ago", the time last stored, while the device
// was there. It follows the device coming and going without a reload.
func TestDevicesPageSaysOnlineNow(t *testing.T) {
	u, be, c := newTestUI(t)
	be.known = []KnownDevice{{ID: idAlice, Name: "Alice's laptop", LastSeen: c.t.Add(-13 * time.Minute)}}
	dev := alice(true)
	dev.Known = true
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: dev})
	u.known.reload()
	info := func() string { // the label under the device's name
		var text string
		uitree.Walk(u.known.box, func(x fyne.CanvasObject) {
			if l, ok := x.(*widget.Label); ok && strings.HasPrefix(l.Text, GroupID(idAlice)) {
				text = l.Text
			}
		})
		return text
	}
	if !strings.HasSuffix(info(), "\nOnline now") {
		t.Fatalf("online: %q", info())
	}
	u.ApplyDevice(DeviceEvent{Kind: DeviceGone, Device: Device{ID: idAlice, LastSeen: c.t.Add(-time.Minute)}})
	if !strings.HasSuffix(info(), "\nLast seen 1 min ago") {
		t.Fatalf("gone: %q", info())
	}
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: dev})
	if !strings.HasSuffix(info(), "\nOnline now") {
		t.Fatalf("back: %q", info())
	}
}

// idLines are the lines the label that starts with prefix under o is
// drawn in.
func idLines(t *testing.T, o fyne.CanvasObject, prefix string) []string {
	t.Helper()
	var lines []string
	uitree.Walk(o, func(x fyne.CanvasObject) {
		if l, ok := x.(*widget.Label); ok && strings.HasPrefix(l.Text, prefix) {
			uitree.Walk(l, func(y fyne.CanvasObject) {
				if tx, ok := y.(*canvas.Text); ok && tx.Text != "" {
					lines = append(lines, tx.Text)
				}
			})
		}
	})
	if lines == nil {
		t.Fatalf("no label %q…", prefix)
	}
	return lines
}

// A device ID too wide for the line after "Device ID" goes whole to the
// next line, in the prompt as in the pairing dialog and the warning about
// a changed key: it was broken anywhere, and a prompt showed "…-MQDB-Z5C"
// with a lone "Q" below (seen on screen with this very ID), a group split
// where owners compare them.
func TestDeviceIDIsNotBrokenInsideAGroup(t *testing.T) {
	u, _, _ := newTestUI(t)
	const seen = "MJUK7EEVQAYLVGD5AXWHZ4KMRDAFCDJHFZ2H36CJA2NCMQDBZ5CQ"
	ev := untrustedOffer("t1")
	ev.Peer.ID = seen
	u.ApplyTransfer(ev)
	want := GroupID(seen)
	check := func(where string, o fyne.CanvasObject) {
		t.Helper()
		lines := idLines(t, o, "Device ID ")
		if got := strings.Join(lines, "|"); got != "Device ID "+want && got != "Device ID|"+want {
			t.Errorf("%s: the ID is drawn as %q, want it on one line after \"Device ID\" or whole on the next", where, got)
		}
	}
	check("prompt", u.prompts.queue[0].scroll.Content)

	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: seen, Name: "Phone", Online: true, Addrs: reach("10.0.0.4:1", addr.QUIC)}})
	u.pairWith(u.devices.rows[0].dev)
	check("pairing", u.win.Canvas().Overlays().Top())
	u.win.Canvas().Overlays().Top().Hide()

	u.showKeyChanged(&KeyChange{Known: Peer{ID: idAlice, Name: "Phone", Trusted: true}, PresentedID: seen, Warning: "A device calling itself \"Phone\" …"})
	lines := idLines(t, u.win.Canvas().Overlays().Top(), "Known key ")
	if got, want := strings.Join(lines, "|"), "Presented key "+want; !strings.Contains(got, want) && !strings.Contains(got, "Presented key|"+GroupID(seen)) {
		t.Errorf("key changed: the keys are drawn as %q, want the presented one whole", got)
	}
}

// TestSendingRowOffersOnlyAShownCode: the walkthrough's Retry. The
// receiver accepted the new session without asking, so its screen never
// showed the new code; the sender's row asked "Check that Alice shows the
// same code" with a Codes match button that trusted Alice all the same.
// Now the row says there is nothing to compare and offers no button; a
// code from an older Ferry, which cannot say, is still offered, honestly.
func TestSendingRowOffersOnlyAShownCode(t *testing.T) {
	u, be, _ := newTestUI(t)
	peer := Peer{ID: idAlice, Name: "Alice's laptop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "s1", Direction: Outgoing, State: StateWaiting, Peer: peer, Pair: &PairCode{Code: "572 054"}})
	v := u.transfers.byID["s1"]
	if !v.pair.obj.Visible() || !v.pair.match.Visible() {
		t.Fatal("the code is not offered while the receiver decides (it shows the code with its question)")
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "s1", Direction: Outgoing, State: StateWaiting, Peer: peer, Pair: &PairCode{Code: "572 054", Shown: CodeShownYes}})
	if !v.pair.match.Visible() || !strings.Contains(v.pair.line.Text, "Check that Alice's laptop shows the same code.") {
		t.Fatalf("a shown code: match %v, line %q", v.pair.match.Visible(), v.pair.line.Text)
	}
	// Cancelled and retried: the receiver takes the new session unasked.
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "s1", Direction: Outgoing, State: StateRetrying, Peer: peer})
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "s1", Direction: Outgoing, State: StateWaiting, Peer: peer, Pair: &PairCode{Code: "234 768"}})
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "s1", Direction: Outgoing, State: StateActive, Peer: peer, Pair: &PairCode{Code: "234 768", Shown: CodeShownNo}})
	if v.pair.match.Visible() || v.pair.differ.Visible() {
		t.Fatal("Codes match/Codes differ offered for a code the receiver never showed")
	}
	if txt := v.pair.line.Text; strings.Contains(txt, "Check that") || !strings.Contains(txt, "Alice's laptop went on with this send without asking") || !strings.Contains(txt, "Pair…") || strings.Contains(txt, "….") {
		t.Fatalf("line %q", txt) // "with Pair…." read as a stop after an ellipsis
	}
	v.pair.match.OnTapped() // a tap that was on its way
	if len(be.confirms) != 0 {
		t.Fatalf("an unshown code was confirmed: %+v", be.confirms)
	}
	if d, ok := u.devices.devices[idAlice]; ok && d.Paired {
		t.Fatal("Alice is paired through a code she never showed")
	}

	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "s2", Direction: Outgoing, State: StateActive, Peer: peer, Pair: &PairCode{Code: "105 277", Shown: CodeShownUnknown}})
	w := u.transfers.byID["s2"]
	if !w.pair.match.Visible() || !strings.Contains(w.pair.line.Text, "does not say whether it showed the code") {
		t.Fatalf("an older Ferry's code: match %v, line %q", w.pair.match.Visible(), w.pair.line.Text)
	}
}

// A send kept from an earlier run of Ferry goes on as the same delivery
// (engine.Continue): its receiver takes it without asking, so it does not
// show the new session's code (each session has its own), while its user
// may well have been shown the first session's code. The row said "Bob's
// laptop accepted without showing this code", which read as Bob's laptop
// never showing one. It says that the send went on unasked and that any
// code shown then was another one; a first session accepted unasked
// ("accept all") keeps its words.
func TestContinuedSendDoesNotSayTheReceiverShowedNoCode(t *testing.T) {
	u, _, _ := newTestUI(t)
	bob := Peer{ID: idAlice, Name: "Bob's laptop"}
	ev := func(id string, e TransferEvent) {
		e.ID, e.Delivery, e.Direction, e.Peer = id, id, Outgoing, bob
		u.ApplyTransfer(e)
	}
	// The row the app shows at its start (resumeSends), then the send going
	// on when the device is seen: the engine's events of a new session.
	ev("kept", TransferEvent{Kind: TransferOffer, Offer: &Offer{Count: 1, Files: []FileInfo{{Path: "big.bin", Size: 10}}, Total: 10}})
	ev("kept", TransferEvent{Kind: TransferResult, State: StateFailed, Result: &Result{State: StateFailed, Code: CodeClosedHere, Rejoin: true}})
	ev("kept", TransferEvent{Kind: TransferState, State: StateConnecting})
	ev("kept", TransferEvent{Kind: TransferPair, State: StateWaiting, Pair: &PairCode{Code: "234 768", Shown: CodeShownWaiting}})
	ev("kept", TransferEvent{Kind: TransferPair, State: StateWaiting, Pair: &PairCode{Code: "234 768", Shown: CodeShownNo}})
	ev("kept", TransferEvent{Kind: TransferState, State: StateActive})
	v := u.transfers.byID["kept"]
	if !v.pair.obj.Visible() || v.pair.match.Visible() || v.pair.differ.Visible() {
		t.Fatalf("strip %v, match %v, differ %v: want the code without buttons", v.pair.obj.Visible(), v.pair.match.Visible(), v.pair.differ.Visible())
	}
	want := "Bob's laptop went on with this send without asking, so its screen does not show this code: the code is new each time Ferry connects, and any code it showed when it first took the send was another one. To trust Bob's laptop, use Pair… to compare codes with it."
	if got := v.pair.line.Text; got != want {
		t.Errorf("continued send: %q, want %q", got, want)
	}
	// A first session the receiver took unasked: it showed no code at all.
	ev("new", TransferEvent{Kind: TransferState, State: StateConnecting})
	ev("new", TransferEvent{Kind: TransferPair, State: StateWaiting, Pair: &PairCode{Code: "105 277"}})
	ev("new", TransferEvent{Kind: TransferPair, State: StateActive, Pair: &PairCode{Code: "105 277", Shown: CodeShownNo}})
	ev("new", TransferEvent{Kind: TransferResult, State: StateDone, Result: &Result{State: StateDone}}) // its own end: no later session
	if got := u.transfers.byID["new"].pair.line.Text; !strings.HasPrefix(got, "Bob's laptop accepted without showing this code, so there is nothing to compare it with.") {
		t.Errorf("first session taken unasked: %q", got)
	}
}

// TestReceivingRowKeepsTheCodeThePromptShowed: the sender's row asks its
// user to check that this screen shows the same code, and the prompt that
// showed it is gone once answered; the receiving row had no code at all.
// It now shows the code the prompt showed, with no buttons (comparing it
// here trusts nobody), and only that code: none when the offer was
// accepted without asking (accept all), none once a later session brought
// another, none once the transfer failed.
func TestReceivingRowKeepsTheCodeThePromptShowed(t *testing.T) {
	u, be, c := newTestUI(t)
	peer := Peer{ID: idAlice, Name: "Alice"}
	// The engine tells the session's code, then asks with it.
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "t1", Direction: Incoming, Peer: peer, Pair: &PairCode{Code: "482 913"}})
	if u.transfers.byID["t1"] != nil {
		t.Fatal("a row before the offer (TestOfferHeldByTheEngineIsCountedNotRowed)")
	}
	u.ApplyTransfer(untrustedOffer("t1"))
	v := u.transfers.byID["t1"]
	if v.pair.obj.Visible() {
		t.Fatal("the row shows the code beside the prompt that shows it")
	}
	test.Tap(u.prompts.queue[0].accept) // once, without Always accept
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "t1", Direction: Incoming, State: StateActive, Peer: peer,
		Progress: &Progress{Bytes: 1000, Total: 2000, TotalFiles: 2}})
	if !v.pair.obj.Visible() || v.pair.code.Text != "482 913" {
		t.Fatalf("after Accept the row shows code %q (visible %v), want the prompt's 482 913", v.pair.code.Text, v.pair.obj.Visible())
	}
	if v.pair.match.Visible() || v.pair.differ.Visible() {
		t.Fatal("the receiving row offers Codes match/Codes differ")
	}
	if !strings.Contains(v.pair.line.Text, "Alice shows the same code") || !strings.Contains(v.pair.line.Text, "Pair…") || strings.Contains(v.pair.line.Text, "….") {
		t.Fatalf("line %q", v.pair.line.Text) // not "with Pair…."
	}
	v.pair.match.OnTapped() // hidden, yet a tap on its way must trust nobody
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "t1", Direction: Incoming, State: StateDone, Peer: peer, Time: c.t,
		Result: &Result{State: StateDone, Files: 2, Verified: 2}})
	if !v.pair.obj.Visible() {
		t.Fatal("the code went with Done, while the sender may still compare it")
	}
	if len(be.confirms) != 0 {
		t.Fatalf("the receiving row confirmed a code: %+v", be.confirms)
	}
	if d, ok := u.devices.devices[idAlice]; ok && (d.Paired || d.Trusted) {
		t.Fatal("showing the code trusted Alice")
	}

	// A later session of the same transfer has a code of its own, which no
	// prompt here showed.
	u.ApplyTransfer(untrustedOffer("t2"))
	test.Tap(u.prompts.queue[0].accept)
	w := u.transfers.byID["t2"]
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "t2", Direction: Incoming, State: StateActive, Peer: peer})
	if !w.pair.obj.Visible() {
		t.Fatal("t2 shows no code")
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "t2", Direction: Incoming, State: StateActive, Peer: peer, Pair: &PairCode{Code: "234 768"}})
	if w.pair.obj.Visible() {
		t.Fatalf("the row shows %q after a new session's code no prompt showed", w.pair.code.Text)
	}

	// Accepted without asking (accept all): the engine tells a code, the
	// offer asks nothing.
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "t3", Direction: Incoming, Peer: peer, Pair: &PairCode{Code: "105 277"}})
	all := offerEvent("t3", 1)
	all.State = StateActive
	u.ApplyTransfer(all)
	if x := u.transfers.byID["t3"]; x.pair.obj.Visible() {
		t.Fatal("a code no prompt showed is in the row")
	}

	// Compared in the prompt (Always accept): the row says this device
	// trusts the sender, not that Pair… is needed.
	u.ApplyTransfer(untrustedOffer("t5"))
	p := u.prompts.queue[0]
	p.always.SetChecked(true)
	test.Tap(p.accept)
	test.Tap(p.checkBtns[1]) // Codes match
	x := u.transfers.byID["t5"]
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "t5", Direction: Incoming, State: StateActive, Peer: peer})
	if !x.pair.obj.Visible() || !strings.Contains(x.pair.line.Text, "this device trusts it") || strings.Contains(x.pair.line.Text, "Pair…") {
		t.Fatalf("after Codes match in the prompt: visible %v, line %q", x.pair.obj.Visible(), x.pair.line.Text)
	}

	// Failed: nothing left to compare.
	u.ApplyTransfer(untrustedOffer("t4"))
	test.Tap(u.prompts.queue[0].accept)
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "t4", Direction: Incoming, State: StateFailed, Peer: peer, Time: c.t,
		Result: &Result{State: StateFailed, Code: CodeConnectionLost, Err: "connection lost"}})
	if x := u.transfers.byID["t4"]; x.pair.obj.Visible() {
		t.Fatal("a failed transfer's row still shows the code")
	}
}

// TestSendingRowWaitsForTheReceiversPrompt: the sender's row asked to
// compare the code, with Codes match, while the receiver kept the offer
// queued behind another device's prompt, its code on no screen there. A
// receiver that says where the offer stands makes the row wait, without
// the buttons, and say so; they come once its prompt is shown.
func TestSendingRowWaitsForTheReceiversPrompt(t *testing.T) {
	u, be, _ := newTestUI(t)
	peer := Peer{ID: idAlice, Name: "Alice's laptop"}
	pair := func(shown CodeShown, ahead int) {
		u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "s1", Direction: Outgoing, State: StateWaiting, Peer: peer, Pair: &PairCode{Code: "572 054", Shown: shown, Ahead: ahead}})
	}
	pair(CodeShownWaiting, 0)
	v := u.transfers.byID["s1"]
	for _, c := range []struct {
		shown CodeShown
		ahead int
		line  string
	}{
		{CodeShownWaiting, 0, "Waiting for Alice's laptop to show your offer"},
		// Queued by the receiving Ferry itself, behind the prompts it
		// shows: the row said it waited for the offer to be shown.
		{CodeShownQueued, 8, "Your offer is queued on Alice's laptop behind 8 other offers waiting for an answer"},
		{CodeShownQueued, 1, "Your offer is queued on Alice's laptop behind 1 other offer waiting for an answer"},
		{CodeShownQueued, 0, "Alice's laptop is answering another device's offer first"},
	} {
		pair(c.shown, c.ahead)
		if !v.pair.obj.Visible() || v.pair.code.Text != "572 054" {
			t.Fatalf("%v: the code is not on the row", c.shown)
		}
		if v.pair.match.Visible() || v.pair.differ.Visible() {
			t.Fatalf("%v: Codes match/Codes differ offered for a code the receiver does not show yet", c.shown)
		}
		if txt := v.pair.line.Text; !strings.Contains(txt, c.line) || strings.Contains(txt, "Check that") {
			t.Fatalf("%v: line %q, want %q", c.shown, txt, c.line)
		}
		v.pair.match.OnTapped() // a tap that was on its way
		if len(be.confirms) != 0 {
			t.Fatalf("%v: a code not shown yet was confirmed: %+v", c.shown, be.confirms)
		}
	}
	pair(CodeShownPending, 0) // its prompt is shown
	if !v.pair.match.Visible() || !strings.Contains(v.pair.line.Text, "Check that Alice's laptop shows the same code.") {
		t.Fatalf("the shown offer's code: match %v, line %q", v.pair.match.Visible(), v.pair.line.Text)
	}
}

// TestPromptQueueSaysWhichOfferIsOnScreen: the app shows one prompt at a
// time; each offer's sender is told whether its prompt is shown or queued
// (OfferOnScreen), and the queued one is shown once the first is answered.
func TestPromptQueueSaysWhichOfferIsOnScreen(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyTransfer(untrustedOffer("t1"))
	u.ApplyTransfer(untrustedOffer("t2"))
	if want := []string{"t1 shown", "t2 queued"}; !slices.Equal(be.onScreen, want) {
		t.Fatalf("OfferOnScreen calls %q, want %q", be.onScreen, want)
	}
	test.Tap(u.prompts.queue[0].accept)
	if want := []string{"t1 shown", "t2 queued", "t2 shown"}; !slices.Equal(be.onScreen, want) {
		t.Fatalf("OfferOnScreen calls %q, want %q", be.onScreen, want)
	}
}
