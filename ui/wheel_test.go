package ui

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
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
	var page *container.Scroll
	switch o := v.tabs.Items[0].Content.(type) {
	case *container.Scroll:
		page = o
	case *fyne.Container:
		page = o.Objects[0].(*container.Scroll)
	}
	c := u.win.Canvas()
	c.Content().Refresh()
	abs := fyne.CurrentApp().Driver().AbsolutePositionForObject
	wheel := func(at fyne.Position) float32 {
		page.ScrollToTop()
		test.Scroll(c, at, 0, -40)
		return page.Offset.Y
	}
	for _, e := range []*widget.Entry{v.name, v.dir} {
		if y := wheel(abs(e).Add(fyne.NewPos(e.Size().Width/2, e.Size().Height/2))); y == 0 {
			t.Errorf("the wheel over the field %q left the page at its top", e.PlaceHolder+e.Text)
		}
	}
	if y := wheel(abs(page).Add(fyne.NewPos(8, 20))); y == 0 {
		t.Error("the wheel beside the fields left the page at its top")
	}
	// What lies under the wheel's catcher still takes taps.
	page.ScrollToTop()
	p := v.policy
	test.TapCanvas(c, abs(p).Add(fyne.NewPos(20, p.Size().Height/2)))
	if p.Selected != policyLabels[1] {
		t.Errorf("a tap on the second choice of 'Who may send' left %q selected", p.Selected)
	}
}
