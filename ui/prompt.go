package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
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
	dlg       *dialog.CustomDialog
	accept    *button
	decline   *button
	always    *check
	more      *widget.Label
	scroll    *container.Scroll
	countdown *widget.Label
	destLbl   *widget.Label
	space     *widget.Label
	choose    *button
	tree      *offerTreeView
	seen      bool                 // it was shown (a prompt held behind another one is not)
	dest      string               // "Save to…": where this offer goes ("" is the download folder)
	code      *widget.Label        // the sender's verification code (untrusted sender)
	check     *dialog.CustomDialog // "Compare the codes", on top of the prompt
	checkBtns [2]*button           // its Codes differ and Codes match
}

// pairRequest reports whether the prompt is a device asking to pair (no files).
func (p *prompt) pairRequest() bool { return p.ev.Kind == TransferPair }

// promptQueue shows incoming offers one at a time. It is bounded: an offer
// that arrives while the queue is full is declined at once, so a noisy peer
// cannot stack up dialogs.
type promptQueue struct {
	u     *UI
	queue []*prompt // queue[0] is shown
	// held are the incoming offers the engine keeps for a place among
	// its prompts (Options.MaxPrompts are out): it told of them
	// (TransferQueued) but asks nothing yet. They get no row, which would
	// offer nothing to answer, until their prompt comes or they end; the
	// prompt shown counts them with those waiting here.
	held map[string]bool
}

// hold notes an incoming offer the engine holds before asking about it.
func (q *promptQueue) hold(id string) {
	if q.held == nil {
		q.held = map[string]bool{}
	}
	q.held[id] = true
	q.updateMore()
}

// release forgets a held offer: its prompt came, or it ended. It reports
// whether id was held.
func (q *promptQueue) release(id string) bool {
	if !q.held[id] {
		return false
	}
	delete(q.held, id)
	q.updateMore()
	return true
}

// offer queues an incoming offer and tells the user about it.
func (q *promptQueue) offer(ev TransferEvent) {
	for _, p := range q.queue {
		if p.ev.ID == ev.ID {
			return
		}
	}
	who := q.u.who(ev.Peer)
	pair := ev.Kind == TransferPair
	if len(q.queue) >= q.u.opt.MaxPrompts {
		if pair {
			_ = q.u.be.Cancel(ev.ID)
			q.u.notify("Pairing request declined", fmt.Sprintf("%s asked to pair, but too many requests were already waiting.", who))
			return
		}
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
	if pair {
		// Nothing to answer from the notification: the codes must be compared.
		q.u.notifyActions("Pairing request", fmt.Sprintf("%s asks to pair. Compare the codes on both screens.", who),
			[]NoticeAction{{Key: "default", Label: "Show", Do: q.u.revealWindow}})
		if len(q.queue) == 1 {
			q.show(p)
		} else {
			q.updateMore()
		}
		return
	}
	body := fmt.Sprintf("%s wants to send you %s.", who, offerWhat(ev.Offer))
	if o := ev.Offer; o != nil {
		if o.PairCode != "" {
			// Accept is in the notification: the code the engine tells the
			// sender this device showed must be in it too, for a user who
			// never opens the prompt.
			body += " Verification code " + GroupCode(o.PairCode) + "."
		}
	}
	// Accept and Decline right in the notification, where the desktop
	// shows its buttons; a click on it shows the prompt.
	// Answered here (or withdrawn), it is taken down again (remove).
	q.u.notifyTagged(ev.ID, offerTitle(ev.Offer), body, []NoticeAction{
		{Key: "accept", Label: "Accept", Do: func() { q.answer(p, Decision{Accept: true}) }},
		{Key: "decline", Label: "Decline", Do: func() { q.answer(p, Decision{Accept: false, Reason: "declined"}) }},
		{Key: "default", Label: "Show", Do: q.u.revealWindow},
	})
	if len(q.queue) == 1 {
		q.show(p)
	} else {
		// Its sender is told, and asks its user to compare the code only
		// once this prompt is shown (the notification carries it meanwhile).
		_ = q.u.be.OfferOnScreen(ev.ID, false)
		q.updateMore()
	}
}

// answer sends the user's decision for the shown prompt and moves on.
func (q *promptQueue) answer(p *prompt, d Decision) {
	if d.Accept && d.Dest != "" && q.queued(p.ev.ID) {
		// A folder chosen with Save to… may turn out unusable: then the
		// prompt stays, so another can be chosen.
		if err := q.u.be.Decide(p.ev.ID, d); err != nil {
			q.u.showError("Could not save the files there", err)
			return
		}
		q.remove(p.ev.ID)
		return
	}
	if !q.remove(p.ev.ID) {
		return
	}
	if err := q.u.be.Decide(p.ev.ID, d); err != nil {
		q.u.showError("Could not answer the offer", err)
	}
}

// queued reports whether the offer id waits for an answer.
func (q *promptQueue) queued(id string) bool {
	for _, p := range q.queue {
		if p.ev.ID == id {
			return true
		}
	}
	return false
}

// remove drops a prompt (answered, expired or withdrawn by the sender) and
// shows the next one. It reports whether the prompt was queued.
func (q *promptQueue) remove(id string) bool {
	for i, p := range q.queue {
		if p.ev.ID != id {
			continue
		}
		q.queue = append(q.queue[:i], q.queue[i+1:]...)
		q.u.closeNotice(id) // an answered offer's notification goes (issue 26, finding 6)
		if p.check != nil {
			d := p.check
			p.check = nil
			d.Hide()
		}
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

// expire declines every prompt whose deadline is before now, and counts
// down on the one shown.
func (q *promptQueue) expire(now time.Time) {
	if len(q.queue) > 0 && q.queue[0].countdown != nil {
		p := q.queue[0]
		if t := countdownText(p.deadline.Sub(now)); p.countdown.Text != t {
			p.countdown.SetText(t)
		}
	}
	// The last first: a prompt held behind the one on screen that expires
	// too is never shown as that one goes.
	for _, p := range slices.Backward(append([]*prompt(nil), q.queue...)) {
		if now.Before(p.deadline) {
			continue
		}
		if v := q.u.pairs[p.ev.ID]; v != nil && p.pairRequest() {
			v.answered = true // closing its dialog must not cancel it twice
		}
		q.remove(p.ev.ID)
		if p.pairRequest() {
			_ = q.u.be.Cancel(p.ev.ID)
			q.u.notify("Pairing request expired", fmt.Sprintf("The pairing request from %s was declined because nobody answered in %s.",
				q.u.who(p.ev.Peer), humanWait(q.u.opt.PromptTimeout)))
			continue
		}
		_ = q.u.be.Decide(p.ev.ID, Decision{Accept: false, Expired: true, Reason: "the offer was not answered in time"})
		q.tellExpired(p)
	}
}

// ended drops the prompt of a transfer that ended without this user's
// answer (withdrawn by its sender, or timed out in the engine). The
// engine's clock and expire's tick run out together, and the engine's
// result often comes first: an offer that expired so is told as one
// expire declined (it went without a word, its prompt gone, and one held
// behind the prompt on screen never seen).
func (q *promptQueue) ended(ev TransferEvent) {
	var p *prompt
	for _, x := range q.queue {
		if x.ev.ID == ev.ID {
			p = x
		}
	}
	if !q.remove(ev.ID) {
		return
	}
	if r := ev.Result; r != nil && r.Code == CodeExpired && !r.ByPeer && !p.pairRequest() {
		q.tellExpired(p)
	}
}

// tellExpired tells the user that an offer was declined unanswered: one
// that was on screen expired; one held behind another prompt was missed,
// its user never shown it (like a missed call, with whom to call back).
func (q *promptQueue) tellExpired(p *prompt) {
	who, wait := q.u.who(p.ev.Peer), humanWait(q.u.opt.PromptTimeout)
	if !p.seen {
		q.u.notify("Missed offer", fmt.Sprintf("%s offered %s while another offer was on screen; nobody answered in %s, so it was declined. Ask %s to send it again.",
			who, offerWhat(p.ev.Offer), wait, who))
		return
	}
	q.u.notify("Offer expired", fmt.Sprintf("The offer from %s was declined because nobody answered in %s.", who, wait))
}

// offerWhat names what an offer brings in a few words: "a text", "1 file
// (1.0 kB)", "a text and 2 files (2.0 kB)".
func offerWhat(o *Offer) string {
	switch {
	case o == nil:
		return "files"
	case o.Text != "" && o.FileCount() == 0:
		return "a text"
	case o.Text != "":
		return fmt.Sprintf("a text and %s (%s)", plural(o.FileCount(), "file"), HumanBytes(o.Total))
	}
	return fmt.Sprintf("%s (%s)", plural(o.FileCount(), "file"), HumanBytes(o.Total))
}

func (q *promptQueue) updateMore() {
	if len(q.queue) == 0 || q.queue[0].more == nil {
		return
	}
	more := q.queue[0].more
	if n := len(q.queue) - 1 + len(q.held); n > 0 {
		more.SetText(fmt.Sprintf("%d more request(s) waiting", n))
		more.Show()
	} else {
		more.Hide()
	}
}

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
	if peer.LocalSend {
		l.SetText("New LocalSend device: check the fingerprint with its owner")
	}
	switch {
	case peer.Unverified:
		l.SetText("Unverified: it proved no identity")
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
	if p.pairRequest() {
		q.showPairRequest(p)
		return
	}
	ev := p.ev
	p.seen = true
	_ = q.u.be.OfferOnScreen(ev.ID, true) // its sender's user may compare the code now
	o := ev.Offer
	if o == nil {
		o = &Offer{FreeBytes: -1}
	}
	u := q.u
	who := widget.NewLabelWithStyle(u.named(ev.Peer), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	who.Truncation = fyne.TextTruncateEllipsis
	id := widget.NewLabel("Device ID " + GroupID(ev.Peer.ID))
	id.SizeName = theme.SizeNameCaptionText
	// Word wrap: an ID too wide for the line after "Device ID" goes whole
	// to the next, not broken inside a group the owners compare.
	id.Wrapping = fyne.TextWrapWord

	objs := []fyne.CanvasObject{
		container.NewBorder(nil, nil, widget.NewIcon(theme.DownloadIcon()), nil, container.New(&tightVBox{}, who, q.trustLine(ev.Peer))),
	}
	if ev.Peer.LocalSend {
		objs = append(objs, localSendLines(ev.Peer)...) // no Ferry device ID to show
	} else {
		objs = append(objs, id)
	}
	if o.PairCode != "" {
		p.code = codeLabel(o.PairCode)
		objs = append(objs, codeBox(p.code, widget.NewLabel(fmt.Sprintf("Check that %s shows the same code before you trust it.", u.sentenceWho(ev.Peer)))))
	}
	if o.Text != "" {
		objs = append(objs, textBox(o.Text))
	}
	if o.FileCount() > 0 {
		p.tree = offerTree(o)
		p.tree.OnResize = func() {
			if p.scroll != nil {
				p.scroll.Content.Refresh() // the taller tree gets its height
				p.scroll.Refresh()
			}
		}
		objs = append(objs, p.tree.obj)
	}
	p.countdown = widget.NewLabel(countdownText(p.deadline.Sub(u.now())))
	p.countdown.Importance = widget.WarningImportance
	summary := widget.NewLabel(offerSummary(o))
	objs = append(objs, container.NewBorder(nil, nil, nil, p.countdown, summary))

	p.accept = u.newButton("Accept", theme.ConfirmIcon(), func() {
		if p.always.Checked && o.PairCode != "" {
			q.checkCode(p) // trusting a new device takes the codes first
			return
		}
		q.answer(p, Decision{Accept: true, AlwaysAccept: p.always.Checked, Dest: p.dest})
	})
	p.accept.Importance = widget.HighImportance
	if o.FileCount() > 0 {
		p.destLbl = widget.NewLabel("Save to " + EscapeName(o.Dest))
		p.destLbl.Wrapping = fyne.TextWrapBreak
		p.choose = u.newButton("Change…", theme.FolderOpenIcon(), func() {
			u.pick(PickRequest{Title: "Save the files to", Folders: true}, func(paths []string) {
				p.dest = paths[0]
				p.destLbl.SetText("Save to " + EscapeName(p.dest))
				q.showSpace(p, o, u.be.FreeSpace(p.dest))
			})
		})
		p.space = widget.NewLabel("")
		objs = append(objs, container.NewBorder(nil, nil, nil, container.NewCenter(p.choose), p.destLbl), p.space)
		q.showSpace(p, o, o.FreeBytes)
	}

	always := "Always accept from this device"
	if o.PairCode != "" {
		always = "Always accept from this device (after comparing the codes)"
	}
	p.always = u.newCheck(always, nil)
	if ev.Peer.Unverified {
		// Nothing proves who it is: there is no device to trust.
		p.always.Hide()
	}
	p.more = widget.NewLabel("")
	p.more.TextStyle.Italic = true
	p.more.Hide()
	objs = append(objs, p.always, p.more)

	decline := func() { q.answer(p, Decision{Accept: false, Reason: "declined"}) }
	p.decline = u.newButton("Decline", theme.CancelIcon(), decline)
	// The content scrolls; the buttons below it stay visible at any window size.
	p.scroll = container.NewVScroll(container.NewPadded(container.NewVBox(objs...)))
	p.dlg = dialog.NewCustomWithoutButtons(offerTitle(o), p.scroll, u.win)
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
	u.showModal(p.dlg, &modal{dismiss: decline, scroll: p.scroll}, p.decline)
}

// showSpace says how much room the destination has, and keeps Accept off
// when the files cannot fit.
func (q *promptQueue) showSpace(p *prompt, o *Offer, free int64) {
	p.space.Importance = widget.MediumImportance
	p.space.Wrapping = fyne.TextWrapOff
	p.accept.Enable()
	switch {
	case free < 0:
		p.space.Hide()
		return
	case free < o.needs():
		p.space.SetText(fmt.Sprintf("Not enough space: %s needed, %s free", HumanBytes(o.needs()), HumanBytes(free)))
		p.space.Importance = widget.DangerImportance
		p.space.Wrapping = fyne.TextWrapWord
		p.accept.Disable()
	default:
		p.space.SetText(HumanBytes(free) + " free")
	}
	p.space.Show()
	p.space.Refresh()
}

// offerSummary sums an offer up in one line. Files whose names cannot be
// stored here are not in its size (they will not come): it says how many
// of the files that size is ("4 of 6 files (2 cannot be saved here),
// 4.0 kB in total"), not "6 files, 4.0 kB" beside a tree of 6.0 kB.
func offerSummary(o *Offer) string {
	files := plural(o.FileCount(), "file")
	if n := o.refused(); n > 0 {
		files = fmt.Sprintf("%d of %s (%d cannot be saved here)", o.FileCount()-n, files, n)
	}
	switch {
	case o.FileCount() == 0 && o.Text != "":
		return fmt.Sprintf("A text of %s", HumanBytes(int64(len(o.Text))))
	case o.Text != "":
		return fmt.Sprintf("A text and %s, %s in total", files, HumanBytes(o.Total))
	}
	return fmt.Sprintf("%s, %s in total", files, HumanBytes(o.Total))
}

// countdownText says how long the prompt waits for an answer.
func countdownText(left time.Duration) string {
	if left < 0 {
		left = 0
	}
	s := int(left.Round(time.Second) / time.Second)
	return fmt.Sprintf("Expires in %d:%02d", s/60, s%60)
}

// textBox shows an offered text, escaped, in a scrolling box of its own
// (a long text does not push the buttons away). It wraps between words,
// and within a word (a link) only where it is wider than the box: it
// broke any word at the box's edge ("on and on t" / "o see").
func textBox(text string) fyne.CanvasObject {
	l := widget.NewLabel(EscapeText(text))
	l.Wrapping = fyne.TextWrapWord
	l.Selectable = true
	s := container.NewVScroll(l)
	lines := strings.Count(text, "\n") + 1 + len(text)/60
	s.SetMinSize(fyne.NewSize(0, float32(min(max(lines, 2), 6))*(theme.TextSize()+theme.Padding()*1.5)+2*theme.InnerPadding()))
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	bg.CornerRadius = theme.InputRadiusSize()
	return container.NewStack(bg, s)
}

// checkCode asks, before an offer is accepted with "Always accept", whether
// the sender's screen shows the same code: a match trusts the sender and
// accepts; a mismatch stops the transfer (the engine says why in its row);
// Escape goes back to the prompt.
func (q *promptQueue) checkCode(p *prompt) {
	u := q.u
	who := u.sentenceWho(p.ev.Peer)
	line := widget.NewLabel(fmt.Sprintf("Does %s show this code? If the codes differ, another device may be in the middle: the transfer is stopped.", who))
	var d *dialog.CustomDialog
	back := u.newButton("Back", nil, func() {
		d.Hide()
		u.win.Canvas().Focus(p.accept)
	})
	differ := u.newButton("Codes differ", theme.CancelIcon(), func() {
		d.Hide()
		if u.confirmPair(p.ev.ID, false) {
			q.remove(p.ev.ID) // the engine stopped the transfer: no answer to give
		}
	})
	differ.Importance = widget.DangerImportance
	match := u.newButton("Codes match", theme.ConfirmIcon(), func() {
		d.Hide()
		if u.confirmPair(p.ev.ID, true) {
			if v := u.transfers.byID[p.ev.ID]; v != nil {
				v.codeAnswered, v.codeMatched = true, true // the row says so
			}
			q.answer(p, Decision{Accept: true, AlwaysAccept: true, Dest: p.dest})
		}
	})
	match.Importance = widget.HighImportance
	d = dialog.NewCustomWithoutButtons("Compare the codes", codeBox(codeLabel(p.ev.Offer.PairCode), line), u.win)
	d.SetButtons([]fyne.CanvasObject{back, differ, match})
	d.Resize(fyne.NewSize(460, 0))
	p.check, p.checkBtns = d, [2]*button{differ, match}
	m := &modal{dismiss: d.Hide}
	u.showModal(d, m, differ)
	d.SetOnClosed(func() {
		u.dropModal(m)
		if p.check == d {
			p.check = nil
		}
	})
}

// offerTitle names an offer in its prompt and notification: "Incoming
// text" for a text alone (its notification said "Incoming files" over "…
// wants to send you a text"), else "Incoming files".
func offerTitle(o *Offer) string {
	if o != nil && o.Text != "" && o.FileCount() == 0 {
		return "Incoming text"
	}
	return "Incoming files"
}
