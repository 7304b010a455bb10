package ui

import (
	"errors"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/internal/uitree"
)

// A setting that cannot be saved is said in words in the message, with
// the technical reasons behind Details, and what was typed stays in the
// form to be mended: the folder field went back to the old folder, and
// the reason was hidden behind Details ("Could not save the settings").
func TestSettingRefusedKeepsWhatWasTyped(t *testing.T) {
	u, be, _ := newTestUI(t)
	be.badDir = "/home/me/notes.txt"
	old := be.settings.DownloadDir
	v := u.settings
	v.dir.SetText(be.badDir)
	v.name.SetText("  Anna's laptop ")
	v.apply()
	if be.settings.DeviceName != "Anna's laptop" || be.settings.DownloadDir != old {
		t.Fatalf("saved %+v", be.settings)
	}
	if v.dir.Text != be.badDir || v.name.Text != "Anna's laptop" {
		t.Errorf("form: folder %q, name %q; want what was typed", v.dir.Text, v.name.Text)
	}
	if !strings.Contains(v.note.Text, "Not all saved") {
		t.Errorf("note %q", v.note.Text)
	}
	top := u.win.Canvas().Overlays().Top()
	if top == nil {
		t.Fatal("no message")
	}
	// The sentence shows; each technical reason is behind Details.
	var shown, hidden []string
	for _, l := range labelsIn(top) {
		if l.Visible() {
			shown = append(shown, l.Text)
		} else {
			hidden = append(hidden, l.Text)
		}
	}
	all := strings.Join(shown, "\n")
	if !strings.Contains(all, "cannot be used for received files: it is a file.") || strings.Contains(all, "engine's words") {
		t.Errorf("shown: %q", shown)
	}
	if h := strings.Join(hidden, "\n"); !strings.Contains(h, "engine's words") || !strings.Contains(h, "a technical failure") {
		t.Errorf("behind Details: %q", hidden)
	}
	// Saving again once mended saves it and says so.
	u.win.Canvas().Overlays().Remove(top)
	v.dir.SetText("/home/me/Downloads")
	v.apply()
	if be.settings.DownloadDir != "/home/me/Downloads" || !strings.HasPrefix(v.note.Text, "Saved at") {
		t.Errorf("after mending: %q, note %q", be.settings.DownloadDir, v.note.Text)
	}
}

// labelsIn lists the labels under o, hidden ones too.
func labelsIn(o fyne.CanvasObject) []*widget.Label {
	var out []*widget.Label
	uitree.Walk(o, func(x fyne.CanvasObject) {
		if l, ok := x.(*widget.Label); ok {
			out = append(out, l)
		}
	})
	return out
}

// A value its field refuses (shown in red beside it) stops the save with
// the field's words, and stays in the form: it was left out silently, the
// form saying "Saved at ..." and going back to the old value.
func TestInvalidFieldIsNotSavedNorLost(t *testing.T) {
	for _, c := range []struct {
		name  string
		set   func(v *settingsView)
		field func(v *settingsView) *widget.Entry
		typed string
		say   string
	}{
		{"LocalSend port", func(v *settingsView) { v.localSend.port.SetText("99999x") }, func(v *settingsView) *widget.Entry { return &v.localSend.port.Entry },
			"99999x", "Not saved: LocalSend port: a port is a number from 1 to 65535."},
		{"relay", func(v *settingsView) { v.anywhere.on.SetChecked(true); v.anywhere.relay.SetText("relay.example.org") }, func(v *settingsView) *widget.Entry { return &v.anywhere.relay.Entry },
			"relay.example.org", "Not saved: Relay: host:port of a Ferry relay (ferry-cli relay)."},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, be, _ := newTestUI(t)
			before := be.settings
			v := u.settings
			v.name.SetText("Anna's laptop")
			c.set(v)
			v.apply()
			if be.settings.DeviceName != before.DeviceName {
				t.Errorf("saved the name %q with an invalid field", be.settings.DeviceName)
			}
			if v.note.Text != c.say || v.note.Importance != widget.DangerImportance {
				t.Errorf("note %q (importance %v), want %q", v.note.Text, v.note.Importance, c.say)
			}
			if got := c.field(v).Text; got != c.typed || v.name.Text != "Anna's laptop" {
				t.Errorf("form: %q and name %q, want what was typed", got, v.name.Text)
			}
			// Mended, it saves.
			c.field(v).SetText("")
			v.apply()
			if be.settings.DeviceName != "Anna's laptop" || !strings.HasPrefix(v.note.Text, "Saved at") || v.note.Importance != widget.SuccessImportance {
				t.Errorf("after mending: name %q, note %q", be.settings.DeviceName, v.note.Text)
			}
		})
	}
}

// A field turned on or off by its check has its label drawn to match:
// "Relay" and "Relay secret" stayed grey, as if they could not be typed
// in, after "Reach my paired devices from anywhere" was checked, and the
// LocalSend labels stayed white over fields turned off.
func TestSettingsLabelsFollowTheirFields(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.win.SetContent(u.settings.obj)
	v := u.settings
	// The labels as drawn now (LaidOutObjects makes renderers anew: it is
	// called once, and the same labels are looked at after each change).
	labels := map[string]*canvas.Text{}
	for _, o := range test.LaidOutObjects(u.settings.obj) {
		if l, ok := o.(*canvas.Text); ok {
			labels[l.Text] = l
		}
	}
	on, off := theme.Color(theme.ColorNameForeground), theme.Color(theme.ColorNameDisabled)
	for _, c := range []struct {
		check  *check
		labels []string
	}{
		{v.anywhere.on, []string{"Relay", "Relay secret"}},
		{v.localSend.on, []string{"LocalSend PIN", "LocalSend port"}},
	} {
		for range 2 { // on then off, or off then on
			checked := !c.check.Checked
			c.check.SetChecked(checked)
			want := off
			if checked {
				want = on
			}
			for _, name := range c.labels {
				l := labels[name]
				if l == nil {
					t.Fatalf("no label %q", name)
				}
				if l.Color != want {
					t.Errorf("%q checked %v: label %q drawn %v, want %v", c.check.Text, checked, name, l.Color, want)
				}
			}
		}
	}
}

// A setting saved but not in use yet (a relay that does not answer) is
// titled as saved: the message said "Could not save the settings" over
// "The setting is kept", and the form "Not all saved".
func TestSettingKeptButNotInUseSaysSaved(t *testing.T) {
	u, be, _ := newTestUI(t)
	be.saveErr = &Problem{Text: "The relay 127.0.0.1:1 does not answer. The setting is kept, and Ferry tries again by itself.",
		Err: errors.New("dial: refused"), Kept: true}
	v := u.settings
	v.apply()
	if !strings.HasPrefix(v.note.Text, "Saved at ") || strings.Contains(v.note.Text, "Not all saved") {
		t.Errorf("note %q", v.note.Text)
	}
	if s := topDialogText(u); !strings.Contains(s, "Settings saved, but not all in use") || strings.Contains(s, "Could not save") {
		t.Errorf("message:\n%s", s)
	}
	press(u, fyne.KeyEscape)
	// The tray's Receiving saves too, and says the same.
	u.SetReceiving(false)
	if s := topDialogText(u); !strings.Contains(s, "Settings saved, but not all in use") {
		t.Errorf("message after Receiving off:\n%s", s)
	}
	press(u, fyne.KeyEscape)
	// A setting not saved is still said so.
	be.saveErr = errors.Join(be.saveErr, &Problem{Text: "The folder cannot be used."})
	v.apply()
	if s := topDialogText(u); !strings.Contains(s, "Could not save the settings") || !strings.Contains(v.note.Text, "Not all saved") {
		t.Errorf("a refused setting: note %q, message:\n%s", v.note.Text, s)
	}
}

// Settings say when the form holds changes not saved yet, and Save is in
// view at the window's default size: edits stayed in the form, unsaved,
// across tabs with nothing saying so, and Save was below the fold (seen
// in a UI audit). Save and Revert are enabled only while something
// changed, the note beside them says "Unsaved changes", and they stay
// below the page, which scrolls.
func TestSettingsSayWhatIsUnsavedWithSaveInView(t *testing.T) {
	u, be, _ := newTestUI(t)
	fyne.CurrentApp().Settings().SetTheme(Theme())
	u.win.Resize(sizeLarge)
	u.showPage(pageSettings)
	v := u.settings
	abs := fyne.CurrentApp().Driver().AbsolutePositionForObject
	if p, win := abs(v.save), u.win.Canvas().Size(); v.save.Size().Height == 0 || p.Y+v.save.Size().Height > win.Height || !inView(v.general, v.name) {
		t.Errorf("Save at %v (%v), below the window (%v) or out of the page", p, v.save.Size(), win)
	}
	revert := revertButton(t, v)
	state := func(want bool, note string) {
		t.Helper()
		if v.save.Disabled() == want || revert.Disabled() == want || v.note.Text != note {
			t.Errorf("Save enabled %v, Revert enabled %v, note %q; want %v and %q", !v.save.Disabled(), !revert.Disabled(), v.note.Text, want, note)
		}
	}
	state(false, "")
	v.name.SetText("Desk 2")
	state(true, "Unsaved changes")
	u.showPage(pageHistory)
	u.showPage(pageSettings)
	state(true, "Unsaved changes")
	v.name.SetText(be.settings.DeviceName) // typed back
	state(false, "")
	test.Tap(v.auto)
	state(true, "Unsaved changes")
	test.Tap(v.auto)
	state(false, "")
	test.Tap(v.policy.options[2])
	state(true, "Unsaved changes")
	test.Tap(v.save)
	if be.settings.Policy != PolicyOff || v.save.Disabled() != true || !strings.HasPrefix(v.note.Text, "Saved at") {
		t.Errorf("after Save: policy %q, Save enabled %v, note %q", be.settings.Policy, !v.save.Disabled(), v.note.Text)
	}
	v.name.SetText("Desk 3")
	test.Tap(revert)
	if v.name.Text != be.settings.DeviceName || !v.save.Disabled() || v.note.Text != "Showing the saved settings again." {
		t.Errorf("after Revert: name %q, Save enabled %v, note %q", v.name.Text, !v.save.Disabled(), v.note.Text)
	}
}

// Receiving switched from the tray saves the settings and shows them in
// the form, keeping what the user changed there and had not saved: the
// name typed and the box ticked stay as they were, still unsaved, and
// "Who may send" shows what the switch saved (it changed that setting).
// The edits were lost without a word (seen in a UI audit).
func TestReceivingSwitchedFromTheTrayKeepsUnsavedEdits(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.showPage(pageSettings)
	v := u.settings
	name, auto := be.settings.DeviceName, be.settings.AutoAcceptTrusted
	v.name.SetText("Desk 2")
	test.Tap(v.auto)
	test.Tap(v.policy.options[1]) // unsaved too; the switch decides it
	u.SetReceiving(false)
	if be.settings.Policy != PolicyOff || be.settings.DeviceName != name || be.settings.AutoAcceptTrusted != auto {
		t.Fatalf("saved %+v: want receiving off and nothing else changed", be.settings)
	}
	check := func(policy Policy) {
		t.Helper()
		if v.name.Text != "Desk 2" || v.auto.Checked == auto || v.policy.Selected != policyLabel(policy) {
			t.Errorf("the form shows name %q, auto-accept %v, %q; want %q, %v, %q",
				v.name.Text, v.auto.Checked, v.policy.Selected, "Desk 2", !auto, policyLabel(policy))
		}
		if v.save.Disabled() || v.note.Text != unsavedNote {
			t.Errorf("Save enabled %v, note %q: the edits not saved are not said", !v.save.Disabled(), v.note.Text)
		}
	}
	check(PolicyOff)
	u.SetReceiving(true)
	check(be.settings.Policy)
	if be.settings.Policy == PolicyOff {
		t.Errorf("receiving still off after it was switched on")
	}
	test.Tap(v.save)
	if be.settings.DeviceName != "Desk 2" || be.settings.AutoAcceptTrusted == auto {
		t.Errorf("after Save: %+v", be.settings)
	}
}
