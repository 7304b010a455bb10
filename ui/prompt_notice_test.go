package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
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
	walk(v.obj, func(x fyne.CanvasObject) {
		if b, ok := x.(*button); ok && b.Text == "Revert" {
			found = b
		}
	})
	if found == nil {
		t.Fatal("no Revert button")
	}
	return found
}
