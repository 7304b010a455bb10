package ui

import (
	"strings"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// nameLabel is a one-line label for a file name that, too long for its
// width, leaves out the middle of the name rather than its end: the end
// holds the extension and what tells similar names apart. A prompt showed
// "Quarterly report for the north-east regional sal…" for a file named
// "… final revised version.pdf.exe".
type nameLabel struct {
	widget.Label
	full  string  // the text to show, whole
	width float32 // the width full was fitted to
}

func newNameLabel() *nameLabel {
	l := &nameLabel{}
	// Fitted here, so the label never has to cut anything itself; its
	// minimum width stays that of a letter, as with an ellipsis.
	l.Truncation = fyne.TextTruncateClip
	l.ExtendBaseWidget(l)
	return l
}

// SetFull sets the text, shortened in the middle to the label's width.
func (l *nameLabel) SetFull(s string) {
	l.full = s
	l.fit()
}

// Resize fits the text to the new width.
func (l *nameLabel) Resize(size fyne.Size) {
	l.Label.Resize(size)
	if size.Width != l.width {
		l.fit()
	}
}

// fit shows as much of full as the width takes, the middle left out.
func (l *nameLabel) fit() {
	l.width = l.Size().Width
	th := l.Theme()
	avail := l.width - 2*th.Size(theme.SizeNameInnerPadding)
	textSize := th.Size(theme.SizeNameText)
	fits := func(s string) bool { return fyne.MeasureText(s, textSize, l.TextStyle).Width <= avail }
	text := l.full
	if l.width > 0 && !fits(text) {
		text = middleOut(l.full, fits)
	}
	if text != l.Text {
		l.Label.SetText(text)
	}
}

// middleOut is the longest shortening of s that fits: its start, "…" and
// its end, the end at least a third of what is kept and, where room
// allows, the whole extension and a few letters before it.
func middleOut(s string, fits func(string) bool) string {
	r := []rune(s)
	ext := 0
	if i := strings.LastIndexByte(s, '.'); i > 0 && utf8.RuneCountInString(s[i:]) <= 12 {
		ext = utf8.RuneCountInString(s[i:])
	}
	cut := func(n int) string { // n runes of s kept
		tail := max(n/3, min(ext+4, n/2))
		return string(r[:n-tail]) + "…" + string(r[len(r)-tail:])
	}
	lo, hi := 0, len(r)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(cut(mid)) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return cut(lo)
}
