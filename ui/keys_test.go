package ui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/internal/uitree"
)

func key(name fyne.KeyName) *fyne.KeyEvent { return &fyne.KeyEvent{Name: name} }

// press sends a key the way the window does: to the focused widget, else
// to the canvas.
func press(u *UI, name fyne.KeyName) {
	if f := u.win.Canvas().Focused(); f != nil {
		f.TypedKey(key(name))
		return
	}
	u.win.Canvas().OnTypedKey()(key(name))
}

func overlays(u *UI) int { return len(u.win.Canvas().Overlays().List()) }

func TestEscapeDeclinesThePromptWhereverTheFocusIs(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyTransfer(offerEvent("t1", 1))
	p := u.prompts.queue[0]
	if u.win.Canvas().Focused() != fyne.Focusable(p.decline) {
		t.Fatal("the prompt does not start on Decline")
	}
	u.win.Canvas().Focus(p.always) // somewhere else in the dialog
	press(u, fyne.KeyEscape)
	if d, ok := be.decisions["t1"]; !ok || d.Accept {
		t.Fatalf("Escape: decision %+v %v, want a decline", d, ok)
	}
	if overlays(u) != 0 || len(u.modals) != 0 {
		t.Fatalf("after Escape: %d overlays, %d modals", overlays(u), len(u.modals))
	}

	// Nothing focused: Escape reaches the canvas and still declines.
	u.ApplyTransfer(offerEvent("t2", 1))
	u.win.Canvas().Unfocus()
	press(u, fyne.KeyEscape)
	if d, ok := be.decisions["t2"]; !ok || d.Accept {
		t.Fatalf("Escape without focus: decision %+v %v", d, ok)
	}
}

func TestEnterPressesTheFocusedButton(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyTransfer(offerEvent("t1", 1))
	p := u.prompts.queue[0]
	test.FocusNext(u.win.Canvas()) // Tab: from Decline to Accept
	if u.win.Canvas().Focused() != fyne.Focusable(p.accept) {
		t.Fatalf("Tab from Decline focused %T", u.win.Canvas().Focused())
	}
	press(u, fyne.KeyReturn)
	if d, ok := be.decisions["t1"]; !ok || !d.Accept {
		t.Fatalf("Enter on Accept: decision %+v %v", d, ok)
	}
	// With nothing focused Enter does not accept files: the prompt has no
	// default that takes them.
	u.ApplyTransfer(offerEvent("t2", 1))
	u.win.Canvas().Unfocus()
	press(u, fyne.KeyReturn)
	if _, ok := be.decisions["t2"]; ok {
		t.Fatal("Enter without focus answered the prompt")
	}
}

func TestEscapeClosesDetailsAndErrors(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "s", Direction: Outgoing, State: StateActive, Peer: Peer{Name: "Alice"}})
	test.Tap(u.transfers.byID["s"].details)
	if u.transfers.detail == nil || overlays(u) != 1 {
		t.Fatal("details not shown")
	}
	press(u, fyne.KeyEscape)
	if u.transfers.detail != nil || overlays(u) != 0 {
		t.Fatal("Escape left the details open")
	}

	u.showError("Could not send to Alice", &Problem{Text: "Ferry does not know where Alice is.", Err: errors.New("dial udp: no route")})
	if overlays(u) != 1 {
		t.Fatal("error not shown")
	}
	press(u, fyne.KeyReturn) // focus starts on Close
	if overlays(u) != 0 {
		t.Fatal("Enter left the error open")
	}
	u.showError("Could not open the folder", errors.New("xdg-open: exit status 3"))
	u.win.Canvas().Unfocus()
	press(u, fyne.KeyEscape)
	if overlays(u) != 0 {
		t.Fatal("Escape left the error open")
	}
}

func TestErrorKeepsTechnicalTextBehindDetails(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.showError("Could not add the device at 10.0.0.2:1", &Problem{Text: "No Ferry device could be added at that address.", Err: errors.New("add: dial: connection refused")})
	var labels []*widget.Label
	uitree.Walk(u.win.Canvas().Overlays().Top(), func(o fyne.CanvasObject) {
		if l, ok := o.(*widget.Label); ok {
			labels = append(labels, l)
		}
	})
	var shown, hidden []string
	for _, l := range labels {
		if l.Visible() {
			shown = append(shown, l.Text)
		} else {
			hidden = append(hidden, l.Text)
		}
	}
	if !contains(join(shown), "No Ferry device could be added") || contains(join(shown), "connection refused") || !contains(join(hidden), "connection refused") {
		t.Fatalf("shown %q, hidden %q", shown, hidden)
	}
}

func TestAddDeviceFormKeyboard(t *testing.T) {
	u, _, _ := newTestUI(t)
	// What the form hands to Fyne's goroutine runs on the test's, which
	// stands for it: run where the form's goroutine called, it drew the new
	// device's row while the test's Enter still drew the entry (a data
	// race under -race, in one run of five).
	added := make(chan func(), 1)
	u.opt.Do = func(f func()) { added <- f }
	u.showAddDevice()
	e, ok := u.win.Canvas().Focused().(*entry)
	if !ok {
		t.Fatalf("focus on %T, want the address entry", u.win.Canvas().Focused())
	}
	// A bare host is not an address: the form says so and stays open.
	test.Type(e, "not an address")
	press(u, fyne.KeyReturn)
	if overlays(u) != 1 || len(u.devices.rows) != 0 {
		t.Fatalf("invalid address: %d overlays, %d devices", overlays(u), len(u.devices.rows))
	}
	e.SetText("10.0.0.2:4000")
	press(u, fyne.KeyReturn)
	select {
	case f := <-added:
		f()
	case <-time.After(10 * time.Second):
		t.Fatal("the device was not added")
	}
	if overlays(u) != 0 || len(u.devices.rows) != 1 {
		t.Fatalf("after Enter: %d overlays, %d devices", overlays(u), len(u.devices.rows))
	}
	// Escape cancels the form.
	u.showAddDevice()
	press(u, fyne.KeyEscape)
	if overlays(u) != 0 {
		t.Fatal("Escape left the form open")
	}
}

func TestChooserFollowsDevicesAndTakesEnter(t *testing.T) {
	u, be, _ := newTestUI(t)
	// Files from the command line before any device was found.
	u.OpenFiles([]string{"/home/u/report.pdf"})
	if u.ask == nil || len(u.ask.checks) != 0 {
		t.Fatal("no chooser while no device is online")
	}
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	// The only device is checked, and focused: Enter sends.
	if len(u.ask.checks) != 1 || !u.ask.checks[0].Checked || u.win.Canvas().Focused() != fyne.Focusable(u.ask.checks[0]) {
		t.Fatalf("chooser: %d checks, focus %T", len(u.ask.checks), u.win.Canvas().Focused())
	}
	press(u, fyne.KeyReturn)
	if len(be.sends) != 1 || be.sends[0].dev.ID != idAlice || be.sends[0].paths[0] != "/home/u/report.pdf" {
		t.Fatalf("sends = %+v", be.sends)
	}
	if u.ask != nil || overlays(u) != 0 {
		t.Fatal("chooser still open")
	}
	u.OpenFiles([]string{"/a"})
	press(u, fyne.KeyEscape)
	if u.ask != nil || len(be.sends) != 1 {
		t.Fatal("Escape did not cancel the chooser")
	}
}

func TestTrayMenuKeepsQuit(t *testing.T) {
	u, be, _ := newTestUI(t)
	quits := 0
	u.OnQuit = func() { quits++ }
	var installed []*fyne.Menu
	u.OnTrayChanged = func(m *fyne.Menu) { installed = append(installed, m) }
	m := u.Tray()
	last := func() *fyne.MenuItem { return m.Items[len(m.Items)-1] }
	if last().Label != "Quit" || !last().IsQuit {
		t.Fatalf("last item %q", last().Label)
	}
	be.history = []HistoryEntry{{ID: "h", PeerName: "Alice", Files: 1, State: StateDone}}
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "h", Direction: Outgoing, Peer: Peer{Name: "Alice"}, Result: &Result{State: StateDone, Files: 1}})
	u.SetReceiving(false)
	if len(installed) < 2 || installed[0] != m || installed[len(installed)-1] != m || u.Tray() != m {
		t.Fatal("the tray menu was replaced instead of updated")
	}
	if last().Label != "Quit" || m.Items[1].Checked || m.Items[3].ChildMenu.Items[0].Label != "Sent 1 file to Alice" {
		t.Fatalf("after updates: last %q, receiving %v, recent %q", last().Label, m.Items[1].Checked, m.Items[3].ChildMenu.Items[0].Label)
	}
	last().Action()
	// The window's menu has the same Quit.
	file := u.win.MainMenu().Items[0]
	file.Items[len(file.Items)-1].Action()
	if quits != 2 {
		t.Fatalf("quits = %d, want 2", quits)
	}
}

func TestCloseWithoutTrayQuitsAfterSayingSoOnce(t *testing.T) {
	u, be, _ := newTestUI(t)
	quits := 0
	u.OnQuit = func() { quits++ }
	if !u.HandleClose(false) || overlays(u) != 1 || !be.settings.NoTrayNoticeShown {
		t.Fatalf("first close without tray: %d overlays, notice %v", overlays(u), be.settings.NoTrayNoticeShown)
	}
	press(u, fyne.KeyReturn) // "Quit Ferry" has the focus
	if quits != 1 || overlays(u) != 0 {
		t.Fatalf("quits = %d, overlays %d", quits, overlays(u))
	}
	if u.HandleClose(false) {
		t.Fatal("later closes without a tray must quit")
	}
	// Receiving off: nothing runs in the background, closing quits.
	be.settings.Policy = PolicyOff
	if u.HandleClose(true) {
		t.Fatal("receiving off: closing must quit")
	}
}

func TestSettingsTrimTheName(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.settings.name.SetText("  Desk 2 ")
	test.Tap(u.settings.save)
	if be.settings.DeviceName != "Desk 2" {
		t.Fatalf("saved name %q", be.settings.DeviceName)
	}
}

func TestOpenFolderFailureIsShown(t *testing.T) {
	u, be, _ := newTestUI(t)
	be.openErr = &Problem{Text: "No app is set up to open folders on this computer. The files are in /home/u/Downloads.", Err: errors.New("xdg-open: not found")}
	u.openPath("/home/u/Downloads")
	if overlays(u) != 1 {
		t.Fatal("a failed Open folder said nothing")
	}
}

// TestPromptFitsTheSmallestWindow: at 488x320 the buttons stay inside the
// window, below the (scrolling) content, and the checkbox is reachable.
func TestPromptFitsTheSmallestWindow(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.win.Resize(sizeMin)
	u.ApplyTransfer(offerEvent("t1", 12))
	p := u.prompts.queue[0]
	drv := fyne.CurrentApp().Driver()
	win := u.win.Canvas().Size()
	for _, b := range []*button{p.decline, p.accept} {
		pos, size := drv.AbsolutePositionForObject(b), b.Size()
		if pos.X < 0 || pos.Y < 0 || pos.X+size.Width > win.Width || pos.Y+size.Height > win.Height || size.Height == 0 {
			t.Fatalf("%s at %v size %v is outside the %v window", b.Text, pos, size, win)
		}
	}
	sp, ss := drv.AbsolutePositionForObject(p.scroll), p.scroll.Size()
	if sp.Y+ss.Height > drv.AbsolutePositionForObject(p.accept).Y {
		t.Fatalf("content (to y=%v) overlaps the buttons (from y=%v)", sp.Y+ss.Height, drv.AbsolutePositionForObject(p.accept).Y)
	}
	if p.scroll.Content.Size().Height <= ss.Height {
		t.Fatal("12 files fit into 320 pixels? the content should scroll")
	}
	// The checkbox scrolls into view.
	p.scroll.ScrollToBottom()
	cp := drv.AbsolutePositionForObject(p.always)
	if cp.Y < sp.Y || cp.Y+p.always.Size().Height > sp.Y+ss.Height {
		t.Fatalf("checkbox at y=%v not within the content area %v..%v after scrolling", cp.Y, sp.Y, sp.Y+ss.Height)
	}
}

// TestLongStateWrapsInsteadOfStretchingButtons: at the smallest width a
// long state moves the buttons below the text; they keep their height.
func TestLongStateWrapsInsteadOfStretchingButtons(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.win.Resize(sizeMin)
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "s", Direction: Outgoing, Peer: Peer{Name: "A device with a very long name indeed"},
		Result: &Result{State: StateDeclined, Code: CodeBusy, ByPeer: true}})
	v := u.transfers.byID["s"]
	u.win.Content().Refresh()
	if h, want := v.details.Size().Height, v.details.MinSize().Height; h > want+1 {
		t.Fatalf("Details button %v high, its own height is %v", h, want)
	}
	drv := fyne.CurrentApp().Driver()
	if drv.AbsolutePositionForObject(v.buttons).Y < drv.AbsolutePositionForObject(v.stateLbl).Y+v.stateLbl.Size().Height-1 {
		t.Fatal("the buttons sit beside a state that does not fit there")
	}
}

func join(s []string) string {
	out := ""
	for _, x := range s {
		out += x + "\n"
	}
	return out
}

func TestEscapeCancelsFileDialogs(t *testing.T) {
	u, be, _ := newTestUI(t)
	for _, open := range []func(){func() { u.pickAndSend(nil) }, func() { u.pickFolderAndSend(nil) }, u.settings.browse.OnTapped} {
		open()
		if overlays(u) != 1 {
			t.Fatalf("file dialog not shown: %d overlays", overlays(u))
		}
		press(u, fyne.KeyEscape)
		if overlays(u) != 0 || len(u.modals) != 0 {
			t.Fatalf("Escape left %d overlays, %d modals", overlays(u), len(u.modals))
		}
	}
	if len(be.sends) != 0 {
		t.Fatalf("a cancelled file dialog sent %+v", be.sends)
	}
}

func TestQuitDuringTransferAsksFirst(t *testing.T) {
	u, be, _ := newTestUI(t)
	quits := 0
	u.OnQuit = func() { quits++ }
	quitItem := func() *fyne.MenuItem { m := u.Tray(); return m.Items[len(m.Items)-1] }

	// Nothing runs: Quit quits at once.
	quitItem().Action()
	if quits != 1 || overlays(u) != 0 {
		t.Fatalf("idle Quit: quits = %d, overlays %d", quits, overlays(u))
	}

	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "in", Direction: Incoming, State: StateActive, Peer: Peer{Name: "Bob"}})
	u.SetWindowShown(false) // in the tray
	quitItem().Action()
	if quits != 1 || overlays(u) != 1 || u.hidden {
		t.Fatalf("Quit while receiving: quits = %d, overlays %d, hidden %v", quits, overlays(u), u.hidden)
	}
	if s := topDialogText(u); !contains(s, "Quit Ferry?", "A transfer is in progress: receiving from Bob.", "Quit anyway?", "Keep running", "Quit Ferry") {
		t.Fatalf("the question:\n%s", s)
	}
	press(u, fyne.KeyEscape) // Keep running
	if quits != 1 || overlays(u) != 0 {
		t.Fatalf("Escape: quits = %d, overlays %d", quits, overlays(u))
	}

	// Closing the window where that quits (receiving off) asks too.
	be.settings.Policy = PolicyOff
	if !u.HandleClose(true) || overlays(u) != 1 || quits != 1 {
		t.Fatalf("close while receiving: overlays %d, quits %d", overlays(u), quits)
	}
	press(u, fyne.KeyReturn) // Quit Ferry has the focus
	if quits != 2 || overlays(u) != 0 {
		t.Fatalf("Enter: quits = %d, overlays %d", quits, overlays(u))
	}

	// Once it has ended, Quit quits again.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "in", Direction: Incoming, Peer: Peer{Name: "Bob"}, Result: &Result{State: StateDone, Files: 1}})
	quitItem().Action()
	if quits != 3 || overlays(u) != 0 {
		t.Fatalf("after the end: quits = %d, overlays %d", quits, overlays(u))
	}
}

// topDialogText is every label's and button's text in the topmost overlay.
func topDialogText(u *UI) string {
	var b strings.Builder
	uitree.Walk(u.win.Canvas().Overlays().Top(), func(x fyne.CanvasObject) {
		switch x := x.(type) {
		case *widget.Label:
			b.WriteString(x.Text + "\n")
		case *button:
			b.WriteString("[" + x.Text + "]\n")
		}
	})
	return b.String()
}

func TestEnterInASettingsFieldSaves(t *testing.T) {
	u, be, _ := newTestUI(t)
	s := u.settings
	for i, e := range []interface {
		fyne.Focusable
		Disabled() bool
	}{s.name, s.dir, s.localSend.pin, s.localSend.port} {
		if e.Disabled() {
			t.Fatalf("field %d disabled", i)
		}
		s.name.SetText(fmt.Sprintf("Desk %d", i))
		u.win.Canvas().Focus(e)
		e.TypedKey(key(fyne.KeyReturn))
		if want := fmt.Sprintf("Desk %d", i); be.settings.DeviceName != want {
			t.Fatalf("Enter in field %d: saved name %q, want %q", i, be.settings.DeviceName, want)
		}
	}
	test.Tap(s.anywhere.on)
	s.anywhere.relay.SetText("relay.example.org:47900")
	s.anywhere.relay.TypedKey(key(fyne.KeyReturn))
	if be.settings.AnywhereRelay != "relay.example.org:47900" {
		t.Fatalf("Enter in Relay: saved relay %q", be.settings.AnywhereRelay)
	}
}

// shortcut types a window shortcut, as the window does when no focused
// widget takes it.
func shortcut(u *UI, s fyne.Shortcut) {
	u.win.Canvas().(interface{ TypedShortcut(fyne.Shortcut) }).TypedShortcut(s)
}

// TestPagesAreReachedByKeyboardAndTakeTheFocus: Tab never reaches the tabs,
// so History and Settings' Devices page had no keyboard way in (Settings
// had Ctrl+,, with no way back to Nearby), and a page shown by a shortcut
// left the focus on a button of the page it hid, which Enter pressed
// (seen under Xvfb: Add device… focused, Ctrl+, then Enter opened Add
// device over Settings). Ctrl+1..4 and the menu show each page; the focus
// goes to History's search box, or nowhere (Tab starts at the page's top).
func TestPagesAreReachedByKeyboardAndTakeTheFocus(t *testing.T) {
	u, _, _ := newTestUI(t)
	var add *button
	uitree.Walk(u.win.Content(), func(o fyne.CanvasObject) {
		if b, ok := o.(*button); ok && b.Text == "Add device…" {
			add = b
		}
	})
	u.win.Canvas().Focus(add)
	shortcut(u, shortcutSettings)
	if got := u.tabs.Selected().Content; got != u.settings.obj {
		t.Fatal("Ctrl+, did not show Settings")
	}
	if f := u.win.Canvas().Focused(); f != nil {
		t.Fatalf("after Ctrl+, the focus is still on %T (a button of the hidden Nearby page)", f)
	}
	press(u, fyne.KeyReturn)
	if overlays(u) != 0 {
		t.Fatal("Enter on the Settings page opened a dialog of the Nearby page")
	}

	shortcut(u, shortcutHistory)
	if u.tabs.Selected().Content != u.history.obj || u.win.Canvas().Focused() != fyne.Focusable(u.history.search) {
		t.Fatalf("Ctrl+2: page %v, focus %T; want History with its search box focused", u.tabs.Selected().Text, u.win.Canvas().Focused())
	}
	shortcut(u, shortcutDevices)
	if u.tabs.Selected().Content != u.settings.obj || u.settings.tabs.Selected().Content != u.known.obj {
		t.Fatal("Ctrl+4 did not show Settings' Devices page")
	}
	if f := u.win.Canvas().Focused(); f != nil {
		t.Fatalf("after Ctrl+4 the focus is on %T, of the History page", f)
	}
	shortcut(u, shortcutNearby)
	if u.tabs.Selected().Content == u.settings.obj || u.tabs.Selected().Content == u.history.obj {
		t.Fatal("Ctrl+1 did not show Nearby")
	}

	// The menu, which Alt opens, names them.
	var labels []string
	for _, it := range u.mainMenu().Items[0].Items {
		labels = append(labels, it.Label)
	}
	if got := strings.Join(labels, "|"); !strings.Contains(got, "Nearby devices|History|Settings|Devices page") {
		t.Fatalf("menu %q lacks the pages", got)
	}
}

// inView reports whether o lies whole within the scroll's view.
func inView(s *container.Scroll, o fyne.CanvasObject) bool {
	abs := fyne.CurrentApp().Driver().AbsolutePositionForObject
	sp, op := abs(s), abs(o)
	return op.Y >= sp.Y && op.Y+o.Size().Height <= sp.Y+s.Size().Height
}

// tabTo moves the focus with Tab (or Shift+Tab) until it is on want, at
// most 40 times.
func tabTo(t *testing.T, u *UI, want fyne.Focusable, back bool) {
	t.Helper()
	for range 40 {
		if back {
			test.FocusPrevious(u.win.Canvas())
		} else {
			test.FocusNext(u.win.Canvas())
		}
		if u.win.Canvas().Focused() == want {
			return
		}
	}
	t.Fatalf("Tab never reached %T", want)
}

// TestTabScrollsTheFocusedControlIntoView: Fyne moves the focus with Tab
// but never scrolls to it, so at the smallest window Tab went on from the
// offer prompt's Accept to its Change… and "Always accept" below the fold,
// and in Settings to Save, with nothing on screen focused (seen under
// Xvfb). The scroll around the focused control now follows it, down and
// back up.
func TestTabScrollsTheFocusedControlIntoView(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.win.Resize(sizeMin)
	u.ApplyTransfer(offerEvent("t1", 12))
	p := u.prompts.queue[0]
	if p.scroll.Content.Size().Height <= p.scroll.Size().Height {
		t.Fatal("the prompt does not scroll at the smallest window: nothing to test")
	}
	if inView(p.scroll, p.always) {
		t.Fatal("'Always accept' in view before Tab: nothing to test")
	}
	// Decline, focused, and Accept are below the content, not in it:
	// the sender's name and the code stay in view.
	test.FocusNext(u.win.Canvas())
	if p.scroll.Offset.Y != 0 {
		t.Errorf("the prompt scrolled to %v for a button outside its content", p.scroll.Offset)
	}
	tabTo(t, u, p.always, false)
	if !inView(p.scroll, p.always) {
		t.Errorf("Tab to 'Always accept' left it out of view (offset %v)", p.scroll.Offset)
	}
	tabTo(t, u, p.choose, true)
	if !inView(p.scroll, p.choose) {
		t.Errorf("Shift+Tab to Change… left it out of view (offset %v)", p.scroll.Offset)
	}
	press(u, fyne.KeyEscape)

	u.showPage(pageSettings)
	v := u.settings
	// Save stays in view below the page; the last check above it did not.
	if inView(v.general, v.minimized) {
		t.Fatal("'Start minimised' in view at the smallest window: nothing to test")
	}
	tabTo(t, u, v.minimized, false)
	if !inView(v.general, v.minimized) {
		t.Errorf("Tab to 'Start minimised' left it out of view (offset %v)", v.general.Offset)
	}
	tabTo(t, u, v.name, true)
	if !inView(v.general, v.name) {
		t.Errorf("Shift+Tab back to Device name left it out of view (offset %v)", v.general.Offset)
	}
	// LocalSend's and the relay's fields, on so that their entries take
	// the focus: they were Fyne's own, and Tab left them below the fold.
	v.localSend.on.SetChecked(true)
	v.anywhere.on.SetChecked(true)
	for _, f := range []struct {
		name string
		o    interface {
			fyne.Focusable
			fyne.CanvasObject
		}
	}{
		{"LocalSend", v.localSend.on}, {"LocalSend PIN", v.localSend.pin}, {"LocalSend port", v.localSend.port},
		{"Beyond the LAN", v.anywhere.on}, {"Relay", v.anywhere.relay}, {"Relay secret", v.anywhere.secret},
	} {
		tabTo(t, u, f.o, false)
		if !inView(v.general, f.o) {
			t.Errorf("Tab to %s left it out of view (offset %v)", f.name, v.general.Offset)
		}
	}
	// Back up to "Who may send", whose options were Fyne's radio items.
	var options []fyne.Focusable
	uitree.Walk(v.policy, func(o fyne.CanvasObject) {
		if f, ok := o.(fyne.Focusable); ok {
			options = append(options, f)
		}
	})
	if len(options) != len(policyLabels) || inView(v.general, options[len(options)-1].(fyne.CanvasObject)) {
		t.Fatalf("%d options of 'Who may send', the last in view: nothing to test", len(options))
	}
	for i := len(options) - 1; i >= 0; i-- {
		tabTo(t, u, options[i], true)
		if !inView(v.general, options[i].(fyne.CanvasObject)) {
			t.Errorf("Shift+Tab to 'Who may send' option %d left it out of view (offset %v)", i, v.general.Offset)
		}
	}

	// Settings' Devices page, with more devices than it shows.
	be := u.be.(*fakeBackend)
	for i := range 12 {
		be.known = append(be.known, KnownDevice{ID: fmt.Sprintf("DEV%02d", i) + idAlice[5:], Name: fmt.Sprintf("Device %d", i)})
	}
	u.showPage(pageDevices)
	last := u.known.rows[len(u.known.rows)-1].forget
	if inView(u.known.scroll, last) {
		t.Fatal("the last device's Forget… in view: nothing to test")
	}
	tabTo(t, u, last, false)
	if !inView(u.known.scroll, last) {
		t.Errorf("Tab to the last device's Forget… left it out of view (offset %v)", u.known.scroll.Offset)
	}
}

// TestEnterOnAHistoryRowOpensItsDetails: Tab reaches History's list and
// Up and Down move among its rows (Fyne's list is focusable), but Enter did
// nothing there, and Space only selected the row, which History undoes at
// once: a keyboard user reached a row's details only through its small
// Details button, Tab by Tab. Enter (and Space) now open the details of
// the row the keyboard is on; a click still opens nothing.
func TestEnterOnAHistoryRowOpensItsDetails(t *testing.T) {
	u, be, c := newTestUI(t)
	be.history = []HistoryEntry{
		{ID: "1", Direction: Incoming, PeerName: "Alice", Files: 2, State: StateDone, Names: []string{"beach.jpg"}, Items: 1, Finished: c.t},
		{ID: "2", Direction: Outgoing, PeerName: "Bob", Files: 1, State: StateDone, Names: []string{"notes.txt"}, Items: 1, Finished: c.t},
	}
	u.history.reload()
	shortcut(u, shortcutHistory)
	tabTo(t, u, u.history.list, false)
	shows := func(text string) bool {
		found := false
		uitree.Walk(u.win.Canvas().Overlays().Top(), func(o fyne.CanvasObject) {
			if l, ok := o.(*widget.Label); ok && strings.Contains(l.Text, text) {
				found = true
			}
		})
		return found
	}
	for _, k := range []fyne.KeyName{fyne.KeyReturn, fyne.KeySpace} {
		press(u, fyne.KeyDown) // the second row, Bob's
		press(u, k)
		if overlays(u) != 1 || !shows("notes.txt") {
			t.Fatalf("%s on Bob's row: %d dialogs, showing notes.txt %v", k, overlays(u), shows("notes.txt"))
		}
		press(u, fyne.KeyEscape)
		if overlays(u) != 0 {
			t.Fatal("Escape left the details open")
		}
		u.win.Canvas().Focus(u.history.list)
		press(u, fyne.KeyUp)
	}
	u.history.list.Select(0) // a click
	if overlays(u) != 0 {
		t.Fatal("a click on a row opened its details")
	}
}

// topMenu is the pop-up menu shown with the keyboard on it, if any.
func topMenu(u *UI) *widget.PopUpMenu {
	m, _ := u.win.Canvas().Focused().(*widget.PopUpMenu)
	if m == nil || !m.Visible() || overlays(u) == 0 {
		return nil
	}
	return m
}

// TestF10OpensTheMenu: the window's menu opened from the keyboard only
// with Alt (Fyne's menu bar), which GTK and Windows users do not all know;
// F10 opens it too, as a pop-up of the same items the arrow keys, Enter
// and Escape work, wherever the focus is: on nothing, a button, an entry,
// History's list.
func TestF10OpensTheMenu(t *testing.T) {
	u, _, _ := newTestUI(t)
	file := u.win.MainMenu().Items[0]
	press(u, fyne.KeyF10)
	m := topMenu(u)
	if m == nil || len(m.Items) != len(file.Items) {
		t.Fatal("F10 with nothing focused did not open the window's menu")
	}
	press(u, fyne.KeyEscape)
	if topMenu(u) != nil {
		t.Fatal("Escape did not close the menu")
	}
	// From a button: down to Settings, Enter.
	focus(t, u, windowButton(t, u, "Send files…"))
	press(u, fyne.KeyF10)
	if topMenu(u) == nil {
		t.Fatal("F10 on a button did not open the menu")
	}
	for _, it := range file.Items {
		if it.Label == "Settings" {
			break
		}
		if !it.IsSeparator {
			press(u, fyne.KeyDown)
		}
	}
	press(u, fyne.KeyReturn)
	if topMenu(u) != nil || u.tabs.SelectedIndex() != pageSettings {
		t.Fatalf("Enter on Settings: menu open %v, page %d", topMenu(u) != nil, u.tabs.SelectedIndex())
	}
	for _, f := range []fyne.Focusable{u.settings.name, u.history.list} {
		focus(t, u, f)
		press(u, fyne.KeyF10)
		if topMenu(u) == nil {
			t.Fatalf("F10 on %T did not open the menu", f)
		}
		press(u, fyne.KeyEscape)
	}
}

// focus gives f the keyboard, showing its page first.
func focus(t *testing.T, u *UI, f fyne.Focusable) {
	t.Helper()
	if f == fyne.Focusable(u.history.list) {
		u.showPage(pageHistory)
	}
	u.win.Canvas().Focus(f)
	if u.win.Canvas().Focused() != f {
		t.Fatalf("%T cannot take the focus", f)
	}
}
