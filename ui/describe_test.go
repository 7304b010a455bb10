package ui

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// TestDescribeSaysWhatTheWindowShows: the GUI end-to-end tests read the
// rows' words and click the places Describe gives; a tap at the place it
// gives for Pause pauses that transfer.
func TestDescribeSaysWhatTheWindowShows(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	id := "x1"
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StateWaiting, Peer: Peer{ID: idAlice, Name: "Alice"}})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: id, Direction: Outgoing, State: StateActive,
		Progress: &Progress{Bytes: 25_000_000, Total: 100_000_000, Files: 1, TotalFiles: 1}})
	c := u.win.Canvas()
	c.Content().Refresh()
	d := u.Describe()
	if d.Tab != "Nearby" || len(d.Devices) != 1 || d.Devices[0].Title != "Alice's laptop" || !contains(d.Devices[0].Sub, "new") {
		t.Fatalf("described %+v", d)
	}
	if _, ok := d.Devices[0].Buttons["Send…"]; !ok {
		t.Errorf("the device row's buttons %v lack Send…", d.Devices[0].Buttons)
	}
	if len(d.Transfers) != 1 {
		t.Fatalf("transfers %+v", d.Transfers)
	}
	r := d.Transfers[0]
	if r.Title != "To Alice" || r.State != "Sending 1 file" || r.Bar != 0.25 || !contains(r.Sub, "25.0 MB of 100.0 MB") {
		t.Errorf("row %+v", r)
	}
	at, ok := r.Buttons["Pause"]
	if !ok || r.Buttons["Cancel"] == [2]int{} || len(r.Buttons) != 3 { // Details, Pause, Cancel
		t.Fatalf("row's buttons %v, want Details, Pause and Cancel", r.Buttons)
	}
	if at[0] > d.Size[0] || at[1] > d.Size[1] {
		t.Fatalf("Pause at %v, outside the window %v", at, d.Size)
	}
	test.TapCanvas(c, fyne.NewPos(float32(at[0])/d.Scale, float32(at[1])/d.Scale))
	if len(be.pauses) != 1 || be.pauses[0] != id {
		t.Errorf("a tap where Describe says Pause is: pauses %v", be.pauses)
	}
	if d = u.Describe(); d.Transfers[0].State != "Paused by you" {
		t.Errorf("after the tap the row says %q", d.Transfers[0].State)
	}
}
