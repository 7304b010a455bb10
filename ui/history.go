package ui

import (
	"fmt"

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
			open := widget.NewButtonWithIcon("Open folder", theme.FolderOpenIcon(), nil)
			return container.NewBorder(nil, nil, widget.NewIcon(theme.UploadIcon()), open, container.New(&tightVBox{}, title, sub))
		},
		func(i widget.ListItemID, obj fyne.CanvasObject) {
			e := v.entries[i]
			c := obj.(*fyne.Container)
			text := c.Objects[0].(*fyne.Container)
			icon := c.Objects[1].(*widget.Icon)
			open := c.Objects[2].(*widget.Button)
			text.Objects[0].(*widget.Label).SetText(historyTitle(e))
			text.Objects[1].(*widget.Label).SetText(historyLine(e))
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

func (v *historyView) reload() {
	v.entries = v.u.be.History()
	v.list.Refresh()
	if len(v.entries) == 0 {
		v.empty.Show()
	} else {
		v.empty.Hide()
	}
}

func historyTitle(e HistoryEntry) string {
	who := EscapeName(e.PeerName)
	if who == "" {
		who = ShortID(e.PeerID)
	}
	verb := "Sent"
	prep := "to"
	if e.Direction == Incoming {
		verb, prep = "Received", "from"
	}
	if e.State != StateDone {
		verb = StateLabel(e.State, e.Direction) + ":"
	}
	return fmt.Sprintf("%s %s %s %s", verb, plural(e.Files, "file"), prep, who)
}

func historyLine(e HistoryEntry) string {
	s := e.Finished.Local().Format("2 Jan 15:04") + " · " + HumanBytes(e.Bytes)
	if e.Transport != "" {
		s += " · " + TransportLabel(e.Transport)
	}
	if e.Err != "" {
		s += " · " + e.Err
	}
	return s
}

func layoutSpacer() fyne.CanvasObject { return layout.NewSpacer() }
