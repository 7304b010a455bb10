package ui

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
)

// TestWheelOverAFieldScrollsSettings: the mouse wheel over a text field
// of the Settings page scrolls the page, as it does beside the fields;
// the field's own scroller (for text wider than it) took the wheel, and
// the page stood still under the pointer.
func TestWheelOverAFieldScrollsSettings(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.win.Resize(fyne.NewSize(500, 320)) // the page is taller than the window
	u.tabs.SelectIndex(2)
	v := u.settings
	v.tabs.SelectIndex(0)
	page := v.general
	c := u.win.Canvas()
	c.Content().Refresh()
	abs := fyne.CurrentApp().Driver().AbsolutePositionForObject
	wheel := func(at fyne.Position) float32 {
		page.ScrollToTop()
		test.Scroll(c, at, 0, -40)
		return page.Offset.Y
	}
	for _, e := range []*entry{v.name, v.dir} {
		if y := wheel(abs(e).Add(fyne.NewPos(e.Size().Width/2, e.Size().Height/2))); y == 0 {
			t.Errorf("the wheel over the field %q left the page at its top", e.PlaceHolder+e.Text)
		}
	}
	if y := wheel(abs(page).Add(fyne.NewPos(8, 20))); y == 0 {
		t.Error("the wheel beside the fields left the page at its top")
	}
	// What lies under the wheel's catcher still takes taps.
	p := v.policy
	page.ScrollToTop()
	page.ScrollToOffset(fyne.NewPos(0, abs(p).Y-abs(page).Y)) // its top at the page's, above Save
	test.TapCanvas(c, abs(p).Add(fyne.NewPos(20, p.Size().Height/2)))
	if p.Selected != policyLabels[1] {
		t.Errorf("a tap on the second choice of 'Who may send' left %q selected", p.Selected)
	}
}

// TestWheelOverAFieldScrollsDialogs: in the dialogs that scroll a form of
// single-line fields (a link's PIN and expiry, LocalSend's PIN question),
// the mouse wheel over a field scrolls the dialog, as beside the fields; the
// field's own scroller took it and the dialog stood still. A tap on the
// field still gives it the focus.
func TestWheelOverAFieldScrollsDialogs(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(u *UI) *entry // the dialog's field
	}{
		{"share link", func(u *UI) *entry {
			return u.showLinkSetup(LinkShare, []string{"/home/sam/a.jpg", "/home/sam/Holiday"}).pin
		}},
		{"receive link", func(u *UI) *entry { return u.showLinkSetup(LinkReceive, nil).pin }},
		{"LocalSend PIN", func(u *UI) *entry {
			u.showAskPIN("Galaxy S24 of someone with a long device name", true, func(string) {})
			return u.win.Canvas().Focused().(*entry)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, _, _ := newLinkUI(t)
			u.win.Resize(fyne.NewSize(420, 200)) // the dialog is taller than the window
			field := c.open(u)
			cv := u.win.Canvas()
			page := scrollAbove(cv.Overlays().Top(), field)
			if page == nil {
				t.Fatal("no scroller holds the field")
			}
			if page.Content.Size().Height <= page.Size().Height {
				t.Fatalf("the dialog does not scroll: content %v in %v", page.Content.Size(), page.Size())
			}
			abs := fyne.CurrentApp().Driver().AbsolutePositionForObject
			mid := func(o fyne.CanvasObject) fyne.Position {
				return abs(o).Add(fyne.NewPos(o.Size().Width/2, o.Size().Height/2))
			}
			// Scroll the field to the middle of the view, then wheel
			// towards the end that has room.
			top := abs(field).Y - abs(page.Content).Y
			most := page.Content.Size().Height - page.Size().Height
			page.Offset.Y = min(max(top+field.Size().Height/2-page.Size().Height/2, 0), most)
			page.Refresh()
			from := page.Offset.Y
			dy := float32(-20) // down
			if from == most {
				dy = 20
			}
			at := mid(field)
			test.Scroll(cv, at, 0, dy)
			if page.Offset.Y == from {
				t.Errorf("the wheel over the field (at %v, the view %v+%v) left the dialog at %v", at, abs(page), page.Size(), from)
			}
			// A tap lands on the field: its focus stays (a tap on
			// anything else takes it away).
			page.Offset.Y = from
			page.Refresh()
			cv.Focus(field)
			test.TapCanvas(cv, at)
			if cv.Focused() != fyne.Focusable(field) {
				t.Errorf("a tap on the field left the focus on %T", cv.Focused())
			}
		})
	}
}

// scrollAbove is the innermost container.Scroll in the tree from o that
// holds target, or nil.
func scrollAbove(o, target fyne.CanvasObject) *container.Scroll {
	var found *container.Scroll
	var walk func(o fyne.CanvasObject, in *container.Scroll) bool
	walk = func(o fyne.CanvasObject, in *container.Scroll) bool {
		if o == target {
			found = in
			return true
		}
		var kids []fyne.CanvasObject
		switch o := o.(type) {
		case *container.Scroll:
			in = o
			kids = []fyne.CanvasObject{o.Content}
		case *fyne.Container:
			kids = o.Objects
		case fyne.Widget:
			kids = test.WidgetRenderer(o).Objects()
		}
		for _, k := range kids {
			if walk(k, in) {
				return true
			}
		}
		return false
	}
	walk(o, nil)
	return found
}
