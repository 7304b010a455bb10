package ui

import (
	"fmt"
	"image"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// historyView lists finished transfers as the backend stored them, the
// ones matching the search box.
type historyView struct {
	u       *UI
	all     []HistoryEntry
	entries []HistoryEntry // shown: those matching search
	search  *entry
	clear   *button
	list    *historyList
	empty   *widget.Label
	obj     fyne.CanvasObject
}

func newHistoryView(u *UI) *historyView {
	v := &historyView{u: u}
	v.list = newHistoryList(
		func() int { return len(v.entries) },
		func() fyne.CanvasObject {
			title := widget.NewLabel("")
			title.Truncation = fyne.TextTruncateEllipsis
			sub := widget.NewLabel("")
			sub.SizeName = theme.SizeNameCaptionText
			sub.Truncation = fyne.TextTruncateEllipsis
			details := u.newButton("", theme.InfoIcon(), nil)
			cp := u.newButton("Copy", theme.ContentCopyIcon(), nil)
			open := u.newButton("Open", theme.FileIcon(), nil)
			show := u.newButton("Show in folder", theme.FolderOpenIcon(), nil)
			thumb := canvas.NewImageFromResource(nil)
			thumb.FillMode = canvas.ImageFillContain
			thumb.SetMinSize(fyne.NewSize(thumbSize, thumbSize))
			icon := container.NewStack(container.NewCenter(widget.NewIcon(theme.UploadIcon())), thumb)
			// Details last: the buttons before it come and go from row
			// to row, and it keeps its place at the row's end.
			return container.NewBorder(nil, nil, icon, container.NewHBox(cp, open, show, details), container.New(&tightVBox{}, title, sub))
		},
		func(i widget.ListItemID, obj fyne.CanvasObject) {
			if i >= len(v.entries) {
				return
			}
			v.fill(v.entries[i], obj.(*fyne.Container))
		},
	)
	v.list.menu = u.openMenu
	// A row has its own buttons and does nothing when clicked: a click
	// leaves no selection, whose highlight, kept by position, moved to
	// another entry as soon as a transfer ended or the search changed.
	// Enter or Space on the row the keyboard is on opens its details.
	v.list.OnSelected = func(i widget.ListItemID) {
		v.list.Unselect(i)
		if v.list.keyed && i >= 0 && i < len(v.entries) {
			v.showDetails(v.entries[i])
		}
	}
	v.empty = widget.NewLabel("Finished transfers appear here.")
	v.empty.Alignment = fyne.TextAlignCenter
	v.search = u.newEntry()
	v.search.SetPlaceHolder("Search by device, file name or text")
	v.search.OnChanged = func(string) { v.filter() }
	v.clear = u.newButton("Clear history…", theme.DeleteIcon(), v.confirmClear)
	top := container.NewBorder(nil, nil, nil, v.clear, v.search)
	v.obj = container.NewBorder(container.NewPadded(top), nil, nil, nil, container.NewStack(v.list, container.NewVBox(v.empty)))
	v.reload()
	return v
}

// historyList is History's list as the keyboard uses it: Tab reaches a
// Fyne list and its arrows move among the rows (widget.List is
// focusable), but only Space did anything there, selecting the row, which
// History undoes at once (a click must leave no selection). Enter and
// Space now open the details of the row the keyboard is on, as the row's
// Details button does. Fyne keeps that row unexported (List.currentFocus):
// its own Space selects it, and OnSelected, told it came from a key
// (keyed), opens it.
type historyList struct {
	widget.List
	keyed bool   // a key, not a click, is selecting the row
	menu  func() // opens the window's menu (keyMenu)
}

func newHistoryList(length func() int, create func() fyne.CanvasObject, update func(widget.ListItemID, fyne.CanvasObject)) *historyList {
	l := &historyList{}
	l.Length, l.CreateItem, l.UpdateItem = length, create, update
	l.ExtendBaseWidget(l)
	return l
}

// TypedKey opens the focused row's details on Enter or Space and the
// window's menu on F10; other keys are the list's own (Up and Down move
// among the rows).
func (l *historyList) TypedKey(ev *fyne.KeyEvent) {
	switch ev.Name {
	case fyne.KeyReturn, fyne.KeyEnter, fyne.KeySpace:
		l.keyed = true
		defer func() { l.keyed = false }()
		l.List.TypedKey(&fyne.KeyEvent{Name: fyne.KeySpace}) // selects the focused row: OnSelected
		return
	}
	if ev.Name == keyMenu && l.menu != nil {
		l.menu()
		return
	}
	l.List.TypedKey(ev)
}

// fill draws entry e into a list row.
func (v *historyView) fill(e HistoryEntry, c *fyne.Container) {
	u := v.u
	text := c.Objects[0].(*fyne.Container)
	icons := c.Objects[1].(*fyne.Container)
	btns := c.Objects[2].(*fyne.Container)
	icon := icons.Objects[0].(*fyne.Container).Objects[0].(*widget.Icon)
	thumb := icons.Objects[1].(*canvas.Image)
	cp, open, show, details := btns.Objects[0].(*button), btns.Objects[1].(*button), btns.Objects[2].(*button), btns.Objects[3].(*button)
	text.Objects[0].(*widget.Label).SetText(historyTitle(e, u.names(), u.opt.PromptTimeout))
	text.Objects[1].(*widget.Label).SetText(historyLine(e, u.names(), u.opt.PromptTimeout))
	details.OnTapped = func() { v.showDetails(e) }
	if e.Direction == Incoming {
		icon.SetResource(theme.DownloadIcon())
	} else {
		icon.SetResource(theme.UploadIcon())
	}
	thumb.Image = nil
	thumb.Hide()
	done := e.State == StateDone
	paths := e.Paths
	showIf(cp, e.Text != "")
	cp.OnTapped = func() { u.copyText(e.Text) }
	showIf(open, done && e.Direction == Incoming && len(paths) == 1)
	if len(paths) > 0 {
		first := paths[0]
		open.OnTapped = func() { u.openFile(first) }
		shown := first
		if e.Direction == Incoming && e.Files > 1 {
			shown = topItem(e.Destination, first) // as the row's Show in folder
		}
		show.OnTapped = func() { u.showInFolder(shown) }
		if done && e.Direction == Incoming && isImage(first) {
			u.loadThumb(first, func(img image.Image) {
				// The row may show another entry by now.
				if len(e.Paths) > 0 && thumb.Image == nil && v.showing(c, e) {
					thumb.Image = img
					thumb.Show()
					thumb.Refresh()
				}
			})
		}
	} else if e.Destination != "" {
		dest := e.Destination
		show.OnTapped = func() { u.openPath(dest) }
	}
	showIf(show, done && (len(paths) > 0 || e.Direction == Incoming && e.Destination != "" && e.Files > 0))
	c.Refresh() // the buttons shown changed: lay the row out again
}

// showing reports whether row c still shows e.
func (v *historyView) showing(c *fyne.Container, e HistoryEntry) bool {
	t := c.Objects[0].(*fyne.Container).Objects[1].(*widget.Label).Text
	return t == historyLine(e, v.u.names(), v.u.opt.PromptTimeout)
}

// confirmClear asks before forgetting every finished transfer.
func (v *historyView) confirmClear() {
	u := v.u
	text := widget.NewLabel("Ferry forgets every finished transfer. Received files stay where they are.")
	text.Wrapping = fyne.TextWrapWord
	var d *dialog.CustomDialog
	keep := u.newButton("Keep", nil, func() { d.Hide() })
	clear := u.newButton("Clear history", theme.DeleteIcon(), func() {
		d.Hide()
		if err := u.be.ClearHistory(); err != nil {
			u.showError("Could not clear the history", err)
		}
		v.reload()
		u.updateTray()
	})
	clear.Importance = widget.DangerImportance
	d = dialog.NewCustomWithoutButtons("Clear the history?", text, u.win)
	d.SetButtons([]fyne.CanvasObject{keep, clear})
	d.Resize(fyne.NewSize(440, 0))
	u.showModal(d, &modal{dismiss: d.Hide}, keep)
}

// filter shows the entries matching the search box: every word must be
// in the device's name, the files' names, the text or how it ended.
func (v *historyView) filter() {
	words := strings.Fields(strings.ToLower(v.search.Text))
	v.entries = v.entries[:0]
	for _, e := range v.all {
		hay := strings.ToLower(strings.Join(append([]string{e.PeerName, e.Text, historyTitle(e, v.u.names(), v.u.opt.PromptTimeout)}, e.Names...), "\n"))
		for _, s := range e.Senders {
			hay += "\n" + strings.ToLower(s.Name)
		}
		match := true
		for _, w := range words {
			if !strings.Contains(hay, w) {
				match = false
				break
			}
		}
		if match {
			v.entries = append(v.entries, e)
		}
	}
	v.list.Refresh()
	switch {
	case len(v.all) == 0:
		v.empty.SetText("Finished transfers appear here.")
		v.empty.Show()
	case len(v.entries) == 0:
		v.empty.SetText("No transfer matches.")
		v.empty.Show()
	default:
		v.empty.Hide()
	}
	if len(v.all) == 0 {
		v.clear.Disable()
	} else {
		v.clear.Enable()
	}
}

// showDetails shows what the history kept of one transfer, with the
// engine's own words about how it ended.
func (v *historyView) showDetails(e HistoryEntry) {
	if busySum(e) {
		v.u.showMessage(historyTitle(e, v.u.names(), v.u.opt.PromptTimeout), busyDetails(e, v.u.names()), e.Err)
		return
	}
	st := historyStatus(e, v.u.names(), v.u.opt.PromptTimeout)
	files := plural(e.Files, "file")
	if e.Folders > 0 {
		files += " and " + emptyFolders(e.Folders)
	}
	text := fmt.Sprintf("%s\n%s, %s · %s", st.Text, files, HumanBytes(e.Bytes), e.Finished.Local().Format("2 Jan 2006 15:04"))
	if e.Destination != "" {
		text += "\nSaved to " + e.Destination
	}
	if what := ItemsText(e.Names, e.Items, ""); what != "" {
		text += "\n" + what
	}
	if e.Text != "" {
		text += "\n\nText:\n" + clipLines(EscapeText(e.Text), 2000)
	}
	v.u.showMessage(historyTitle(e, v.u.names(), v.u.opt.PromptTimeout), text, st.Detail)
}

func (v *historyView) reload() {
	v.all = v.u.be.History()
	v.filter()
}

// historyStatus is how the entry ended, in the words rows use.
func historyStatus(e HistoryEntry, n sameNames, timeout time.Duration) Status {
	return describe(Outcome{State: e.State, Code: e.Code, ByPeer: e.ByPeer, Err: e.Err}, e.Direction, historyWho(e, n), timeout)
}

// historyWho names the device of entry e as the device list would, its
// short ID beside a name that more than one listed device has (n).
func historyWho(e HistoryEntry, n sameNames) string {
	if who := n.named(e.PeerName, shortTag(e.PeerID, "")); who != "" {
		return who
	}
	return ShortID(e.PeerID)
}

// historyTitle is one line: "Received 3 files from Alice" for a transfer
// that arrived, "Declined by Alice: 3 files to Alice" style otherwise.
func historyTitle(e HistoryEntry, n sameNames, timeout time.Duration) string {
	if busySum(e) {
		return fmt.Sprintf("Declined: %s from %s", plural(e.Busy, "offer"), busyWho(e, n))
	}
	verb, prep := "Sent", "to"
	if e.Direction == Incoming {
		verb, prep = "Received", "from"
	}
	files := plural(e.Files, "file")
	switch {
	case e.Files == 0 && (e.Text != "" || e.HasText):
		files = "a text"
	case e.Files == 0:
		// An offer that was never accepted, where the engine did not say
		// what it held: "0 files" would be wrong.
		files = "files"
	case e.Text != "":
		files = "a text and " + files
	}
	if e.State != StateDone {
		return fmt.Sprintf("%s: %s %s %s", historyStatus(e, n, timeout).Short, files, prep, historyWho(e, n))
	}
	return fmt.Sprintf("%s %s %s %s", verb, files, prep, historyWho(e, n))
}

// historyLine is the second line: when, how much, how, and in words what
// happened when it did not arrive; the engine's own text is in Details.
func historyLine(e HistoryEntry, n sameNames, timeout time.Duration) string {
	if busySum(e) {
		s := busyWhen(e, "2 Jan 15:04") + " · " + busyWhy(e)
		if e.PeerName == "" && e.PeerID == "" {
			s = busyNames(e, n, 2) + " · " + s
		}
		return s
	}
	s := e.Finished.Local().Format("2 Jan 15:04")
	if what := ItemsText(e.Names, e.Items, e.Text); what != "" {
		s = what + " · " + s
	}
	if e.Bytes > 0 || e.State == StateDone && e.Files > 0 {
		s += " · " + HumanBytes(e.Bytes)
	}
	if e.Transport != "" {
		s += " · " + TransportLabel(e.Transport)
	}
	if e.State != StateDone {
		if st := historyStatus(e, n, timeout); st.Text != st.Short {
			s += " · " + st.Text
		}
	}
	return s
}

// busySum reports whether e sums up offers declined while busy, and is
// shown so: several, or any refused before it was read (whose files are
// not known).
func busySum(e HistoryEntry) bool { return e.Busy > 1 || e.Unread > 0 }

// busyWhy is in a few words why the offers of a busySum entry were
// declined.
func busyWhy(e HistoryEntry) string {
	if e.Muted > 0 && e.Muted == e.Busy {
		return "you declined offers from them a moment ago"
	}
	return "too many offers were waiting at once"
}

// busyWho names the devices whose offers a History entry of offers
// declined while busy sums up: the device, or how many there were.
func busyWho(e HistoryEntry, n sameNames) string {
	if e.PeerName != "" || e.PeerID != "" {
		return historyWho(e, n)
	}
	if e.MoreSenders {
		return "more than " + plural(len(e.Senders), "device")
	}
	return plural(len(e.Senders), "device")
}

// busyNames lists the first k devices of an entry of offers declined while
// busy: "Alice, Bob and 28 more".
func busyNames(e HistoryEntry, n sameNames, k int) string {
	var parts []string
	for _, s := range e.Senders {
		if len(parts) == k {
			break
		}
		parts = append(parts, historyWho(HistoryEntry{PeerName: s.Name, PeerID: s.ID}, n))
	}
	text := strings.Join(parts, ", ")
	switch more := len(e.Senders) - len(parts); {
	case e.MoreSenders:
		text += " and others"
	case more > 0:
		text += " and " + HumanCount(more) + " more"
	}
	return text
}

// busyWhen is when the offers of a History entry of offers declined while
// busy came: "5 Dec 12:08", or "5 Dec 12:08–12:14" (layout is the first
// time's; the last one's says only what differs).
func busyWhen(e HistoryEntry, layout string) string {
	first, last := e.Since.Local(), e.Finished.Local()
	if e.Since.IsZero() {
		first = last
	}
	from, to := first.Format(layout), last.Format(layout)
	if first.YearDay() == last.YearDay() && first.Year() == last.Year() {
		to = last.Format("15:04")
	}
	if first.Format(layout) == last.Format(layout) {
		return from
	}
	return from + "–" + to
}

// busyDetails says what an entry of offers declined while busy sums up,
// naming every device it lists.
func busyDetails(e HistoryEntry, n sameNames) string {
	what := plural(e.Files, "file")
	if e.Bytes > 0 { // unknown for offers declined before they were read
		what += ", " + HumanBytes(e.Bytes)
	}
	if e.Unread >= e.Busy && e.Files == 0 {
		what = "" // none was read
	} else {
		what += " · "
	}
	var text string
	if e.Muted > 0 && e.Muted == e.Busy {
		text = fmt.Sprintf("Ferry declined %s without asking you: you had declined offers from these devices, or from other new devices at their network address, a moment ago. Each sender was told to try again in a few minutes.",
			plural(e.Busy, "offer"))
	} else {
		text = fmt.Sprintf("Ferry declined %s without asking you: too many offers were waiting for an answer at once. Each sender was told to try again in a moment.",
			plural(e.Busy, "offer"))
		if e.Muted > 0 {
			text += fmt.Sprintf(" %s came from devices or network addresses whose offers you had declined a moment ago.", plural(e.Muted, "offer"))
		}
	}
	if e.Unread > 0 && e.Unread < e.Busy {
		text += fmt.Sprintf(" %s of them were turned away before they were read: their files are not counted.", HumanCount(e.Unread))
	} else if e.Unread > 0 {
		text += " They were turned away before they were read: what they held is not known."
	}
	text += "\n" + what + busyWhen(e, "2 Jan 2006 15:04")
	names := make([]string, 0, len(e.Senders))
	for _, s := range e.Senders {
		names = append(names, historyWho(HistoryEntry{PeerName: s.Name, PeerID: s.ID}, n))
	}
	if len(names) > 0 {
		text += "\nFrom " + strings.Join(names, ", ")
		if e.MoreSenders {
			text += " and others"
		}
	}
	return text
}

func layoutSpacer() fyne.CanvasObject { return layout.NewSpacer() }

// clipLines shortens a multi-line text to n runes, keeping its lines.
func clipLines(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
