package ui

import (
	"slices"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"github.com/ferrydrop/ferry/internal/uitree"
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

// Show in folder of several received files shows the item in the
// destination that holds them, selected (a folder received shows in
// Downloads, not its first file's folder deep inside it: "The folder
// …/Downloads/D/go-1 is no longer there" was seen for a folder D); of one
// file, that file. In the transfer row and in History alike.
func TestShowInFolderSelectsTheReceivedFolder(t *testing.T) {
	u, be, c := newTestUI(t)
	u.ApplyTransfer(offerEvent("r1", 2))
	test.Tap(u.prompts.queue[0].accept)
	for _, p := range []string{"D/go-1/src/a.go", "D/go-2/b.go"} {
		u.ApplyTransfer(TransferEvent{Kind: TransferFile, ID: "r1", Direction: Incoming, State: StateActive,
			File: &FileResult{Path: p, Size: 10, Verified: true}})
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r1", Direction: Incoming, Peer: Peer{Name: "Alice"},
		Result: &Result{State: StateDone, Files: 2, Verified: 2, Bytes: 20, Destination: "/home/u/Downloads"}})
	test.Tap(u.transfers.byID["r1"].show)

	for _, e := range []HistoryEntry{
		{ID: "tree", Direction: Incoming, PeerName: "Alice", Files: 105_252, State: StateDone, Destination: "/home/u/Downloads",
			Paths: []string{"/home/u/Downloads/D/go-1/src/a.go"}, Finished: c.t},
		{ID: "one", Direction: Incoming, PeerName: "Alice", Files: 1, State: StateDone, Destination: "/home/u/Downloads",
			Paths: []string{"/home/u/Downloads/Photos/a.jpg"}, Finished: c.t},
		{ID: "sent", Direction: Outgoing, PeerName: "Bob", Files: 3, State: StateDone, Paths: []string{"/home/u/T/x/y.txt"}, Finished: c.t},
	} {
		row := u.history.list.CreateItem().(*fyne.Container)
		u.history.fill(e, row)
		var show *button
		uitree.Walk(row, func(o fyne.CanvasObject) {
			if b, ok := o.(*button); ok && b.Text == "Show in folder" {
				show = b
			}
		})
		if show == nil {
			t.Fatalf("%s: no Show in folder", e.ID)
		}
		test.Tap(show)
	}
	want := []string{"/home/u/Downloads/D", "/home/u/Downloads/D", "/home/u/Downloads/Photos/a.jpg", "/home/u/T/x/y.txt"}
	if !slices.Equal(be.shown, want) {
		t.Errorf("shown %q, want %q", be.shown, want)
	}

	for _, tc := range []struct{ dest, p, want string }{
		{"/home/u/Downloads", "/home/u/Downloads/D/go-1/a.go", "/home/u/Downloads/D"},
		{"/home/u/Downloads", "/home/u/Downloads/a.jpg", "/home/u/Downloads/a.jpg"},
		{"/home/u/Downloads/", "/home/u/Downloads/D/x", "/home/u/Downloads/D"},
		{"/home/u/Downloads", "/elsewhere/D/x", "/elsewhere/D/x"},
		{"/home/u/Downloads", "/home/u/Downloads2/D/x", "/home/u/Downloads2/D/x"},
		{"", "/home/u/Downloads/D/x", "/home/u/Downloads/D/x"},
		{"/home/u/Downloads", "/home/u/Downloads", "/home/u/Downloads"},
	} {
		if got := topItem(tc.dest, tc.p); got != tc.want {
			t.Errorf("topItem(%q, %q) = %q, want %q", tc.dest, tc.p, got, tc.want)
		}
	}
}
