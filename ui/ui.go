// Package ui draws Ferry's window and forwards what the user asks for to a
// Backend. It keeps no transfer state of its own: every row is the merge of
// the events it was given. It never imports fyne.io/fyne/v2/app, so its tests
// run headless with fyne.io/fyne/v2/test; package app wires it to the engine.
package ui

import (
	"context"
	"errors"
	"fmt"
	"image"
	"net/url"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/ui/transfer"
)

// Options tune the UI. The zero value is usable.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Do runs a function on the Fyne goroutine; nil means Do (fyne.Do,
	// and nothing once the app stopped). Tests replace it to see how Run
	// batches updates.
	Do func(func())
	// Refresh is how often coalesced progress reaches the widgets; zero means 250 ms.
	Refresh time.Duration
	// PromptTimeout declines an unanswered offer; zero means 2 minutes.
	PromptTimeout time.Duration
	// SentTogether: a send that ends while others are under way waits
	// for them up to this long, and all that ended meanwhile are told in
	// one "Files sent to Alice, Bob and Carol"; zero means 2 s. A send
	// that ends alone is told at once.
	SentTogether time.Duration
	// MaxPrompts bounds the queue of unanswered offers; zero means 8.
	MaxPrompts int
	// RecentInTray is how many finished transfers the tray menu lists; zero means 5.
	RecentInTray int
	// NoticeQuiet: "Files received" notifications from one sender that
	// follow each other within it are summed up in one ("28 transfers from
	// Bob"), told once the sender has been quiet that long; zero means 10 s.
	NoticeQuiet time.Duration
	// Notify shows a desktop notification; nil means the Fyne app's
	// SendNotification (which names the sender by the app ID on Linux).
	Notify func(title, body string)
	// NotifyActions shows a notification with buttons (Accept and Decline
	// on an offer, Open on what arrived) where the desktop shows them; nil
	// means Notify, without the buttons.
	NotifyActions func(title, body string, actions []NoticeAction)
	// NotifyTagged shows a notification with buttons that the UI may
	// withdraw later by its tag (an offer answered in the window);
	// CloseNotice withdraws it. Nil: NotifyActions, and nothing is withdrawn.
	NotifyTagged func(tag, title, body string, actions []NoticeAction)
	CloseNotice  func(tag string)
	// OpenURL opens a link in the browser and reports a failure it sees at
	// once (a later one through the app's own error reporting); nil means
	// the Fyne app's OpenURL.
	OpenURL func(*url.URL) error
	// Picker is the platform's file dialog; nil means Fyne's.
	Picker Picker
}

// UI is Ferry's main window content, its dialogs and its tray menu.
type UI struct {
	app fyne.App
	win fyne.Window
	be  Backend
	opt Options

	// The fields below belong to the Fyne goroutine.
	devices   *deviceList
	transfers *transferList
	prompts   *promptQueue
	history   *historyView
	settings  *settingsView
	partials  *partialsView
	known     *knownView
	notices   receivedNotices // "Files received" by sender (notices.go)
	// sentNotices: "Files sent" of sends that end together (sentnotices.go)
	sentNotices sentNotices
	linkPanel   *linkPanel // browser links (links.go)
	// preparingDelay: how long a link may take to open before a dialog
	// says it is under way (preparingLinkDelay; tests change it).
	preparingDelay time.Duration
	tabs           *container.AppTabs
	status         *statusLine
	self           Device
	tray           trayMenu
	ask            *chooser
	thumbs         map[string]image.Image // thumbnails by path (nil: not a picture)
	modals         []*modal               // shown dialogs, topmost last (keys.go)
	// pageScrolls are the window's scrolling pages, where Tab to a control
	// out of view scrolls it there (reveal).
	pageScrolls []*container.Scroll
	pairs       map[string]*pairView // pairing dialogs by transfer ID (pair.go)
	// keyWarnings are the key-change warnings on screen (one per pair of keys).
	keyWarnings map[keyWarning]bool
	// hidden: the window was hidden to the tray (or started there); warnings
	// then go to notifications.
	hidden bool
	// lastOnPolicy is the policy to restore when receiving is switched back on.
	lastOnPolicy Policy

	// OnTrayChanged is called with the tray menu after its items changed in
	// place (the app refreshes the installed tray). May be nil.
	OnTrayChanged func(*fyne.Menu)
	// OnQuit is called when the user chooses Quit (tray, window menu,
	// Ctrl+Q, or closing the window where that quits). Nil does nothing.
	OnQuit func()
	// OnShow is called when the UI wants the window visible (an offer
	// arrived, or "Open Ferry" was chosen). Nil means win.Show().
	OnShow func()
	// OnReceivingChanged is called after the receiving policy changed.
	OnReceivingChanged func(on bool)
	// OnSettingsSaved is called with the settings as saved (e.g. to retitle the window).
	OnSettingsSaved func(Settings)
}

// New builds the UI into win. self is this device as others see it.
func New(a fyne.App, win fyne.Window, be Backend, self Device, opt Options) *UI {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Do == nil {
		opt.Do = Do
	}
	if opt.Refresh <= 0 {
		opt.Refresh = 250 * time.Millisecond
	}
	if opt.PromptTimeout <= 0 {
		opt.PromptTimeout = 2 * time.Minute
	}
	if opt.MaxPrompts <= 0 {
		opt.MaxPrompts = 8
	}
	if opt.RecentInTray <= 0 {
		opt.RecentInTray = 5
	}
	if opt.SentTogether <= 0 {
		opt.SentTogether = 2 * time.Second
	}
	if opt.NoticeQuiet <= 0 {
		opt.NoticeQuiet = 10 * time.Second
	}
	guardFiles() // before any of Fyne's file dialogs lists a named pipe
	u := &UI{app: a, win: win, be: be, opt: opt, self: self, thumbs: map[string]image.Image{},
		pairs: map[string]*pairView{}, keyWarnings: map[keyWarning]bool{}, preparingDelay: preparingLinkDelay}
	u.prompts = &promptQueue{u: u}
	u.devices = newDeviceList(u)
	u.transfers = newTransferList(u)
	u.history = newHistoryView(u)
	u.settings = newSettingsView(u)
	u.buildTray()
	win.SetContent(u.layout())
	win.SetMainMenu(u.mainMenu())
	win.SetOnDropped(u.HandleDrop)
	win.Canvas().SetOnTypedKey(u.typedKey)
	u.addShortcuts()
	return u
}

func (u *UI) now() time.Time { return u.opt.Now() }

func (u *UI) layout() fyne.CanvasObject {
	u.status = newStatusLine(u.showSelf)
	u.updateStatus()

	// The buttons, the menu and the shortcuts send to the devices checked
	// in the list ("check several to send to all"), or ask to whom.
	sendFile := u.newButton("Send files…", theme.FileIcon(), func() { u.pickAndSend(u.devices.selected()) })
	sendFile.Importance = widget.HighImportance
	sendDir := u.newButton("Folder…", theme.FolderIcon(), func() { u.pickFolderAndSend(u.devices.selected()) })
	sendText := u.newButton("Text…", theme.DocumentIcon(), func() { u.showSendText(u.devices.selected(), "") })
	add := u.newButton("Add device…", theme.ContentAddIcon(), u.showAddDevice)
	me := u.newButton("My address", theme.InfoIcon(), u.showSelf)

	devHead := widget.NewLabelWithStyle("Nearby devices", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	devHint := widget.NewLabel("Drop files on a device to send them; check several to send to all.")
	devHint.SizeName = theme.SizeNameCaptionText
	devHint.Truncation = fyne.TextTruncateEllipsis
	u.linkPanel = newLinkPanel(u)
	devices := container.NewBorder(container.New(&tightVBox{}, devHead, devHint), u.linkPanel.under(container.NewHBox(add, me)), nil, nil, u.devices.scroll)
	u.linkPanel.column = devices

	clear := u.newButton("Clear finished", theme.ContentClearIcon(), u.transfers.clearFinished)
	u.transfers.clear = clear
	u.transfers.showClear()
	trHead := container.NewBorder(nil, nil, nil, clear, widget.NewLabelWithStyle("Transfers", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	transfers := container.NewBorder(trHead, nil, nil, nil, u.transfers.scroll)

	split := container.NewHSplit(container.NewPadded(devices), container.NewPadded(transfers))
	split.Offset = 0.45
	top := container.NewBorder(nil, widget.NewSeparator(), nil, container.NewHBox(sendFile, sendDir, sendText), u.status)
	home := container.NewBorder(container.NewPadded(top), nil, nil, nil, split)

	u.tabs = container.NewAppTabs(
		container.NewTabItemWithIcon("Nearby", theme.HomeIcon(), home),
		container.NewTabItemWithIcon("History", theme.HistoryIcon(), u.history.obj),
		container.NewTabItemWithIcon("Settings", theme.SettingsIcon(), u.settings.obj),
	)
	u.tabs.OnSelected = func(t *container.TabItem) {
		if t.Content == u.settings.obj {
			u.partials.reload()
			u.known.reload()
		}
		u.focusTab(t.Content)
	}
	u.pageScrolls = []*container.Scroll{u.devices.scroll, u.transfers.scroll, u.settings.general, u.known.scroll}
	u.settings.tabs.OnSelected = chainTab(u.settings.tabs.OnSelected, func(t *container.TabItem) { u.focusTab(t.Content) })
	return u.tabs
}

// chainTab runs first, then then, on a tab's selection.
func chainTab(first, then func(*container.TabItem)) func(*container.TabItem) {
	return func(t *container.TabItem) {
		if first != nil {
			first(t)
		}
		then(t)
	}
}

// focusTab moves the focus into the page just shown: History's search
// box, else nothing (Tab then starts at the page's top). Fyne leaves it
// where it was, on a button of the page now hidden, which Enter still
// pressed (Ctrl+, from a focused Add device… then Enter opened Add device
// over Settings).
func (u *UI) focusTab(page fyne.CanvasObject) {
	if page == u.history.obj {
		u.win.Canvas().Focus(u.history.search)
		return
	}
	u.win.Canvas().Unfocus()
}

// Pages of the window, for showPage.
const (
	pageNearby = iota
	pageHistory
	pageSettings
	pageDevices // Settings' Devices page
)

// showPage selects a page of the window (the keyboard's way to the tabs,
// which Tab does not reach).
func (u *UI) showPage(p int) {
	switch p {
	case pageSettings, pageDevices:
		u.settings.tabs.SelectIndex(p - pageSettings)
		u.tabs.SelectIndex(pageSettings)
	default:
		u.tabs.SelectIndex(p)
	}
}

func (u *UI) receiving() bool { return u.be.Settings().Policy != PolicyOff }

// maxStatusName is how much of this device's name the status line shows,
// in characters.
const maxStatusName = 32

func (u *UI) updateStatus() {
	s := u.be.Settings()
	name := s.DeviceName
	if name == "" {
		name = u.self.Name
	}
	state := "receiving from everyone nearby"
	switch s.Policy {
	case PolicyTrusted:
		state = "receiving from trusted devices only"
	case PolicyOff:
		state = "receiving off"
	}
	// Who may send comes before the ID and the address: a window too
	// narrow for the line without the name cuts its end, and that is the
	// part a user acts on. A long name is shortened here (the window's
	// title and Settings say it whole), or it pushed who may send out of
	// the line in any window.
	rest := []string{state, ShortID(u.self.ID)}
	if s.Policy != PolicyOff {
		if addrs := u.be.SelfAddresses(); len(addrs) > 0 {
			rest = append(rest, addressText(addrs[0]))
		}
	}
	if relay, problem := anywhereState(u.be); relay != "" && problem != "" {
		// Settings says why, under the relay's fields.
		rest = append(rest, "not reachable beyond the LAN")
	}
	u.status.set(EscapeName(clip(name, maxStatusName)), rest)
}

var (
	shortcutOpen     = &desktop.CustomShortcut{KeyName: fyne.KeyO, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutAdd      = &desktop.CustomShortcut{KeyName: fyne.KeyD, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutSettings = &desktop.CustomShortcut{KeyName: fyne.KeyComma, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutQuit     = &desktop.CustomShortcut{KeyName: fyne.KeyQ, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutText     = &desktop.CustomShortcut{KeyName: fyne.KeyT, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutClip     = &desktop.CustomShortcut{KeyName: fyne.KeyV, Modifier: fyne.KeyModifierShortcutDefault | fyne.KeyModifierShift}
	// The pages: Tab never reaches the tabs, so these are the keyboard's
	// way to History and to Settings' Devices page.
	shortcutNearby    = &desktop.CustomShortcut{KeyName: fyne.Key1, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutHistory   = &desktop.CustomShortcut{KeyName: fyne.Key2, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutSettings3 = &desktop.CustomShortcut{KeyName: fyne.Key3, Modifier: fyne.KeyModifierShortcutDefault}
	shortcutDevices   = &desktop.CustomShortcut{KeyName: fyne.Key4, Modifier: fyne.KeyModifierShortcutDefault}
)

func (u *UI) addShortcuts() {
	c := u.win.Canvas()
	c.AddShortcut(shortcutOpen, func(fyne.Shortcut) { u.pickAndSend(u.devices.selected()) })
	c.AddShortcut(shortcutAdd, func(fyne.Shortcut) { u.showAddDevice() })
	c.AddShortcut(shortcutSettings, func(fyne.Shortcut) { u.showPage(pageSettings) })
	c.AddShortcut(shortcutSettings3, func(fyne.Shortcut) { u.showPage(pageSettings) })
	c.AddShortcut(shortcutNearby, func(fyne.Shortcut) { u.showPage(pageNearby) })
	c.AddShortcut(shortcutHistory, func(fyne.Shortcut) { u.showPage(pageHistory) })
	c.AddShortcut(shortcutDevices, func(fyne.Shortcut) { u.showPage(pageDevices) })
	c.AddShortcut(shortcutQuit, func(fyne.Shortcut) { u.quit() })
	c.AddShortcut(shortcutText, func(fyne.Shortcut) { u.showSendText(u.devices.selected(), "") })
	c.AddShortcut(shortcutClip, func(fyne.Shortcut) { u.sendClipboard(u.devices.selected()) })
	// Ctrl+V with nothing focused: files or text from the clipboard.
	c.AddShortcut(&fyne.ShortcutPaste{}, func(fyne.Shortcut) { u.paste() })
}

// mainMenu is the window's menu. Quit is ours, so that it ends Ferry the
// same way from everywhere.
func (u *UI) mainMenu() *fyne.MainMenu {
	item := func(label string, sc fyne.Shortcut, action func()) *fyne.MenuItem {
		i := fyne.NewMenuItem(label, action)
		i.Shortcut = sc
		return i
	}
	quit := item("Quit", shortcutQuit, u.quit)
	quit.IsQuit = true
	file := fyne.NewMenu("Ferry",
		item("Send files…", shortcutOpen, func() { u.pickAndSend(u.devices.selected()) }),
		item("Send folder…", nil, func() { u.pickFolderAndSend(u.devices.selected()) }),
		item("Send text…", shortcutText, func() { u.showSendText(u.devices.selected(), "") }),
		item("Send clipboard", shortcutClip, func() { u.sendClipboard(u.devices.selected()) }),
		fyne.NewMenuItemSeparator(),
	)
	file.Items = append(file.Items, u.linkMenuItems()...)
	file.Items = append(file.Items, item("Add device by address…", shortcutAdd, u.showAddDevice))
	if _, ok := u.be.(LocalSendScanner); ok {
		file.Items = append(file.Items, item("Look for LocalSend devices…", nil, u.lookForLocalSend))
	}
	file.Items = append(file.Items,
		item("This device's address…", nil, u.showSelf),
		fyne.NewMenuItemSeparator(),
		item("Nearby devices", shortcutNearby, func() { u.showPage(pageNearby) }),
		item("History", shortcutHistory, func() { u.showPage(pageHistory) }),
		item("Settings", shortcutSettings, func() { u.showPage(pageSettings) }),
		item("Devices page", shortcutDevices, func() { u.showPage(pageDevices) }),
		fyne.NewMenuItemSeparator(),
		quit,
	)
	return fyne.NewMainMenu(file)
}

// quit ends Ferry (through the app), asking first while a transfer is
// under way.
func (u *UI) quit() {
	if u.askBeforeQuit() {
		return
	}
	u.quitNow()
}

// quitNow ends Ferry without asking.
func (u *UI) quitNow() {
	if u.OnQuit != nil {
		u.OnQuit()
	}
}

// askBeforeQuit asks whether to quit when a transfer is under way (Quit
// would cut it) and reports whether it asked; the answer quits or not.
func (u *UI) askBeforeQuit() bool {
	running := u.transfers.running()
	if len(running) == 0 {
		return false
	}
	if u.hidden { // quit from the tray: the question needs the window
		u.revealWindow()
	}
	u.confirmQuitDuringTransfer(running)
	return true
}

// SelfChanged redraws what the window says about this device (its
// addresses change when receiving starts or stops). Call it on the Fyne
// goroutine.
func (u *UI) SelfChanged() {
	u.updateStatus()
	u.settings.localSend.showStatus(u.be)
	u.settings.anywhere.showStatus(u.be)
}

// ApplyDevice renders one discovery event. Call it on the Fyne goroutine
// (Run does); from elsewhere wrap it in Do.
func (u *UI) ApplyDevice(ev DeviceEvent) {
	u.devices.apply(ev)
	if u.ask != nil {
		u.ask.devicesChanged()
	}
}

// OpenFiles raises the window and asks which device the files go to: files
// given on the command line, by this launch or by a second one.
func (u *UI) OpenFiles(paths []string) {
	u.revealWindow()
	if len(paths) > 0 {
		u.askDevice(paths)
	}
}

// ApplyTransfer renders one transfer event. Call it on the Fyne goroutine.
// An incoming transfer's result lists the partial files again, which asks
// the backend (it reads the disk); Run does that off the Fyne goroutine.
func (u *UI) ApplyTransfer(ev TransferEvent) {
	u.applyTransfer(ev)
	if reloadsPartials(ev) {
		u.partials.reload()
	}
}

// reloadsPartials reports whether ev may have left partial files or used
// them up: an incoming transfer ended or stopped.
func reloadsPartials(ev TransferEvent) bool {
	return ev.Kind == TransferResult && ev.Direction == Incoming && !ev.Pairing
}

// applyTransfer renders one transfer event, but for the partial files.
func (u *UI) applyTransfer(ev TransferEvent) {
	if ev.Time.IsZero() {
		ev.Time = u.now()
	}
	switch {
	case ev.Kind == TransferKeyChanged:
		u.keyChanged(ev)
		return
	case ev.Kind == TransferRefused:
		u.history.reload() // the backend counted them in History
		return
	case ev.Pairing:
		u.applyPairing(ev)
		return
	case ev.Kind == TransferQueued:
		// Held by the engine behind the prompts it shows: no row, which
		// would offer nothing to answer, until it is asked about; the
		// prompt on screen counts it among those waiting.
		if ev.Direction == Incoming {
			u.prompts.hold(ev.ID)
		}
		return
	case ev.Kind == TransferPair && ev.Direction == Incoming && u.transfers.byID[ev.ID] == nil:
		// Its code, told before the offer is asked about (about to be,
		// or held: TransferQueued). Its offer brings the code again, and
		// its row.
		return
	case ev.Kind == TransferOffer:
		u.prompts.release(ev.ID)
	case ev.Kind == TransferResult && u.prompts.release(ev.ID) && u.transfers.byID[ev.ID] == nil:
		// Held, and never asked about: its sender withdrew it, or its
		// session ended, before the user saw it. No row and no word of
		// an offer nobody saw (one left unanswered is told as missed,
		// tellExpired: it can be asked for again); History lists it, as it
		// lists every offer that reached this device.
		u.history.reload()
		return
	}
	u.transfers.apply(ev)
	switch ev.Kind {
	case TransferOffer:
		if ev.Direction == Incoming && ev.State == StateWaiting {
			u.prompts.offer(ev)
		}
	case TransferResult:
		u.prompts.ended(ev) // withdrawn by the sender or timed out in the engine
		u.history.reload()
		u.updateTray()
		u.notifyResult(ev)
		if ev.Direction == Outgoing {
			// The sends held for this one may be told now (or it failed).
			u.flushSent(u.now())
		}
		if r := ev.Result; r != nil && ev.Direction == Incoming && r.Code == CodeBusy && !r.ByPeer {
			// Declined by this device's limits, nobody asked: a flood of
			// senders left a row each. History sums them up.
			u.transfers.drop(ev.ID)
		}
	}
}

// ExpirePrompts declines the offers not answered by now. Run calls it on every tick.
func (u *UI) ExpirePrompts(now time.Time) { u.prompts.expire(now) }

// Run feeds events to the widgets until ctx ends. Progress and metrics are
// coalesced per transfer, and file events folded into one per transfer
// (feed.go), delivered at most every Options.Refresh; every other event is
// delivered at once, after what it supersedes. What grows with the number
// of files (folding, cutting an offer's lists, reading the partial files)
// is done here, off the Fyne goroutine: each update of the widgets does
// bounded work (TestUIUpdatesAreBounded).
func (u *UI) Run(ctx context.Context, devices <-chan DeviceEvent, transfers <-chan TransferEvent) error {
	tick := time.NewTicker(u.opt.Refresh)
	defer tick.Stop()
	type key struct {
		id   string
		kind TransferEventKind
	}
	pending := make(map[key]*TransferEvent)
	var order []key
	take := func(id string) []TransferEvent {
		var out []TransferEvent
		keep := order[:0]
		for _, k := range order {
			if id == "" || k.id == id {
				out = append(out, *pending[k])
				delete(pending, k)
			} else {
				keep = append(keep, k)
			}
		}
		order = keep
		return out
	}
	hold := func(k key, ev *TransferEvent) {
		if _, seen := pending[k]; !seen {
			order = append(order, k)
		}
		pending[k] = ev
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-devices:
			if !ok {
				devices = nil
				continue
			}
			u.opt.Do(func() { u.ApplyDevice(ev) })
		case ev, ok := <-transfers:
			if !ok {
				transfers = nil
				continue
			}
			switch ev.Kind {
			case TransferProgress, TransferMetrics:
				hold(key{ev.ID, ev.Kind}, &ev)
				continue
			case TransferFile:
				k := key{ev.ID, TransferFiles}
				hold(k, foldFile(pending[k], ev))
				continue
			}
			ev.Offer = boundOffer(ev.Offer)
			batch := append(take(ev.ID), ev)
			var partials []PartialTransfer
			reload := reloadsPartials(ev)
			if reload {
				partials = u.be.Partials()
			}
			u.opt.Do(func() {
				for _, e := range batch {
					u.applyTransfer(e)
				}
				if reload {
					u.partials.show(partials)
				}
			})
		case <-tick.C:
			batch := take("")
			now := u.now()
			u.opt.Do(func() {
				for _, e := range batch {
					u.applyTransfer(e)
				}
				u.ExpirePrompts(now)
				u.flushNotices(now)
				u.tickTray(now)
				u.devices.unflash(now)
			})
		}
	}
}

// HandleDrop is the window's drop handler: files dropped on a device row go
// to that device, or to every checked device when the row is one of them;
// dropped anywhere else, the send sheet asks to whom (the checked devices
// ticked). Fyne reports no drag-over, so the row is lit when the files
// land, to show where they went.
func (u *UI) HandleDrop(pos fyne.Position, uris []fyne.URI) {
	var paths []string
	for _, x := range uris {
		if x.Scheme() == "file" {
			paths = append(paths, x.Path())
		}
	}
	if len(paths) == 0 {
		return
	}
	if u.linkPanel.contains(pos) {
		u.shareViaLink(paths)
		return
	}
	items := Items{Paths: paths}
	sel := u.devices.selected()
	if r := u.devices.rowAt(pos); r != nil {
		u.devices.flash(r)
		if u.devices.isSelected(r.dev) && len(sel) > 1 {
			u.sendOrAsk(sel, items)
			return
		}
		u.send(r.dev, items)
		return
	}
	u.askSend(items, sel)
}

// cancel, pause and resume ask the backend and report whether it took the
// request (the row then shows it at once).
func (u *UI) cancel(id string) bool {
	if err := u.be.Cancel(id); err != nil && !errors.Is(err, context.Canceled) {
		u.showError("Could not cancel the transfer", err)
		return false
	}
	return true
}

func (u *UI) pause(id string) bool {
	if err := u.be.Pause(id); err != nil {
		u.showError("Could not pause the transfer", err)
		return false
	}
	return true
}

func (u *UI) resume(id string) bool {
	if err := u.be.Resume(id); err != nil {
		u.showError("Could not resume the transfer", err)
		return false
	}
	return true
}

func (u *UI) openFolder(v *transferView) {
	if v == nil || v.dest == "" {
		return
	}
	u.openPath(v.dest)
}

func (u *UI) openPath(p string) {
	if err := u.be.OpenFolder(p); err != nil {
		u.showError("Could not open the folder", err)
	}
}

func (u *UI) openFile(p string) {
	if err := u.be.OpenFile(p); err != nil {
		u.showError("Could not open the file", err)
	}
}

func (u *UI) showInFolder(p string) {
	if err := u.be.ShowInFolder(p); err != nil {
		u.showError("Could not show the file in its folder", err)
	}
}

// saveSettings saves s and reports whether all of it was saved.
func (u *UI) saveSettings(s Settings) error {
	was := u.receiving()
	err := u.be.SaveSettings(s)
	switch {
	case err == nil:
	case allKept(err):
		// Saved, but not all in use (a relay that does not answer): the
		// title said "Could not save the settings" over "The setting is kept".
		u.showError("Settings saved, but not all in use", err)
	default:
		u.showError("Could not save the settings", err)
	}
	u.settings.load()
	u.updateStatus()
	u.updateTray()
	if u.OnSettingsSaved != nil {
		u.OnSettingsSaved(u.be.Settings())
	}
	if now := u.receiving(); now != was && u.OnReceivingChanged != nil {
		u.OnReceivingChanged(now)
	}
	return err
}

// SetReceiving switches receiving on (with the last policy that allowed it) or off.
func (u *UI) SetReceiving(on bool) {
	s := u.be.Settings()
	switch {
	case on && s.Policy == PolicyOff:
		s.Policy = PolicyEveryone
		if u.lastOnPolicy != "" {
			s.Policy = u.lastOnPolicy
		}
	case !on && s.Policy != PolicyOff:
		u.lastOnPolicy = s.Policy
		s.Policy = PolicyOff
	default:
		return
	}
	u.settings.keepEdits(func() { u.saveSettings(s) })
}

// HandleClose is the window's close intercept; trayHost says whether a
// tray shows Ferry's icon right now. It returns true when it handled the
// close and false when the app should quit:
//   - with a tray and receiving on, it hides the window (telling the user
//     once that Ferry keeps running in the tray);
//   - without a tray and receiving on, it asks once whether to quit (there
//     would be no way back to a hidden window), then quits;
//   - with receiving off, closing quits.
//
// Where closing quits while a transfer is under way, it asks first (and
// returns true: the answer quits or not).
func (u *UI) HandleClose(trayHost bool) bool {
	if !u.receiving() {
		return u.askBeforeQuit()
	}
	s := u.be.Settings()
	if !trayHost {
		if s.NoTrayNoticeShown {
			return u.askBeforeQuit()
		}
		s.NoTrayNoticeShown = true
		if err := u.be.SaveSettings(s); err != nil {
			u.showError("Could not save the settings", err)
		}
		u.confirmQuitWithoutTray()
		return true
	}
	u.win.Hide()
	u.hidden = true
	if !s.TrayNoticeShown {
		u.notify("Ferry is still receiving",
			"Ferry keeps running in the tray so nearby devices can send you files. Quit it from the tray menu.")
		s.TrayNoticeShown = true
		if err := u.be.SaveSettings(s); err != nil {
			u.showError("Could not save the settings", err)
		}
	}
	return true
}

// Receiving reports whether this device accepts offers.
func (u *UI) Receiving() bool { return u.receiving() }

// SetWindowShown tells the UI whether its window is on screen (the app
// starts it hidden in the tray); HandleClose and revealing it keep this up
// to date afterwards.
func (u *UI) SetWindowShown(shown bool) { u.hidden = !shown }

func (u *UI) revealWindow() {
	u.hidden = false
	if u.OnShow != nil {
		u.OnShow()
		return
	}
	u.win.Show()
}

// notifyActions shows a notification with buttons where the desktop can.
func (u *UI) notifyActions(title, body string, actions []NoticeAction) {
	if u.opt.NotifyActions != nil {
		u.opt.NotifyActions(title, body, actions)
		return
	}
	u.notify(title, body)
}

// notifyTagged shows a notification that closeNotice(tag) withdraws.
func (u *UI) notifyTagged(tag, title, body string, actions []NoticeAction) {
	if u.opt.NotifyTagged != nil {
		u.opt.NotifyTagged(tag, title, body, actions)
		return
	}
	u.notifyActions(title, body, actions)
}

// closeNotice withdraws the notification tagged tag, if it is still up.
func (u *UI) closeNotice(tag string) {
	if u.opt.CloseNotice != nil {
		u.opt.CloseNotice(tag)
	}
}

func (u *UI) notify(title, body string) {
	if u.opt.Notify != nil {
		u.opt.Notify(title, body)
		return
	}
	u.app.SendNotification(fyne.NewNotification(title, body))
}

// notifyResult tells the user how a transfer ended, unless they did it
// themselves (cancelled, declined) or were already told (an expired offer).
func (u *UI) notifyResult(ev TransferEvent) {
	r := ev.Result
	if r == nil {
		return
	}
	who := u.who(ev.Peer)
	in := ev.Direction == Incoming
	st := describe(Outcome{State: r.State, Code: r.Code, ByPeer: r.ByPeer, Err: r.Err}, ev.Direction, who, u.opt.PromptTimeout)
	// The model's bytes count each byte once; the engine's result counts
	// what was sent again after a reconnect.
	bytes := r.Bytes
	var d *transfer.Delivery
	if v := u.transfers.byID[ev.ID]; v != nil && v.d != nil {
		d = v.d
		if d.Phase == transfer.Done && d.Bytes > 0 {
			bytes = d.Bytes
		}
	}
	if v := u.transfers.byID[ev.ID]; v != nil && v.pairCode != "" && r.Code == CodeUntrusted && r.Err != "" {
		// Stopped over the verification code: by this user (nothing to
		// tell), or by the other one, whose reason the engine gives.
		if r.ByPeer {
			u.notify("Transfer stopped", EscapeLine(r.Err))
		}
		return
	}
	switch {
	case r.State == StateDone && in && r.Text != "" && r.Files == 0:
		text := r.Text
		actions := []NoticeAction{{Key: "default", Label: "Copy", Do: func() { u.copyText(text) }}}
		if link := TextLink(text); link != nil {
			actions = append(actions, NoticeAction{Key: "open", Label: "Open link", Do: func() { u.openLink(link) }})
		}
		u.notifyActions("Text from "+who, clip(EscapeText(text), 200), actions)
	case r.State == StateDone && in:
		key := ev.Peer.ID
		if key == "" {
			key = who
		}
		u.received(key, who, ev.ID, r.Files, bytes, u.now())
	case r.State == StateDone && r.Files == 0 && (r.Text != "" || d != nil && d.Text):
		u.notify("Text sent", fmt.Sprintf("Sent a text to %s.", who))
	case r.State == StateDone:
		u.sent(who, r.Files, bytes, u.now())
	case r.Code == CodeExpired && in, r.State == StateDeclined && in && !r.ByPeer:
		// The user declined, or the prompt already said it expired.
	case r.State == StateCancelled && !r.ByPeer, r.Code == CodeCancelled && !r.ByPeer:
		// The user cancelled it.
	case (r.Code == CodeNotPaired || r.Code == CodePairedBefore) && !r.ByPeer:
		// The user said the codes differ: the row says so; no need to tell them.
	case r.Code == CodeClosedHere:
		// A send the app shows again as it starts: its row says so; it
		// failed nothing now.
	case r.State == StateDeclined, r.Code == CodeDeclined, r.Code == CodeExpired, r.Code == CodeBusy, r.Code == CodeUntrusted:
		u.notify("Files not sent", st.Text+".")
	case r.State == StateCancelled, r.Code == CodeCancelled:
		u.notify("Transfer cancelled", st.Text+".")
	case r.State == StatePaused, r.Code == CodePaused:
		u.notify("Transfer paused", st.Text+".")
	case r.State == StateInterrupted:
		u.notify("Transfer interrupted", st.Text+". What arrived so far is kept.")
	case r.State == StateFailed && r.NotStarted && r.Err != "":
		u.notify("Files not sent", fmt.Sprintf("Not sent to %s. %s", who, EscapeLine(r.Err)))
	case r.State == StateFailed && r.Code == CodeNone:
		u.notify("Transfer failed", fmt.Sprintf("The transfer with %s did not finish. Its Details in Ferry say why.", who))
	case r.State == StateFailed:
		// The row's words: the model knows whether the device was ever
		// reached (went away, or could not be reached).
		text := failure(Outcome{Code: r.Code, ByPeer: r.ByPeer}, in, who)
		if v := u.transfers.byID[ev.ID]; v != nil && v.d != nil && v.d.Phase == transfer.Failed {
			text = strings.TrimSuffix(v.d.Status(), ".")
		}
		u.notify("Transfer failed", text+".")
	}
}

// fileURI turns a local path into a URI (used by tests and by the app's hooks).
func fileURI(path string) fyne.URI { return storage.NewFileURI(path) }
