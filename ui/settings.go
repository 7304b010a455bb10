package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/internal/version"
)

var policyLabels = []string{
	"Everyone nearby (ask me)",
	"Only trusted devices",
	"Nobody: receiving off",
}

var policies = []Policy{PolicyEveryone, PolicyTrusted, PolicyOff}

func policyLabel(p Policy) string {
	for i, q := range policies {
		if q == p {
			return policyLabels[i]
		}
	}
	return policyLabels[0]
}

func labelPolicy(l string) Policy {
	for i, q := range policyLabels {
		if q == l {
			return policies[i]
		}
	}
	return PolicyEveryone
}

// settingsView is the Settings tab: a form over Backend.Settings.
type settingsView struct {
	u         *UI
	name      *entry
	dir       *entry
	policy    *radio
	auto      *check
	login     *check
	minimized *check
	localSend *localSendSettings
	anywhere  *anywhereSettings
	save      *button
	revert    *button
	browse    *button
	// note says that Save or Revert did what it says (issue 26, finding 11),
	// or that the form holds changes not saved yet (unsavedNote).
	note *widget.Label
	// loaded is the form's values as last loaded from the saved settings
	// (values); loading: load is filling the form.
	loaded  []string
	loading bool
	tabs    *container.AppTabs // General, Devices
	// general is the General page, which scrolls.
	general *container.Scroll
	obj     fyne.CanvasObject
}

func newSettingsView(u *UI) *settingsView {
	v := &settingsView{u: u}
	// Ferry's entries and checks: Tab to one scrolls it into view (reveal).
	v.name = u.newEntry()
	v.name.SetPlaceHolder("How other devices see this one")
	v.dir = u.newEntry()
	v.browse = u.newButton("Choose…", theme.FolderOpenIcon(), func() {
		u.pick(PickRequest{Title: "Save received files to", Folders: true}, func(paths []string) { v.dir.SetText(paths[0]) })
	})
	v.policy = u.newRadio(policyLabels)
	v.auto = u.newCheck("Accept files from trusted devices without asking", nil)
	v.login = u.newCheck("Start Ferry when I log in", nil)
	v.minimized = u.newCheck("Start minimised to the tray", nil)
	v.save = u.newButton("Save", theme.DocumentSaveIcon(), v.apply)
	v.save.Importance = widget.HighImportance
	v.revert = u.newButton("Revert", nil, func() {
		v.load()
		v.say("Showing the saved settings again.", widget.MediumImportance)
	})
	v.note = widget.NewLabel("")
	v.note.Importance = widget.SuccessImportance
	v.note.Alignment = fyne.TextAlignTrailing
	v.note.Wrapping = fyne.TextWrapWord

	id := widget.NewLabel(GroupID(u.self.ID))
	id.Wrapping = fyne.TextWrapBreak
	v.localSend = newLocalSendSettings(u)
	form := widget.NewForm(
		widget.NewFormItem("Device name", v.name),
		widget.NewFormItem("Device ID", id),
		widget.NewFormItem("Save files to", container.NewBorder(nil, nil, nil, v.browse, v.dir)),
		widget.NewFormItem("Who may send", v.policy),
		widget.NewFormItem("", v.auto),
		widget.NewFormItem("", v.login),
		widget.NewFormItem("", v.minimized),
	)
	for _, it := range v.localSend.items() {
		form.AppendItem(it)
	}
	v.anywhere = newAnywhereSettings(u)
	for _, it := range v.anywhere.items() {
		form.AppendItem(it)
	}
	// The form greys the label of a disabled field only when it is
	// refreshed: "Relay" stayed grey over a field that took typing once
	// "Reach my paired devices from anywhere" was checked (and "LocalSend
	// PIN" white over a disabled one once LocalSend was turned off).
	for _, c := range []*widget.Check{&v.localSend.on.Check, &v.anywhere.on.Check} {
		changed := c.OnChanged
		c.OnChanged = func(on bool) {
			changed(on)
			form.Refresh()
			v.edited()
		}
	}
	for _, c := range []*check{v.auto, v.login, v.minimized} {
		c.OnChanged = func(bool) { v.edited() }
	}
	v.policy.OnChanged = func(string) { v.edited() }
	for _, it := range []*widget.FormItem{
		widget.NewFormItem("Ferry version", widget.NewLabel(version.Get().Short())),
		widget.NewFormItem("Licence", u.licenceLine()),
	} {
		form.AppendItem(it)
	}
	u.partials = newPartialsView(u)
	u.known = newKnownView(u)
	v.general = container.NewVScroll(container.NewPadded(container.NewVBox(form, widget.NewSeparator(), u.partials.obj)))
	// Save and Revert stay in view below the page, which scrolls: Save
	// was below the fold at the window's default size.
	bar := container.NewBorder(widget.NewSeparator(), nil, nil, container.NewHBox(v.revert, v.save), v.note)
	v.tabs = container.NewAppTabs(
		// The wheel over a text field scrolls the page too (its only
		// scrollers inside are single-line fields).
		container.NewTabItem("General", container.NewBorder(nil, container.NewPadded(bar), nil, nil, withPageWheel(v.general))),
		container.NewTabItem("Devices", u.known.obj),
	)
	v.tabs.OnSelected = func(t *container.TabItem) {
		if t.Content == u.known.obj {
			u.known.reload()
		}
	}
	// Enter in a text field saves, as Enter presses a dialog's default
	// button (it did nothing: only a click on Save saved).
	for _, e := range []*widget.Entry{&v.name.Entry, &v.dir.Entry, &v.localSend.pin.Entry, &v.localSend.port.Entry, &v.anywhere.relay.Entry, &v.anywhere.secret.Entry} {
		e.OnSubmitted = func(string) { v.apply() }
		e.OnChanged = func(string) { v.edited() }
	}
	v.obj = v.tabs
	v.load()
	return v
}

// load shows the saved settings.
func (v *settingsView) load() {
	v.loading = true
	v.show(v.u.be.Settings())
	v.loading = false
	v.loaded = v.values()
	v.edited()
	v.localSend.showStatus(v.u.be)
}

// unsavedNote is what the note says while the form differs from the
// saved settings.
const unsavedNote = "Unsaved changes"

// formField is one field of the form, read and set as text.
type formField struct {
	get func() string
	set func(string)
}

// fields are the form's fields, in the order values lists them.
func (v *settingsView) fields() []formField {
	text := func(e *entry) formField { return formField{func() string { return e.Text }, e.SetText} }
	check := func(c *check, changed bool) formField {
		return formField{func() string { return strconv.FormatBool(c.Checked) }, func(s string) {
			on := s == "true"
			c.SetChecked(on)
			if changed {
				c.OnChanged(on) // what it enables follows, as load has it
			}
		}}
	}
	return []formField{text(v.name), text(v.dir),
		{func() string { return v.policy.Selected }, v.policy.SetSelected},
		check(v.auto, false), check(v.login, false), check(v.minimized, false),
		check(v.localSend.on, true), text(v.localSend.pin), text(v.localSend.port),
		check(v.anywhere.on, true), text(v.anywhere.relay), text(v.anywhere.secret)}
}

// values is what the form's fields show, to tell whether it changed since
// it was loaded.
func (v *settingsView) values() []string {
	fields := v.fields()
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.get()
	}
	return out
}

// keepEdits runs save, which saves settings changed elsewhere than in the
// form (receiving switched from the tray) and loads them into the form,
// and then puts back each change the user made in the form and had not
// saved, unless save changed that setting itself: such edits were lost
// without a word (seen in a UI audit).
func (v *settingsView) keepEdits(save func()) {
	typed, loaded := v.values(), v.loaded
	save()
	if loaded == nil {
		return
	}
	fields := v.fields()
	for i := range typed {
		if typed[i] != loaded[i] && v.loaded[i] == loaded[i] {
			fields[i].set(typed[i])
		}
	}
	v.edited()
}

// edited says whether the form holds changes not saved yet: Save and
// Revert are enabled only then, and the note says so (unless it says why
// the last Save failed). Edits used to stay in the form, unsaved, across
// tabs with nothing saying so.
func (v *settingsView) edited() {
	if v.loading || v.loaded == nil {
		return
	}
	if slices.Equal(v.values(), v.loaded) {
		v.save.Disable()
		v.revert.Disable()
		if v.note.Text == unsavedNote {
			v.say("", widget.MediumImportance)
		}
		return
	}
	v.save.Enable()
	v.revert.Enable()
	if v.note.Importance != widget.DangerImportance || v.note.Text == "" {
		v.say(unsavedNote, widget.WarningImportance)
	}
}

// say puts text beside Save, coloured as imp (saved, refused).
func (v *settingsView) say(text string, imp widget.Importance) {
	v.note.Importance = imp
	v.note.SetText(text)
}

// invalid is the first field whose value its check refuses (shown in red
// beside it), and why. Such a value used to be left out silently, the
// form saying "Saved" and going back to the old value.
func (v *settingsView) invalid() (string, error) {
	for _, f := range []struct {
		label string
		e     *widget.Entry
	}{
		{"LocalSend PIN", &v.localSend.pin.Entry}, {"LocalSend port", &v.localSend.port.Entry},
		{"Relay", &v.anywhere.relay.Entry}, {"Relay secret", &v.anywhere.secret.Entry},
	} {
		if f.e.Disabled() {
			continue // not in use (LocalSend or the relay off): its old value is kept
		}
		if err := f.e.Validate(); err != nil {
			return f.label, err
		}
	}
	return "", nil
}

// show fills the form with s.
func (v *settingsView) show(s Settings) {
	v.name.SetText(s.DeviceName)
	v.dir.SetText(s.DownloadDir)
	v.policy.SetSelected(policyLabel(s.Policy))
	v.auto.SetChecked(s.AutoAcceptTrusted)
	v.login.SetChecked(s.StartAtLogin)
	v.minimized.SetChecked(s.StartMinimized)
	v.localSend.load(s)
	v.anywhere.load(s)
}

// apply saves the form through the backend; a field whose value cannot
// be saved stops it, with the field's own words, and nothing is lost.
func (v *settingsView) apply() {
	if field, err := v.invalid(); err != nil {
		v.say(fmt.Sprintf("Not saved: %s: %s.", field, err), widget.DangerImportance)
		return
	}
	s := v.u.be.Settings()
	// Stray spaces from typing or pasting would be part of the name others see.
	s.DeviceName = strings.TrimSpace(v.name.Text)
	s.DownloadDir = strings.TrimSpace(v.dir.Text)
	s.Policy = labelPolicy(v.policy.Selected)
	s.AutoAcceptTrusted = v.auto.Checked
	s.StartAtLogin = v.login.Checked
	s.StartMinimized = v.minimized.Checked
	v.localSend.apply(&s)
	v.anywhere.apply(&s)
	err := v.u.saveSettings(s)
	if err == nil {
		v.say("Saved at "+v.u.now().Format("15:04:05")+".", widget.SuccessImportance)
		return
	}
	if allKept(err) {
		v.say("Saved at "+v.u.now().Format("15:04:05")+", not all in use: see the message.", widget.WarningImportance)
		return
	}
	// What was refused stays as it was typed, to be mended and saved
	// again (or reverted), not replaced by the value it would have changed.
	v.show(s)
	v.say("Not all saved: see the message.", widget.DangerImportance)
}
