package ui

import (
	"testing"

	"fyne.io/fyne/v2"
)

// The window's smallest width does not grow while a sending row shows its
// verification code: the strip's code and its two buttons stood side by
// side whatever the width, so the window's smallest size jumped (670 to
// 724 px in the app, seen in a UI audit) as soon as the code came, and back
// once it was answered. The buttons now go under the code where the row is
// narrow, one under the other where it is narrower still.
func TestCodeStripDoesNotWidenTheWindow(t *testing.T) {
	u, _, _ := newTestUI(t)
	fyne.CurrentApp().Settings().SetTheme(Theme()) // the app's sizes, not the test theme's
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	peer := Peer{ID: idAlice, Name: "Alice's laptop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "s1", Direction: Outgoing, State: StateConnecting, Peer: peer})
	before := u.win.Content().MinSize().Width
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "s1", Direction: Outgoing, State: StateWaiting, Peer: peer,
		Pair: &PairCode{Code: "105 277", Shown: CodeShownYes}})
	v := u.transfers.byID["s1"]
	if !v.pair.obj.Visible() || !v.pair.match.Visible() {
		t.Fatal("the strip does not ask about the code")
	}
	if w := u.win.Content().MinSize().Width; w > before {
		t.Errorf("the window's smallest width is %v with the code strip, %v without", w, before)
	}
	// At any width the strip is whole: the code, Codes differ and Codes
	// match, none over another, within the row.
	head := v.pair.obj.Objects[0].(*fyne.Container)
	for _, w := range []float32{u.win.Content().MinSize().Width, 700, 980, 1400} {
		u.win.Resize(fyne.NewSize(w, 600))
		objs := head.Objects
		for i, a := range objs {
			if a.Size().Width < a.MinSize().Width || a.Position().X < 0 || a.Position().X+a.Size().Width > head.Size().Width+1 {
				t.Errorf("window %v wide: object %d is %v at %v, needs %v, in a head %v wide", w, i, a.Size(), a.Position(), a.MinSize(), head.Size().Width)
			}
			for _, b := range objs[i+1:] {
				if overlap(a, b) {
					t.Errorf("window %v wide: %v at %v overlaps %v at %v", w, a.Size(), a.Position(), b.Size(), b.Position())
				}
			}
		}
	}
}

// overlap reports whether a and b, in one container, cover a common point.
func overlap(a, b fyne.CanvasObject) bool {
	ap, bp := a.Position(), b.Position()
	return ap.X < bp.X+b.Size().Width && bp.X < ap.X+a.Size().Width && ap.Y < bp.Y+b.Size().Height && bp.Y < ap.Y+a.Size().Height
}
