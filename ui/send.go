package ui

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// This file is what the user sends and to whom: picking files and folders
// (the platform's dialog, Fyne's as the fallback), a text or the clipboard,
// and the send sheet that lists the items and the devices to check.

// pick asks for files or folders with the platform's dialog when there is
// one, else with Fyne's (one file or folder at a time). done gets at least
// one path; a cancel calls nothing.
func (u *UI) pick(req PickRequest, done func([]string)) {
	if u.opt.Picker != nil {
		u.opt.Picker(req, func(paths []string, err error) {
			switch {
			case errors.Is(err, ErrNoPicker):
				u.fynePick(req, done)
			case err != nil:
				u.showError("Could not show the file dialog", err)
			case len(paths) > 0:
				done(paths)
			}
		})
		return
	}
	u.fynePick(req, done)
}

// fynePick is Fyne's own dialog: one file or one folder.
func (u *UI) fynePick(req PickRequest, done func([]string)) {
	if req.Folders {
		u.showFileDialog(dialog.NewFolderOpen(func(l fyne.ListableURI, err error) {
			if err == nil && l != nil {
				done([]string{l.Path()})
			}
		}, u.win))
		return
	}
	u.showFileDialog(dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) { u.picked(r, err, done) }, u.win))
}

// picked takes the file Fyne's dialog opened: its path to done, or, for
// a named pipe, socket or device (which guardFiles does not let Fyne
// open), what it is.
func (u *UI) picked(r fyne.URIReadCloser, err error, done func([]string)) {
	var sp *specialFileError
	switch {
	case errors.As(err, &sp):
		u.showMessage("Not a regular file", sp.Error(), "")
		return
	case err != nil:
		u.showError("Could not open the file", err)
		return
	case r == nil:
		return // cancelled
	}
	p := r.URI().Path()
	_ = r.Close()
	done([]string{p})
}

// pickAndSend lets the user choose files, then sends them to devs (or
// asks to whom, when devs is empty).
func (u *UI) pickAndSend(devs []Device) {
	u.pick(PickRequest{Title: "Send files", Multiple: true}, func(paths []string) { u.sendOrAsk(devs, Items{Paths: paths}) })
}

// pickFolderAndSend lets the user choose folders to send.
func (u *UI) pickFolderAndSend(devs []Device) {
	u.pick(PickRequest{Title: "Send a folder", Folders: true, Multiple: true}, func(paths []string) {
		u.sendOrAsk(devs, Items{Paths: paths})
	})
}

// sendOrAsk sends items to devs, or opens the send sheet when there are none.
func (u *UI) sendOrAsk(devs []Device, items Items) {
	if len(devs) == 0 {
		u.askSend(items, nil)
		return
	}
	for _, d := range devs {
		u.send(d, items)
	}
}

// send asks the backend to send to one device and reports a failure to start.
func (u *UI) send(d Device, items Items) {
	if err := u.be.Send(d, items); err != nil {
		u.showError("Could not send to "+u.deviceWho(d), err)
	}
}

// ItemsText names what a transfer holds in a few words: "a.jpg, b.jpg
// and 3 more", a folder as "Photos", a text as "a text".
func ItemsText(names []string, items int, text string) string {
	parts, tail := itemsParts(names, items, text)
	if tail != "" {
		tail = " " + tail
	}
	return strings.Join(parts, ", ") + tail
}

// itemsParts is ItemsText's names (at most two, or "a text") and what
// follows them ("and 3 more", "and a text", or nothing).
func itemsParts(names []string, items int, text string) (parts []string, tail string) {
	for _, n := range names {
		if len(parts) == 2 {
			break
		}
		parts = append(parts, EscapeName(n))
	}
	more := items - len(parts)
	if text != "" {
		more++ // the text counts as one item
		if len(parts) == 0 {
			more--
			parts = append(parts, "a text")
		}
	}
	switch {
	case more == 1 && text != "" && len(names) > 0:
		tail = "and a text"
	case more > 0:
		tail = "and " + HumanCount(more) + " more"
	}
	return parts, tail
}

// OfferNames lists the first top-level files and folders of an offer
// (folders first, as the offer sums them up; at most maxOfferNames) and
// says how many there are.
func OfferNames(o *Offer) (names []string, items int) {
	if o == nil {
		return nil, 0
	}
	loose := o.FileCount() - o.FoldersLeft.Files
	for _, f := range o.Folders {
		loose -= f.Files
		if len(names) < maxOfferNames {
			names = append(names, f.Path)
		}
	}
	for _, f := range o.Files {
		if len(names) == maxOfferNames {
			break
		}
		if !strings.Contains(f.Path, "/") {
			names = append(names, f.Path)
		}
	}
	return names, len(o.Folders) + o.FoldersLeft.Folders + max(loose, 0)
}

// maxOfferNames is how many names OfferNames gives: titles show two,
// History three.
const maxOfferNames = 3

// itemsLabel is the send sheet's "Sending a.jpg, b.txt and 3 more". Where
// a name with its comma is wider than the label, Fyne breaks the name
// within, and the comma could start the next line (", b.txt"): there it
// lists the names one per line, without commas.
type itemsLabel struct {
	widget.Label
	inline string   // "Sending a.jpg, b.txt and 3 more"
	lines  []string // "Sending", "a.jpg", "b.txt", "and 3 more"
}

func newItemsLabel() *itemsLabel {
	l := &itemsLabel{}
	l.Wrapping = fyne.TextWrapWord
	l.ExtendBaseWidget(l)
	return l
}

// set shows the words in front ("Sending") and the items' parts.
func (l *itemsLabel) set(lead string, parts []string, tail string) {
	l.inline = lead + " " + strings.Join(parts, ", ")
	l.lines = append([]string{lead}, parts...)
	if tail != "" {
		l.inline += " " + tail
		l.lines = append(l.lines, tail)
	}
	l.SetText(l.form(l.Size().Width))
}

// setText shows text as it is (a text sent: no list of names).
func (l *itemsLabel) setText(text string) {
	l.inline, l.lines = text, nil
	l.SetText(text)
}

// form is the text for a label width wide: the inline one unless one of
// its words does not fit on a line.
func (l *itemsLabel) form(width float32) string {
	if l.lines == nil || width <= 0 {
		return l.inline
	}
	th := l.Theme()
	room := width - 2*th.Size(theme.SizeNameInnerPadding)
	size := th.Size(theme.SizeNameText)
	for _, w := range strings.Fields(l.inline) {
		if fyne.MeasureText(w, size, l.TextStyle).Width > room {
			return strings.Join(l.lines, "\n")
		}
	}
	return l.inline
}

// Resize picks the form for the new width.
func (l *itemsLabel) Resize(s fyne.Size) {
	if t := l.form(s.Width); t != l.Text {
		l.Text = t
		l.Label.Resize(s)
		l.Refresh()
		return
	}
	l.Label.Resize(s)
}

// chooser is the send sheet: what is sent, with a way to add more, and the
// devices online now, each with a check; Send sends to every checked one,
// each as a transfer of its own. It follows the device list while open, so
// it can be shown before any device was found (files given on the command
// line at start).
type chooser struct {
	u       *UI
	items   Items
	devices []Device
	chosen  map[string]bool // device key -> checked
	checks  []*check        // one per device, in order
	names   []*sheetName    // the devices' names beside their checks
	what    *itemsLabel
	size    *widget.Label // "20,000 files, 58.6 MB", once counted
	// stopSurvey ends the count of the items under way (nil: none);
	// unsendable is the error a send of them would end with (Send waits).
	stopSurvey context.CancelFunc
	unsendable error
	head       *widget.Label // "To", with how many are checked
	list       *fyne.Container
	scroll     *container.Scroll
	add        *button
	sendBtn    *button
	dlg        *dialog.CustomDialog
}

// askDevice shows the send sheet for paths (files given on the command
// line, handed over by a second launch or the desktop's "Open with"), with
// the devices checked in the list checked, as a drop outside the rows
// does: the sheet opened this way started with none checked.
func (u *UI) askDevice(paths []string) { u.askSend(Items{Paths: paths}, u.devices.selected()) }

// askSend shows the send sheet for items with the devices of pre checked,
// replacing a sheet already open.
func (u *UI) askSend(items Items, pre []Device) {
	if u.ask != nil {
		u.ask.dlg.Hide()
	}
	c := &chooser{u: u, items: items, list: container.NewVBox(), chosen: map[string]bool{}}
	for _, d := range pre {
		c.chosen[d.Key()] = true
	}
	c.what = newItemsLabel()
	c.size = widget.NewLabel("")
	c.size.Wrapping = fyne.TextWrapWord
	c.size.SizeName = theme.SizeNameCaptionText
	c.add = u.newButton("Add files…", theme.ContentAddIcon(), func() {
		u.pick(PickRequest{Title: "Add files", Multiple: true}, func(paths []string) {
			c.items.Paths = append(c.items.Paths, paths...)
			c.describe()
		})
	})
	cancel := u.newButton("Cancel", nil, func() { c.dlg.Hide() })
	c.sendBtn = u.newButton("Send", theme.UploadIcon(), c.confirm)
	c.sendBtn.Importance = widget.HighImportance
	c.head = widget.NewLabelWithStyle("To", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	c.scroll = container.NewVScroll(container.NewVBox(container.NewBorder(nil, nil, nil, c.add, container.New(layout.NewCustomPaddedVBoxLayout(-2*theme.Padding()), c.what, c.size)), c.head, c.list))
	c.dlg = dialog.NewCustomWithoutButtons("Send", c.scroll, u.win)
	c.dlg.SetButtons([]fyne.CanvasObject{cancel, c.sendBtn})
	c.dlg.SetOnClosed(func() {
		if c.stopSurvey != nil {
			c.stopSurvey()
		}
		if u.ask == c {
			u.ask = nil
		}
	})
	u.ask = c
	c.describe()
	c.refresh()
	var first fyne.Focusable = cancel
	if len(c.checks) > 0 {
		first = c.checks[0]
	}
	u.showModal(c.dlg, &modal{dismiss: c.dlg.Hide, confirm: c.confirm, scroll: c.scroll}, first)
	c.fit()
}

// describe says what the sheet sends.
func (c *chooser) describe() {
	if c.items.Text != "" && len(c.items.Paths) == 0 {
		c.what.setText("Sending a text: " + clip(EscapeText(c.items.Text), 80))
		c.survey() // nothing to count
		return
	}
	var names []string
	for _, p := range c.items.Paths {
		names = append(names, filepath.Base(p))
	}
	parts, tail := itemsParts(names, len(c.items.Paths), c.items.Text)
	c.what.set("Sending", parts, tail)
	c.survey()
}

// survey counts the items' files and bytes off the Fyne goroutine, as a
// send walks them, and says so under their names; a count under way for
// the items before stops. Until it is in, the line says "Counting…"; an
// error the send would end with (a file gone, nothing but empty folders)
// shows there and Send waits for other items.
func (c *chooser) survey() {
	if c.stopSurvey != nil {
		c.stopSurvey()
		c.stopSurvey = nil
	}
	c.unsendable = nil
	c.updateSend()
	paths := slices.Clone(c.items.Paths)
	if len(paths) == 0 {
		c.size.Hide()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stopSurvey = cancel
	c.showSize("Counting…", widget.LowImportance)
	go func() {
		got, err := c.u.be.Survey(ctx, paths)
		c.u.opt.Do(func() {
			if ctx.Err() != nil {
				return // other items, or the sheet closed
			}
			cancel()
			if err != nil {
				c.unsendable = err
				c.showSize(upperFirst(EscapeLine(err.Error())), widget.DangerImportance)
				c.updateSend()
			} else {
				c.showSize(contentsText(got), widget.MediumImportance)
			}
			c.fit()
		})
	}()
}

// showSize sets the line under the items' names.
func (c *chooser) showSize(text string, imp widget.Importance) {
	c.size.Text, c.size.Importance = text, imp
	c.size.Show()
	c.size.Refresh()
}

// contentsText says what a send offers: "3 files, 7.3 MB"; "20,000 files
// and 2 empty folders, 58.6 MB. Left out: 1 symbolic link (not followed)".
func contentsText(c Contents) string {
	s := plural(c.Files, "file")
	if c.EmptyFolders > 0 {
		s += " and " + plural(c.EmptyFolders, "empty folder")
	}
	s += ", " + HumanBytes(c.Bytes)
	if c.Skipped != "" {
		s += ". Left out: " + c.Skipped
	}
	return s
}

// upperFirst starts s with a capital letter ("Cannot read …").
func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// refresh lists the devices online now, keeping what was checked.
func (c *chooser) refresh() {
	c.devices = c.u.devices.online()
	if len(c.devices) == 1 {
		// One device: it is the one, and Enter sends.
		c.chosen[c.devices[0].Key()] = true
	}
	c.checks, c.names = c.checks[:0], c.names[:0]
	objs := make([]fyne.CanvasObject, 0, len(c.devices)+1)
	for _, d := range c.devices {
		key := d.Key()
		ch := c.u.newCheck("", func(on bool) {
			c.chosen[key] = on
			c.updateSend()
		})
		ch.Checked = c.chosen[key]
		c.checks = append(c.checks, ch)
		// The name beside the check, not its text: the sheet is as wide
		// as its widest line, and a check's text is never shortened, so a
		// long or wide name took the sheet past the window's edge (cutting
		// it at maxSheetName letters did not do for wide ones). The name
		// gives way to the sheet's width; its short ID stays whole.
		name := newSheetName(clip(EscapeName(displayName(d)), maxSheetName), ch)
		c.names = append(c.names, name)
		tag := widget.NewLabel("(" + ShortID(d.ID) + ")")
		objs = append(objs, container.NewBorder(nil, nil, container.NewHBox(widget.NewIcon(osIcon(d.OS)), ch), nil,
			container.New(nameTagLayout{}, name, tag)))
	}
	if len(c.devices) == 0 {
		l := widget.NewLabel("Looking for devices… Open Ferry on the other device, or add it by address.")
		l.Wrapping = fyne.TextWrapWord
		objs = append(objs, l)
	}
	c.list.Objects = objs
	c.list.Refresh()
	c.updateSend()
}

// maxSheetName is how many characters of a device's name the send sheet
// shows at most (a name of 255 is not read whole there); the sheet's width
// shortens it further.
const maxSheetName = 60

// sheetName is a device's name beside its check in the send sheet,
// shortened to the width there is; a tap on it checks the device, as a
// tap on a check's own text does.
type sheetName struct {
	widget.Label
	ch *check
}

func newSheetName(text string, ch *check) *sheetName {
	n := &sheetName{ch: ch}
	n.Text = text
	n.Truncation = fyne.TextTruncateEllipsis
	n.ExtendBaseWidget(n)
	return n
}

// Tapped checks or unchecks the device.
func (n *sheetName) Tapped(*fyne.PointEvent) { n.ch.SetChecked(!n.ch.Checked) }

// targets are the checked devices that are online.
func (c *chooser) targets() []Device {
	var out []Device
	for _, d := range c.devices {
		if c.chosen[d.Key()] {
			out = append(out, d)
		}
	}
	return out
}

// updateSend says how many devices are checked; Send needs one at least.
// (The button keeps its label: a dialog does not lay its buttons out again.)
func (c *chooser) updateSend() {
	n := len(c.targets())
	switch {
	case c.unsendable != nil:
		c.sendBtn.Disable() // the line under the items says why
		return
	case n == 0:
		c.head.SetText("To (check one device or several)")
		c.sendBtn.Disable()
	case n == 1:
		c.head.SetText("To")
		c.sendBtn.Enable()
	default:
		c.head.SetText(fmt.Sprintf("To %d devices, each on its own", n))
		c.sendBtn.Enable()
	}
}

// confirm sends to every checked device, one transfer each.
func (c *chooser) confirm() {
	devs := c.targets()
	if len(devs) == 0 {
		return
	}
	c.dlg.Hide()
	for _, d := range devs {
		c.u.send(d, c.items)
	}
}

// fit sizes the sheet to its list; the window bounds it and the list scrolls.
func (c *chooser) fit() { fitScroll(c.dlg, c.scroll, 440) }

// devicesChanged keeps an open sheet in step with the device list.
func (c *chooser) devicesChanged() {
	focused := c.u.win.Canvas().Focused()
	hadFocus := false
	for _, b := range c.checks {
		if fyne.Focusable(b) == focused {
			hadFocus = true
		}
	}
	wasEmpty := len(c.checks) == 0
	c.refresh()
	c.fit()
	if (hadFocus || wasEmpty) && len(c.checks) > 0 {
		c.u.win.Canvas().Focus(c.checks[0])
	}
}

// choose checks the i-th device listed (tests, keyboard).
func (c *chooser) choose(i int) {
	if i >= 0 && i < len(c.checks) {
		c.checks[i].SetChecked(true)
	}
}

// showSendText asks for a text (a message, a link) and sends it to devs,
// or asks to whom when devs is empty. Ctrl+Enter sends.
func (u *UI) showSendText(devs []Device, initial string) {
	in := u.newTextEntry()
	in.SetText(initial)
	in.SetPlaceHolder("A message, a link…")
	count := widget.NewLabel("")
	count.SizeName = theme.SizeNameCaptionText
	var d *dialog.CustomDialog
	next := u.newButton("Choose devices…", theme.NavigateNextIcon(), nil)
	if len(devs) > 0 {
		next.SetText("Send")
		next.SetIcon(theme.MailSendIcon())
	}
	next.Importance = widget.HighImportance
	check := func(s string) bool {
		n := len(s)
		count.SetText(fmt.Sprintf("%s of %s", textSize(n), textSize(MaxTextBytes)))
		ok := n > 0 && n <= MaxTextBytes && utf8.ValidString(s)
		count.Importance = widget.MediumImportance
		if n > MaxTextBytes {
			count.SetText(fmt.Sprintf("Too long: %s of %s. Send it as a file instead.", textSize(n), textSize(MaxTextBytes)))
			count.Importance = widget.DangerImportance
		}
		count.Refresh()
		if ok {
			next.Enable()
		} else {
			next.Disable()
		}
		return ok
	}
	submit := func() {
		if !check(in.Text) {
			return
		}
		d.Hide()
		u.sendOrAsk(devs, Items{Text: in.Text})
	}
	next.OnTapped = submit
	in.OnChanged = func(s string) { check(s) }
	in.submit = submit
	check(in.Text)
	cancel := u.newButton("Cancel", nil, func() { d.Hide() })
	title := "Send text"
	switch {
	case len(devs) == 1:
		title = "Send text to " + u.deviceWho(devs[0])
	case len(devs) > 1: // the devices checked in the list
		title = fmt.Sprintf("Send text to %d devices", len(devs))
	}
	box := container.NewBorder(nil, count, nil, nil, container.NewGridWrap(fyne.NewSize(400, 160), in))
	d = dialog.NewCustomWithoutButtons(title, box, u.win)
	d.SetButtons([]fyne.CanvasObject{cancel, next})
	u.showModal(d, &modal{dismiss: d.Hide, confirm: submit}, in)
}

// sendClipboard sends what the clipboard holds to devs (or asks to whom):
// paths and file:// URIs of files that exist go as files, anything else as
// a text.
func (u *UI) sendClipboard(devs []Device) {
	content := u.app.Clipboard().Content()
	if strings.TrimSpace(content) == "" {
		u.showMessage("The clipboard is empty", "Copy some text, a link, or files in your file manager, then try again.", "")
		return
	}
	if paths := ClipboardPaths(content); len(paths) > 0 {
		u.sendOrAsk(devs, Items{Paths: paths})
		return
	}
	if len(content) > MaxTextBytes || !utf8.ValidString(content) {
		u.showMessage("The clipboard holds too much text", fmt.Sprintf("A text can be up to %s. Save it as a file and send the file.", textSize(MaxTextBytes)), "")
		return
	}
	if len(devs) == 0 {
		// Show what is about to go, so a password copied by mistake is not sent blind.
		u.showSendText(nil, content)
		return
	}
	u.sendOrAsk(devs, Items{Text: content})
}

// ClipboardPaths reads a clipboard's text as a list of files: one path or
// file:// URI per line (what file managers put there when files are
// copied, text/uri-list comments included). It returns nil unless every
// line names a file or folder that exists here.
func ClipboardPaths(s string) []string {
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p := line
		if strings.HasPrefix(line, "file://") {
			u, err := url.Parse(line)
			if err != nil || (u.Host != "" && u.Host != "localhost") {
				return nil
			}
			p = filepath.FromSlash(u.Path)
		}
		if !filepath.IsAbs(p) {
			return nil
		}
		if _, err := os.Stat(p); err != nil {
			return nil
		}
		out = append(out, p)
	}
	return out
}

// paste sends the clipboard's files or text, to the checked devices of the
// list or through the send sheet (Ctrl+V in the main window).
func (u *UI) paste() {
	if len(u.modals) > 0 {
		return
	}
	u.sendClipboard(u.devices.selected())
}

// clip shortens s to n runes with an ellipsis.
func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// textEntry is the multi-line entry of "Send text": Tab leaves it (a text
// to send rarely needs one, and the keyboard must reach the buttons),
// Escape closes the dialog and Ctrl+Enter sends.
type textEntry struct {
	widget.Entry
	u      *UI
	submit func()
}

func (u *UI) newTextEntry() *textEntry {
	e := &textEntry{u: u}
	e.MultiLine = true
	// No wrapping: Fyne re-wraps the whole text on every change, which
	// took minutes for a pasted 64 KB line (a long text scrolls sideways).
	e.Wrapping = fyne.TextWrapOff
	e.ExtendBaseWidget(e)
	return e
}

// AcceptsTab lets Tab move the focus on.
func (e *textEntry) AcceptsTab() bool { return false }

// TypedKey passes Escape to the dialog.
func (e *textEntry) TypedKey(ev *fyne.KeyEvent) {
	if ev.Name == fyne.KeyEscape {
		e.u.escape()
		return
	}
	e.Entry.TypedKey(ev)
}

// TypedShortcut sends on Ctrl+Enter.
func (e *textEntry) TypedShortcut(s fyne.Shortcut) {
	if cs, ok := s.(*desktop.CustomShortcut); ok && (cs.KeyName == fyne.KeyReturn || cs.KeyName == fyne.KeyEnter) &&
		cs.Modifier == fyne.KeyModifierControl && e.submit != nil {
		e.submit()
		return
	}
	e.Entry.TypedShortcut(s)
}

// textSize says how long a text is in binary units, the ones its limit is
// set in: the limit reads "64 KiB" as README says, not "65.5 kB" (issue 26,
// finding 11).
func textSize(n int) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d B", n)
	}
	s := strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " KiB"
}
