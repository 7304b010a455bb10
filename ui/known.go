package ui

import (
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// knownView is the Devices page of Settings: the devices this one has
// exchanged files with, with their ID and when they were last seen, and
// for each auto-accept on or off, a name of the user's own, and Forget.
type knownView struct {
	u    *UI
	box  *fyne.Container
	rows []*knownRow
	obj  fyne.CanvasObject
	// scroll is obj: Tab to a row out of view scrolls it there (reveal).
	scroll *container.Scroll
}

// knownRow is one known device.
type knownRow struct {
	d      KnownDevice
	auto   *check
	rename *button
	forget *button
	pair   *button // Pair…, on a device not paired yet
	paired *widget.Label
	// info is its ID line over whether it is here (seen).
	info *widget.Label
	id   string
}

func newKnownView(u *UI) *knownView {
	v := &knownView{u: u, box: container.NewVBox()}
	hint := widget.NewLabel("Devices you exchanged files with. Their keys are remembered, so another device cannot pose as them. " +
		"Pair with one to compare a code on both screens and be sure it is that device. Forget one to meet it as new next time.")
	hint.Wrapping = fyne.TextWrapWord
	hint.SizeName = theme.SizeNameCaptionText
	v.scroll = container.NewVScroll(container.NewPadded(container.NewVBox(hint, v.box)))
	v.obj = v.scroll
	v.reload()
	return v
}

// reload lists the backend's known devices again.
func (v *knownView) reload() {
	u := v.u
	now := u.now()
	v.rows = v.rows[:0]
	var objs []fyne.CanvasObject
	for _, d := range u.be.KnownDevices() {
		r := &knownRow{d: d}
		id := d.ID
		name := widget.NewLabelWithStyle(EscapeName(d.Name), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		name.Truncation = fyne.TextTruncateEllipsis
		parts := []string{GroupID(d.ID)}
		if d.LocalSend {
			parts = []string{"LocalSend", "fingerprint " + GroupFingerprint(d.Fingerprint)}
		}
		if d.Renamed && d.Announced != "" {
			parts = append([]string{"calls itself " + EscapeName(d.Announced)}, parts...)
		}
		r.id = strings.Join(parts, " · ")
		info := widget.NewLabel("")
		info.SizeName = theme.SizeNameCaptionText
		info.Wrapping = fyne.TextWrapBreak
		r.info = info
		v.showSeen(r, now)
		r.auto = u.newCheck("Accept without asking", func(on bool) {
			if err := u.be.SetAutoAccept(id, on); err != nil {
				u.showError("Could not change the device", err)
			}
			v.reload()
			u.devicesTrustChanged(id, on)
		})
		r.auto.Checked = d.AutoAccept
		dev := d
		r.rename = u.newButton("Rename…", theme.DocumentCreateIcon(), func() { v.showRename(dev) })
		r.forget = u.newButton("Forget…", theme.DeleteIcon(), func() { v.confirmForget(dev) })
		r.pair = u.newButton("Pair…", theme.ConfirmIcon(), func() { u.pairWith(v.pairTarget(dev)) })
		r.paired = widget.NewLabel("Paired: you compared its code")
		r.paired.Importance = widget.SuccessImportance
		r.paired.SizeName = theme.SizeNameCaptionText
		switch {
		case d.LocalSend:
			// LocalSend has no pairing codes: its certificate is its identity.
			r.pair.Hide()
			r.paired.SetText("Known by its certificate: another device cannot pose as it")
			r.paired.Importance = widget.MediumImportance
		case d.Paired:
			r.pair.Hide()
		default:
			r.paired.SetText("Not paired: compare codes with Pair… to be sure it is this device")
			r.paired.Importance = widget.MediumImportance
			if !v.pairTarget(dev).Online {
				r.pair.Disable() // nowhere to reach it now
			}
		}
		r.paired.Wrapping = fyne.TextWrapWord
		v.rows = append(v.rows, r)
		objs = append(objs, container.NewVBox(
			container.NewBorder(nil, nil, widget.NewIcon(theme.ComputerIcon()), nil, name),
			info,
			r.paired,
			container.NewHBox(r.auto, layoutSpacer(), r.pair, r.rename, r.forget),
			widget.NewSeparator(),
		))
	}
	if len(objs) == 0 {
		l := widget.NewLabel("No devices yet: once you send or receive files, the other device is listed here.")
		l.Wrapping = fyne.TextWrapWord
		l.TextStyle.Italic = true
		objs = append(objs, l)
	}
	v.box.Objects = objs
	v.box.Refresh()
	if u.settings != nil {
		// Whether a paired device reaches this one beyond the LAN
		// depends on there being one: a pairing made or forgotten.
		u.settings.anywhere.showStatus(u.be)
	}
}

// showSeen says under a row's ID whether its device is online now, as
// the Nearby list sees it, else when it was last seen (a device online
// right now said "Last seen 13 min ago", the time it was last stored).
func (v *knownView) showSeen(r *knownRow, now time.Time) {
	online, last := v.seen(r.d)
	seen := "Online now"
	if !online {
		seen = LastSeen(last, now)
		seen = strings.ToUpper(seen[:1]) + seen[1:]
	}
	r.info.SetText(r.id + "\n" + seen)
}

// devicesChanged redraws whether each listed device is online (the
// Nearby list changed); it leaves the rows, and the focus, in place.
func (v *knownView) devicesChanged() {
	now := v.u.now()
	for _, r := range v.rows {
		v.showSeen(r, now)
	}
}

// seen reports whether the Nearby list has d online (by its ID, or by its
// certificate for a LocalSend device), and when d was last seen: the later
// of the stored time and the Nearby list's.
func (v *knownView) seen(d KnownDevice) (online bool, last time.Time) {
	last = d.LastSeen
	for _, dev := range v.u.devices.devices {
		if (d.ID == "" || dev.ID != d.ID) && !(d.LocalSend && d.Fingerprint != "" && dev.LocalSend != nil && dev.LocalSend.Fingerprint == d.Fingerprint) {
			continue
		}
		online = online || dev.Online
		if dev.LastSeen.After(last) {
			last = dev.LastSeen
		}
	}
	return online, last
}

// pairTarget is where to reach a known device to pair with it: as the
// device list sees it when it is nearby, else at its last address.
func (v *knownView) pairTarget(d KnownDevice) Device {
	if dev, ok := v.u.devices.devices[d.ID]; ok && dev.Online {
		return dev
	}
	return Device{ID: d.ID, Name: d.Name, Addrs: d.Addrs, Online: len(d.Addrs) > 0, Known: true}
}

// showRename asks for the user's own name for d ("" restores its own).
func (v *knownView) showRename(d KnownDevice) {
	u := v.u
	in := u.newEntry()
	in.SetText(d.Name)
	in.SetPlaceHolder(d.Announced)
	hint := widget.NewLabel(fmt.Sprintf("Shown instead of the name it announces (%s). Leave it empty to use that name again.", EscapeName(d.Announced)))
	hint.Wrapping = fyne.TextWrapWord
	hint.SizeName = theme.SizeNameCaptionText
	var dlg *dialog.CustomDialog
	save := func() {
		dlg.Hide()
		name := strings.TrimSpace(in.Text)
		if err := u.be.RenameDevice(d.ID, name); err != nil {
			u.showError("Could not rename the device", err)
		} else {
			if name == "" {
				name = d.Announced // its own name again
			}
			u.deviceRenamed(d.ID, name)
		}
		v.reload()
	}
	in.OnSubmitted = func(string) { save() }
	ok := u.newButton("Rename", nil, save)
	ok.Importance = widget.HighImportance
	cancel := u.newButton("Cancel", nil, func() { dlg.Hide() })
	dlg = dialog.NewCustomWithoutButtons("Rename "+EscapeName(d.Name), container.NewVBox(in, hint), u.win)
	dlg.SetButtons([]fyne.CanvasObject{cancel, ok})
	dlg.Resize(fyne.NewSize(440, 0))
	u.showModal(dlg, &modal{dismiss: dlg.Hide, confirm: save}, in)
}

// confirmForget asks before forgetting d.
func (v *knownView) confirmForget(d KnownDevice) {
	u := v.u
	text := widget.NewLabel(fmt.Sprintf("%s is no longer trusted or remembered. If it connects again, Ferry treats it as a new device and asks before accepting its files.",
		EscapeName(d.Name)))
	text.Wrapping = fyne.TextWrapWord
	var dlg *dialog.CustomDialog
	keep := u.newButton("Keep", nil, func() { dlg.Hide() })
	forget := u.newButton("Forget", theme.DeleteIcon(), func() {
		dlg.Hide()
		if err := u.be.ForgetDevice(d.ID); err != nil {
			u.showError("Could not forget the device", err)
		}
		v.reload()
		u.devicesTrustChanged(d.ID, false)
	})
	forget.Importance = widget.DangerImportance
	dlg = dialog.NewCustomWithoutButtons("Forget "+EscapeName(d.Name)+"?", text, u.win)
	dlg.SetButtons([]fyne.CanvasObject{keep, forget})
	dlg.Resize(fyne.NewSize(440, 0))
	u.showModal(dlg, &modal{dismiss: dlg.Hide}, keep)
}

// devicesTrustChanged redraws a device row after its trust changed here.
func (u *UI) devicesTrustChanged(id string, trusted bool) {
	d, ok := u.devices.devices[id]
	if !ok {
		return
	}
	d.Trusted = trusted
	if !trusted && !u.isKnown(id) {
		if !d.Online {
			// Forgotten and not here: it was listed, greyed, only because
			// it was remembered (it stayed, "Offline · last seen …").
			delete(u.devices.devices, id)
			u.devices.render()
			return
		}
		// Forgotten: no longer paired either, so Pair… is offered at once
		// (issue 26, finding 6).
		d.Known, d.Paired = false, false
	}
	u.devices.devices[id] = d
	u.devices.render()
}

// isKnown reports whether the backend still knows device id.
func (u *UI) isKnown(id string) bool {
	for _, d := range u.be.KnownDevices() {
		if d.ID == id {
			return true
		}
	}
	return false
}
