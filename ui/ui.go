// Package ui draws Ferry's window and forwards what the user asks for to a
// Backend. It keeps no transfer state of its own: every row is the merge of
// the events it was given. It never imports fyne.io/fyne/v2/app, so its tests
// run headless with fyne.io/fyne/v2/test; package app wires it to the engine.
package ui

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// Options tune the UI. The zero value is usable.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Do runs a function on the Fyne goroutine; nil means fyne.Do. Tests
	// replace it to see how Run batches updates.
	Do func(func())
	// Refresh is how often coalesced progress reaches the widgets; zero means 250 ms.
	Refresh time.Duration
	// PromptTimeout declines an unanswered offer; zero means 2 minutes.
	PromptTimeout time.Duration
	// MaxPrompts bounds the queue of unanswered offers; zero means 8.
	MaxPrompts int
	// RecentInTray is how many finished transfers the tray menu lists; zero means 5.
	RecentInTray int
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
	tabs      *container.AppTabs
	status    *widget.Label
	self      Device
	tray      *fyne.Menu
	ask       *askDialog
	// lastOnPolicy is the policy to restore when receiving is switched back on.
	lastOnPolicy Policy

	// OnTrayChanged is called with the rebuilt tray menu whenever its
	// content changes (the app re-installs it). May be nil.
	OnTrayChanged func(*fyne.Menu)
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
		opt.Do = fyne.Do
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
	u := &UI{app: a, win: win, be: be, opt: opt, self: self}
	u.prompts = &promptQueue{u: u}
	u.devices = newDeviceList(u)
	u.transfers = newTransferList(u)
	u.history = newHistoryView(u)
	u.settings = newSettingsView(u)
	win.SetContent(u.layout())
	win.SetOnDropped(u.HandleDrop)
	u.addShortcuts()
	u.rebuildTray()
	return u
}

func (u *UI) now() time.Time { return u.opt.Now() }

func (u *UI) layout() fyne.CanvasObject {
	u.status = widget.NewLabel("")
	u.status.Truncation = fyne.TextTruncateEllipsis
	u.updateStatus()

	sendFile := widget.NewButtonWithIcon("Send files…", theme.FileIcon(), func() { u.pickAndSend(nil) })
	sendFile.Importance = widget.HighImportance
	sendDir := widget.NewButtonWithIcon("Send folder…", theme.FolderIcon(), func() { u.pickFolderAndSend(nil) })
	add := widget.NewButtonWithIcon("Add device by address…", theme.ContentAddIcon(), u.showAddDevice)

	devHead := widget.NewLabelWithStyle("Nearby devices", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	devHint := widget.NewLabel("Drop files on a device to send them.")
	devHint.SizeName = theme.SizeNameCaptionText
	devices := container.NewBorder(container.New(&tightVBox{}, devHead, devHint), container.NewVBox(add), nil, nil, u.devices.scroll)

	clear := widget.NewButtonWithIcon("Clear finished", theme.ContentClearIcon(), u.transfers.clearFinished)
	trHead := container.NewBorder(nil, nil, nil, clear, widget.NewLabelWithStyle("Transfers", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	transfers := container.NewBorder(trHead, nil, nil, nil, u.transfers.scroll)

	split := container.NewHSplit(container.NewPadded(devices), container.NewPadded(transfers))
	split.Offset = 0.45
	top := container.NewBorder(nil, widget.NewSeparator(), nil, container.NewHBox(sendFile, sendDir), u.status)
	home := container.NewBorder(container.NewPadded(top), nil, nil, nil, split)

	u.tabs = container.NewAppTabs(
		container.NewTabItemWithIcon("Nearby", theme.HomeIcon(), home),
		container.NewTabItemWithIcon("History", theme.HistoryIcon(), u.history.obj),
		container.NewTabItemWithIcon("Settings", theme.SettingsIcon(), u.settings.obj),
	)
	u.tabs.OnSelected = func(t *container.TabItem) {
		if t.Content == u.settings.obj {
			u.partials.reload()
		}
	}
	return u.tabs
}

func (u *UI) receiving() bool { return u.be.Settings().Policy != PolicyOff }

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
	u.status.SetText(fmt.Sprintf("This device: %s · %s · %s", EscapeName(name), ShortID(u.self.ID), state))
}

func (u *UI) addShortcuts() {
	c := u.win.Canvas()
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyO, Modifier: fyne.KeyModifierShortcutDefault}, func(fyne.Shortcut) { u.pickAndSend(nil) })
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyD, Modifier: fyne.KeyModifierShortcutDefault}, func(fyne.Shortcut) { u.showAddDevice() })
	c.AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyComma, Modifier: fyne.KeyModifierShortcutDefault}, func(fyne.Shortcut) { u.tabs.SelectIndex(2) })
}

// ApplyDevice renders one discovery event. Call it on the Fyne goroutine
// (Run does); from elsewhere wrap it in fyne.Do.
func (u *UI) ApplyDevice(ev DeviceEvent) { u.devices.apply(ev) }

// ApplyTransfer renders one transfer event. Call it on the Fyne goroutine.
func (u *UI) ApplyTransfer(ev TransferEvent) {
	if ev.Time.IsZero() {
		ev.Time = u.now()
	}
	u.transfers.apply(ev)
	switch ev.Kind {
	case TransferOffer:
		if ev.Direction == Incoming && ev.State == StateWaiting {
			u.prompts.offer(ev)
		}
	case TransferResult:
		u.prompts.remove(ev.ID) // withdrawn by the sender or timed out in the engine
		u.history.reload()
		if ev.Direction == Incoming {
			u.partials.reload() // it may have left partial files, or used them up
		}
		u.rebuildTray()
		u.notifyResult(ev)
	}
}

// ExpirePrompts declines the offers not answered by now. Run calls it on every tick.
func (u *UI) ExpirePrompts(now time.Time) { u.prompts.expire(now) }

// Run feeds events to the widgets until ctx ends. Progress and metrics are
// coalesced per transfer and delivered at most every Options.Refresh; every
// other event is delivered at once, after the progress it supersedes.
func (u *UI) Run(ctx context.Context, devices <-chan DeviceEvent, transfers <-chan TransferEvent) error {
	tick := time.NewTicker(u.opt.Refresh)
	defer tick.Stop()
	type key struct {
		id   string
		kind TransferEventKind
	}
	pending := make(map[key]TransferEvent)
	var order []key
	take := func(id string) []TransferEvent {
		var out []TransferEvent
		keep := order[:0]
		for _, k := range order {
			if id == "" || k.id == id {
				out = append(out, pending[k])
				delete(pending, k)
			} else {
				keep = append(keep, k)
			}
		}
		order = keep
		return out
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
			if ev.Kind == TransferProgress || ev.Kind == TransferMetrics {
				k := key{ev.ID, ev.Kind}
				if _, seen := pending[k]; !seen {
					order = append(order, k)
				}
				pending[k] = ev
				continue
			}
			batch := append(take(ev.ID), ev)
			u.opt.Do(func() {
				for _, e := range batch {
					u.ApplyTransfer(e)
				}
			})
		case <-tick.C:
			batch := take("")
			now := u.now()
			u.opt.Do(func() {
				for _, e := range batch {
					u.ApplyTransfer(e)
				}
				u.ExpirePrompts(now)
			})
		}
	}
}

// HandleDrop is the window's drop handler: files dropped on a device row go
// to that device; dropped anywhere else, the user is asked which device.
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
	if r := u.devices.rowAt(pos); r != nil {
		u.send(r.dev, paths)
		return
	}
	u.askDevice(paths)
}

// send asks the backend to send and reports a failure to start.
func (u *UI) send(d Device, paths []string) {
	if err := u.be.Send(d, paths); err != nil {
		u.showError("Could not send to "+EscapeName(displayName(d)), err)
	}
}

// pickAndSend lets the user choose a file, then sends it to dev (or asks which device).
func (u *UI) pickAndSend(dev *Device) {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil || r == nil {
			return
		}
		p := r.URI().Path()
		_ = r.Close()
		u.sendOrAsk(dev, []string{p})
	}, u.win)
	u.fitDialog(d)
	d.Show()
}

// pickFolderAndSend lets the user choose a folder to send.
func (u *UI) pickFolderAndSend(dev *Device) {
	d := dialog.NewFolderOpen(func(l fyne.ListableURI, err error) {
		if err != nil || l == nil {
			return
		}
		u.sendOrAsk(dev, []string{l.Path()})
	}, u.win)
	u.fitDialog(d)
	d.Show()
}

func (u *UI) fitDialog(d *dialog.FileDialog) {
	s := u.win.Canvas().Size()
	if s.Width > 200 && s.Height > 200 {
		d.Resize(fyne.NewSize(s.Width*0.9, s.Height*0.9))
	}
}

func (u *UI) sendOrAsk(dev *Device, paths []string) {
	if dev != nil {
		u.send(*dev, paths)
		return
	}
	u.askDevice(paths)
}

// askDialog asks which device files should go to.
type askDialog struct {
	paths   []string
	devices []Device
	choice  *widget.RadioGroup
	send    *widget.Button
	dlg     *dialog.CustomDialog
}

func (u *UI) askDevice(paths []string) {
	online := u.devices.online()
	if len(online) == 0 {
		dialog.ShowInformation("No device nearby",
			"No device is visible right now. Open Ferry on the other device, or add it by address.", u.win)
		return
	}
	a := &askDialog{paths: paths, devices: online}
	labels := make([]string, len(online))
	for i, d := range online {
		labels[i] = fmt.Sprintf("%s (%s)", EscapeName(displayName(d)), ShortID(d.ID))
	}
	a.choice = widget.NewRadioGroup(labels, nil)
	a.choice.Required = true
	a.choice.SetSelected(labels[0])
	what := plural(len(paths), "item")
	if len(paths) == 1 {
		what = EscapeName(filepath.Base(paths[0]))
	}
	cancel := widget.NewButton("Cancel", func() { a.dlg.Hide() })
	a.send = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), func() {
		a.dlg.Hide()
		for i, l := range labels {
			if l == a.choice.Selected {
				u.send(a.devices[i], a.paths)
			}
		}
	})
	a.send.Importance = widget.HighImportance
	a.dlg = dialog.NewCustomWithoutButtons("Send "+what+" to…", a.choice, u.win)
	a.dlg.SetButtons([]fyne.CanvasObject{cancel, a.send})
	a.dlg.SetOnClosed(func() {
		if u.ask == a {
			u.ask = nil
		}
	})
	u.ask = a
	a.dlg.Show()
}

func (u *UI) showAddDevice() {
	entry := widget.NewEntry()
	entry.SetPlaceHolder("192.168.1.20:52000")
	items := []*widget.FormItem{widget.NewFormItem("Address", entry)}
	d := dialog.NewForm("Add device by address", "Add", "Cancel", items, func(ok bool) {
		if !ok {
			return
		}
		addr := strings.TrimSpace(entry.Text)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			dev, err := u.be.AddDevice(ctx, addr)
			u.opt.Do(func() {
				if err != nil {
					u.showError("Could not add "+EscapeName(addr), err)
					return
				}
				u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: dev})
			})
		}()
	}, u.win)
	d.Resize(fyne.NewSize(420, 0))
	d.Show()
	u.win.Canvas().Focus(entry)
}

func (u *UI) cancel(id string) {
	if err := u.be.Cancel(id); err != nil && !errors.Is(err, context.Canceled) {
		u.showError("Could not cancel the transfer", err)
	}
}

func (u *UI) pause(id string) {
	if err := u.be.Pause(id); err != nil {
		u.showError("Could not pause the transfer", err)
	}
}

func (u *UI) resume(id string) {
	if err := u.be.Resume(id); err != nil {
		u.showError("Could not resume the transfer", err)
	}
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

func (u *UI) saveSettings(s Settings) {
	was := u.receiving()
	if err := u.be.SaveSettings(s); err != nil {
		u.showError("Could not save the settings", err)
	}
	u.settings.load()
	u.updateStatus()
	u.rebuildTray()
	if u.OnSettingsSaved != nil {
		u.OnSettingsSaved(u.be.Settings())
	}
	if now := u.receiving(); now != was && u.OnReceivingChanged != nil {
		u.OnReceivingChanged(now)
	}
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
	u.saveSettings(s)
}

// HandleClose is the window's close intercept. With a tray and receiving
// on it hides the window (telling the user once that Ferry keeps running)
// and returns true; otherwise it returns false and the app should quit.
func (u *UI) HandleClose(tray bool) bool {
	if !tray || !u.receiving() {
		return false
	}
	u.win.Hide()
	if s := u.be.Settings(); !s.TrayNoticeShown {
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

// Tray returns the tray menu (Fyne appends Quit itself).
func (u *UI) Tray() *fyne.Menu { return u.tray }

func (u *UI) rebuildTray() {
	open := fyne.NewMenuItem("Open Ferry", u.revealWindow)
	recv := fyne.NewMenuItem("Receiving", func() { u.SetReceiving(!u.receiving()) })
	recv.Checked = u.receiving()
	recent := fyne.NewMenuItem("Recent transfers", nil)
	var items []*fyne.MenuItem
	for i, e := range u.be.History() {
		if i >= u.opt.RecentInTray {
			break
		}
		item := fyne.NewMenuItem(historyTitle(e), nil)
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
	recent.ChildMenu = fyne.NewMenu("", items...)
	u.tray = fyne.NewMenu("Ferry", open, recv, fyne.NewMenuItemSeparator(), recent)
	if u.OnTrayChanged != nil {
		u.OnTrayChanged(u.tray)
	}
}

func (u *UI) revealWindow() {
	if u.OnShow != nil {
		u.OnShow()
		return
	}
	u.win.Show()
}

func (u *UI) notify(title, body string) {
	u.app.SendNotification(fyne.NewNotification(title, body))
}

func (u *UI) notifyResult(ev TransferEvent) {
	r := ev.Result
	if r == nil {
		return
	}
	who := EscapeName(ev.Peer.Name)
	files := plural(r.Files, "file")
	switch {
	case r.State == StateDone && ev.Direction == Incoming:
		u.notify("Files received", fmt.Sprintf("Received %s (%s) from %s.", files, HumanBytes(r.Bytes), who))
	case r.State == StateDone:
		u.notify("Files sent", fmt.Sprintf("Sent %s (%s) to %s.", files, HumanBytes(r.Bytes), who))
	case r.State == StateFailed:
		msg := r.Err
		if msg == "" {
			msg = "the connection was lost"
		}
		u.notify("Transfer failed", fmt.Sprintf("The transfer with %s failed: %s", who, msg))
	case r.State == StateDeclined && ev.Direction == Outgoing:
		u.notify("Transfer declined", fmt.Sprintf("%s declined the files.", who))
	}
}

func (u *UI) showError(what string, err error) {
	dialog.ShowError(fmt.Errorf("%s: %w", what, err), u.win)
}

// fileURI turns a local path into a URI (used by tests and by the app's hooks).
func fileURI(path string) fyne.URI { return storage.NewFileURI(path) }
