package ui

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
)

// A file name too long for the prompt's row keeps its end, the extension
// with it: "Quarterly report for the north-east regional sal…" hid that the
// file offered was a .pdf.exe.
func TestPromptLongFileNameKeepsItsEnd(t *testing.T) {
	u, _, _ := newTestUI(t)
	const name = "Quarterly report for the north-east regional sales division, final revised version.pdf.exe"
	o := &Offer{Dest: "/home/u/Downloads", FreeBytes: 1 << 40, Total: 401_920, Files: []FileInfo{{Path: name, Size: 401_920}}}
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "p1", Direction: Incoming, State: StateWaiting, Peer: Peer{ID: idAlice, Name: "Alice"}, Offer: o})
	tr := u.prompts.queue[0].tree
	node := tr.tree.CreateNode(false)
	tr.update("f0", false, node)
	label := node.(*fyne.Container).Objects[0]
	// What the row draws: the text of the label as laid out.
	shownAt := func(width float32) string {
		node.Resize(fyne.NewSize(width, node.MinSize().Height))
		for _, o := range test.LaidOutObjects(label) {
			if txt, ok := o.(*canvas.Text); ok && strings.HasPrefix(txt.Text, "Quarterly") {
				return txt.Text
			}
		}
		return ""
	}

	shown := shownAt(420)
	if !strings.HasPrefix(shown, "Quarterly report") || !strings.Contains(shown, "…") || !strings.HasSuffix(shown, ".pdf.exe") {
		t.Errorf("a narrow row shows %q, want its start, … and its end", shown)
	}
	avail := label.Size().Width - 2*theme.InnerPadding()
	if w := fyne.MeasureText(shown, theme.TextSize(), fyne.TextStyle{}).Width; w > avail || utf8.RuneCountInString(shown) < 30 {
		t.Errorf("%q is %.0f wide in %.0f", shown, w, avail)
	}
	if shown := shownAt(2000); shown != name {
		t.Errorf("a wide row shows %q, want the whole name", shown)
	}
}

func TestMiddleOut(t *testing.T) {
	upTo := func(n int) func(string) bool {
		return func(s string) bool { return utf8.RuneCountInString(s) <= n }
	}
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"Quarterly report, final revised version.pdf.exe", 24, "Quarterly repor….pdf.exe"},
		{"IMG_20261205_091532_0001.jpeg", 16, "IMG_2026…01.jpeg"},
		{"a very long name without any extension at all", 13, "a very l… all"},
	} {
		got := middleOut(c.s, upTo(c.n))
		if got != c.want || utf8.RuneCountInString(got) > c.n {
			t.Errorf("middleOut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// A transfer row's title too long for the row keeps its end: which files,
// and how many more ("To Bob: Quarterly report for the north-east
// regional sales division, …" said neither).
func TestTransferTitleKeepsItsEnd(t *testing.T) {
	u, _, _ := newTestUI(t)
	o := &Offer{}
	for i := 1; i <= 60; i++ {
		o.Files = append(o.Files, FileInfo{Path: fmt.Sprintf("Quarterly report for the north-east regional sales division, appendix %02d.pdf", i), Size: 1000})
		o.Total += 1000
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "s1", Direction: Outgoing, State: StateWaiting, Peer: Peer{ID: idAlice, Name: "Bob"}, Offer: o})
	v := u.transfers.byID["s1"]
	v.title.Resize(fyne.NewSize(420, v.title.MinSize().Height))
	var shown string
	for _, o := range test.LaidOutObjects(v.title) {
		if txt, ok := o.(*canvas.Text); ok && strings.HasPrefix(txt.Text, "To Bob") {
			shown = txt.Text
		}
	}
	if !strings.HasPrefix(shown, "To Bob: Quarterly") || !strings.Contains(shown, "…") || !strings.HasSuffix(shown, "02.pdf and 58 more") {
		t.Errorf("the row's title shows %q, want its start, … and its end", shown)
	}
}
