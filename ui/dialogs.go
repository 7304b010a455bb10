package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/ui/transfer"
)

// Problem is an error whose Text is written for people: what happened and
// what to do. Err keeps the technical cause, which the error dialog shows
// under Details. Backends return it where they can say more than the cause.
type Problem struct {
	Text string
	Err  error
	// Kept: the setting the problem is about was saved all the same (only
	// putting it to use failed, and that is tried again), so a message
	// about saving says the settings were saved.
	Kept bool
}

// allKept reports whether every problem in err is about a setting that was
// saved all the same (a Problem with Kept); an error that is no Problem
// counts as not saved.
func allKept(err error) bool {
	for _, e := range joined(err) {
		var p *Problem
		if !errors.As(e, &p) || !p.Kept {
			return false
		}
	}
	return true
}

func (p *Problem) Error() string {
	if p.Err == nil {
		return p.Text
	}
	return p.Text + ": " + p.Err.Error()
}

func (p *Problem) Unwrap() error { return p.Err }

// showError tells the user that what failed. The sentence comes from a
// Problem when err holds one; any technical text waits behind Details.
func (u *UI) showError(what string, err error) {
	var texts, details []string
	for _, e := range joined(err) {
		var p *Problem
		if !errors.As(e, &p) {
			details = append(details, e.Error())
			continue
		}
		texts = append(texts, p.Text)
		if p.Err != nil {
			details = append(details, p.Err.Error())
		}
	}
	u.showMessage(what, strings.Join(texts, "\n\n"), strings.Join(details, "\n"))
}

// joined lists the errors errors.Join put together in err (each said on
// its own: a settings save can fail in two places), or err alone.
func joined(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, joined(e)...)
	}
	return out
}

// showMessage shows a headline, an optional sentence and optional technical
// detail behind a Details button. Escape or Enter closes it.
func (u *UI) showMessage(title, text, detail string) {
	var objs []fyne.CanvasObject
	if text != "" {
		l := widget.NewLabel(text)
		l.Wrapping = fyne.TextWrapWord
		objs = append(objs, l)
	}
	var d *dialog.CustomDialog
	closeBtn := u.newButton("Close", nil, func() { d.Hide() })
	closeBtn.Importance = widget.HighImportance
	buttons := []fyne.CanvasObject{closeBtn}
	if detail != "" {
		more := widget.NewLabel(EscapeText(detail)) // an engine error can carry a peer's words
		more.Wrapping = fyne.TextWrapWord           // sentences; a long path still wraps within
		more.Hide()
		objs = append(objs, more)
		var toggle *button
		toggle = u.newButton("Details", theme.InfoIcon(), func() {
			if more.Visible() {
				more.Hide()
				toggle.SetText("Details")
			} else {
				more.Show()
				toggle.SetText("Hide details")
			}
			d.Resize(fyne.NewSize(440, d.MinSize().Height))
		})
		buttons = append([]fyne.CanvasObject{toggle}, buttons...)
	}
	if len(objs) == 0 {
		objs = append(objs, widget.NewLabel(""))
	}
	d = dialog.NewCustomWithoutButtons(title, container.NewVBox(objs...), u.win)
	d.SetButtons(buttons)
	d.Resize(fyne.NewSize(440, 0))
	u.showModal(d, &modal{dismiss: d.Hide, confirm: d.Hide}, closeBtn)
}

// showFileDialog shows one of Fyne's file dialogs, nearly as large as the
// window, with Escape cancelling it.
func (u *UI) showFileDialog(d *dialog.FileDialog) {
	s := u.win.Canvas().Size()
	if s.Width > 200 && s.Height > 200 {
		d.Resize(fyne.NewSize(s.Width*0.9, s.Height*0.9))
	}
	// Its own buttons are Fyne's and do not pass Escape on; nothing focused
	// means Escape reaches the canvas.
	u.showModal(d, &modal{dismiss: d.Dismiss}, nil)
}

// dialogPad is the room a Fyne dialog leaves on each side of its content.
const dialogPad = 24

// fitScroll sizes a dialog whose content is the scroll s to show all of s
// at width (or wider when the content needs it). A modal dialog never grows
// beyond its window: there the content gets what is left above the buttons
// and scrolls, so the buttons stay visible at any window size.
func fitScroll(d dialog.Dialog, s *container.Scroll, width float32) {
	// Wrapping labels know their height only once they know their width:
	// lay the content out at about the width it will get first.
	inner := width - 2*dialogPad
	s.Content.Resize(fyne.NewSize(inner, s.Content.MinSize().Height))
	s.Content.Resize(fyne.NewSize(inner, s.Content.MinSize().Height))
	s.SetMinSize(s.Content.MinSize())
	natural := d.MinSize()
	s.SetMinSize(fyne.NewSize(0, 0))
	d.Resize(fyne.NewSize(max(width, natural.Width), natural.Height))
}

// showAddDevice asks for an address and adds the device that answers there.
func (u *UI) showAddDevice() {
	addr := u.newEntry()
	addr.SetPlaceHolder("192.168.1.20:47800 or ferry://…")
	hint := widget.NewLabel("The address or link Ferry shows on the other device (\"My address\"), with its port.")
	hint.Wrapping = fyne.TextWrapWord
	hint.SizeName = theme.SizeNameCaptionText
	var d *dialog.CustomDialog
	submit := func() {
		a, id, err := ParseDeviceAddress(addr.Text)
		if err != nil {
			hint.SetText("Enter an address with its port, like 192.168.1.20:47800, or the other device's ferry:// link.")
			hint.Importance = widget.DangerImportance
			hint.Refresh()
			u.win.Canvas().Focus(addr)
			return
		}
		d.Hide()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			dev, err := u.be.AddDevice(ctx, a, id)
			u.opt.Do(func() {
				if err != nil {
					u.showError("Could not add the device at "+EscapeName(a), err)
					return
				}
				u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: dev})
			})
		}()
	}
	addr.OnSubmitted = func(string) { submit() }
	add := u.newButton("Add", theme.ContentAddIcon(), submit)
	add.Importance = widget.HighImportance
	cancel := u.newButton("Cancel", nil, func() { d.Hide() })
	form := widget.NewForm(widget.NewFormItem("Address", addr))
	d = dialog.NewCustomWithoutButtons("Add device by address", container.NewVBox(form, hint), u.win)
	d.SetButtons([]fyne.CanvasObject{cancel, add})
	d.Resize(fyne.NewSize(440, 0))
	u.showModal(d, &modal{dismiss: d.Hide, confirm: submit}, addr)
}

// confirmQuitWithoutTray tells the user, the first time they close the
// window on a desktop without a tray, that closing quits Ferry.
// A transfer under way is said there too, so one question covers both.
func (u *UI) confirmQuitWithoutTray() {
	msg := "This desktop shows no tray icons, so Ferry cannot keep running in the background. " +
		"Closing the window quits Ferry, and nearby devices can no longer send you files until you open it again."
	if running := u.transfers.running(); len(running) > 0 {
		msg += "\n\n" + quitCutsText(running, u.keptForNextStart)
	}
	u.confirmQuit(msg, "Keep Ferry open")
}

// confirmQuitDuringTransfer asks whether to quit while the deliveries
// running are under way.
func (u *UI) confirmQuitDuringTransfer(running []*transfer.Delivery) {
	u.confirmQuit(quitCutsText(running, u.keptForNextStart)+" Quit anyway?", "Keep running")
}

// confirmQuit asks "Quit Ferry?" with msg; Enter quits, Escape keeps
// Ferry open (keepLabel's button).
func (u *UI) confirmQuit(msg, keepLabel string) {
	text := widget.NewLabel(msg)
	text.Wrapping = fyne.TextWrapWord
	var d *dialog.CustomDialog
	keep := u.newButton(keepLabel, nil, func() { d.Hide() })
	quit := u.newButton("Quit Ferry", nil, func() { d.Hide(); u.quitNow() })
	quit.Importance = widget.HighImportance
	d = dialog.NewCustomWithoutButtons("Quit Ferry?", text, u.win)
	d.SetButtons([]fyne.CanvasObject{keep, quit})
	d.Resize(fyne.NewSize(440, 0))
	u.showModal(d, &modal{dismiss: d.Hide, confirm: func() { d.Hide(); u.quitNow() }}, quit)
}

// quitCutsText says which transfers quitting would stop, and what becomes
// of them: what arrived is kept, and a send to this device goes on when it
// is back (the sender's Ferry sends the rest); a send from this device
// goes on when Ferry starts again where kept says the app keeps it (its
// unfinished sends to Ferry devices; one to a LocalSend phone is stopped).
func quitCutsText(running []*transfer.Delivery, kept func(id string) bool) string {
	sends := 0
	for _, d := range running {
		if d.Direction == transfer.Outgoing && kept(d.ID) {
			sends++
		}
	}
	if len(running) == 1 {
		d := running[0]
		peer := d.Peer // escaped already
		if peer == "" {
			peer = "the other device"
		}
		if d.Direction == transfer.Incoming {
			return fmt.Sprintf("A transfer is in progress: receiving from %s. Quitting stops it; what has arrived is kept.", peer)
		}
		if sends == 0 {
			return fmt.Sprintf("A transfer is in progress: sending to %s. Quitting stops it; what has arrived is kept.", peer)
		}
		return fmt.Sprintf("A transfer is in progress: sending to %s. Quitting stops it; Ferry sends the rest when it starts again.", peer)
	}
	switch sends {
	case 0:
		return fmt.Sprintf("%d transfers are in progress. Quitting stops them; what has arrived is kept.", len(running))
	case len(running):
		return fmt.Sprintf("%d transfers are in progress. Quitting stops them; Ferry sends the rest when it starts again.", len(running))
	case 1:
		return fmt.Sprintf("%d transfers are in progress. Quitting stops them; what has arrived is kept, and Ferry sends the rest of one send when it starts again.", len(running))
	}
	return fmt.Sprintf("%d transfers are in progress. Quitting stops them; what has arrived is kept, and Ferry sends the rest of %d sends when it starts again.", len(running), sends)
}

// SendKeeper is what a Backend may do besides: say whether the send of
// delivery id goes on by itself at the app's next start (the app keeps
// sends to Ferry devices, not to LocalSend ones or bare addresses). A
// Backend without it keeps none.
type SendKeeper interface {
	KeptForNextStart(id string) bool
}

// keptForNextStart reports whether the backend keeps the send of delivery
// id for its next start, so that quitting may promise the rest.
func (u *UI) keptForNextStart(id string) bool {
	k, ok := u.be.(SendKeeper)
	return ok && k.KeptForNextStart(id)
}

// ShowError shows an error that the app found out about later (a folder
// that no app could open). Call it on the Fyne goroutine.
func (u *UI) ShowError(what string, err error) { u.showError(what, err) }
