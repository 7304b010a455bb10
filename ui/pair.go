package ui

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// Pairing (issue #14). With a device not trusted yet, both screens show the
// same six-digit verification code; the device becomes trusted only once
// the user says the other screen shows the same (Backend.ConfirmPair). This
// file draws the code wherever it is asked about: in the offer prompt
// ("Always accept" checks it first), in a sending transfer's row, in the
// pairing dialog (Pair… on a device, or a device asking to pair), and the
// warning when a known device presents another key.

// GroupCode writes a verification code as the two screens show it, in two
// groups of three digits ("123 456"); anything else is returned as it is.
func GroupCode(code string) string {
	digits := strings.ReplaceAll(code, " ", "")
	if len(digits) != 6 || strings.Trim(digits, "0123456789") != "" {
		return code
	}
	return digits[:3] + " " + digits[3:]
}

// codeLabel shows a verification code large enough to compare across a room.
func codeLabel(code string) *widget.Label {
	l := widget.NewLabelWithStyle(GroupCode(code), fyne.TextAlignCenter, fyne.TextStyle{Bold: true})
	l.SizeName = theme.SizeNameHeadingText
	return l
}

// codeBox is the code on a tinted panel with a caption above it and the
// line that says what to compare it with below.
func codeBox(code *widget.Label, line *widget.Label) fyne.CanvasObject {
	caption := widget.NewLabelWithStyle("Verification code", fyne.TextAlignCenter, fyne.TextStyle{})
	caption.SizeName = theme.SizeNameCaptionText
	line.Alignment = fyne.TextAlignCenter
	line.Wrapping = fyne.TextWrapWord
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	bg.CornerRadius = theme.InputRadiusSize()
	return container.NewStack(bg, container.NewPadded(container.New(&tightVBox{}, caption, code, line)))
}

// peerWho names a peer for a sentence: its name, else its short ID.
func peerWho(p Peer) string {
	if who := EscapeName(p.Name); who != "" {
		return who
	}
	if p.ID != "" {
		return "Device " + ShortID(p.ID)
	}
	return "the other device"
}

// checkLine asks the user to compare the code with the other screen.
func checkLine(who string) string {
	return fmt.Sprintf("Check that %s shows the same code.", who)
}

// confirmPair passes the user's verdict on a code to the backend.
func (u *UI) confirmPair(id string, match bool) bool {
	if err := u.be.ConfirmPair(id, match); err != nil {
		u.showError("Could not record your answer about the code", err)
		return false
	}
	return true
}

// pairView is the pairing dialog of one pairing without files, in either
// direction: connecting, then the code with Codes differ and Codes match,
// then waiting for the other user, then how it ended.
type pairView struct {
	u        *UI
	id       string
	peer     Peer
	incoming bool
	answered bool // this user gave their verdict
	ended    bool

	dlg     *dialog.CustomDialog
	content *fyne.Container
	scroll  *container.Scroll // the content scrolls in a small window; the buttons stay
	shown   bool              // on screen
	m       *modal
	code    *widget.Label
	box     fyne.CanvasObject // the code panel, hidden until the code arrives
	line    *widget.Label
	status  *widget.Label
	differ  *button
	match   *button
	cancel  *button // before the verdict: stop pairing
	done    *button // once it ended, or after the verdict: close the dialog
	// onAnswer, when set, runs after the user's verdict (the prompt queue
	// lets the next prompt in).
	onAnswer func()
}

// newPairView builds the dialog for pairing transfer id with peer.
func (u *UI) newPairView(id string, peer Peer, incoming bool) *pairView {
	v := &pairView{u: u, id: id, peer: peer, incoming: incoming}
	who := u.sentenceWho(peer)
	v.code = codeLabel("")
	v.line = widget.NewLabel(checkLine(who))
	v.box = codeBox(v.code, v.line)
	v.box.Hide()
	v.status = widget.NewLabel("")
	v.status.Wrapping = fyne.TextWrapWord
	v.differ = u.newButton("Codes differ", theme.CancelIcon(), func() { v.answer(false) })
	v.differ.Importance = widget.DangerImportance
	v.match = u.newButton("Codes match", theme.ConfirmIcon(), func() { v.answer(true) })
	v.match.Importance = widget.HighImportance
	v.cancel = u.newButton("Cancel", nil, v.stop)
	v.done = u.newButton("Close", nil, v.close)
	v.done.Importance = widget.HighImportance
	v.differ.Hide()
	v.match.Hide()
	v.done.Hide()

	id2 := widget.NewLabel("Device ID " + GroupID(peer.ID))
	id2.SizeName = theme.SizeNameCaptionText
	id2.Wrapping = fyne.TextWrapWord // the ID whole on the next line, as in the prompt
	if peer.ID == "" {
		id2.Hide()
	}
	title := "Pair with " + who
	v.status.SetText(fmt.Sprintf("Connecting to %s…", who))
	if incoming {
		title = "Pairing request"
		v.status.SetText(fmt.Sprintf("%s asks to pair with this device. Once paired, each device trusts the other and can tell if someone poses as it.", who))
	}
	v.content = container.NewVBox(id2, v.box, v.status)
	v.scroll = container.NewVScroll(v.content)
	v.dlg = dialog.NewCustomWithoutButtons(title, v.scroll, u.win)
	v.dlg.SetButtons([]fyne.CanvasObject{v.cancel, v.differ, v.match, v.done})
	v.m = &modal{dismiss: v.escape, scroll: v.scroll}
	u.pairs[id] = v
	return v
}

// show puts the dialog on screen, the focus on its safe button.
func (v *pairView) show() {
	if v.shown {
		return
	}
	v.shown = true
	fitScroll(v.dlg, v.scroll, 480)
	first := fyne.Focusable(v.cancel)
	if v.differ.Visible() {
		first = v.differ
	}
	v.u.showModal(v.dlg, v.m, first)
	v.dlg.SetOnClosed(func() {
		v.shown = false
		v.u.dropModal(v.m)
		if !v.answered && !v.ended {
			v.stop() // closed without an answer: no pairing
		}
		if v.u.pairs[v.id] == v {
			delete(v.u.pairs, v.id)
		}
	})
}

// setCode shows the code and asks for the verdict.
func (v *pairView) setCode(code string) {
	v.code.SetText(GroupCode(code))
	v.box.Show()
	if v.answered || v.ended {
		return
	}
	v.status.SetText("Say whether the codes match. Once both of you confirm, each device trusts the other.")
	v.cancel.Hide()
	v.differ.Show()
	v.match.Show()
	v.dlg.Refresh()
	if v.shown {
		fitScroll(v.dlg, v.scroll, 480)
		v.u.win.Canvas().Focus(v.differ)
	}
}

// answer records the user's verdict and waits for the other side's.
func (v *pairView) answer(match bool) {
	if v.answered || v.ended {
		return
	}
	if !v.u.confirmPair(v.id, match) {
		return
	}
	v.answered = true
	who := v.u.sentenceWho(v.peer)
	if match {
		v.status.SetText(fmt.Sprintf("Waiting for %s to confirm the code…", who))
	} else {
		v.status.SetText("Stopping: the codes differ.")
	}
	v.differ.Hide()
	v.match.Hide()
	v.done.Show()
	v.dlg.Refresh()
	v.u.win.Canvas().Focus(v.done)
	if v.onAnswer != nil {
		v.onAnswer()
	}
}

// finish shows how the pairing ended.
func (v *pairView) finish(r *Result) {
	v.ended = true
	who := v.u.sentenceWho(v.peer)
	v.status.Importance = widget.MediumImportance
	switch {
	case r.State == StateDone:
		v.status.SetText(fmt.Sprintf("Paired with %s. Each device now trusts the other: files from %s are accepted as your settings say for trusted devices.", who, who))
		v.status.Importance = widget.SuccessImportance
	case r.Code == CodeNotPaired:
		v.status.SetText("Not paired. " + failure(Outcome{Code: r.Code, ByPeer: r.ByPeer}, false, who) + ".")
		v.status.Importance = widget.DangerImportance
	case r.Code == CodePairedBefore:
		// Still paired: a warning, not a failure to pair.
		v.status.SetText(failure(Outcome{Code: r.Code, ByPeer: r.ByPeer}, false, who) + ".")
		v.status.Importance = widget.WarningImportance
	case r.Err != "":
		v.status.SetText("Not paired. " + r.Err)
		v.status.Importance = widget.DangerImportance
	default:
		v.status.SetText(fmt.Sprintf("Not paired with %s.", who))
		v.status.Importance = widget.DangerImportance
	}
	v.status.Refresh()
	v.cancel.Hide()
	v.differ.Hide()
	v.match.Hide()
	v.done.Show()
	v.dlg.Refresh()
	if v.shown {
		fitScroll(v.dlg, v.scroll, 480)
		v.u.win.Canvas().Focus(v.done)
	}
}

// escape: before the verdict Escape stops pairing; after it closes the dialog.
func (v *pairView) escape() {
	if !v.answered && !v.ended {
		v.stop()
	}
	v.close()
}

// stop ends a pairing the user gave up on (no verdict on the code).
func (v *pairView) stop() {
	if v.answered || v.ended {
		v.close()
		return
	}
	v.answered = true // nothing more to say about it
	v.u.cancel(v.id)
	v.close()
	if v.onAnswer != nil {
		v.onAnswer()
	}
}

func (v *pairView) close() { v.dlg.Hide() }

// pairWith starts pairing with dev (Pair… on a device).
func (u *UI) pairWith(dev Device) {
	if v, ok := u.pairing(dev.ID); ok {
		v.show()
		return
	}
	id, err := u.be.Pair(dev)
	if err != nil {
		u.showError("Could not pair with "+u.deviceWho(dev), err)
		return
	}
	v := u.newPairView(id, Peer{ID: dev.ID, Name: displayName(dev)}, false)
	v.show()
}

// pairing returns the open pairing dialog with device id, if any.
func (u *UI) pairing(deviceID string) (*pairView, bool) {
	if deviceID == "" {
		return nil, false
	}
	for _, v := range u.pairs {
		if v.peer.ID == deviceID && !v.ended {
			return v, true
		}
	}
	return nil, false
}

// applyPairing renders an event of a pairing without files: it is a
// dialog, never a transfer row.
func (u *UI) applyPairing(ev TransferEvent) {
	v := u.pairs[ev.ID]
	switch ev.Kind {
	case TransferPair:
		if ev.Pair == nil {
			return
		}
		if ev.Direction == Incoming {
			if v == nil {
				u.prompts.offer(ev)
			}
			return
		}
		if v == nil {
			v = u.newPairView(ev.ID, ev.Peer, false)
			v.show()
		}
		if ev.Peer.ID != "" {
			v.peer = ev.Peer
		}
		v.setCode(ev.Pair.Code)
	case TransferResult:
		if ev.Result == nil {
			return
		}
		if ev.Result.State == StateDone {
			u.devicePaired(ev.Peer.ID)
		}
		if v != nil {
			v.finish(ev.Result) // first: closing an ended pairing stops nothing
		}
		if u.prompts.queued(ev.ID) {
			// Never answered: the other device gave up, or time ran out.
			u.prompts.remove(ev.ID)
			u.notifyPairing(ev)
			return
		}
		if v == nil || !v.shown {
			u.notifyPairing(ev)
		}
	}
}

// notifyPairing tells how a pairing whose dialog is closed ended.
func (u *UI) notifyPairing(ev TransferEvent) {
	who := u.sentenceWho(ev.Peer)
	r := ev.Result
	switch {
	case r.State == StateDone:
		u.notify("Paired", fmt.Sprintf("%s and this device now trust each other.", who))
	case r.Code == CodeCancelled && !r.ByPeer:
		// The user stopped it.
	case r.Code == CodeNotPaired:
		u.notify("Not paired", failure(Outcome{Code: r.Code, ByPeer: r.ByPeer}, false, who)+".")
	case r.Code == CodePairedBefore:
		u.notify("Still paired", failure(Outcome{Code: r.Code, ByPeer: r.ByPeer}, false, who)+".")
	case r.Err != "":
		u.notify("Not paired", fmt.Sprintf("Pairing with %s did not finish. %s", who, r.Err))
	default:
		u.notify("Not paired", fmt.Sprintf("Pairing with %s did not finish.", who))
	}
}

// devicePaired marks a device paired (and trusted) wherever it is listed.
func (u *UI) devicePaired(id string) {
	if id == "" {
		return
	}
	if d, ok := u.devices.devices[id]; ok {
		d.Paired, d.Trusted, d.Known = true, true, true
		u.devices.devices[id] = d
		u.devices.render()
	}
	for _, v := range u.transfers.byID {
		if v.peer.ID == id && v.pair.obj.Visible() {
			u.transfers.refreshPair(v) // no code left to ask about
		}
	}
	if u.known != nil {
		u.known.reload()
	}
}

// showPairRequest is the prompt queue's dialog for a device asking to pair.
func (q *promptQueue) showPairRequest(p *prompt) {
	u := q.u
	v := u.newPairView(p.ev.ID, p.ev.Peer, true)
	if p.ev.Pair != nil {
		v.setCode(p.ev.Pair.Code)
	}
	v.onAnswer = func() {
		// The dialog stays to show how it ends; the queue moves on. What
		// was said of the wait goes: answered, the request no longer
		// expires ("Expires in 1:57" stayed under "Paired with Bob").
		p.dlg = nil
		p.countdown.Hide()
		p.more.Hide()
		q.remove(p.ev.ID)
	}
	p.dlg = v.dlg
	p.countdown = widget.NewLabel(countdownText(p.deadline.Sub(u.now())))
	p.countdown.Importance = widget.WarningImportance
	p.more = widget.NewLabel("")
	p.more.TextStyle.Italic = true
	p.more.Hide()
	v.content.Add(container.NewHBox(layoutSpacer(), p.countdown))
	v.content.Add(p.more)
	q.updateMore()
	u.revealWindow()
	v.show()
}

// pairStrip is the code in a sending transfer's row: the receiver is not
// trusted yet, and its screen shows the same code unless someone is in the
// middle.
type pairStrip struct {
	obj    *fyne.Container
	code   *widget.Label
	line   *widget.Label
	differ *button
	match  *button
}

func (l *transferList) newPairStrip(v *transferView) *pairStrip {
	u := l.u
	id := v.id
	s := &pairStrip{}
	s.code = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	s.code.SizeName = theme.SizeNameSubHeadingText
	s.line = widget.NewLabel("")
	s.line.Wrapping = fyne.TextWrapWord
	s.differ = u.newButton("Codes differ", theme.CancelIcon(), func() { l.answerCode(id, false) })
	s.match = u.newButton("Codes match", theme.ConfirmIcon(), func() { l.answerCode(id, true) })
	s.match.Importance = widget.HighImportance
	caption := widget.NewLabel("Verification code")
	caption.SizeName = theme.SizeNameCaptionText
	head := container.New(&codeHeadLayout{}, container.New(&tightVBox{}, caption, s.code), s.differ, s.match)
	s.obj = container.NewVBox(head, s.line)
	s.obj.Hide()
	return s
}

// codeHeadLayout lays out the head of a code strip: the code (the first
// object) and its buttons on one line where they fit, else the buttons
// under it side by side, else one under the other, right-aligned. Its
// smallest width is its widest object's: code and buttons side by side
// widened the window's smallest size (by 54 px) while the strip showed.
// It remembers the last width it laid out, which its height depends on.
type codeHeadLayout struct{ width float32 }

// lines splits the visible objects into the lines they take in width w
// (0: not laid out yet, one line).
func (l *codeHeadLayout) lines(objs []fyne.CanvasObject, w float32) [][]fyne.CanvasObject {
	var shown []fyne.CanvasObject
	for _, o := range objs {
		if o.Visible() {
			shown = append(shown, o)
		}
	}
	if len(shown) < 2 {
		return [][]fyne.CanvasObject{shown}
	}
	if w == 0 || lineWidth(shown) <= w {
		return [][]fyne.CanvasObject{shown}
	}
	if btns := shown[1:]; lineWidth(btns) <= w {
		return [][]fyne.CanvasObject{shown[:1], btns}
	}
	out := make([][]fyne.CanvasObject, len(shown))
	for i, o := range shown {
		out[i] = []fyne.CanvasObject{o}
	}
	return out
}

// lineWidth is how wide objs are side by side.
func lineWidth(objs []fyne.CanvasObject) float32 {
	w := theme.Padding() * float32(len(objs)-1)
	for _, o := range objs {
		w += o.MinSize().Width
	}
	return w
}

// lineHeight is the height of the tallest of objs.
func lineHeight(objs []fyne.CanvasObject) float32 {
	var h float32
	for _, o := range objs {
		h = max(h, o.MinSize().Height)
	}
	return h
}

func (l *codeHeadLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	l.width = size.Width
	lines := l.lines(objs, size.Width)
	var y float32
	for i, line := range lines {
		h := lineHeight(line)
		x := size.Width
		for j := len(line) - 1; j >= 0; j-- {
			o := line[j]
			m := o.MinSize()
			if i == 0 && j == 0 {
				x = 0 // the code, at the left
			} else {
				x -= m.Width
			}
			o.Resize(m)
			o.Move(fyne.NewPos(max(x, 0), y+(h-m.Height)/2))
			x -= theme.Padding()
		}
		y += h + theme.Padding()
	}
}

func (l *codeHeadLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var s fyne.Size
	for i, line := range l.lines(objs, l.width) {
		for _, o := range line {
			s.Width = max(s.Width, o.MinSize().Width)
		}
		if i > 0 {
			s.Height += theme.Padding()
		}
		s.Height += lineHeight(line)
	}
	return s
}

// answerCode passes the sending user's verdict on the row's code.
func (l *transferList) answerCode(id string, match bool) {
	v := l.byID[id]
	if v == nil || v.dir != Outgoing || v.codeAnswered || v.codeShown == CodeShownNo || v.codeShown == CodeShownWaiting || v.codeShown == CodeShownQueued {
		return
	}
	if !l.u.confirmPair(id, match) {
		return
	}
	v.codeAnswered, v.codeMatched = true, match
	if match {
		l.u.devicePaired(v.peer.ID)
	}
	l.refresh(v)
}

// refreshPair shows or hides the row's code: sending, asked while the
// transfer may still be trusted through it, gone once answered;
// receiving, the code the prompt showed, for the sender's user to
// compare with theirs (refreshPromptCode).
func (l *transferList) refreshPair(v *transferView) {
	if v.dir == Incoming {
		l.refreshPromptCode(v)
		return
	}
	d, listed := l.u.devices.devices[v.peer.ID]
	ask := v.dir == Outgoing && v.pairCode != "" && !v.codeAnswered &&
		(!v.state.Final() || v.state == StateDone) &&
		!(listed && d.Paired) // paired meanwhile (Pair…, or another transfer's code)
	if !ask {
		l.setPairStrip(v, "", "", false)
		return
	}
	// Only a code the other screen showed is offered for comparison: a
	// receiver that accepted without asking (a Retry it had accepted, "accept
	// all") never showed it, and "Codes match" trusted it all the same.
	who := l.u.sentenceWho(v.peer)
	line := checkLine(who) + " If it does, Ferry trusts it from now on."
	switch v.codeShown {
	case CodeShownNo:
		line = fmt.Sprintf("%s accepted without showing this code, so there is nothing to compare it with. To trust %s, use Pair… to compare codes with it.", who, who)
		if v.again {
			// A send it took before goes on unasked: it may have shown
			// that session's code, which is not this one.
			line = fmt.Sprintf("%s went on with this send without asking, so its screen does not show this code: the code is new each time Ferry connects, and any code it showed when it first took the send was another one. To trust %s, use Pair… to compare codes with it.", who, who)
		}
	case CodeShownUnknown:
		line = checkLine(who) + " Its Ferry is older and does not say whether it showed the code: if it does not, compare codes with Pair… instead. If it does, Ferry trusts it from now on."
	case CodeShownWaiting:
		line = fmt.Sprintf("Waiting for %s to show your offer: its screen shows this code with it. Compare the codes then.", who)
	case CodeShownQueued:
		line = fmt.Sprintf("%s is answering another device's offer first: its screen shows this code once your offer's turn comes. Compare the codes then.", who)
		if v.codeAhead > 0 {
			line = fmt.Sprintf("Your offer is queued on %s behind %s waiting for an answer: its screen shows this code once your offer's turn comes. Compare the codes then.",
				who, plural(v.codeAhead, "other offer"))
		}
	}
	compare := v.codeShown != CodeShownNo && v.codeShown != CodeShownWaiting && v.codeShown != CodeShownQueued
	l.setPairStrip(v, v.pairCode, line, compare)
}

// refreshPromptCode shows, in a receiving row, the verification code its
// prompt showed: the sender's row asks its user to check that this screen
// shows the same code, which the prompt no longer does once answered. It
// only shows the code, with no buttons: comparing it here trusts nobody
// (the sender trusts this device through its own Codes match; this one
// trusts the sender only through Always accept's question or Pair…).
// Shown once the prompt was answered (before, the prompt shows it) and
// while the code may still be compared, as the sender's is.
func (l *transferList) refreshPromptCode(v *transferView) {
	show := v.promptCode != "" && v.state != StateWaiting && (!v.state.Final() || v.state == StateDone)
	if !show {
		l.setPairStrip(v, "", "", false)
		return
	}
	who := l.u.sentenceWho(v.peer)
	line := fmt.Sprintf("Shown with the offer. %s shows the same code unless another device is in the middle: its user may compare the two. To trust %s here, use Pair… to compare codes with it.", who, who)
	if v.codeMatched {
		line = fmt.Sprintf("Shown with the offer; you said %s shows the same code, so this device trusts it. Its user may compare the two as well.", who)
	}
	l.setPairStrip(v, v.promptCode, line, false)
}

// setPairStrip shows the row's code strip with code, the line under it
// and, when compare, Codes differ and Codes match; code "" hides it.
// Progress refreshes the row often: only what changed is set.
func (l *transferList) setPairStrip(v *transferView, code, line string, compare bool) {
	s := v.pair
	if code == "" {
		if s.obj.Visible() {
			s.obj.Hide()
			v.obj.Refresh()
			l.box.Refresh()
		}
		return
	}
	if c := GroupCode(code); s.code.Text != c {
		s.code.SetText(c)
	}
	if s.line.Text != line {
		s.line.SetText(line)
	}
	if compare != s.match.Visible() {
		if compare {
			s.differ.Show()
			s.match.Show()
		} else {
			s.differ.Hide()
			s.match.Hide()
		}
	}
	if !s.obj.Visible() {
		s.obj.Show()
		v.obj.Refresh()
		l.box.Refresh()
	}
}

// keyWarning is a shown key-change warning, by the two keys it is about.
type keyWarning struct {
	known, presented string
}

// keyChanged warns that a known device presented another key: a dialog
// when the window is on screen, a notification (which opens the dialog)
// otherwise. Either offers to forget the old device so it can be paired
// again. The known device is named as its row names it: with its short ID
// beside a name another listed device shows too (sentenceWho), the likely
// case here (the vm paired with, and the one that calls itself vm with
// another key). The ID is the remembered device's, the one Forget removes;
// the presented key is written out whole under the warning.
func (u *UI) keyChanged(ev TransferEvent) {
	kc := ev.KeyChange
	if kc == nil {
		return
	}
	k := keyWarning{known: kc.Known.ID, presented: kc.PresentedID}
	if u.keyWarnings[k] {
		return // already on screen
	}
	if u.hidden {
		who := u.sentenceWho(kc.Known)
		u.notifyActions("Device key changed", kc.Warning, []NoticeAction{
			{Key: "default", Label: "Show", Do: func() { u.revealWindow(); u.showKeyChanged(kc) }},
			{Key: "forget", Label: "Forget " + who, Do: func() { u.forgetChangedKey(kc) }},
		})
		return
	}
	u.showKeyChanged(kc)
}

// showKeyChanged is the key-change warning dialog.
func (u *UI) showKeyChanged(kc *KeyChange) {
	k := keyWarning{known: kc.Known.ID, presented: kc.PresentedID}
	if u.keyWarnings[k] {
		return
	}
	u.keyWarnings[k] = true
	who := u.sentenceWho(kc.Known)
	icon := widget.NewIcon(theme.WarningIcon())
	head := widget.NewLabelWithStyle(fmt.Sprintf("%s presented a different key", who), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	head.Wrapping = fyne.TextWrapWord
	head.Importance = widget.DangerImportance
	text := widget.NewLabel(kc.Warning)
	text.Wrapping = fyne.TextWrapWord
	ids := widget.NewLabel(fmt.Sprintf("Known key %s\nPresented key %s", GroupID(kc.Known.ID), GroupID(kc.PresentedID)))
	ids.SizeName = theme.SizeNameCaptionText
	ids.Wrapping = fyne.TextWrapWord // a key whole on the next line, not broken inside a group
	var d *dialog.CustomDialog
	closeBtn := u.newButton("Close", nil, func() { d.Hide() })
	forget := u.newButton("Forget "+who, theme.DeleteIcon(), func() {
		d.Hide()
		u.forgetChangedKey(kc)
	})
	forget.Importance = widget.DangerImportance
	d = dialog.NewCustomWithoutButtons("Device key changed",
		container.NewVBox(container.NewBorder(nil, nil, icon, nil, head), text, ids), u.win)
	d.SetButtons([]fyne.CanvasObject{closeBtn, forget})
	d.Resize(fyne.NewSize(520, 0))
	m := &modal{dismiss: d.Hide}
	u.showModal(d, m, closeBtn)
	d.SetOnClosed(func() {
		u.dropModal(m)
		delete(u.keyWarnings, k)
	})
}

// forgetChangedKey forgets the device whose key changed, so the one with
// the new key can be paired as a new device.
func (u *UI) forgetChangedKey(kc *KeyChange) {
	if kc.Known.ID == "" {
		return
	}
	who := u.sentenceWho(kc.Known) // as the Forget button said, before the list loses it
	if err := u.be.ForgetDevice(kc.Known.ID); err != nil {
		u.showError("Could not forget the device", err)
		return
	}
	if u.known != nil {
		u.known.reload()
	}
	u.devicesTrustChanged(kc.Known.ID, false)
	u.showMessage("Device forgotten", fmt.Sprintf("Ferry no longer knows %s. If it was reinstalled, pair with it again (Pair… on the device) and compare the codes on both screens.", who), "")
}
