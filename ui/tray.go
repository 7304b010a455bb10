package ui

import (
	"fmt"
	"slices"
	"time"

	"fyne.io/fyne/v2"

	"github.com/ferrydrop/ferry/ui/transfer"
)

// trayMenu is the tray's menu. It is built once and its items change in
// place: Fyne's tray draws a menu anew on every refresh but adds its own
// Quit only to the first one it was given, so a rebuilt menu lost Quit.
// Ours is always the last item.
type trayMenu struct {
	menu    *fyne.Menu
	open    *fyne.MenuItem
	recv    *fyne.MenuItem
	recent  *fyne.MenuItem
	quit    *fyne.MenuItem
	entries *fyne.Menu // recent's child menu
	// head and tail are the items before and after the transfers under
	// way, which fillTray puts between them.
	head, tail []*fyne.MenuItem
	// shown are the lines of the transfers under way in the menu, and
	// shownAt when the menu was last refreshed for them: progress
	// refreshes it at most every trayEvery.
	shown   []string
	shownAt time.Time
}

// Bounds of the transfers under way in the tray menu.
const (
	// trayUnderWay is how many it lists; "N more under way" follows.
	trayUnderWay = 3
	// trayEvery is the shortest time between two refreshes of the menu
	// for their progress: the tray host is sent the whole menu each time.
	trayEvery = time.Second
)

// Tray returns the tray menu. Its last item is Quit.
func (u *UI) Tray() *fyne.Menu { return u.tray.menu }

func (u *UI) buildTray() {
	t := &u.tray
	t.open = fyne.NewMenuItem("Open Ferry", u.revealWindow)
	t.recv = fyne.NewMenuItem("Receiving", func() { u.SetReceiving(!u.receiving()) })
	t.entries = fyne.NewMenu("")
	t.recent = fyne.NewMenuItem("Recent transfers", nil)
	t.recent.ChildMenu = t.entries
	t.quit = fyne.NewMenuItem("Quit", u.quit)
	t.quit.IsQuit = true
	t.head = []*fyne.MenuItem{t.open, t.recv, fyne.NewMenuItemSeparator()}
	t.tail = append(u.linkMenuItems(), t.recent, fyne.NewMenuItemSeparator(), t.quit)
	t.menu = fyne.NewMenu("Ferry")
	u.fillTray()
}

// underWay lists the lines of the transfers under way, newest first, and
// their IDs: at most trayUnderWay, then how many more there are.
func (u *UI) underWay() (lines, ids []string) {
	l := u.transfers
	n := 0
	for _, id := range l.order {
		v := l.byID[id]
		if v.d == nil || !v.d.Phase.Running() && v.d.Phase != transfer.Waiting {
			continue
		}
		if n++; n <= trayUnderWay {
			lines, ids = append(lines, u.trayLine(v)), append(ids, id)
		}
	}
	if n > trayUnderWay {
		lines, ids = append(lines, fmt.Sprintf("%d more under way", n-trayUnderWay)), append(ids, "")
	}
	return lines, ids
}

// trayLine is a transfer under way in a few words: "From Alice: photos
// (3 files) · 45%", or "To Bob: a.jpg · waiting for the answer". The
// percentage is written as the rows' progress bars write theirs.
func (u *UI) trayLine(v *transferView) string {
	who := u.who(v.peer)
	s := "To " + who
	if v.dir == Incoming {
		s = "From " + who
	}
	if what := ItemsText(v.names, v.items, v.text); what != "" {
		s += ": " + clip(what, 40)
		if v.items == 1 && v.files > 1 {
			s += " (" + plural(v.files, "file") + ")" // a folder
		}
	}
	switch {
	case v.d.Phase == transfer.Waiting:
		return s + " · waiting for the answer"
	case v.d.Phase == transfer.Reconnecting && v.away:
		return s + " · waiting for its Ferry to be opened again"
	case v.d.Phase == transfer.Reconnecting:
		return s + " · reconnecting"
	case v.total > 0:
		return s + fmt.Sprintf(" · %d%%", min(99, v.d.Bytes*100/v.total)) // 100% is Done, in Recent transfers
	}
	return s
}

// fillTray sets the items that follow the settings and the history.
func (u *UI) fillTray() {
	t := &u.tray
	t.recv.Checked = u.receiving()
	var items []*fyne.MenuItem
	for i, e := range u.be.History() {
		if i >= u.opt.RecentInTray {
			break
		}
		item := fyne.NewMenuItem(historyTitle(e, u.names(), u.opt.PromptTimeout), nil)
		if e.Direction == Incoming && e.State == StateDone && e.Destination != "" {
			dest := e.Destination
			item.Action = func() { u.openPath(dest) }
		} else {
			item.Action = func() { u.revealWindow(); u.tabs.SelectIndex(1) }
		}
		items = append(items, item)
	}
	if len(items) == 0 {
		none := fyne.NewMenuItem("None yet", nil)
		none.Disabled = true
		items = append(items, none)
	}
	t.entries.Items = items

	lines, ids := u.underWay()
	t.shown = lines
	menu := slices.Clone(t.head)
	for i, line := range lines {
		id := ids[i]
		menu = append(menu, fyne.NewMenuItem(line, func() { u.showTransfer(id) }))
	}
	if len(lines) > 0 {
		menu = append(menu, fyne.NewMenuItemSeparator())
	}
	t.menu.Items = append(menu, t.tail...)
}

// tickTray refreshes the tray's transfers under way when their lines
// changed, at most every trayEvery. Run's tick calls it.
func (u *UI) tickTray(now time.Time) {
	t := &u.tray
	if now.Sub(t.shownAt) < trayEvery {
		return
	}
	if lines, _ := u.underWay(); slices.Equal(lines, t.shown) {
		return
	}
	t.shownAt = now
	u.updateTray()
}

// showTransfer opens the window on the transfer's row (on the list, for "").
func (u *UI) showTransfer(id string) {
	u.revealWindow()
	u.tabs.SelectIndex(0)
	if v := u.transfers.byID[id]; v != nil {
		u.transfers.scroll.ScrollToOffset(fyne.NewPos(0, v.obj.Position().Y))
	}
}

// updateTray refreshes the tray after the settings or the history changed.
func (u *UI) updateTray() {
	u.fillTray()
	if u.OnTrayChanged != nil {
		u.OnTrayChanged(u.tray.menu)
	}
}
