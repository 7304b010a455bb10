package ui

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// A History row's Details button is in the same place on every row, at
// its right end: it came first among the row's buttons, which differ from
// row to row (Copy for a text, Open and Show in folder for a received
// file, none for a failed send), so it moved column from row to row (seen
// in a UI audit).
func TestHistoryDetailsButtonStaysInPlace(t *testing.T) {
	u, _, c := newTestUI(t)
	entries := []HistoryEntry{
		{ID: "file", Direction: Incoming, PeerName: "Alice", Files: 1, State: StateDone, Names: []string{"a.pdf"}, Items: 1,
			Paths: []string{"/home/sam/Downloads/a.pdf"}, Finished: c.t},
		{ID: "text", Direction: Incoming, PeerName: "Bob", State: StateDone, Text: "hello", Finished: c.t},
		{ID: "failed", Direction: Outgoing, PeerName: "Carol", Files: 1, State: StateFailed, Code: CodeNoSpace, Finished: c.t},
		{ID: "sent", Direction: Outgoing, PeerName: "Dave", Files: 2, State: StateDone, Paths: []string{"/home/sam/x", "/home/sam/y"}, Finished: c.t},
	}
	const width = 800
	var want float32 = -1
	for _, e := range entries {
		row := u.history.list.CreateItem().(*fyne.Container)
		u.history.fill(e, row)
		row.Resize(fyne.NewSize(width, row.MinSize().Height))
		b, x := historyDetails(row, 0)
		if b == nil {
			t.Fatalf("%s: no Details button in the row", e.ID)
		}
		if right := x + b.Size().Width; right < width-1 {
			t.Errorf("%s: Details ends at %v, not at the row's right end (%v)", e.ID, right, float32(width))
		}
		if want < 0 {
			want = x
		} else if x != want {
			t.Errorf("%s: Details at x=%v, on the first row at %v", e.ID, x, want)
		}
	}
}

// historyDetails finds the Details button (the info icon, no text) in a
// History row and its x within the row.
func historyDetails(o fyne.CanvasObject, x float32) (*button, float32) {
	if b, ok := o.(*button); ok && b.Text == "" && b.Icon == theme.InfoIcon() && b.Visible() {
		return b, x + b.Position().X
	}
	if c, ok := o.(*fyne.Container); ok && c.Visible() {
		for _, in := range c.Objects {
			if b, bx := historyDetails(in, x+c.Position().X); b != nil {
				return b, bx
			}
		}
	}
	return nil, 0
}
