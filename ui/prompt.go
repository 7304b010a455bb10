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

// prompt is one incoming offer waiting for the user.
type prompt struct {
	ev       TransferEvent
	deadline time.Time

	// set while shown
	dlg     *dialog.CustomDialog
	accept  *button
	decline *button
	always  *check
	more    *widget.Label
	scroll  *container.Scroll
}

// promptQueue shows incoming offers one at a time. It is bounded: an offer
// that arrives while the queue is full is declined at once, so a noisy peer
// cannot stack up dialogs.
type promptQueue struct {
	u     *UI
	queue []*prompt // queue[0] is shown
}

// offer queues an incoming offer and tells the user about it.
func (q *promptQueue) offer(ev TransferEvent) {
	for _, p := range q.queue {
		if p.ev.ID == ev.ID {
			return
		}
	}
	who := EscapeName(ev.Peer.Name)
	if len(q.queue) >= q.u.opt.MaxPrompts {
		_ = q.u.be.Decide(ev.ID, Decision{Accept: false, Reason: "too many offers are waiting; try again later"})
		q.u.notify("Offer declined", fmt.Sprintf("%s wanted to send files, but too many offers were already waiting.", who))
		return
	}
	deadline := q.u.now().Add(q.u.opt.PromptTimeout)
	if ev.Offer != nil && !ev.Offer.Expires.IsZero() && ev.Offer.Expires.Before(deadline) {
		deadline = ev.Offer.Expires
	}
	p := &prompt{ev: ev, deadline: deadline}
	q.queue = append(q.queue, p)
	body := fmt.Sprintf("%s wants to send you files.", who)
	if o := ev.Offer; o != nil {
		body = fmt.Sprintf("%s wants to send you %s (%s).", who, plural(o.FileCount(), "file"), HumanBytes(o.Total))
	}
	q.u.notify("Incoming files", body)
	if len(q.queue) == 1 {
		q.show(p)
	} else {
		q.updateMore()
	}
}

// answer sends the user's decision for the shown prompt and moves on.
func (q *promptQueue) answer(p *prompt, d Decision) {
	if !q.remove(p.ev.ID) {
		return
	}
	if err := q.u.be.Decide(p.ev.ID, d); err != nil {
		q.u.showError("Could not answer the offer", err)
	}
}

// remove drops a prompt (answered, expired or withdrawn by the sender) and
// shows the next one. It reports whether the prompt was queued.
func (q *promptQueue) remove(id string) bool {
	for i, p := range q.queue {
		if p.ev.ID != id {
			continue
		}
		q.queue = append(q.queue[:i], q.queue[i+1:]...)
		if p.dlg != nil {
			d := p.dlg
			p.dlg = nil
			d.Hide()
		}
		if i == 0 && len(q.queue) > 0 {
			q.show(q.queue[0])
		}
		q.updateMore()
		return true
	}
	return false
}

// expire declines every prompt whose deadline is before now.
func (q *promptQueue) expire(now time.Time) {
	for _, p := range append([]*prompt(nil), q.queue...) {
		if now.Before(p.deadline) {
			continue
		}
		q.remove(p.ev.ID)
		_ = q.u.be.Decide(p.ev.ID, Decision{Accept: false, Expired: true, Reason: "the offer was not answered in time"})
		q.u.notify("Offer expired", fmt.Sprintf("The offer from %s was declined because nobody answered in %s.",
			EscapeName(p.ev.Peer.Name), humanWait(q.u.opt.PromptTimeout)))
	}
}

func (q *promptQueue) updateMore() {
	if len(q.queue) == 0 || q.queue[0].more == nil {
		return
	}
	more := q.queue[0].more
	if n := len(q.queue) - 1; n > 0 {
		more.SetText(fmt.Sprintf("%d more offer(s) waiting", n))
		more.Show()
	} else {
		more.Hide()
	}
}

// maxPromptFiles bounds the files a prompt lists by name; the rest are counted.
const maxPromptFiles = 200

// trustLine says what this device knows of the sender, in the words its
// row in the device list uses (trusted, known, new). The row is what the
// user saw before the offer: the engine itself remembers every device from
// its first connection on, so by the time an offer arrives it knows even a
// new one.
func (q *promptQueue) trustLine(peer Peer) *widget.Label {
	known, trusted := false, peer.Trusted
	if d, ok := q.u.devices.devices[peer.ID]; ok && peer.ID != "" {
		known, trusted = d.Known, trusted || d.Trusted
	}
	l := widget.NewLabel("New device: check the ID with its owner")
	l.Importance = widget.WarningImportance
	switch {
	case trusted:
		l.SetText("Trusted device")
		l.Importance = widget.SuccessImportance
	case known:
		l.SetText("Known device: it connected to this one before")
		l.Importance = widget.MediumImportance
	}
	return l
}

func (q *promptQueue) show(p *prompt) {
	ev := p.ev
	o := ev.Offer
	if o == nil {
		o = &Offer{FreeBytes: -1}
	}
	u := q.u
	who := widget.NewLabelWithStyle(EscapeName(ev.Peer.Name), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	who.Truncation = fyne.TextTruncateEllipsis
	id := widget.NewLabel("Device ID " + GroupID(ev.Peer.ID))
	id.SizeName = theme.SizeNameCaptionText
	id.Wrapping = fyne.TextWrapBreak

	files := container.New(&tightVBox{})
	for i, f := range o.Files {
		if i == maxPromptFiles {
			more := widget.NewLabel(fmt.Sprintf("and %s more", plural(o.FileCount()-i, "file")))
			more.Importance = widget.LowImportance
			files.Add(more)
			break
		}
		name := widget.NewLabel(EscapeName(f.Path))
		name.Truncation = fyne.TextTruncateEllipsis
		size := widget.NewLabel(HumanBytes(f.Size))
		files.Add(container.NewBorder(nil, nil, nil, size, name))
	}

	summary := fmt.Sprintf("%s, %s in total", plural(o.FileCount(), "file"), HumanBytes(o.Total))
	space := widget.NewLabel("")
	if o.FreeBytes >= 0 {
		space.SetText(HumanBytes(o.FreeBytes) + " free")
		if o.FreeBytes < o.Total {
			space.SetText(fmt.Sprintf("Not enough space: %s needed, %s free", HumanBytes(o.Total), HumanBytes(o.FreeBytes)))
			space.Importance = widget.DangerImportance
			space.Wrapping = fyne.TextWrapWord
		}
	}
	destLbl := widget.NewLabel("Save to " + EscapeName(o.Dest))
	destLbl.Wrapping = fyne.TextWrapBreak

	p.always = u.newCheck("Always accept from this device", nil)
	p.more = widget.NewLabel("")
	p.more.Importance = widget.LowImportance
	p.more.Hide()

	content := container.NewVBox(
		container.NewBorder(nil, nil, widget.NewIcon(theme.DownloadIcon()), nil, container.New(&tightVBox{}, who, q.trustLine(ev.Peer))),
		id,
		files,
		widget.NewLabel(summary),
		destLbl,
		space,
		p.always,
		p.more,
	)
	if o.FreeBytes < 0 {
		space.Hide()
	}
	decline := func() { q.answer(p, Decision{Accept: false, Reason: "declined"}) }
	p.decline = u.newButton("Decline", theme.CancelIcon(), decline)
	p.accept = u.newButton("Accept", theme.ConfirmIcon(), func() {
		q.answer(p, Decision{Accept: true, AlwaysAccept: p.always.Checked})
	})
	p.accept.Importance = widget.HighImportance
	if o.FreeBytes >= 0 && o.FreeBytes < o.Total {
		p.accept.Disable()
	}
	// The content scrolls; the buttons below it stay visible at any window size.
	p.scroll = container.NewVScroll(container.NewPadded(content))
	p.dlg = dialog.NewCustomWithoutButtons("Incoming files", p.scroll, u.win)
	p.dlg.SetButtons([]fyne.CanvasObject{p.decline, p.accept})
	p.dlg.SetOnClosed(func() {
		// p.dlg is still set only when the dialog was closed other than
		// through remove: take that as a decline.
		if p.dlg != nil {
			p.dlg = nil
			decline()
		}
	})
	q.updateMore()
	u.revealWindow()
	fitScroll(p.dlg, p.scroll, 520)
	// Keyboard: start on Decline so a stray key press never accepts files;
	// Tab moves to Accept. Escape declines; Enter presses the focused button.
	u.showModal(p.dlg, &modal{dismiss: decline}, p.decline)
}
