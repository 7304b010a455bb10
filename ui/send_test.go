package ui

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/testutil"
	"github.com/ferrydrop/ferry/internal/uitree"
)

var desktopCtrlEnter = desktop.CustomShortcut{KeyName: fyne.KeyReturn, Modifier: fyne.KeyModifierControl}

func splitHostPort(s string) (string, string, error) { return net.SplitHostPort(s) }

// rowLabel is the name label's text of a tree row, whole.
func rowLabel(o fyne.CanvasObject) string { return o.(*fyne.Container).Objects[0].(*nameLabel).full }

// renderedText is every label's text under o.
func renderedText(o fyne.CanvasObject) string {
	var b strings.Builder
	uitree.Walk(o, func(x fyne.CanvasObject) {
		if l, ok := x.(*widget.Label); ok {
			b.WriteString(l.Text + "\n")
		}
	})
	return b.String()
}

// dangerButton is the red button of the topmost dialog (Forget, Clear).
func dangerButton(t *testing.T, u *UI) *button {
	t.Helper()
	var found *button
	uitree.Walk(u.win.Canvas().Overlays().Top(), func(x fyne.CanvasObject) {
		if b, ok := x.(*button); ok && b.Importance == widget.DangerImportance {
			found = b
		}
	})
	if found == nil {
		t.Fatal("no red button in the dialog")
	}
	return found
}

func bob(online bool) Device {
	return Device{ID: idBob, Name: "Bob's phone", OS: "android", Addrs: reach("10.0.0.9:4000", addr.QUIC), Online: online, Source: "mdns"}
}

// The send sheet lists the online devices with a check each; Send sends
// to every checked one, each as a transfer of its own, and needs one.
func TestChooserSendsToEveryCheckedDevice(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: bob(true)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: "OFF" + idAlice[3:], Name: "Away", Source: "remembered"}})
	u.askSend(Items{Paths: []string{"/a.jpg", "/b.jpg", "/c.pdf"}}, nil)
	c := u.ask
	if len(c.checks) != 2 {
		t.Fatalf("%d checks, want the 2 online devices", len(c.checks))
	}
	if c.checks[0].Checked || c.checks[1].Checked || !c.sendBtn.Disabled() {
		t.Fatal("with two devices none is checked, and Send waits for one")
	}
	if !strings.Contains(c.what.Text, "a.jpg, b.jpg and 1 more") {
		t.Errorf("the sheet says %q", c.what.Text)
	}
	test.Tap(c.checks[0])
	test.Tap(c.checks[1])
	if c.sendBtn.Disabled() || !strings.Contains(c.head.Text, "2 devices") {
		t.Fatalf("two checked: Send disabled %v, head %q", c.sendBtn.Disabled(), c.head.Text)
	}
	test.Tap(c.sendBtn)
	if len(be.sends) != 2 || be.sends[0].dev.ID != idAlice || be.sends[1].dev.ID != idBob || len(be.sends[1].paths) != 3 {
		t.Fatalf("sends %+v, want the three files to each", be.sends)
	}
	if u.ask != nil {
		t.Fatal("the sheet stayed open")
	}
}

// Devices checked in the list: a drop on one of them goes to all; a drop
// on another device goes to that one; dropped elsewhere, the sheet opens
// with them checked. A dropped-on row is lit.
func TestMultiDropOnASelection(t *testing.T) {
	u, be, c := newTestUI(t)
	u.win.Resize(fyne.NewSize(900, 600))
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: bob(true)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: "CAROL" + idAlice[5:], Name: "Carol", Addrs: reach("10.0.0.3:1", addr.QUIC), Online: true}})
	test.Tap(u.devices.rows[0].pick) // Alice
	test.Tap(u.devices.rows[1].pick) // Bob
	if got := u.devices.selected(); len(got) != 2 {
		t.Fatalf("selected %v", got)
	}
	center := func(r *deviceRow) fyne.Position {
		p := fyne.CurrentApp().Driver().AbsolutePositionForObject(r.obj)
		return p.Add(fyne.NewPos(r.obj.Size().Width/2, r.obj.Size().Height/2))
	}
	u.HandleDrop(center(u.devices.rows[1]), []fyne.URI{fileURI("/tmp/x.txt")})
	if len(be.sends) != 2 || u.devices.lit != u.devices.rows[1].dev.Key() {
		t.Fatalf("a drop on a checked row sent %+v (lit %q); want both checked devices", be.sends, u.devices.lit)
	}
	// The row goes out at a tick once its moment is over, not from a
	// timer of its own (one outlived the test's window and drew with no
	// theme: a panic in a later test).
	u.devices.unflash(c.t.Add(flashFor - time.Millisecond))
	if u.devices.lit == "" {
		t.Fatal("the row went out before its moment was over")
	}
	u.devices.unflash(c.t.Add(flashFor))
	if u.devices.lit != "" {
		t.Fatalf("lit %q after its moment", u.devices.lit)
	}
	u.HandleDrop(center(u.devices.rows[2]), []fyne.URI{fileURI("/tmp/y.txt")})
	if len(be.sends) != 3 || be.sends[2].dev.Name != "Carol" {
		t.Fatalf("a drop on an unchecked row: %+v", be.sends)
	}
	u.HandleDrop(fyne.NewPos(890, 590), []fyne.URI{fileURI("/tmp/z.txt")})
	if u.ask == nil || !u.ask.checks[0].Checked || !u.ask.checks[1].Checked || u.ask.checks[2].Checked {
		t.Fatal("the sheet does not start with the checked devices")
	}
}

// A drop on a device's row sends to that device even when the list
// changed since the window last painted: render makes every row anew on
// any device's change, and a window's driver knows an object's place only
// once a frame drew it. The drop opened the send sheet instead (seen under
// load in app's TestGUIEndToEnd, the second drop on the same row).
func TestDropOnARowMadeSinceTheLastFrame(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: bob(true)})
	drv := &paintedDriver{Driver: fyne.CurrentApp().Driver(), painted: map[fyne.CanvasObject]bool{}}
	fyne.SetCurrentApp(paintedApp{App: fyne.CurrentApp(), drv: drv})
	drv.paint(u.win.Canvas())
	r := u.devices.rows[1] // Bob
	at := drv.AbsolutePositionForObject(r.obj).Add(fyne.NewPos(r.obj.Size().Width/2, r.obj.Size().Height/2))
	u.HandleDrop(at, []fyne.URI{fileURI("/tmp/x.txt")})
	if len(be.sends) != 1 || be.sends[0].dev.ID != idBob {
		t.Fatalf("a drop on a painted row: sends %+v", be.sends)
	}
	changed := alice(true)
	changed.Trusted = true // Alice announced herself again: every row is new
	u.ApplyDevice(DeviceEvent{Kind: DeviceChanged, Device: changed})
	u.HandleDrop(at, []fyne.URI{fileURI("/tmp/y.txt")})
	if len(be.sends) != 2 || be.sends[1].dev.ID != idBob || u.ask != nil {
		t.Fatalf("a drop on Bob's row made since the last frame: sends %+v, send sheet open %v", be.sends, u.ask != nil)
	}
	// Below the list's last row (its empty part) is no row.
	drv.paint(u.win.Canvas())
	last := u.devices.rows[len(u.devices.rows)-1].obj
	below := drv.AbsolutePositionForObject(last).Add(fyne.NewPos(10, last.Size().Height+20))
	u.HandleDrop(below, []fyne.URI{fileURI("/tmp/z.txt")})
	if len(be.sends) != 2 || u.ask == nil {
		t.Fatalf("a drop below the rows: sends %+v, send sheet open %v", be.sends, u.ask != nil)
	}
}

// paintedDriver is the test driver as a window's driver behaves: it knows
// where an object is only once a frame painted it (the window fills its
// canvas cache as a frame walks the tree), and answers (0, 0) before that.
type paintedDriver struct {
	fyne.Driver
	painted map[fyne.CanvasObject]bool
}

func (d *paintedDriver) AbsolutePositionForObject(o fyne.CanvasObject) fyne.Position {
	if !d.painted[o] {
		return fyne.Position{}
	}
	return d.Driver.AbsolutePositionForObject(o)
}

// paint records the objects a frame of c draws.
func (d *paintedDriver) paint(c fyne.Canvas) {
	var walk func(o fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		d.painted[o] = true
		switch x := o.(type) {
		case *fyne.Container:
			for _, o := range x.Objects {
				walk(o)
			}
		case fyne.Widget:
			for _, o := range test.WidgetRenderer(x).Objects() {
				walk(o)
			}
		}
	}
	walk(c.Content())
}

// paintedApp is an app whose driver is a paintedDriver.
type paintedApp struct {
	fyne.App
	drv *paintedDriver
}

func (a paintedApp) Driver() fyne.Driver { return a.drv }

// Send text: the byte limit is shown and kept; Ctrl+Enter or the button
// goes on to the devices.
func TestSendText(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	u.showSendText([]Device{alice(true)}, "")
	in, ok := u.win.Canvas().Focused().(*textEntry)
	if !ok {
		t.Fatalf("focus on %T, want the text", u.win.Canvas().Focused())
	}
	in.SetText(strings.Repeat("x", MaxTextBytes+1))
	in.TypedShortcut(&desktopCtrlEnter)
	if len(be.sends) != 0 {
		t.Fatal("a text over the limit was sent")
	}
	in.SetText("see you at 8\nbring the map")
	in.TypedShortcut(&desktopCtrlEnter)
	if len(be.sends) != 1 || be.sends[0].text != "see you at 8\nbring the map" || be.sends[0].dev.ID != idAlice {
		t.Fatalf("sends %+v", be.sends)
	}
}

// The clipboard: paths and file:// URIs of files that exist go as files
// (what file managers copy), anything else as a text.
func TestSendClipboard(t *testing.T) {
	u, be, _ := newTestUI(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a b.txt"), filepath.Join(dir, "c.txt")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dev := []Device{alice(true)}
	u.app.Clipboard().SetContent("# copied\r\nfile://" + strings.ReplaceAll(a, " ", "%20") + "\r\n" + b + "\n")
	u.sendClipboard(dev)
	if len(be.sends) != 1 || strings.Join(be.sends[0].paths, "|") != a+"|"+b {
		t.Fatalf("files from the clipboard: %+v", be.sends)
	}
	u.app.Clipboard().SetContent("https://example.org/x")
	u.sendClipboard(dev)
	if len(be.sends) != 2 || be.sends[1].text != "https://example.org/x" || be.sends[1].paths != nil {
		t.Fatalf("text from the clipboard: %+v", be.sends)
	}
	for _, notFiles := range []string{a + "\n/does/not/exist", "relative/path", "file://otherhost/x", ""} {
		if p := ClipboardPaths(notFiles); p != nil {
			t.Errorf("ClipboardPaths(%q) = %q", notFiles, p)
		}
	}
}

// The prompt counts down, groups the files by folder (with the offer's
// counts and sizes, more than it lists), shows an offered text escaped,
// and Save to… takes the chosen folder into the decision.
func TestPromptCountdownFoldersTextAndSaveTo(t *testing.T) {
	u, be, c := newTestUI(t)
	be.free = 1 << 40
	picked := ""
	u.opt.Picker = func(req PickRequest, done func([]string, error)) {
		if !req.Folders {
			t.Error("Save to… asked for files")
		}
		done([]string{"/media/usb/in"}, nil)
		picked = "yes"
	}
	o := &Offer{Count: 1203, Total: 5_000_000, FreeBytes: 1 << 40, Dest: "/home/u/Downloads", Text: "look\u202eat this",
		Folders: []FolderInfo{{Path: "Photos", Files: 1200, Bytes: 4_900_000}}}
	for i := 0; i < 3; i++ {
		o.Files = append(o.Files, FileInfo{Path: "Photos/p" + string(rune('0'+i)) + ".jpg", Size: 1000})
	}
	o.Files = append(o.Files, FileInfo{Path: "a.txt", Size: 10}, FileInfo{Path: "b\ttab.txt", Size: 10, Refused: "a tab in the name"})
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "p1", Direction: Incoming, State: StateWaiting, Peer: Peer{ID: idAlice, Name: "Alice"}, Offer: o})
	p := u.prompts.queue[0]
	if p.countdown.Text != "Expires in 2:00" {
		t.Errorf("countdown %q", p.countdown.Text)
	}
	u.ExpirePrompts(c.t.Add(75 * time.Second))
	if p.countdown.Text != "Expires in 0:45" {
		t.Errorf("countdown after 75 s %q", p.countdown.Text)
	}
	tr := p.tree
	root := tr.children[""]
	if len(root) != 4 || root[0] != "d0" || root[3] != "m" {
		t.Fatalf("tree root %v, want the folder, two loose files and a 'more'", root)
	}
	if kids := tr.children["d0"]; len(kids) != 4 || kids[3] != "m0" {
		t.Fatalf("folder children %v, want 3 files and 'and 1197 more'", kids)
	}
	node := tr.tree.CreateNode(true)
	tr.update("d0", true, node)
	if got := rowLabel(node); got != "Photos — 1,200 files" {
		t.Errorf("folder row %q", got)
	}
	tr.update("m0", false, node)
	if got := rowLabel(node); got != "and 1,197 more files" {
		t.Errorf("more row %q", got)
	}
	tr.update("f4", false, node)
	if got := rowLabel(node); !strings.Contains(got, `"b\ttab.txt": a tab in the name`) {
		t.Errorf("refused row %q", got)
	}
	if !strings.Contains(renderedText(p.scroll.Content), `look\u202eat this`) {
		t.Error("the offered text is not shown escaped")
	}
	test.Tap(p.choose)
	if picked == "" || p.destLbl.Text != "Save to /media/usb/in" {
		t.Fatalf("Save to… shows %q", p.destLbl.Text)
	}
	test.Tap(p.accept)
	if d := be.decisions["p1"]; !d.Accept || d.Dest != "/media/usb/in" {
		t.Fatalf("decision %+v", d)
	}
}

// Accept and Decline in the notification answer the offer; a second press
// (the prompt is gone) does nothing.
func TestNotificationButtonsAnswerTheOffer(t *testing.T) {
	u, be, _ := newTestUI(t)
	var acts []NoticeAction
	u.opt.NotifyActions = func(_, _ string, a []NoticeAction) { acts = a }
	u.ApplyTransfer(offerEvent("n1", 1))
	if len(acts) < 2 || acts[0].Key != "accept" || acts[1].Key != "decline" {
		t.Fatalf("actions %+v", acts)
	}
	acts[0].Do()
	acts[1].Do()
	if d, ok := be.decisions["n1"]; !ok || !d.Accept || len(u.prompts.queue) != 0 {
		t.Fatalf("decision %+v, queue %d", d, len(u.prompts.queue))
	}
}

// The Devices page: auto-accept, rename and forget reach the backend.
func TestDevicesPage(t *testing.T) {
	u, be, c := newTestUI(t)
	be.known = []KnownDevice{
		{ID: idAlice, Name: "Alice's laptop", Announced: "Alice's laptop", LastSeen: c.t.Add(-time.Hour)},
		{ID: idBob, Name: "Bob's phone", Announced: "Bob's phone", AutoAccept: true},
	}
	u.known.reload()
	v := u.known
	if len(v.rows) != 2 || v.rows[0].auto.Checked || !v.rows[1].auto.Checked {
		t.Fatalf("rows %+v", v.rows)
	}
	test.Tap(v.rows[0].auto)
	if !be.known[0].AutoAccept {
		t.Error("auto-accept did not reach the backend")
	}
	test.Tap(v.rows[0].rename)
	in := u.win.Canvas().Focused().(*entry)
	in.SetText("  Work laptop ")
	press(u, fyne.KeyReturn)
	if be.known[0].Name != "Work laptop" || !be.known[0].Renamed {
		t.Fatalf("renamed to %+v", be.known[0])
	}
	if !strings.Contains(renderedText(v.box), "calls itself Alice's laptop") {
		t.Error("the page does not say what the device calls itself")
	}
	test.Tap(v.rows[1].forget)
	press(u, fyne.KeyEscape) // Keep
	if len(be.known) != 2 {
		t.Fatal("Escape forgot the device")
	}
	test.Tap(v.rows[1].forget)
	dangerButton(t, u).OnTapped()
	if len(be.known) != 1 || be.known[0].ID != idAlice {
		t.Fatalf("known %+v after Forget", be.known)
	}
}

// A device link carries address and ID; "Add device" takes it or host:port.
func TestDeviceLinks(t *testing.T) {
	link := DeviceLink("192.168.1.20:47800", idAlice)
	if addr, id, err := ParseDeviceAddress(link); err != nil || addr != "192.168.1.20:47800" || id != idAlice {
		t.Fatalf("ParseDeviceAddress(%q) = %q %q %v", link, addr, id, err)
	}
	v6 := DeviceLink("[fd00::20]:47800", idAlice)
	if addr, _, err := ParseDeviceAddress(" " + v6 + "\n"); err != nil || addr != "[fd00::20]:47800" {
		t.Fatalf("v6 link %q: %q %v", v6, addr, err)
	}
	if addr, id, err := ParseDeviceAddress("10.0.0.2:4000"); err != nil || addr != "10.0.0.2:4000" || id != "" {
		t.Fatalf("host:port: %q %q %v", addr, id, err)
	}
	for _, bad := range deviceAddressCases {
		if addr, id, err := ParseDeviceAddress(bad); err == nil {
			t.Errorf("ParseDeviceAddress(%q) = %q %q", bad, addr, id)
		}
	}
	u, be, _ := newTestUI(t)
	u.showAddDevice()
	in := u.win.Canvas().Focused().(*entry)
	in.SetText(link)
	press(u, fyne.KeyReturn)
	testutil.WaitFor(t, "the device to be added", func() bool { be.mu.Lock(); defer be.mu.Unlock(); return len(be.added) == 1 })
	if be.added[0] != "192.168.1.20:47800 "+idAlice {
		t.Fatalf("AddDevice got %q", be.added)
	}
}

// deviceAddressCases are inputs "Add device" must refuse; they double as
// FuzzParseDeviceAddress's corpus.
var deviceAddressCases = []string{"", "host", "ferry://", "ferry://:47800", "ferry://h:47800?id=nope",
	"ferry://h:47800?id=" + strings.Repeat("A", 53), "a b:1", strings.Repeat("x", 600) + ":1", "http://h:1/x",
	// Other spellings of idAlice (discovery and the engine refuse them
	// too: one device, one ID): its last character's four unused bits
	// set, and letters that strings.ToUpper folds to an I or an S.
	"ferry://h:47800?id=" + idAlice[:51] + "R", "ferry://h:47800?id=" + strings.ToLower(idAlice[:51]) + "z",
	"ferry://h:47800?id=" + idAlice[:48] + "-" + idAlice[48:51] + "N",
	"ferry://h:47800?id=" + url.QueryEscape(strings.Replace(strings.ToLower(idAlice), "i", "ı", 1)),
	"ferry://h:47800?id=" + url.QueryEscape(strings.Replace(idBob, "C", "ſ", 1)),
}

func FuzzParseDeviceAddress(f *testing.F) {
	for _, c := range deviceAddressCases {
		f.Add(c)
	}
	f.Add(DeviceLink("10.0.0.1:1", idAlice))
	f.Fuzz(func(t *testing.T, s string) {
		addr, id, err := ParseDeviceAddress(s)
		if err != nil {
			return
		}
		if _, _, err := splitHostPort(addr); err != nil || id != "" && !validID(id) {
			t.Fatalf("ParseDeviceAddress(%q) = %q %q", s, addr, id)
		}
	})
}

// TextLink opens only whole http(s) and mailto links.
func TestTextLink(t *testing.T) {
	for in, want := range map[string]bool{
		"https://example.org/a?b=c": true, " http://x.org \n": true, "mailto:a@b.org": true,
		"see https://example.org": false, "javascript:alert(1)": false, "file:///etc/passwd": false, "https://": false, "": false,
	} {
		if got := TextLink(in) != nil; got != want {
			t.Errorf("TextLink(%q) = %v, want %v", in, got, want)
		}
	}
}

// Names of what a transfer holds.
func TestItemsText(t *testing.T) {
	for _, c := range []struct {
		names []string
		items int
		text  string
		want  string
	}{
		{[]string{"a.jpg", "b.jpg", "c.jpg"}, 5, "", "a.jpg, b.jpg and 3 more"},
		{[]string{"Photos"}, 1, "", "Photos"},
		{nil, 0, "hi", "a text"},
		{[]string{"a.jpg"}, 1, "hi", "a.jpg and a text"},
		{[]string{"a\u202egpj.exe"}, 1, "", `"a\u202egpj.exe"`},
	} {
		if got := ItemsText(c.names, c.items, c.text); got != c.want {
			t.Errorf("ItemsText(%q, %d, %q) = %q, want %q", c.names, c.items, c.text, got, c.want)
		}
	}
}

// History search matches device names, file names and texts; Clear asks first.
func TestHistorySearchAndClear(t *testing.T) {
	u, be, c := newTestUI(t)
	be.history = []HistoryEntry{
		{ID: "1", Direction: Incoming, PeerName: "Alice", Files: 2, State: StateDone, Names: []string{"beach.jpg", "dune.jpg"}, Items: 2, Finished: c.t},
		{ID: "2", Direction: Outgoing, PeerName: "Bob", State: StateDone, Text: "the wifi password is hunter2", Finished: c.t},
	}
	u.history.reload()
	for q, want := range map[string]int{"": 2, "alice": 1, "BEACH": 1, "hunter2": 1, "bob wifi": 1, "carol": 0} {
		u.history.search.SetText(q)
		if len(u.history.entries) != want {
			t.Errorf("search %q: %d entries, want %d", q, len(u.history.entries), want)
		}
	}
	u.history.search.SetText("")
	test.Tap(u.history.clear)
	press(u, fyne.KeyEscape)
	if len(be.history) != 2 {
		t.Fatal("Escape cleared the history")
	}
	test.Tap(u.history.clear)
	dangerButton(t, u).OnTapped()
	if len(be.history) != 0 || len(u.history.entries) != 0 {
		t.Fatal("the history was not cleared")
	}
}

// A click on a History row leaves no highlight behind: kept by position,
// it moved to another entry as soon as a transfer ended (or the search
// changed), and a row does nothing when clicked (its buttons do).
func TestHistoryRowClickLeavesNoSelection(t *testing.T) {
	u, be, c := newTestUI(t)
	be.history = []HistoryEntry{
		{ID: "1", Direction: Incoming, PeerName: "Alice", Files: 2, State: StateDone, Names: []string{"beach.jpg"}, Items: 1, Finished: c.t},
		{ID: "2", Direction: Outgoing, PeerName: "Bob", Files: 1, State: StateDone, Names: []string{"notes.txt"}, Items: 1, Finished: c.t},
	}
	u.history.reload()
	u.win.SetContent(u.history.obj)
	// What a click on the second row does (Fyne's list item selects its ID).
	u.history.list.Select(1)
	// The list's selection is not exported; what it holds is what it draws.
	selected := func() int { return reflect.ValueOf(u.history.list).Elem().FieldByName("selected").Len() }
	if n := selected(); n != 0 {
		t.Fatalf("after a click %d rows are drawn selected, want none", n)
	}
	be.history = append([]HistoryEntry{{ID: "3", Direction: Incoming, PeerName: "Carol", Files: 1, State: StateDone, Finished: c.t}}, be.history...)
	u.history.reload()
	if n := selected(); n != 0 {
		t.Errorf("after a new entry %d rows are drawn selected (another entry than the one clicked), want none", n)
	}
}

// A prompt's summary counts what its size counts: files whose names cannot
// be stored here will not come, and are said apart (it read "6 files,
// 4.0 kB in total" beside a tree of 6 files and 6.0 kB).
func TestOfferSummaryCountsTheRefused(t *testing.T) {
	for _, c := range []struct {
		o    Offer
		want string
	}{
		{Offer{Count: 2, Total: 2000, Files: []FileInfo{{Path: "a", Size: 1000}, {Path: "b", Size: 1000}}}, "2 files, 2.0 kB in total"},
		{Offer{Count: 6, Total: 4000, Files: []FileInfo{{Path: "a", Size: 1000}, {Path: "b\t", Size: 1000, Refused: "a tab"}, {Path: "c\u202e", Size: 1000, Refused: "bidi"}}},
			"4 of 6 files (2 cannot be saved here), 4.0 kB in total"},
		{Offer{Count: 1, Total: 0, Text: "hi", Files: []FileInfo{{Path: "x\t", Size: 5, Refused: "a tab"}}}, "A text and 0 of 1 file (1 cannot be saved here), 0 B in total"},
	} {
		if got := offerSummary(&c.o); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// windowButton is the main window's button that reads text.
func windowButton(t *testing.T, u *UI, text string) *button {
	t.Helper()
	var found *button
	uitree.Walk(u.win.Content(), func(x fyne.CanvasObject) {
		if b, ok := x.(*button); ok && b.Text == text {
			found = b
		}
	})
	if found == nil {
		t.Fatalf("no %q button in the window", text)
	}
	return found
}

// Devices checked in the list are where Send files…, Folder… and Text…
// send, from the window's buttons and from the menu as from their
// shortcuts (Ctrl+O, Ctrl+T). The buttons and the menu's files and folder
// items passed no device: the send sheet opened with nothing checked,
// though the list's hint says "check several to send to all" (seen on
// screen: three devices checked, Send files…, a sheet with none).
func TestSendButtonsFollowTheListsChecks(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: bob(true)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: "CAROL" + idAlice[5:], Name: "Carol", Addrs: reach("10.0.0.3:1", addr.QUIC), Online: true}})
	test.Tap(u.devices.rows[0].pick) // Alice
	test.Tap(u.devices.rows[1].pick) // Bob
	u.opt.Picker = func(req PickRequest, done func([]string, error)) { done([]string{"/tmp/x.txt"}, nil) }
	menuItem := func(label string) func() {
		for _, i := range u.mainMenu().Items[0].Items {
			if i.Label == label {
				return i.Action
			}
		}
		t.Fatalf("no menu item %q", label)
		return nil
	}
	for _, c := range []struct {
		name string
		send func()
	}{
		{"Send files… button", func() { test.Tap(windowButton(t, u, "Send files…")) }},
		{"Folder… button", func() { test.Tap(windowButton(t, u, "Folder…")) }},
		{"Send files… in the menu", menuItem("Send files…")},
		{"Send folder… in the menu", menuItem("Send folder…")},
	} {
		be.sends = nil
		c.send()
		if ask := u.ask; ask != nil {
			t.Errorf("%s: the send sheet opened, with %d of %d devices checked", c.name, len(ask.targets()), len(ask.checks))
			ask.dlg.Hide()
			continue
		}
		if len(be.sends) != 2 || be.sends[0].dev.ID != idAlice || be.sends[1].dev.ID != idBob {
			t.Errorf("%s sent %+v, want x.txt to Alice and Bob", c.name, be.sends)
		}
	}

	be.sends = nil
	test.Tap(windowButton(t, u, "Text…"))
	top := u.win.Canvas().Overlays().Top()
	var entry *textEntry
	uitree.Walk(top, func(x fyne.CanvasObject) {
		if e, ok := x.(*textEntry); ok {
			entry = e
		}
	})
	if entry == nil {
		t.Fatal("Text… showed no text field")
	}
	if !strings.Contains(renderedText(top), "Send text to 2 devices") {
		t.Errorf("the text dialog does not say it goes to the 2 checked devices:\n%s", renderedText(top))
	}
	entry.SetText("hello")
	entry.submit()
	if u.ask != nil {
		u.ask.dlg.Hide()
		t.Fatal("Text…: the send sheet opened for the text")
	}
	if len(be.sends) != 2 || be.sends[0].text != "hello" || be.sends[1].dev.ID != idBob {
		t.Fatalf("Text… sent %+v, want the text to Alice and Bob", be.sends)
	}
}

// Clear finished can be pressed only when a row has finished: with none
// (no transfers yet, or only running ones) it did nothing, looking like
// any other button (seen on screen at first start).
func TestClearFinishedOnlyWithFinishedRows(t *testing.T) {
	u, _, _ := newTestUI(t)
	clear := windowButton(t, u, "Clear finished")
	if !clear.Disabled() {
		t.Fatal("Clear finished can be pressed with no transfer")
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "a", Direction: Outgoing, State: StateActive, Peer: Peer{Name: "Bob"}})
	if !clear.Disabled() {
		t.Fatal("Clear finished can be pressed with only a running transfer")
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "a", Direction: Outgoing, Peer: Peer{Name: "Bob"}, Result: &Result{State: StateDone}})
	if clear.Disabled() {
		t.Fatal("Clear finished cannot be pressed with a finished transfer")
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "b", Direction: Incoming, State: StateActive, Peer: Peer{Name: "Ann"}})
	test.Tap(clear)
	if len(u.transfers.order) != 1 || !clear.Disabled() {
		t.Fatalf("after Clear finished: %d rows, button disabled %v; want the running row and a disabled button", len(u.transfers.order), clear.Disabled())
	}
}

// A send that waits for its device and then goes on by itself (the app's
// rejoin: its device went away, or its reconnecting gave up; a kept send
// shown again at the start) is not finished: Clear finished dropped its
// row (and its Cancel) while the send still went on, and counted it as
// finished. Sends that are over go as before.
func TestClearFinishedKeepsSendsThatWaitForTheirDevice(t *testing.T) {
	u, be, _ := newTestUI(t)
	clear := windowButton(t, u, "Clear finished")
	bob := Peer{ID: idBob, Name: "Bob's laptop"}
	send := func(id string, evs ...TransferEvent) {
		t.Helper()
		for _, ev := range evs {
			ev.ID, ev.Delivery, ev.Direction, ev.Peer = id, id, Outgoing, bob
			if ev.Result != nil {
				ev.Kind, ev.State = TransferResult, ev.Result.State
			}
			u.ApplyTransfer(ev)
		}
	}
	active := TransferEvent{Kind: TransferState, State: StateActive}
	moved := TransferEvent{Kind: TransferProgress, State: StateActive, Progress: &Progress{Bytes: 5, Total: 10}}
	offered := TransferEvent{Kind: TransferOffer, Offer: &Offer{Count: 1, Files: []FileInfo{{Path: "big.bin", Size: 10}}, Total: 10}}
	end := func(state State, code Code, rejoin bool) TransferEvent {
		return TransferEvent{Result: &Result{State: state, Code: code, Rejoin: rejoin}}
	}
	send("gone", active, moved, end(StateFailed, CodeConnectionLost, true))
	send("gaveup", active, moved, TransferEvent{Kind: TransferState, State: StateRetrying}, end(StateFailed, CodeIO, true))
	send("kept", offered, end(StateFailed, CodeClosedHere, true))
	waiting := []string{"kept", "gaveup", "gone"} // newest first
	if !clear.Disabled() {
		t.Error("Clear finished can be pressed with only sends that wait for their device")
	}
	send("done", active, moved, end(StateDone, "", false))
	send("declined", offered, end(StateDeclined, CodeDeclined, false))
	send("full", active, moved, end(StateFailed, CodeNoSpace, true)) // not gone: nothing goes on by itself
	send("spent", active, moved, end(StateFailed, CodeConnectionLost, false))
	send("cancelled", active, end(StateCancelled, CodeCancelled, false))
	if clear.Disabled() {
		t.Fatal("Clear finished cannot be pressed with finished sends")
	}
	test.Tap(clear)
	if !reflect.DeepEqual(u.transfers.order, waiting) || !clear.Disabled() {
		t.Fatalf("after Clear finished: rows %v, button disabled %v; want %v and a disabled button", u.transfers.order, clear.Disabled(), waiting)
	}
	for _, id := range waiting {
		if v := u.transfers.byID[id]; !v.cancel.Visible() || !v.retry.Visible() {
			t.Errorf("%s after Clear finished: %q, cancel %v retry %v", id, v.stateLbl.Text, v.cancel.Visible(), v.retry.Visible())
		}
	}
	// Cancelled by the user, it waits for nothing: it is over.
	test.Tap(u.transfers.byID["gone"].cancel)
	if len(be.cancels) != 1 || clear.Disabled() {
		t.Fatalf("cancels %v, Clear finished disabled %v", be.cancels, clear.Disabled())
	}
	test.Tap(clear)
	if want := []string{"kept", "gaveup"}; !reflect.DeepEqual(u.transfers.order, want) {
		t.Errorf("after Cancel and Clear finished: rows %v, want %v", u.transfers.order, want)
	}
}

// The empty Transfers list says "No transfers yet" only before the first
// transfer: after Clear finished it said so too, which was untrue (seen on
// screen); it says none is under way and where the finished ones went.
func TestEmptyListAfterClearFinishedSaysNoneUnderWay(t *testing.T) {
	u, _, _ := newTestUI(t)
	hint := func() string {
		t.Helper()
		objs := u.transfers.box.Objects
		if len(objs) != 1 || objs[0] != fyne.CanvasObject(u.transfers.empty) {
			t.Fatalf("the list shows %d objects, not its hint alone", len(objs))
		}
		return u.transfers.empty.Text
	}
	if got := hint(); !strings.HasPrefix(got, "No transfers yet.") {
		t.Errorf("at first: %q", got)
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "a", Direction: Outgoing, State: StateActive, Peer: Peer{Name: "Bob"}})
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "a", Direction: Outgoing, Peer: Peer{Name: "Bob"}, Result: &Result{State: StateDone}})
	test.Tap(windowButton(t, u, "Clear finished"))
	if got := hint(); !strings.HasPrefix(got, "No transfers under way.") || !strings.Contains(got, "History") {
		t.Errorf("after Clear finished: %q, want that none is under way and the finished ones are in History", got)
	}
}

// The sheet's "Sending" line wraps between names, never before a comma:
// a name wider than the sheet was broken within by Fyne, and at some
// lengths its comma began the next line (seen under Xvfb: "Sending
// IMG_….jpg" then ", short.txt"). Such names are listed one per line.
func TestSendSheetNeverStartsALineWithAComma(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: bob(true)})
	u.win.Resize(fyne.NewSize(670, 469)) // the window at its smallest
	for n := 20; n <= 120; n++ {
		long := "/IMG_" + strings.Repeat("x", n) + ".jpg"
		u.askSend(Items{Paths: []string{long, "/short.txt", "/c.txt"}}, nil)
		c := u.ask
		var rows []string
		uitree.Walk(c.what, func(o fyne.CanvasObject) {
			if x, ok := o.(*canvas.Text); ok && x.Text != "" {
				rows = append(rows, x.Text)
			}
		})
		all := strings.Join(rows, "")
		if !strings.Contains(all, "short.txt") || !strings.Contains(all, "and 1 more") {
			t.Fatalf("name of %d: the sheet says %q", n, rows)
		}
		for _, r := range rows {
			if strings.HasPrefix(strings.TrimSpace(r), ",") {
				t.Fatalf("name of %d: a line starts with a comma: %q", n, rows)
			}
		}
	}
}

// A device with a long name (a name of your own, up to 255 bytes, or
// one it announces) keeps the send sheet inside the window: its check
// shows the name shortened, with its short ID. The sheet took the width
// of the whole name, wider than the window, and Add files… went off its
// right edge (seen on screen with a device renamed to 250 characters).
func TestSendSheetFitsALongDeviceName(t *testing.T) {
	u, _, _ := newTestUI(t)
	long := strings.Repeat("The shared family computer in the living room ", 6)[:250]
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idAlice, Name: long, Online: true, Addrs: reach("10.0.0.2:1", addr.QUIC)}})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: bob(true)})
	u.win.Resize(fyne.NewSize(670, 469)) // the window at its smallest
	u.askSend(Items{Paths: []string{"/a.jpg"}}, nil)
	c := u.ask
	if w, max := c.dlg.MinSize().Width, u.win.Canvas().Size().Width; w > max {
		t.Errorf("the send sheet is %v wide, the window %v", w, max)
	}
	if got := sheetText(c); !strings.Contains(got, "The shared family") || !strings.Contains(got, "(AAAA-BBBB)") {
		t.Errorf("the long name's check reads %q, want its start and short ID", got)
	}
}

// Files handed over by a second launch (ferry FILE while Ferry runs, the
// desktop's "Open with Ferry") open the send sheet with the devices
// checked in the list checked, as a drop outside the rows does; it opened
// with none checked, so Enter did nothing and the user checked them again.
func TestSecondLaunchSheetStartsWithTheCheckedDevices(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: alice(true)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: bob(true)})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: "CAROL" + idAlice[5:], Name: "Carol", Addrs: reach("10.0.0.3:1", addr.QUIC), Online: true}})
	test.Tap(u.devices.rows[0].pick) // Alice
	test.Tap(u.devices.rows[2].pick) // Carol
	u.OpenFiles([]string{"/home/u/report.pdf"})
	c := u.ask
	if c == nil {
		t.Fatal("no send sheet")
	}
	var checked []string
	for i, ch := range c.checks {
		if ch.Checked {
			checked = append(checked, c.devices[i].Name)
		}
	}
	if strings.Join(checked, ",") != "Alice's laptop,Carol" || c.sendBtn.Disabled() {
		t.Fatalf("the sheet starts with %v checked (Send disabled %v), want Alice and Carol as in the list", checked, c.sendBtn.Disabled())
	}
	press(u, fyne.KeyReturn)
	if len(be.sends) != 2 || be.sends[0].dev.ID != idAlice || be.sends[1].dev.Name != "Carol" {
		t.Fatalf("Enter sent %+v, want the file to Alice and Carol", be.sends)
	}

	// Nothing checked in the list: the sheet asks, as before.
	test.Tap(u.devices.rows[0].pick)
	test.Tap(u.devices.rows[2].pick)
	u.OpenFiles([]string{"/home/u/b.pdf"})
	for i, ch := range u.ask.checks {
		if ch.Checked {
			t.Fatalf("%s checked with none checked in the list", u.ask.devices[i].Name)
		}
	}
}

// TestSendSheetFitsTheSmallestWindowWithWideNames: a device name of wide
// letters made the sheet wider than the window at its smallest (the name
// was cut at 60 characters, whatever their width): under Xvfb at
// FYNE_SCALE=2, "Bob's extraordinarily long-named workstation in the
// upstairs office" made the sheet 634 wide and pushed the window's own
// minimum from 578 to 634. The name is now shortened to the sheet's width,
// the short ID kept whole, and the name still checks its device.
func TestSendSheetFitsTheSmallestWindowWithWideNames(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.win.Resize(sizeMin)
	wide := Device{ID: idAlice, Name: strings.Repeat("W", 60), Addrs: reach("10.0.0.2:1", addr.QUIC), Online: true}
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: wide})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: bob(true)})
	u.OpenFiles([]string{"/home/u/report.pdf"})
	c := u.ask
	win := u.win.Canvas().Size()
	if w := c.dlg.MinSize().Width; w > win.Width {
		t.Fatalf("the sheet needs %v wide, the window is %v", w, win.Width)
	}
	abs := fyne.CurrentApp().Driver().AbsolutePositionForObject
	for _, o := range []fyne.CanvasObject{c.checks[0], c.sendBtn} {
		if p := abs(o); p.X+o.Size().Width > win.Width {
			t.Errorf("%T reaches x=%v, past the %v window", o, p.X+o.Size().Width, win.Width)
		}
	}
	if got := sheetText(c); !strings.Contains(got, ShortID(idAlice)) || !strings.Contains(got, "WWW") {
		t.Errorf("the sheet says %q, want the start of the name and the whole short ID", got)
	}
	c.checks[0].SetChecked(false)
	test.Tap(c.names[0])
	if !c.checks[0].Checked {
		t.Error("a tap on the name did not check its device")
	}
}

// sheetText is what the send sheet's device lines say.
func sheetText(c *chooser) string {
	var out []string
	uitree.Walk(c.list, func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.Label:
			out = append(out, x.Text)
		case *sheetName:
			out = append(out, x.Text)
		}
	})
	return strings.Join(out, " ")
}

// The send sheet says how many files and bytes it sends, counted off the
// Fyne goroutine ("Counting…" until then), and what it leaves out. A
// count that would end the send in an error says so and Send waits; a
// count of items since replaced is dropped, and stopped; closing the
// sheet stops the count.
func TestSendSheetSaysWhatItSends(t *testing.T) {
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	w.Resize(fyne.NewSize(900, 600))
	be := newFake()
	type call struct {
		ctx   context.Context
		paths []string
		reply chan func() (Contents, error)
	}
	calls := make(chan call, 8)
	be.survey = func(ctx context.Context, paths []string) (Contents, error) {
		c := call{ctx, paths, make(chan func() (Contents, error), 1)}
		calls <- c
		return (<-c.reply)()
	}
	var mu sync.Mutex
	var queued []func()
	u := New(a, w, be, Device{Name: "Desk", ID: idBob}, Options{Do: func(f func()) { mu.Lock(); queued = append(queued, f); mu.Unlock() }})
	// runQueued runs on this goroutine, as the Fyne one, what the count
	// handed over.
	runQueued := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			mu.Lock()
			fs := queued
			queued = nil
			mu.Unlock()
			for _, f := range fs {
				f()
			}
			if len(fs) > 0 {
				return
			}
		}
		t.Fatal("the count handed nothing over in 10 s")
	}
	next := func() call {
		t.Helper()
		select {
		case c := <-calls:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no count started in 10 s")
			return call{}
		}
	}
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: bob(true)})

	u.askSend(Items{Paths: []string{"/home/sam/T", "/home/sam/notes.txt"}}, nil)
	c := u.ask
	first := next()
	if c.size.Text != "Counting…" || !c.size.Visible() {
		t.Errorf("while counting the sheet says %q", c.size.Text)
	}
	if !slices.Equal(first.paths, []string{"/home/sam/T", "/home/sam/notes.txt"}) {
		t.Errorf("counted %q", first.paths)
	}
	first.reply <- func() (Contents, error) {
		return Contents{Files: 20_000, EmptyFolders: 2, Bytes: 58_600_000, Skipped: "1 symbolic link (not followed)"}, nil
	}
	runQueued()
	if want := "20,000 files and 2 empty folders, 58.6 MB. Left out: 1 symbolic link (not followed)"; c.size.Text != want {
		t.Errorf("the sheet says %q, want %q", c.size.Text, want)
	}
	if c.sendBtn.Disabled() {
		t.Error("Send waits with the files counted and the one device checked")
	}

	// Items that would end the send in an error: it says so, Send waits.
	u.askSend(Items{Paths: []string{"/home/sam/links"}}, nil)
	c = u.ask
	bad := next()
	bad.reply <- func() (Contents, error) {
		return Contents{}, errors.New("nothing to send: no regular files in the given paths; they hold only 2 symbolic links (not followed)")
	}
	runQueued()
	if !strings.HasPrefix(c.size.Text, "Nothing to send: no regular files") || c.size.Importance != widget.DangerImportance {
		t.Errorf("the sheet says %q (%v)", c.size.Text, c.size.Importance)
	}
	if !c.sendBtn.Disabled() {
		t.Error("Send is offered for items that cannot be sent")
	}
	test.Tap(c.checks[0]) // unchecked, then checked again: Send still waits
	test.Tap(c.checks[0])
	if !c.sendBtn.Disabled() {
		t.Error("checking a device offered Send for items that cannot be sent")
	}

	// Files added while a count is under way: that count stops and what
	// it says later is dropped; the new one is shown, and Send is back.
	c.items.Paths = append(c.items.Paths, "/home/sam/a.jpg")
	c.describe()
	added := next()
	if c.size.Text != "Counting…" || c.size.Importance == widget.DangerImportance {
		t.Errorf("counting again the sheet says %q (%v)", c.size.Text, c.size.Importance)
	}
	c.items.Paths = append(c.items.Paths, "/home/sam/b.jpg")
	c.describe()
	if added.ctx.Err() == nil {
		t.Error("the count of the items before was not stopped")
	}
	latest := next()
	latest.reply <- func() (Contents, error) { return Contents{Files: 2, Bytes: 4_900_000}, nil }
	runQueued()
	added.reply <- func() (Contents, error) { return Contents{Files: 1, Bytes: 1}, nil }
	runQueued()
	if c.size.Text != "2 files, 4.9 MB" || c.sendBtn.Disabled() {
		t.Errorf("the sheet says %q, Send disabled %v; want the latest count, Send offered", c.size.Text, c.sendBtn.Disabled())
	}

	// A count under way stops when the sheet closes.
	u.askSend(Items{Paths: []string{"/home/sam/big"}}, nil)
	open := next()
	u.ask.dlg.Hide()
	if open.ctx.Err() == nil {
		t.Error("the sheet closed and its count went on")
	}
	open.reply <- func() (Contents, error) { return Contents{}, open.ctx.Err() }
	runQueued()

	// A text alone is not counted.
	u.askSend(Items{Text: "hello"}, nil)
	if u.ask.size.Visible() {
		t.Errorf("a text's sheet shows %q", u.ask.size.Text)
	}
	select {
	case c := <-calls:
		t.Errorf("a text was counted: %q", c.paths)
	default:
	}
}

func TestContentsText(t *testing.T) {
	for _, tc := range []struct {
		c    Contents
		want string
	}{
		{Contents{Files: 1, Bytes: 5}, "1 file, 5 B"},
		{Contents{Files: 3, Bytes: 7_340_000}, "3 files, 7.3 MB"},
		{Contents{Files: 105_252, Bytes: 1_900_000_000}, "105,252 files, 1.9 GB"},
		{Contents{Files: 2, EmptyFolders: 1, Bytes: 0}, "2 files and 1 empty folder, 0 B"},
		{Contents{Files: 2, Bytes: 10, Skipped: "1 device, socket or pipe"}, "2 files, 10 B. Left out: 1 device, socket or pipe"},
	} {
		if got := contentsText(tc.c); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}
