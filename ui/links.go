package ui

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"slices"
	"sort"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	wallclock "github.com/ferrydrop/ferry/internal/clock"
	"github.com/ferrydrop/ferry/internal/safetext"
)

// Browser links (issue 25): a device with nothing but a browser gets files
// from this one through a share link, and sends files to it through a
// receive link. The link, as text and as a QR code, and who is downloading or
// uploading what come from the backend (LinkState); the UI keeps only the
// last state of each open link to draw it.

// LinkKind tells a share link from a receive link.
type LinkKind int

// The kinds of link.
const (
	LinkShare   LinkKind = iota + 1 // files go from this device to a browser
	LinkReceive                     // files come from a browser to this device
)

// LinkRequest asks for a link.
type LinkRequest struct {
	Kind  LinkKind
	Paths []string // what a share link serves (files and folders)
	// PIN, when set, must be typed in the page first.
	PIN string
	// Expire is how long the link stays open; zero means DefaultLinkExpire.
	Expire time.Duration
	// Once ends a share link when the first device has every file.
	Once bool
}

// DefaultLinkExpire is how long a link stays open unless asked otherwise.
const DefaultLinkExpire = time.Hour

// LinkActivity is one download (share link) or upload (receive link).
type LinkActivity struct {
	ID     int64
	Device string // the browser's address
	Upload bool
	// Folder: an upload that is an empty folder of a folder a page sent,
	// made on this device (no bytes), not a file.
	Folder bool
	Name   string // a file's name, or the zip's
	Zip    bool
	Size   int64 // bytes in all (a zip's too, since it resumes by range); -1 when not known
	Bytes  int64
	Done   bool
	// SavedAs is where an upload was saved when that is not Name ("photo
	// (1).jpg": a file of the name was there, another browser's maybe).
	SavedAs string
	// LeftOut names what a zip left out, each with why (shared files
	// deleted or moved since).
	LeftOut []string
	// Err says why it did not finish, as a sentence ("" when it did).
	Err string
}

// LinkState is an open link as the backend reports it: the whole state each
// time, so the UI never adds anything up itself.
type LinkState struct {
	ID      string
	Kind    LinkKind
	URL     string   // the link to show first
	URLs    []string // every address it answers at
	Expires time.Time
	PIN     string
	Once    bool
	// Files and Bytes are what a share link serves; Skipped says what its
	// folders hold that it does not ("1 symbolic link (not followed)"),
	// "" when nothing.
	Files   int
	Bytes   int64
	Skipped string
	// Devices are the browsers that opened the link.
	Devices    []string
	Activities []LinkActivity
	// What the link kept out: wrong PINs typed (PINLocked: as many as it
	// takes, no new device can open it), devices turned away (it was
	// open on as many as it takes).
	WrongPINs  int
	PINLocked  bool
	TurnedAway int
	// Ended: the link answers nothing any more; Why says why, as a sentence.
	Ended bool
	Why   string
}

// Links is what the UI asks of the backend for browser links. A Backend
// that implements it too gets "Share via link…" and "Receive via link…" in
// the menu, the tray and the window.
type Links interface {
	// OpenLink opens a link. A share's files are listed first, which takes
	// a while for a big tree: cancelling ctx stops it and opens no link.
	// Its states arrive on the channel, the first at once; the last has
	// Ended set, and then the channel is closed. The UI calls it off the
	// Fyne goroutine.
	OpenLink(ctx context.Context, req LinkRequest) (<-chan LinkState, error)
	// StopLink ends a link at once: nothing is served after it, uploads not
	// finished are discarded, files that arrived stay.
	StopLink(id string) error
}

// links returns the backend's Links, or nil when it has none.
func (u *UI) links() Links {
	l, _ := u.be.(Links)
	return l
}

// linkPanel is the window's device-less area for links: two buttons, a drop
// target (files dropped on it are shared by link) and the open links.
type linkPanel struct {
	u    *UI
	obj  fyne.CanvasObject
	list *fyne.Container
	open map[string]*linkView // by link ID
	// column is the container the panel sits in: laid out again when a
	// link's row comes or goes, so the device list makes room.
	column *fyne.Container
}

// relayout makes room for the rows of open links.
func (p *linkPanel) relayout() {
	if p.column != nil {
		p.column.Refresh()
	}
}

// linkView is one open link: its last state, its row in the panel, and its
// dialog while shown.
type linkView struct {
	state LinkState
	row   *fyne.Container
	label *widget.Label
	dlg   *linkDialog
}

func newLinkPanel(u *UI) *linkPanel {
	p := &linkPanel{u: u, open: map[string]*linkView{}}
	if u.links() == nil {
		p.obj = container.NewVBox()
		return p
	}
	share := u.newButton("Share via link…", theme.MailForwardIcon(), func() { u.shareViaLink(nil) })
	recv := u.newButton("Receive via link…", theme.DownloadIcon(), u.receiveViaLink)
	hint := widget.NewLabel("No Ferry there? A link for its browser. Drop files here to share them.")
	hint.SizeName = theme.SizeNameCaptionText
	hint.Truncation = fyne.TextTruncateEllipsis
	p.list = container.NewVBox()
	p.obj = container.NewVBox(widget.NewSeparator(), container.New(&tightVBox{}, hint, container.NewGridWithColumns(2, share, recv)), p.list)
	return p
}

// under puts the panel under the device list's buttons (nothing without Links).
func (p *linkPanel) under(buttons fyne.CanvasObject) fyne.CanvasObject {
	if p.u.links() == nil {
		return buttons
	}
	return container.NewVBox(buttons, p.obj)
}

// contains reports whether pos (absolute in the window) falls on the panel.
func (p *linkPanel) contains(pos fyne.Position) bool {
	if p.u.links() == nil || !p.obj.Visible() {
		return false
	}
	at := fyne.CurrentApp().Driver().AbsolutePositionForObject(p.obj)
	s := p.obj.Size()
	return pos.X >= at.X && pos.X < at.X+s.Width && pos.Y >= at.Y && pos.Y < at.Y+s.Height
}

// shareViaLink asks what to share (unless paths are given), then for the
// link's options.
func (u *UI) shareViaLink(paths []string) {
	if u.links() == nil {
		return
	}
	if len(paths) == 0 {
		u.pick(PickRequest{Title: "Share via link", Multiple: true}, func(paths []string) { u.showLinkSetup(LinkShare, paths) })
		return
	}
	u.revealWindow()
	u.showLinkSetup(LinkShare, paths)
}

// receiveViaLink asks for a receive link's options.
func (u *UI) receiveViaLink() {
	if u.links() == nil {
		return
	}
	u.revealWindow()
	u.showLinkSetup(LinkReceive, nil)
}

// expireChoices are the expiries offered, the default first.
var expireChoices = []struct {
	label string
	d     time.Duration
}{
	{"1 hour", time.Hour},
	{"15 minutes", 15 * time.Minute},
	{"4 hours", 4 * time.Hour},
	{"1 day", 24 * time.Hour},
}

// linkSetup is the dialog that asks for a link's options (tests drive it).
type linkSetup struct {
	pin    *entry
	expire *choice
	once   *check
	create *button
}

// showLinkSetup asks for a link's PIN and expiry, then opens it.
func (u *UI) showLinkSetup(kind LinkKind, paths []string) *linkSetup {
	// Ferry's entry and choice, not Fyne's: Escape in them closes the
	// dialog (with the PIN focused, as it opens, Escape did nothing).
	pin := u.newEntry()
	pin.SetPlaceHolder("None")
	pin.Validator = func(s string) error {
		if len(strings.TrimSpace(s)) > 64 {
			return errors.New("at most 64 characters")
		}
		return nil
	}
	labels := make([]string, len(expireChoices))
	for i, c := range expireChoices {
		labels[i] = c.label
	}
	expire := u.newChoice(labels)
	expire.SetSelectedIndex(0)
	once := u.newCheck("End the link when the first device has every file", nil)

	title, what := "Receive via link", "A browser on this network will be able to send files to this device while the link is open; they are saved without asking."
	items := []*widget.FormItem{}
	if kind == LinkShare {
		title = "Share via link"
		what = "A browser on this network will be able to download " + sharedSummary(paths) + " while the link is open."
	}
	items = append(items,
		widget.NewFormItem("PIN", pin),
		widget.NewFormItem("Link ends after", expire))
	if kind == LinkShare {
		items = append(items, widget.NewFormItem("", once))
	}
	intro := widget.NewLabel(what)
	intro.Wrapping = fyne.TextWrapWord
	note := widget.NewLabel("The link is plain HTTP on your local network: a PIN keeps out whoever only has the link, not someone who can read the network's traffic. Links end when Ferry quits.")
	note.Wrapping = fyne.TextWrapWord
	note.SizeName = theme.SizeNameCaptionText

	var d *dialog.CustomDialog
	create := u.newButton("Create link", theme.ConfirmIcon(), func() {
		if pin.Validate() != nil {
			return
		}
		req := LinkRequest{Kind: kind, Paths: paths, PIN: strings.TrimSpace(pin.Text), Expire: expireChoices[max(expire.SelectedIndex(), 0)].d}
		if kind == LinkShare {
			req.Once = once.Checked
		}
		d.Hide()
		u.openBrowserLink(req)
	})
	create.Importance = widget.HighImportance
	pin.OnSubmitted = func(string) { create.OnTapped() } // Enter in the PIN creates the link, as in every form
	cancel := u.newButton("Cancel", theme.CancelIcon(), func() { d.Hide() })
	scroll := container.NewVScroll(container.NewVBox(intro, widget.NewForm(items...), note))
	// The wheel over the PIN scrolls the dialog too (its only scroller
	// inside is that single-line field).
	d = dialog.NewCustomWithoutButtons(title, withPageWheel(scroll), u.win)
	d.SetButtons([]fyne.CanvasObject{cancel, create})
	fitScroll(d, scroll, 460)
	u.showModal(d, &modal{dismiss: d.Hide, confirm: create.OnTapped, scroll: scroll}, pin)
	return &linkSetup{pin: pin, expire: expire, once: once, create: create}
}

// sharedSummary names what a share link offers: "photo.jpg", "3 items".
func sharedSummary(paths []string) string {
	if len(paths) == 1 {
		return "“" + EscapeName(baseName(paths[0])) + "”"
	}
	return plural(len(paths), "item")
}

// baseName is the last element of a path, for / and \ alike.
func baseName(p string) string {
	p = strings.TrimRight(p, `/\`)
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// preparingLinkDelay is how long opening a link may take before a dialog says
// it is under way (listing a big tree's files takes seconds; a receive link
// opens at once and shows no such dialog).
const preparingLinkDelay = 300 * time.Millisecond

// openBrowserLink asks the backend for the link off the Fyne goroutine and
// shows it. While a share's folders are listed (seconds for 10^5 files, a
// minute on a slow disk) the window goes on drawing and, after
// preparingLinkDelay, a dialog says so with Cancel, which stops the listing.
// Call it on the Fyne goroutine.
func (u *UI) openBrowserLink(req LinkRequest) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		settled bool   // the answer came, or Cancel was pressed
		hide    func() // the preparing dialog's, once shown
	)
	// settle runs on the Fyne goroutine once: the first of the answer and
	// Cancel. It hides the dialog and reports whether the answer is wanted.
	settle := func() bool {
		if settled {
			return false
		}
		settled = true
		if hide != nil {
			hide()
		}
		return true
	}
	wait := time.AfterFunc(u.preparingDelay, func() {
		u.opt.Do(func() {
			if settled {
				return
			}
			hide = u.preparingLinkDialog(req, func() {
				if settle() {
					cancel()
				}
			})
		})
	})
	go func() {
		states, err := u.links().OpenLink(ctx, req)
		var first LinkState
		ok := err == nil
		if ok {
			first, ok = <-states
		}
		wait.Stop()
		u.opt.Do(func() {
			if !settle() {
				// Cancelled while the link opened: end it unseen.
				if ok {
					go u.links().StopLink(first.ID)
				}
				return
			}
			cancel()
			switch {
			case err != nil:
				u.showError("Could not open the link", err)
			case !ok:
				u.showError("Could not open the link", errors.New("the link ended at once"))
			default:
				u.ShowOpenLink(first, states)
			}
		})
	}()
}

// preparingLinkDialog says a link is being made (its files listed) and
// offers cancel; it returns what hides it.
func (u *UI) preparingLinkDialog(req LinkRequest, cancel func()) (hide func()) {
	what := "Opening the link…"
	if req.Kind == LinkShare {
		what = "Listing the files in " + sharedSummary(req.Paths) + " for the link. Folders with many files take a while."
	}
	msg := widget.NewLabel(what)
	msg.Wrapping = fyne.TextWrapWord
	bar := widget.NewProgressBarInfinite()
	stop := u.newButton("Cancel", theme.CancelIcon(), cancel)
	d := dialog.NewCustomWithoutButtons("Preparing the link", container.NewVBox(msg, bar), u.win)
	d.SetButtons([]fyne.CanvasObject{stop})
	d.Resize(fyne.NewSize(440, d.MinSize().Height))
	u.showModal(d, &modal{dismiss: cancel, confirm: cancel}, stop)
	return func() { bar.Stop(); d.Hide() }
}

// ShowOpenLink shows a link just opened (first, its first state) and
// follows the rest of its states until it ends. Call it on the Fyne
// goroutine.
func (u *UI) ShowOpenLink(first LinkState, rest <-chan LinkState) {
	u.ApplyLink(first)
	u.showLink(first.ID)
	go func() {
		for s := range rest {
			u.opt.Do(func() { u.ApplyLink(s) })
		}
	}()
}

// ApplyLink renders one state of a link: its row in the window and its
// dialog when shown. Call it on the Fyne goroutine.
func (u *UI) ApplyLink(s LinkState) {
	p := u.linkPanel
	v := p.open[s.ID]
	if v == nil {
		if s.Ended {
			return
		}
		v = &linkView{label: widget.NewLabel("")}
		v.label.Truncation = fyne.TextTruncateEllipsis
		id := s.ID
		show := u.newButton("Show", theme.VisibilityIcon(), func() { u.showLink(id) })
		stop := u.newButton("Stop", theme.MediaStopIcon(), func() { u.stopLink(id) })
		v.row = container.NewBorder(nil, nil, nil, container.NewHBox(show, stop), v.label)
		p.open[s.ID] = v
		p.list.Add(v.row)
		p.relayout()
	}
	v.state = s
	v.label.SetText(linkRowText(s, u.now()))
	if v.dlg != nil {
		v.dlg.apply(s, u.now())
	}
	if s.Ended {
		p.list.Remove(v.row)
		delete(p.open, s.ID)
		p.relayout()
		if v.dlg != nil {
			v.dlg.ended()
		}
	}
}

// stopLink ends a link.
func (u *UI) stopLink(id string) {
	if err := u.links().StopLink(id); err != nil {
		u.showError("Could not stop the link", err)
	}
}

// linkRowText is an open link's line in the window.
func linkRowText(s LinkState, now time.Time) string {
	what := "Receive link"
	if s.Kind == LinkShare {
		what = "Share link: " + plural(s.Files, "file")
	}
	parts := []string{what}
	if n := len(s.Devices); n > 0 {
		parts = append(parts, plural(n, "device"))
	}
	if active := activeCount(s.Activities); active > 0 {
		parts = append(parts, HumanCount(active)+" in progress")
	}
	switch {
	case expiredFinishing(s, now) && s.Kind == LinkShare:
		parts = append(parts, "expired")
	case expiredFinishing(s, now):
		parts = append(parts, "expired, finishing")
	case !s.Expires.IsZero():
		parts = append(parts, "ends in "+humanLeft(s.Expires.Sub(now)))
	}
	return strings.Join(parts, " · ")
}

// expiredFinishing says whether a link is past its expiry and not ended:
// a receive link lets the uploads going at the expiry finish (weblink's
// ExpiryGrace), and says it ended once they did; a share link ends as soon
// as its requests returned.
func expiredFinishing(s LinkState, now time.Time) bool {
	return !s.Ended && !s.Expires.IsZero() && !now.Before(s.Expires)
}

// expiredFinishingText is the link window's line for a link past its
// expiry that lets what is on its way finish (expiredFinishing).
func expiredFinishingText(s LinkState) string {
	if s.Kind == LinkShare {
		return "The link expired: it is ending."
	}
	return "The link expired: no new file gets in, and the files on their way are finishing."
}

func activeCount(as []LinkActivity) int {
	n := 0
	for _, a := range as {
		if !a.Done {
			n++
		}
	}
	return n
}

// humanLeft says how long is left, to the minute ("59 min", "3 h 5 min").
func humanLeft(d time.Duration) string {
	if d < time.Minute {
		return "less than a minute"
	}
	m := int(d.Round(time.Minute) / time.Minute)
	if m < 60 {
		return fmt.Sprintf("%d min", m)
	}
	if m%60 == 0 {
		return fmt.Sprintf("%d h", m/60)
	}
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}

// linkDialog shows one link: the QR code, the link with Copy, the PIN, when
// it ends, who does what, and Stop.
type linkDialog struct {
	u      *UI
	id     string
	dlg    *dialog.CustomDialog
	when   *widget.Label
	people *widget.Label
	guard  *widget.Label // what the link kept out, when anything
	acts   *fyne.Container
	// earlier says how many of the link's activities are not listed
	// (maxLinkRows).
	earlier *widget.Label
	// What invites opening the link: hidden or off once it ended.
	qr      fyne.CanvasObject
	copyBtn *button
	hint    *widget.Label
	bars    map[int64]*linkActivityRow
	stop    *button
	scroll  *container.Scroll
}

// linkActivityRow is one download or upload in the dialog.
type linkActivityRow struct {
	obj   fyne.CanvasObject
	label *widget.Label
	bar   *widget.ProgressBar
	last  LinkActivity // as last shown
}

// maxLinkRows bounds the downloads and uploads a link's dialog lists: the
// latest ones, a line saying how many earlier ones are not. A share's
// browser downloads its files one by one, thousands of them through its
// pages, and the engine remembers up to 1000.
const maxLinkRows = 100

// showLink shows the dialog of an open link.
func (u *UI) showLink(id string) {
	v := u.linkPanel.open[id]
	if v == nil {
		return
	}
	if v.dlg != nil {
		return // on screen already
	}
	s := v.state
	ld := &linkDialog{u: u, id: id, bars: map[int64]*linkActivityRow{}}
	title, hint := "Receive via link", "Open this link on the device that has the files, or scan the code with its camera. Files it sends are saved to your download folder without asking, while the link is open."
	if s.Kind == LinkShare {
		title = "Share via link"
		hint = "Open this link on the other device, or scan the code with its camera: its browser lists " + plural(s.Files, "file") + " (" + HumanBytes(s.Bytes) + ") to download."
		if s.Skipped != "" {
			hint += " Not shared: " + s.Skipped + " (a link shares regular files)."
		}
	}
	var qr fyne.CanvasObject = layoutSpacer()
	if img := qrImage(s.URL, 256); img != nil {
		q := canvas.NewImageFromImage(img)
		q.FillMode = canvas.ImageFillContain
		q.ScaleMode = canvas.ImageScalePixels
		q.SetMinSize(fyne.NewSize(168, 168))
		qr = container.NewVBox(q)
	}
	link := widget.NewLabel(s.URL)
	link.Wrapping = fyne.TextWrapBreak
	link.TextStyle = fyne.TextStyle{Monospace: true}
	url := s.URL
	copyBtn := u.newButton("Copy link", theme.ContentCopyIcon(), func() { u.copyText(url) })
	side := []fyne.CanvasObject{link, container.NewHBox(copyBtn)}
	if s.PIN != "" {
		side = append(side, widget.NewLabelWithStyle("PIN: "+EscapeText(s.PIN), fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	}
	ld.when = widget.NewLabel("")
	ld.when.Wrapping = fyne.TextWrapWord
	side = append(side, ld.when)
	objs := []fyne.CanvasObject{container.NewBorder(nil, nil, qr, nil, container.NewVBox(side...))}
	h := widget.NewLabel(hint)
	h.Wrapping = fyne.TextWrapWord
	objs = append(objs, h)
	ld.qr, ld.copyBtn, ld.hint = qr, copyBtn, h
	if len(s.URLs) > 1 {
		others := widget.NewLabel("Also at: " + strings.Join(s.URLs[1:], ", "))
		others.Wrapping = fyne.TextWrapBreak
		others.SizeName = theme.SizeNameCaptionText
		objs = append(objs, others)
	}
	ld.people = widget.NewLabel("")
	ld.people.Wrapping = fyne.TextWrapWord
	ld.guard = widget.NewLabel("")
	ld.guard.Wrapping = fyne.TextWrapWord
	ld.guard.Importance = widget.WarningImportance
	ld.guard.Hide()
	ld.acts = container.NewVBox()
	ld.earlier = widget.NewLabel("")
	ld.earlier.Hide()
	// Room between the last progress bar and the buttons.
	gap := canvas.NewRectangle(color.Transparent)
	gap.SetMinSize(fyne.NewSize(0, theme.Padding()))
	objs = append(objs, widget.NewSeparator(), ld.people, ld.guard, ld.earlier, ld.acts, gap)

	ld.stop = u.newButton("Stop link", theme.MediaStopIcon(), func() { u.stopLink(id) })
	ld.stop.Importance = widget.DangerImportance
	closeBtn := u.newButton("Close", nil, func() { ld.dlg.Hide() })
	ld.scroll = container.NewVScroll(container.NewVBox(objs...))
	ld.dlg = dialog.NewCustomWithoutButtons(title, ld.scroll, u.win)
	ld.dlg.SetButtons([]fyne.CanvasObject{ld.stop, closeBtn})
	v.dlg = ld
	ld.apply(s, u.now())
	fitScroll(ld.dlg, ld.scroll, linkDialogWidth)
	m := &modal{dismiss: ld.dlg.Hide, confirm: ld.dlg.Hide, scroll: ld.scroll}
	u.showModal(ld.dlg, m, closeBtn)
	// Closing the dialog keeps the link open: its row in the window shows
	// it, with Show and Stop.
	ld.dlg.SetOnClosed(func() {
		u.dropModal(m)
		if v := u.linkPanel.open[id]; v != nil && v.dlg == ld {
			v.dlg = nil
		}
	})
}

// linkDialogWidth is the link dialog's width.
const linkDialogWidth = 560

// apply shows a state of the link.
func (d *linkDialog) apply(s LinkState, now time.Time) {
	rows := len(d.bars)
	defer func() {
		if len(d.bars) != rows && d.dlg != nil {
			fitScroll(d.dlg, d.scroll, linkDialogWidth) // room for the new rows
		}
	}()
	switch {
	case s.Ended:
		d.when.SetText(s.Why)
		d.when.Importance = widget.WarningImportance
	case expiredFinishing(s, now):
		// Not "ends in less than a minute": it ended for new files, and
		// waits for those going (weblink's ExpiryGrace).
		d.when.SetText(expiredFinishingText(s))
		d.when.Importance = widget.WarningImportance
	case s.Once:
		d.when.SetText(fmt.Sprintf("Ends when the first device has every file, or in %s (%s), or when Ferry quits.", humanLeft(s.Expires.Sub(now)), wallclock.At(s.Expires, now)))
	default:
		d.when.SetText(fmt.Sprintf("Ends in %s (%s), when you stop it, or when Ferry quits.", humanLeft(s.Expires.Sub(now)), wallclock.At(s.Expires, now)))
	}
	d.when.Refresh()
	switch n := len(s.Devices); {
	case s.Ended:
		d.people.SetText(linkEndedText(s))
	case n == 0:
		d.people.SetText("No device has opened the link yet.")
	default:
		d.people.SetText(fmt.Sprintf("Opened by %s: %s.", plural(n, "device"), strings.Join(s.Devices, ", ")))
	}
	if g := guardText(s); g != "" {
		d.guard.SetText(g)
		d.guard.Show()
	}
	acts := append([]LinkActivity(nil), s.Activities...)
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].ID < acts[j].ID })
	// The latest maxLinkRows only; the rows of the others go, as do those
	// of activities the engine forgot.
	if n := len(acts) - maxLinkRows; n > 0 {
		acts = acts[n:]
		what := "download"
		if s.Kind == LinkReceive {
			what = "file"
		}
		d.earlier.SetText(plural(n, "earlier "+what) + " not listed here.")
		d.earlier.Show()
	} else {
		d.earlier.Hide()
	}
	listed := make(map[int64]bool, len(acts))
	for _, a := range acts {
		listed[a.ID] = true
	}
	for id, r := range d.bars {
		if !listed[id] {
			d.acts.Remove(r.obj)
			delete(d.bars, id)
		}
	}
	for _, a := range acts {
		r := d.bars[a.ID]
		if r == nil {
			r = &linkActivityRow{label: widget.NewLabel(""), bar: widget.NewProgressBar()}
			r.label.Truncation = fyne.TextTruncateEllipsis
			r.obj = container.NewVBox(r.label, r.bar) // lays out no room for a hidden bar
			d.bars[a.ID] = r
			d.acts.Add(r.obj)
		} else if sameActivity(r.last, a) {
			continue // as shown: a row costs nothing while others move
		}
		r.last = a
		r.label.SetText(activityText(a))
		switch {
		case a.Size > 0:
			r.bar.Max = float64(a.Size)
			r.bar.SetValue(float64(min(a.Bytes, a.Size)))
		case a.Done && a.Err == "":
			r.bar.Show()
			r.bar.Max = 1
			r.bar.SetValue(1)
		default:
			// No size to measure against (a zip is made as it goes): the
			// bytes in the line say how far it is.
			r.bar.Hide()
		}
	}
}

// sameActivity reports whether a and b would be shown alike.
func sameActivity(a, b LinkActivity) bool {
	return a.ID == b.ID && a.Device == b.Device && a.Upload == b.Upload && a.Folder == b.Folder && a.Name == b.Name &&
		a.Zip == b.Zip && a.Size == b.Size && a.Bytes == b.Bytes && a.Done == b.Done && a.SavedAs == b.SavedAs &&
		slices.Equal(a.LeftOut, b.LeftOut) && a.Err == b.Err
}

// ended turns the dialog into a record of the ended link: nothing in it
// invites opening the link any more (its code, Copy, the hint).
func (d *linkDialog) ended() {
	d.stop.Disable()
	d.copyBtn.Disable()
	d.qr.Hide()
	d.hint.SetText("This link answers nothing any more. What happened on it is below.")
}

// linkEndedText sums up an ended link in the past tense: what a share
// served, who opened it, and what was downloaded or arrived. A stopped link
// said "No device has opened the link yet", as if it could still be.
func linkEndedText(s LinkState) string {
	var parts []string
	if s.Kind == LinkShare {
		parts = append(parts, fmt.Sprintf("It shared %s (%s).", plural(s.Files, "file"), HumanBytes(s.Bytes)))
	}
	if len(s.Devices) == 0 {
		return strings.Join(append(parts, "No device opened it."), " ")
	}
	parts = append(parts, fmt.Sprintf("Opened by %s: %s.", plural(len(s.Devices), "device"), strings.Join(s.Devices, ", ")))
	var n, folders int
	var bytes int64
	for _, a := range s.Activities {
		switch {
		case !a.Done || a.Err != "" || a.Upload != (s.Kind == LinkReceive):
		case a.Folder:
			folders++
		default:
			n++
			bytes += a.Bytes
		}
	}
	switch {
	case s.Kind == LinkReceive && n == 0 && folders > 0:
		parts = append(parts, fmt.Sprintf("No file arrived, %s.", emptyFolders(folders)))
	case s.Kind == LinkReceive && n == 0:
		parts = append(parts, "No file arrived.")
	case s.Kind == LinkReceive && folders > 0:
		parts = append(parts, fmt.Sprintf("%s arrived (%s) and %s.", plural(n, "file"), HumanBytes(bytes), emptyFolders(folders)))
	case s.Kind == LinkReceive:
		parts = append(parts, fmt.Sprintf("%s arrived (%s).", plural(n, "file"), HumanBytes(bytes)))
	case n == 0:
		parts = append(parts, "No download finished.")
	default:
		parts = append(parts, fmt.Sprintf("%s finished (%s).", plural(n, "download"), HumanBytes(bytes)))
	}
	return strings.Join(parts, " ")
}

// guardText says what the link kept out, so that its owner can stop a
// link that leaked or is being guessed; "" when nothing.
func guardText(s LinkState) string {
	var parts []string
	switch {
	case s.PINLocked:
		parts = append(parts, fmt.Sprintf("Locked: %s wrong PINs were typed, so no new device can open this link (those that typed the PIN before still can). Stop it, and make a new one if someone still needs it.", HumanCount(s.WrongPINs)))
	case s.WrongPINs == 1:
		parts = append(parts, "A wrong PIN was typed at this link. If you did not expect that, stop it.")
	case s.WrongPINs > 1:
		parts = append(parts, fmt.Sprintf("%s wrong PINs were typed at this link. If you did not expect that, stop it.", HumanCount(s.WrongPINs)))
	}
	if s.TurnedAway > 0 {
		parts = append(parts, fmt.Sprintf("%s turned away: the link is open on as many devices as it takes. If you did not expect that, the link may have leaked: stop it.",
			map[bool]string{true: "1 more device was", false: HumanCount(s.TurnedAway) + " more devices were"}[s.TurnedAway == 1]))
	}
	return strings.Join(parts, " ")
}

// emptyFolders counts empty folders in words: "1 empty folder".
func emptyFolders(n int) string {
	if n == 1 {
		return "1 empty folder"
	}
	return HumanCount(n) + " empty folders"
}

// activityText is one download or upload, in words.
func activityText(a LinkActivity) string {
	name := EscapeName(a.Name)
	if a.Folder {
		// An empty folder a page sent: made, not sent bytes.
		switch {
		case a.Done && a.Err != "":
			return fmt.Sprintf("%s: the empty folder %s was not made: %s", a.Device, name, a.Err)
		case a.Done && a.SavedAs != "" && !safetext.OnlyComposed(a.Name, a.SavedAs):
			return fmt.Sprintf("%s sent the empty folder %s, made as %s", a.Device, name, EscapeName(a.SavedAs))
		case a.Done:
			return fmt.Sprintf("%s sent the empty folder %s", a.Device, name)
		}
		return fmt.Sprintf("%s sends the empty folder %s", a.Device, name)
	}
	if a.Zip {
		name = "everything as one zip"
	}
	verb := "downloads"
	if a.Upload {
		verb = "sends"
	}
	size := HumanBytes(a.Bytes)
	if a.Size >= 0 {
		size = HumanBytes(a.Bytes) + " of " + HumanBytes(a.Size)
	}
	switch {
	case a.Done && a.Err != "":
		return fmt.Sprintf("%s: %s did not finish: %s", a.Device, name, a.Err)
	case a.Done && a.Upload && a.SavedAs != "" && !safetext.OnlyComposed(a.Name, a.SavedAs):
		// Two browsers sending photo.jpg: one of them is photo (1).jpg.
		return fmt.Sprintf("%s sent %s (%s), saved as %s", a.Device, name, HumanBytes(a.Bytes), EscapeName(a.SavedAs))
	case a.Done && a.Upload:
		return fmt.Sprintf("%s sent %s (%s)", a.Device, name, HumanBytes(a.Bytes))
	case a.Done && len(a.LeftOut) > 0:
		left := make([]string, len(a.LeftOut))
		for i, n := range a.LeftOut {
			left[i] = EscapeName(n)
		}
		return fmt.Sprintf("%s downloaded %s (%s), without %s: deleted or moved since it was shared", a.Device, name, HumanBytes(a.Bytes), strings.Join(left, ", "))
	case a.Done:
		return fmt.Sprintf("%s downloaded %s (%s)", a.Device, name, HumanBytes(a.Bytes))
	}
	return fmt.Sprintf("%s %s %s: %s", a.Device, verb, name, size)
}

// linkMenuItems are "Share via link…" and "Receive via link…" and a
// separator, for the window's menu and the tray; none without Links.
func (u *UI) linkMenuItems() []*fyne.MenuItem {
	if u.links() == nil {
		return nil
	}
	return []*fyne.MenuItem{
		fyne.NewMenuItem("Share via link…", func() { u.revealWindow(); u.shareViaLink(nil) }),
		fyne.NewMenuItem("Receive via link…", u.receiveViaLink),
		fyne.NewMenuItemSeparator(),
	}
}
