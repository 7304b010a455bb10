package ui

import (
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// historyView lists finished transfers as the backend stored them.
type historyView struct {
	u       *UI
	entries []HistoryEntry
	list    *widget.List
	empty   *widget.Label
	obj     fyne.CanvasObject
}

func newHistoryView(u *UI) *historyView {
	v := &historyView{u: u}
	v.list = widget.NewList(
		func() int { return len(v.entries) },
		func() fyne.CanvasObject {
			title := widget.NewLabel("")
			title.Truncation = fyne.TextTruncateEllipsis
			sub := widget.NewLabel("")
			sub.SizeName = theme.SizeNameCaptionText
			sub.Truncation = fyne.TextTruncateEllipsis
			open := u.newButton("Open folder", theme.FolderOpenIcon(), nil)
			details := u.newButton("", theme.InfoIcon(), nil)
			return container.NewBorder(nil, nil, widget.NewIcon(theme.UploadIcon()), container.NewHBox(details, open), container.New(&tightVBox{}, title, sub))
		},
		func(i widget.ListItemID, obj fyne.CanvasObject) {
			e := v.entries[i]
			c := obj.(*fyne.Container)
			text := c.Objects[0].(*fyne.Container)
			icon := c.Objects[1].(*widget.Icon)
			btns := c.Objects[2].(*fyne.Container)
			details, open := btns.Objects[0].(*button), btns.Objects[1].(*button)
			text.Objects[0].(*widget.Label).SetText(historyTitle(e, u.opt.PromptTimeout))
			text.Objects[1].(*widget.Label).SetText(historyLine(e, u.opt.PromptTimeout))
			details.OnTapped = func() { v.showDetails(e) }
			if e.Direction == Incoming {
				icon.SetResource(theme.DownloadIcon())
			} else {
				icon.SetResource(theme.UploadIcon())
			}
			if e.Direction == Incoming && e.State == StateDone && e.Destination != "" {
				dest := e.Destination
				open.OnTapped = func() { v.u.openPath(dest) }
				open.Show()
			} else {
				open.Hide()
			}
		},
	)
	v.empty = widget.NewLabel("Finished transfers appear here.")
	v.empty.Alignment = fyne.TextAlignCenter
	v.obj = container.NewStack(v.list, container.NewVBox(v.empty))
	v.reload()
	return v
}

// showDetails shows what the history kept of one transfer, with the
// engine's own words about how it ended.
func (v *historyView) showDetails(e HistoryEntry) {
	st := historyStatus(e, v.u.opt.PromptTimeout)
	text := fmt.Sprintf("%s\n%s, %s · %s", st.Text, plural(e.Files, "file"), HumanBytes(e.Bytes), e.Finished.Local().Format("2 Jan 2006 15:04"))
	if e.Destination != "" {
		text += "\nSaved to " + e.Destination
	}
	v.u.showMessage(historyTitle(e, v.u.opt.PromptTimeout), text, st.Detail)
}

func (v *historyView) reload() {
	v.entries = v.u.be.History()
	v.list.Refresh()
	if len(v.entries) == 0 {
		v.empty.Show()
	} else {
		v.empty.Hide()
	}
}

// historyStatus is how the entry ended, in the words rows use.
func historyStatus(e HistoryEntry, timeout time.Duration) Status {
	return describe(Outcome{State: e.State, Code: e.Code, ByPeer: e.ByPeer, Err: e.Err}, e.Direction, historyWho(e), timeout)
}

func historyWho(e HistoryEntry) string {
	if who := EscapeName(e.PeerName); who != "" {
		return who
	}
	return ShortID(e.PeerID)
}

// historyTitle is one line: "Received 3 files from Alice" for a transfer
// that arrived, "Declined by Alice: 3 files to Alice" style otherwise.
func historyTitle(e HistoryEntry, timeout time.Duration) string {
	verb, prep := "Sent", "to"
	if e.Direction == Incoming {
		verb, prep = "Received", "from"
	}
	files := plural(e.Files, "file")
	if e.Files == 0 {
		// An offer that was never accepted, where the engine did not say
		// what it held: "0 files" would be wrong.
		files = "files"
	}
	if e.State != StateDone {
		return fmt.Sprintf("%s: %s %s %s", historyStatus(e, timeout).Short, files, prep, historyWho(e))
	}
	return fmt.Sprintf("%s %s %s %s", verb, files, prep, historyWho(e))
}

// historyLine is the second line: when, how much, how, and in words what
// happened when it did not arrive; the engine's own text is in Details.
func historyLine(e HistoryEntry, timeout time.Duration) string {
	s := e.Finished.Local().Format("2 Jan 15:04")
	if e.Bytes > 0 || e.State == StateDone {
		s += " · " + HumanBytes(e.Bytes)
	}
	if e.Transport != "" {
		s += " · " + TransportLabel(e.Transport)
	}
	if e.State != StateDone {
		if st := historyStatus(e, timeout); st.Text != st.Short {
			s += " · " + st.Text
		}
	}
	return s
}

func layoutSpacer() fyne.CanvasObject { return layout.NewSpacer() }
