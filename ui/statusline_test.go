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
// The name keeps minName characters ("…" counted) or all of a shorter one
// before the end is cut: it went down to "S…" (a window 840 px wide) and
// then out of the line (820 px and narrower), which then said nothing of
// which device it was.
func TestStatusLineCutsTheNameFirstAndShowsAllOnAClick(t *testing.T) {
	u, be, c := newTestUI(t)
	fyne.CurrentApp().Settings().SetTheme(Theme())
	goldenState(u, be, c)
	const whole = "This device: Sam's laptop · receiving from everyone nearby · SAML-PTP7 · 192.168.1.20 · port 47800"
	const rest = "receiving from everyone nearby · SAML-PTP7 · 192.168.1.20 · port 47800"
	width := func(s string) float32 {
		return fyne.MeasureText(s, theme.TextSize(), fyne.TextStyle{}).Width + 2*theme.InnerPadding()
	}
	for _, name := range []string{"Sam's laptop", "Sam's laptop in the study"} {
		be.settings.DeviceName = name
		u.updateStatus()
		floor := name // the least of the name the line shows
		if r := []rune(name); len(r) > minName {
			floor = string(r[:minName-1]) + "…"
		}
		for w := float32(600); w <= 1400; w += 20 {
			u.win.Resize(fyne.NewSize(w, 640))
			room, shown := u.status.Size().Width, u.status.Text
			head, _, _ := strings.Cut(shown, " · ")
			switch {
			case width(u.status.full) <= room:
				if shown != u.status.full {
					t.Errorf("window %v wide: the line shows %q in %v, want it whole", w, shown, room)
				}
			case width(floor+" · "+rest) <= room:
				// All but some of the name fits: the line is whole but
				// for the name, which keeps at least floor.
				if width(shown) > room || !strings.HasSuffix(shown, rest) || !strings.HasPrefix(name, strings.TrimSuffix(head, "…")) || len([]rune(head)) < len([]rune(floor)) {
					t.Errorf("window %v wide: the line shows %q in %v (%v needed), want it to end %q after at least %q", w, shown, room, width(shown), rest, floor)
				}
				if w == sizeLarge.Width && name == "Sam's laptop" && head != name {
					t.Errorf("at the default width the line is %q, without the whole name", shown)
				}
			case shown != floor+" · "+rest:
				t.Errorf("window %v wide: the line shows %q in %v, want %q, its end cut", w, shown, room, floor+" · "+rest)
			}
		}
	}
	be.settings.DeviceName = "Sam's laptop"
	u.updateStatus()
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
