package ui

import (
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// partialsView is the "Unfinished transfers" section of the Settings tab:
// incoming transfers whose verified parts are kept on disk so that the
// sender can resume them, with the space they hold. It shows what
// Backend.Partials says each time it is reloaded.
type partialsView struct {
	u     *UI
	total *widget.Label
	box   *fyne.Container
	rows  []*partialRow
	obj   fyne.CanvasObject

	confirm *dialog.CustomDialog // the last "Discard …?" asked
	doIt    *button              // its Discard
}

// partialRow is one unfinished transfer.
type partialRow struct {
	p       PartialTransfer
	text    *widget.Label
	discard *button
}

func newPartialsView(u *UI) *partialsView {
	v := &partialsView{u: u}
	head := widget.NewLabelWithStyle("Unfinished transfers", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	hint := widget.NewLabel("Files that stopped arriving are kept so the sender can resume them. Discard them to free the space.")
	hint.Wrapping = fyne.TextWrapWord
	hint.SizeName = theme.SizeNameCaptionText
	v.total = widget.NewLabel("")
	refresh := u.newButton("Refresh", theme.ViewRefreshIcon(), v.reload)
	v.box = container.NewVBox()
	v.obj = container.NewVBox(
		container.NewBorder(nil, nil, nil, refresh, head),
		hint,
		v.total,
		v.box,
	)
	v.reload()
	return v
}

// reload lists the backend's unfinished transfers again.
func (v *partialsView) reload() { v.show(v.u.be.Partials()) }

// show lists ps, the backend's unfinished transfers.
func (v *partialsView) show(ps []PartialTransfer) {
	now := v.u.now()
	var total int64
	v.rows = v.rows[:0]
	objs := make([]fyne.CanvasObject, 0, len(ps))
	for _, p := range ps {
		total += p.Bytes
		r := &partialRow{p: p}
		r.text = widget.NewLabel(partialText(p, v.u.names(), now))
		r.text.Truncation = fyne.TextTruncateEllipsis
		pt := p
		r.discard = v.u.newButton("Discard", theme.DeleteIcon(), func() { v.confirmDiscard(pt) })
		if p.Receiving {
			r.discard.Disable() // its files are being written: cancel it in Transfers first
		}
		v.rows = append(v.rows, r)
		objs = append(objs, container.NewBorder(nil, nil, widget.NewIcon(theme.DownloadIcon()), r.discard, r.text))
	}
	if len(ps) == 0 {
		v.total.SetText("None: no space is held by partial files.")
	} else {
		v.total.SetText(fmt.Sprintf("%s held by %s.", HumanBytes(total), plural(len(ps), "unfinished transfer")))
	}
	v.box.Objects = objs
	v.box.Refresh()
}

// confirmDiscard asks before deleting what an unfinished transfer kept:
// it cannot be undone, and the sender would send it all again.
func (v *partialsView) confirmDiscard(p PartialTransfer) {
	u := v.u
	who := partialWho(p, u.names())
	text := widget.NewLabel(fmt.Sprintf("The partial files from %s (%s) are deleted, and the transfer will not resume: "+
		"sent again, its files come over from the start.", who, HumanBytes(p.Bytes)))
	text.Wrapping = fyne.TextWrapWord
	var d *dialog.CustomDialog
	keep := u.newButton("Keep", nil, func() { d.Hide() })
	del := u.newButton("Discard", theme.DeleteIcon(), func() { d.Hide(); v.discard(p) })
	del.Importance = widget.DangerImportance
	d = dialog.NewCustomWithoutButtons("Discard unfinished transfer?", text, u.win)
	d.SetButtons([]fyne.CanvasObject{keep, del})
	d.Resize(fyne.NewSize(440, 0))
	v.confirm, v.doIt = d, del
	// Enter keeps them too: deleting takes the button.
	u.showModal(d, &modal{dismiss: d.Hide, confirm: d.Hide}, keep)
}

func (v *partialsView) discard(p PartialTransfer) {
	if err := v.u.be.DiscardPartial(p.Key); err != nil {
		v.u.showError("Could not discard the partial files", err)
	} else {
		v.u.transfers.discarded(p.Delivery) // its row in Transfers, if shown
	}
	v.reload()
}

// named writes the rows again once a name became shared by two listed
// devices, or stopped being (sameNamesChanged).
func (v *partialsView) named() {
	now := v.u.now()
	for _, r := range v.rows {
		r.text.SetText(partialText(r.p, v.u.names(), now))
	}
}

// partialWho names the sender of p as the device list would (n): its
// name, with its short ID beside it when another listed device has that
// name too; its short ID when it gave no name.
func partialWho(p PartialTransfer, n sameNames) string {
	if who := n.named(p.PeerName, shortTag(p.PeerID, "")); who != "" {
		return who
	}
	return ShortID(p.PeerID)
}

// partialText is one row: who sent it (named as n says), how many files,
// the space held and how long ago it last made progress.
func partialText(p PartialTransfer, n sameNames, now time.Time) string {
	who := partialWho(p, n)
	if who == "" {
		who = "an unknown device"
	}
	files := plural(p.Files, "file")
	if p.Saved > 0 {
		files += fmt.Sprintf(" (%d saved)", p.Saved)
	}
	switch {
	case p.Unremoved:
		// Not a transfer that can resume: say what it is and why it is
		// still here.
		return fmt.Sprintf("From %s · %s that could not be removed (another program had them open, or the folder is read-only) · %s on disk · %s",
			who, plural(p.Files, "unfinished file"), HumanBytes(p.Bytes), Age(p.Updated, now))
	case p.Damaged != "":
		files += " · resume state damaged (" + p.Damaged + ")"
	}
	if p.Receiving {
		return fmt.Sprintf("From %s · %s · %s held · receiving now", who, files, HumanBytes(p.Bytes))
	}
	return fmt.Sprintf("From %s · %s · %s held · %s", who, files, HumanBytes(p.Bytes), Age(p.Updated, now))
}

// Age says how long ago t was, for lists ("5 min ago").
func Age(t, now time.Time) string {
	if t.IsZero() {
		return "age unknown"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%d days ago", int(d.Hours()/24))
	}
}
