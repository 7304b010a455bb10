package ui

import "fyne.io/fyne/v2"

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
}

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
	items := append([]*fyne.MenuItem{t.open, t.recv, fyne.NewMenuItemSeparator()}, u.linkMenuItems()...)
	t.menu = fyne.NewMenu("Ferry", append(items, t.recent, fyne.NewMenuItemSeparator(), t.quit)...)
	u.fillTray()
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
		item := fyne.NewMenuItem(historyTitle(e, u.opt.PromptTimeout), nil)
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
}

// updateTray refreshes the tray after the settings or the history changed.
func (u *UI) updateTray() {
	u.fillTray()
	if u.OnTrayChanged != nil {
		u.OnTrayChanged(u.tray.menu)
	}
}
