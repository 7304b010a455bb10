package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
)

// The status line cuts its least useful part first and shows it all on
// a click: the window's default width cut the port off the end of "This
// device: Sam's laptop · receiving from everyone nearby · SAML-PTP7 ·
// 192.168.1.20 · port 47800" (seen in a UI audit), and nothing showed the
// rest. Now "This device:" and then the name (the window's title says it)
// go before anything else is cut, and a click shows the line whole.
func TestStatusLineCutsTheNameFirstAndShowsAllOnAClick(t *testing.T) {
	u, be, c := newTestUI(t)
	fyne.CurrentApp().Settings().SetTheme(Theme())
	goldenState(u, be, c)
	const whole = "This device: Sam's laptop · receiving from everyone nearby · SAML-PTP7 · 192.168.1.20 · port 47800"
	const rest = "receiving from everyone nearby · SAML-PTP7 · 192.168.1.20 · port 47800"
	width := func(s string) float32 {
		return fyne.MeasureText(s, theme.TextSize(), fyne.TextStyle{}).Width + 2*theme.InnerPadding()
	}
	for w := float32(600); w <= 1400; w += 20 {
		u.win.Resize(fyne.NewSize(w, 640))
		room, shown := u.status.Size().Width, u.status.Text
		switch {
		case width(rest) <= room:
			// All but the name fits: the line is whole but for the name.
			if width(shown) > room || !strings.HasSuffix(shown, rest) {
				t.Errorf("window %v wide: the line shows %q in %v (%v needed), want it to end %q", w, shown, room, width(shown), rest)
			}
			if w == sizeLarge.Width && !strings.Contains(shown, "Sam's laptop") {
				t.Errorf("at the default width the line is %q, without the name", shown)
			}
		case !strings.HasPrefix(shown, "receiving from everyone nearby"):
			t.Errorf("window %v wide: the line shows %q in %v, want the name gone before its end is cut", w, shown, room)
		}
	}
	// A click shows it whole, at any width.
	u.win.Resize(fyne.NewSize(600, 640))
	at := fyne.CurrentApp().Driver().AbsolutePositionForObject(u.status)
	test.TapCanvas(u.win.Canvas(), at.Add(fyne.NewPos(10, 10)))
	top := u.win.Canvas().Overlays().Top()
	if top == nil {
		t.Fatal("a click on the status line showed nothing")
	}
	found := false
	for _, l := range labelsIn(top) {
		found = found || l.Text == whole
	}
	if !found {
		t.Errorf("the dialog does not show the whole line %q", whole)
	}
}
