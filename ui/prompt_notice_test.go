package ui

import (
	"fmt"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"

	"github.com/ferrydrop/ferry/internal/uitree"
)

// Issue 26, finding 6: an "Incoming files" notification is taken down once
// the offer is answered in the window (or withdrawn by its sender).
func TestAnsweredOfferClosesItsNotification(t *testing.T) {
	u, _, _ := newTestUI(t)
	shown := map[string]string{}
	var closed []string
	u.opt.NotifyTagged = func(tag, title, _ string, _ []NoticeAction) { shown[tag] = title }
	u.opt.CloseNotice = func(tag string) { closed = append(closed, tag) }
	u.ApplyTransfer(offerEvent("r1", 2))
	u.ApplyTransfer(offerEvent("r2", 1))
	if shown["r1"] != "Incoming files" || shown["r2"] != "Incoming files" {
		t.Fatalf("tagged notifications: %v", shown)
	}
	u.prompts.answer(u.prompts.queue[0], Decision{Accept: true})
	if len(closed) != 1 || closed[0] != "r1" {
		t.Fatalf("after answering r1: closed %v", closed)
	}
	// The sender withdraws r2.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r2", Direction: Incoming, Result: &Result{State: StateCancelled, ByPeer: true}})
	if len(closed) != 2 || closed[1] != "r2" {
		t.Fatalf("after the sender withdrew r2: closed %v", closed)
	}
}

// Issue 26, finding 11: Save and Revert in Settings say that they worked.
func TestSettingsSaveAndRevertSaySo(t *testing.T) {
	u, be, _ := newTestUI(t)
	v := u.settings
	v.name.SetText("Desk")
	v.save.OnTapped()
	if be.Settings().DeviceName != "Desk" || !strings.HasPrefix(v.note.Text, "Saved at ") {
		t.Fatalf("after Save: name %q, note %q", be.Settings().DeviceName, v.note.Text)
	}
	v.name.SetText("Something else")
	revertButton(t, v).OnTapped()
	if v.name.Text != "Desk" || v.note.Text != "Showing the saved settings again." {
		t.Fatalf("after Revert: name %q, note %q", v.name.Text, v.note.Text)
	}
}

func revertButton(t *testing.T, v *settingsView) *button {
	t.Helper()
	var found *button
	uitree.Walk(v.obj, func(x fyne.CanvasObject) {
		if b, ok := x.(*button); ok && b.Text == "Revert" {
			found = b
		}
	})
	if found == nil {
		t.Fatal("no Revert button")
	}
	return found
}

// Issue 26, finding 11: at its smallest the window shows a whole device
// row, not a sliver of one.
func TestSmallestWindowShowsAWholeDeviceRow(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: bob(true)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idAlice, Name: "Alice", Online: true, Source: "mdns"}})
	u.win.Content().Resize(u.win.Content().MinSize()) // the smallest the window can be
	row := u.devices.rows[0].obj
	if got, want := u.devices.scroll.Size().Height, row.MinSize().Height; got < want {
		t.Fatalf("smallest window: the device list is %.0f high, a row %.0f", got, want)
	}
}

// Issue 26, finding 11: opening a folder in the prompt makes the tree
// taller (up to maxTreeRows rows), not a one-row scroller.
func TestOpenedFolderGrowsTheOfferTree(t *testing.T) {
	test.NewTempApp(t)
	o := &Offer{Count: 20, Folders: []FolderInfo{{Path: "Photos", Files: 20, Bytes: 20}}}
	for i := range 20 {
		o.Files = append(o.Files, FileInfo{Path: fmt.Sprintf("Photos/%02d.jpg", i), Size: 1})
	}
	v := offerTree(o)
	resized := 0
	v.OnResize = func() { resized++ }
	if got := v.obj.MinSize().Height; got > 1.5*v.rowH {
		t.Fatalf("closed folder: tree %.0f high, want one row (%.0f)", got, v.rowH)
	}
	v.tree.OpenBranch("d0")
	if got, want := v.obj.MinSize().Height, maxTreeRows*v.rowH; got < want-1 || resized != 1 {
		t.Fatalf("open folder: tree %.0f high (want %.0f), resized %d", got, want, resized)
	}
	v.tree.CloseBranch("d0")
	if got := v.obj.MinSize().Height; got > 1.5*v.rowH {
		t.Fatalf("closed again: tree %.0f high", got)
	}
}

// An offered text wraps between words in its prompt: every line of it
// is whole words, where it broke words at the box's edge ("… on and on t"
// / "o see …", seen under Xvfb). A link wider than the box still wraps.
func TestOfferedTextWrapsBetweenWords(t *testing.T) {
	_ = test.NewTempApp(t)
	text := "https://example.org/a?b=1 and a long message that goes on and on to see how the prompt wraps it across lines"
	link := "https://example.org/" + strings.Repeat("x", 200)
	for _, width := range []float32{200, 300, 413, 440, 600} {
		for _, in := range []string{text, link} {
			box := textBox(in)
			w := test.NewTempWindow(t, box)
			w.Resize(fyne.NewSize(width, 400))
			box.Resize(fyne.NewSize(width, 400))
			var lines []string
			uitree.Walk(box, func(o fyne.CanvasObject) {
				if x, ok := o.(*canvas.Text); ok && x.Text != "" {
					lines = append(lines, x.Text)
				}
			})
			if strings.ReplaceAll(strings.Join(lines, ""), " ", "") != strings.ReplaceAll(in, " ", "") {
				t.Fatalf("width %v: lines %q are not the text", width, lines)
			}
			if in == link {
				if len(lines) < 2 {
					t.Errorf("width %v: a link wider than the box is on %d line", width, len(lines))
				}
				continue
			}
			words := map[string]bool{}
			for _, w := range strings.Fields(in) {
				words[w] = true
			}
			for _, l := range lines {
				for _, w := range strings.Fields(l) {
					if !words[w] {
						t.Errorf("width %v: %q is not a word of the text (lines %q)", width, w, lines)
					}
				}
			}
		}
	}
}
