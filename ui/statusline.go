package ui

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// statusLine is the line under the tabs that says how this device
// stands: its name, who may send, its short ID and its address. Where the
// window is too narrow for all of it, the least useful part goes first:
// the words "This device:", then the name (the window's title and
// Settings say it whole) down to minName characters, and only then the
// line's end; the window's default width cut the port off. A click on it
// shows it whole, with the
// address's QR code (showSelf, as My address does).
type statusLine struct {
	widget.Label
	name  string   // this device's name, as the line shows it
	rest  []string // what follows the name: who may send, the ID, the address
	full  string   // the whole line
	onTap func()
}

func newStatusLine(onTap func()) *statusLine {
	s := &statusLine{onTap: onTap}
	s.Truncation = fyne.TextTruncateEllipsis
	s.ExtendBaseWidget(s)
	return s
}

// set shows the line for name and what follows it.
func (s *statusLine) set(name string, rest []string) {
	s.name, s.rest = name, rest
	s.full = s.join("This device: " + name)
	s.fit(s.Size().Width)
}

// join is the line with head first ("": none).
func (s *statusLine) join(head string) string {
	if head == "" {
		return strings.Join(s.rest, " · ")
	}
	return strings.Join(append([]string{head}, s.rest...), " · ")
}

// minName is the fewest characters of the name the line shows, "…"
// counted, before its end is cut (a shorter name is shown whole): the
// name cut to "Sam…" or "Fer…" said nothing of which device this is.
const minName = 12

// fitted is the longest form of the line that fits in width w (0: not laid
// out yet); the label's ellipsis cuts the end of one that does not, which
// keeps minName characters of the name.
func (s *statusLine) fitted(w float32) string {
	fits := func(t string) bool {
		return w <= 0 || fyne.MeasureText(t, theme.TextSize(), s.TextStyle).Width+2*theme.InnerPadding() <= w
	}
	if fits(s.full) {
		return s.full
	}
	t := s.join(s.name)
	if r := []rune(s.name); len(r) > minName {
		for n := len(r) - 1; !fits(t) && n >= minName-1; n-- {
			t = s.join(strings.TrimRight(string(r[:n]), " ") + "…")
		}
	}
	return t
}

func (s *statusLine) fit(w float32) {
	if t := s.fitted(w); t != s.Text {
		s.SetText(t)
	}
}

// Resize fits the line to its new width.
func (s *statusLine) Resize(size fyne.Size) {
	s.fit(size.Width)
	s.Label.Resize(size)
}

// Tapped shows the line whole.
func (s *statusLine) Tapped(*fyne.PointEvent) {
	if s.onTap != nil {
		s.onTap()
	}
}

// Cursor says the line can be clicked.
func (s *statusLine) Cursor() desktop.Cursor { return desktop.PointerCursor }
