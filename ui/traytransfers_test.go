package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
)

// With the window closed, the tray menu showed no transfer under way:
// its "Recent transfers" lists History only. It lists those under way
// (at most trayUnderWay, then how many more), each in a few words with
// its progress, refreshed by Run's tick at most every trayEvery and only
// when a line changed; choosing one opens the window on its row.
func TestTrayListsTransfersUnderWay(t *testing.T) {
	u, _, c := newTestUI(t)
	refreshed := 0
	u.OnTrayChanged = func(*fyne.Menu) { refreshed++ }
	shown := false
	u.OnShow = func() { shown = true }
	labels := func() string { return strings.Join(menuLabels(u.Tray()), "|") }
	before := labels()

	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "in", Direction: Incoming, State: StateWaiting, Peer: Peer{ID: idAlice, Name: "Alice"},
		Offer: &Offer{Files: []FileInfo{{Path: "photos/a.jpg", Size: 1000}, {Path: "photos/b.jpg", Size: 1000}, {Path: "photos/c.jpg", Size: 2000}}, Folders: []FolderInfo{{Path: "photos", Files: 3, Bytes: 4000}}, Total: 4000}})
	u.prompts.remove("in")
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "in", Direction: Incoming, State: StateActive})
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "out", Direction: Outgoing, State: StateWaiting, Peer: Peer{ID: idBob, Name: "Bob"},
		Offer: &Offer{Files: []FileInfo{{Path: "report.pdf", Size: 1000}}, Total: 1000}})
	for i := range 20 { // progress at Run's rate; ticks every 250 ms for 5 s
		u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "in", Direction: Incoming, State: StateActive,
			Progress: &Progress{Bytes: int64(i+1) * 100, Total: 4000, TotalFiles: 3}})
		c.t = c.t.Add(250 * time.Millisecond)
		u.tickTray(c.t)
	}
	c.t = c.t.Add(time.Second)
	u.tickTray(c.t) // the last progress, in the next refresh
	want := strings.Replace(before, "Receiving||", "Receiving||To Bob: report.pdf · waiting for the answer|From Alice: photos (3 files) · 50%||", 1)
	if got := labels(); got != want {
		t.Fatalf("tray menu\n%q, want\n%q", got, want)
	}
	if refreshed < 2 || refreshed > 6 {
		t.Errorf("the tray was refreshed %d times in 5 s of progress, want about one a second", refreshed)
	}
	// A tick with nothing new refreshes nothing.
	n := refreshed
	c.t = c.t.Add(time.Hour)
	u.tickTray(c.t)
	if refreshed != n {
		t.Errorf("refreshed with the same lines")
	}

	// Choosing it opens the window on its row.
	u.tabs.SelectIndex(1)
	u.Tray().Items[4].Action()
	if !shown || u.tabs.SelectedIndex() != 0 {
		t.Errorf("choosing the transfer: window shown %v, tab %d", shown, u.tabs.SelectedIndex())
	}

	// Many at once: the first few, then how many more.
	for i := range 5 {
		u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: fmt.Sprintf("m%d", i), Direction: Outgoing, State: StateActive, Peer: Peer{Name: "Carol"}})
	}
	c.t = c.t.Add(time.Second)
	u.tickTray(c.t)
	if got := labels(); strings.Count(got, "To Carol") != trayUnderWay || !strings.Contains(got, "|4 more under way|") {
		t.Errorf("seven under way: %q", got)
	}

	// Ended, they leave it.
	for _, id := range []string{"in", "out", "m0", "m1", "m2", "m3", "m4"} {
		dir := Outgoing
		if id == "in" {
			dir = Incoming
		}
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Direction: dir, Result: &Result{State: StateCancelled, Code: CodeCancelled}})
	}
	if got := labels(); got != before {
		t.Errorf("after they ended: %q, want %q", got, before)
	}
}
