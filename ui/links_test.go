package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"

	"github.com/ferrydrop/ferry/internal/uitree"
)

// linkFake is the fake backend with browser links: OpenLink records the
// request and hands out a channel the test feeds.
type linkFake struct {
	*fakeBackend
	reqs    []LinkRequest
	stopped []string
	states  chan LinkState
	openErr error
	skipped string // what the links' folders hold that they do not serve
	// applied has a value after each function the UI ran through
	// Options.Do (Do runs it at once, on the goroutine that calls it).
	applied chan struct{}
	// hold, when set, keeps OpenLink until the context ends or a value
	// arrives; ctxErr is what the context said.
	hold   chan struct{}
	ctxErr chan error
}

func (f *linkFake) OpenLink(ctx context.Context, req LinkRequest) (<-chan LinkState, error) {
	if f.hold != nil {
		select {
		case <-ctx.Done():
			f.ctxErr <- ctx.Err()
			return nil, ctx.Err()
		case <-f.hold:
			f.ctxErr <- ctx.Err()
		}
	}
	if f.openErr != nil {
		return nil, f.openErr
	}
	f.reqs = append(f.reqs, req)
	f.states = make(chan LinkState, 8)
	s := linkState(req.Kind, req.PIN)
	s.Skipped = f.skipped
	f.states <- s
	return f.states, nil
}

func (f *linkFake) StopLink(id string) error {
	f.stopped = append(f.stopped, id)
	return nil
}

var goldenNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// linkState is a link as a backend would report it just after opening.
func linkState(kind LinkKind, pin string) LinkState {
	s := LinkState{ID: "link-1", Kind: kind, URL: "http://192.168.1.20:47880/l/k3vq7mzt2xbp4nw6c8rd5hyj2e/",
		URLs:    []string{"http://192.168.1.20:47880/l/k3vq7mzt2xbp4nw6c8rd5hyj2e/", "http://[fd00::20]:47880/l/k3vq7mzt2xbp4nw6c8rd5hyj2e/"},
		Expires: goldenNow.Add(time.Hour), PIN: pin}
	if kind == LinkShare {
		s.Files, s.Bytes = 3, 160_200_000
	}
	return s
}

// newLinkUI is a UI whose backend has links, and the window shows them.
func newLinkUI(t *testing.T) (*UI, *linkFake, *clock) {
	t.Helper()
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	w.Resize(fyne.NewSize(900, 600))
	be := &linkFake{fakeBackend: newFake(), applied: make(chan struct{}, 64)}
	c := &clock{t: goldenNow}
	// Do runs at once, on the goroutine that asks (the link opens on one of
	// its own); the test waits for it with awaitDo.
	u := New(a, w, be, Device{Name: "Desk", ID: idBob}, Options{Now: c.now, Do: func(f func()) {
		f()
		be.applied <- struct{}{}
	}})
	u.preparingDelay = time.Hour // no "Preparing" dialog unless a test asks for it
	return u, be, c
}

// awaitDo waits until the UI ran one more function through Options.Do.
func awaitDo(t *testing.T, be *linkFake) {
	t.Helper()
	select {
	case <-be.applied:
	case <-time.After(10 * time.Second):
		t.Fatal("the UI was not updated in 10 s")
	}
}

// openLink opens a link as "Create link" does and waits for its answer.
func openLink(t *testing.T, u *UI, be *linkFake, req LinkRequest) {
	t.Helper()
	u.openBrowserLink(req)
	awaitDo(t, be)
}

func menuLabels(m *fyne.Menu) []string {
	var out []string
	for _, i := range m.Items {
		out = append(out, i.Label)
	}
	return out
}

func TestLinkItemsInMenuAndTray(t *testing.T) {
	u, _, _ := newLinkUI(t)
	for name, m := range map[string]*fyne.Menu{"menu": u.mainMenu().Items[0], "tray": u.Tray()} {
		got := strings.Join(menuLabels(m), "|")
		if !strings.Contains(got, "Share via link…|Receive via link…") {
			t.Errorf("%s = %q, want the two link items", name, got)
		}
	}
	if last := u.Tray().Items[len(u.Tray().Items)-1]; !last.IsQuit {
		t.Errorf("the tray's last item is %q, want Quit", last.Label)
	}
	// A backend without links shows none of it.
	plain, _, _ := newTestUI(t)
	if got := strings.Join(menuLabels(plain.Tray()), "|"); strings.Contains(got, "via link") {
		t.Errorf("tray without links = %q", got)
	}
	if plain.linkPanel.contains(fyne.NewPos(10, 10)) {
		t.Error("a backend without links has a drop target for them")
	}
}

func TestLinkSetupOpensTheLink(t *testing.T) {
	u, be, _ := newLinkUI(t)
	s := u.showLinkSetup(LinkShare, []string{"/home/sam/a.jpg", "/home/sam/Holiday"})
	test.Type(s.pin, " 4821 ")
	s.expire.SetSelectedIndex(1) // 15 minutes
	s.once.SetChecked(true)
	test.Tap(s.create)
	awaitDo(t, be)
	if len(be.reqs) != 1 {
		t.Fatalf("OpenLink calls = %d, want 1", len(be.reqs))
	}
	want := LinkRequest{Kind: LinkShare, Paths: []string{"/home/sam/a.jpg", "/home/sam/Holiday"}, PIN: "4821", Expire: 15 * time.Minute, Once: true}
	if got := be.reqs[0]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("request = %+v, want %+v", got, want)
	}
	v := u.linkPanel.open["link-1"]
	if v == nil || v.dlg == nil {
		t.Fatal("the link has no row or no dialog")
	}
	if got := v.label.Text; !strings.Contains(got, "Share link: 3 files") || !strings.Contains(got, "ends in 1 h") {
		t.Errorf("row = %q", got)
	}

	// A receive link with the defaults: one hour, no PIN, never "once".
	s = u.showLinkSetup(LinkReceive, nil)
	s.once.SetChecked(true) // not shown for a receive link, and not taken
	test.Tap(s.create)
	awaitDo(t, be)
	if got := be.reqs[1]; got.Kind != LinkReceive || got.PIN != "" || got.Expire != DefaultLinkExpire || got.Once {
		t.Errorf("receive request = %+v", got)
	}

	// Enter in the PIN creates the link, as Create link does.
	s = u.showLinkSetup(LinkReceive, nil)
	test.Type(s.pin, "1234")
	s.pin.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	awaitDo(t, be)
	if len(be.reqs) != 3 || be.reqs[2].PIN != "1234" {
		t.Fatalf("Enter in the PIN: %d requests %+v", len(be.reqs), be.reqs)
	}
}

func TestLinkSetupRefusesLongPIN(t *testing.T) {
	u, be, _ := newLinkUI(t)
	s := u.showLinkSetup(LinkReceive, nil)
	s.pin.SetText(strings.Repeat("9", 65))
	test.Tap(s.create)
	if len(be.reqs) != 0 {
		t.Errorf("a 65-character PIN opened a link: %+v", be.reqs)
	}
}

func TestLinkOpenErrorIsShown(t *testing.T) {
	u, be, _ := newLinkUI(t)
	be.openErr = &Problem{Text: "There is no file to share there."}
	n := len(u.modals)
	openLink(t, u, be, LinkRequest{Kind: LinkShare, Paths: []string{"/nothing"}})
	if len(u.modals) != n+1 || len(u.linkPanel.open) != 0 {
		t.Errorf("modals %d -> %d, open links %d: want the error shown and no link", n, len(u.modals), len(u.linkPanel.open))
	}
}

func TestLinkDialogFollowsStates(t *testing.T) {
	u, be, c := newLinkUI(t)
	openLink(t, u, be, LinkRequest{Kind: LinkReceive})
	v := u.linkPanel.open["link-1"]
	d := v.dlg
	if !strings.Contains(d.people.Text, "No device") {
		t.Errorf("people = %q", d.people.Text)
	}
	s := linkState(LinkReceive, "")
	s.Devices = []string{"192.168.1.31"}
	s.Activities = []LinkActivity{
		{ID: 1, Device: "192.168.1.31", Upload: true, Name: "IMG_0420.HEIC", Size: 3_000_000, Bytes: 3_000_000, Done: true},
		{ID: 2, Device: "192.168.1.31", Upload: true, Name: "VID_0421.MOV", Size: 200_000_000, Bytes: 50_000_000},
	}
	c.t = c.t.Add(20 * time.Minute)
	u.ApplyLink(s)
	if got := d.people.Text; !strings.Contains(got, "1 device") || !strings.Contains(got, "192.168.1.31") {
		t.Errorf("people = %q", got)
	}
	if n := len(d.bars); n != 2 {
		t.Fatalf("activity rows = %d, want 2", n)
	}
	if r := d.bars[2]; r.bar.Value != 50_000_000 || r.bar.Max != 200_000_000 || !strings.Contains(r.label.Text, "sends VID_0421.MOV: 50.0 MB of 200.0 MB") {
		t.Errorf("upload row = %q %v/%v", r.label.Text, r.bar.Value, r.bar.Max)
	}
	if got := d.bars[1].label.Text; !strings.Contains(got, "sent IMG_0420.HEIC") {
		t.Errorf("finished row = %q", got)
	}
	if got := v.label.Text; !strings.Contains(got, "1 device") || !strings.Contains(got, "1 in progress") || !strings.Contains(got, "ends in 40 min") {
		t.Errorf("window row = %q", got)
	}
	if d.guard.Visible() {
		t.Errorf("a warning with nothing kept out: %q", d.guard.Text)
	}
	// What the link kept out reaches its owner.
	s.WrongPINs, s.TurnedAway = 2, 1
	u.ApplyLink(s)
	if got := d.guard.Text; !d.guard.Visible() || got != "2 wrong PINs were typed at this link. If you did not expect that, stop it. "+
		"1 more device was turned away: the link is open on as many devices as it takes. If you did not expect that, the link may have leaked: stop it." {
		t.Errorf("guard = %q (shown %v)", got, d.guard.Visible())
	}
	s.WrongPINs, s.PINLocked, s.TurnedAway = 10, true, 0
	u.ApplyLink(s)
	if got := d.guard.Text; !strings.HasPrefix(got, "Locked: 10 wrong PINs were typed, so no new device can open this link (those that typed the PIN before still can).") {
		t.Errorf("guard = %q", got)
	}

	// Stop asks the backend; the ended state takes the row away and the
	// dialog says why.
	test.Tap(d.stop)
	if len(be.stopped) != 1 || be.stopped[0] != "link-1" {
		t.Fatalf("StopLink calls = %v", be.stopped)
	}
	s.Ended, s.Why = true, "The link was stopped: it answers nothing any more."
	u.ApplyLink(s)
	if len(u.linkPanel.open) != 0 || len(u.linkPanel.list.Objects) != 0 {
		t.Error("an ended link is still listed")
	}
	if d.when.Text != s.Why || !d.stop.Disabled() {
		t.Errorf("ended dialog: %q, stop disabled %v", d.when.Text, d.stop.Disabled())
	}
	// Nothing invites opening the ended link: no code, no Copy.
	if d.qr.Visible() || !d.copyBtn.Disabled() || strings.Contains(d.hint.Text, "Open this link") {
		t.Errorf("ended dialog still offers the link: code shown %v, copy disabled %v, hint %q", d.qr.Visible(), d.copyBtn.Disabled(), d.hint.Text)
	}
}

func TestLinkDialogClosedKeepsTheLink(t *testing.T) {
	u, be, _ := newLinkUI(t)
	openLink(t, u, be, LinkRequest{Kind: LinkShare, Paths: []string{"/a"}})
	v := u.linkPanel.open["link-1"]
	v.dlg.dlg.Hide()
	if v.dlg != nil || len(be.stopped) != 0 {
		t.Fatalf("closing the dialog: dialog %v, stops %v", v.dlg, be.stopped)
	}
	if len(u.modals) != 0 {
		t.Errorf("the closed dialog is still a modal (%d)", len(u.modals))
	}
	u.showLink("link-1")
	if v.dlg == nil {
		t.Error("Show did not bring the dialog back")
	}
}

func TestDropOnLinkPanelShares(t *testing.T) {
	u, _, _ := newLinkUI(t)
	u.win.Resize(fyne.NewSize(900, 600))
	p := u.linkPanel
	at := fyne.CurrentApp().Driver().AbsolutePositionForObject(p.obj)
	if p.obj.Size().Height == 0 {
		t.Fatal("the link panel has no size")
	}
	in := at.AddXY(5, p.obj.Size().Height/2)
	if !p.contains(in) {
		t.Fatalf("%v is not on the panel at %v size %v", in, at, p.obj.Size())
	}
	u.HandleDrop(in, []fyne.URI{fileURI("/home/sam/report.pdf")})
	if len(u.modals) != 1 {
		t.Fatalf("modals = %d, want the link setup", len(u.modals))
	}
	if u.ask != nil {
		t.Error("the drop on the panel also opened the send sheet")
	}
}

func TestActivityText(t *testing.T) {
	for _, c := range []struct {
		a    LinkActivity
		want string
	}{
		{LinkActivity{Device: "10.0.0.5", Name: "a.pdf", Size: 2000, Bytes: 1000}, "10.0.0.5 downloads a.pdf: 1.0 kB of 2.0 kB"},
		{LinkActivity{Device: "10.0.0.5", Zip: true, Name: "x.zip", Size: -1, Bytes: 5000}, "10.0.0.5 downloads everything as one zip: 5.0 kB"},
		{LinkActivity{Device: "10.0.0.5", Name: "a.pdf", Size: 2000, Bytes: 2000, Done: true}, "10.0.0.5 downloaded a.pdf (2.0 kB)"},
		{LinkActivity{Device: "10.0.0.5", Upload: true, Name: "b\u202e.txt", Size: 10, Bytes: 3, Done: true, Err: "the link was stopped"}, "did not finish: the link was stopped"},
		{LinkActivity{Device: "10.0.0.5", Zip: true, Name: "x.zip", Size: -1, Bytes: 5000, Done: true, LeftOut: []string{"gone\u202e.txt (no such file or directory)"}},
			`10.0.0.5 downloaded everything as one zip (5.0 kB), without "gone\u202e.txt (no such file or directory)": deleted or moved since it was shared`},
	} {
		if got := activityText(c.a); !strings.Contains(got, c.want) {
			t.Errorf("activityText(%+v) = %q, want %q", c.a, got, c.want)
		}
		if strings.ContainsRune(activityText(c.a), '\u202e') {
			t.Errorf("a bidi override reached the label: %q", activityText(c.a))
		}
	}
}

// goldenLinkActivity fills a share link's dialog with downloads.
func goldenLinkActivity(u *UI, kind LinkKind) {
	s := linkState(kind, "4821")
	s.Devices = []string{"192.168.1.31", "192.168.1.44"}
	if kind == LinkShare {
		s.Activities = []LinkActivity{
			{ID: 1, Device: "192.168.1.31", Name: "IMG_2041.jpg", Size: 4_200_000, Bytes: 4_200_000, Done: true},
			{ID: 2, Device: "192.168.1.31", Name: "beach.mov", Size: 148_000_000, Bytes: 61_000_000},
			{ID: 3, Device: "192.168.1.44", Name: "Holiday 2026.zip", Zip: true, Size: -1, Bytes: 12_500_000},
		}
	} else {
		s.PIN = ""
		s.Devices = s.Devices[:1]
		s.Activities = []LinkActivity{
			{ID: 1, Device: "192.168.1.31", Upload: true, Name: "IMG_0420.HEIC", Size: 3_100_000, Bytes: 3_100_000, Done: true},
			{ID: 2, Device: "192.168.1.31", Upload: true, Name: "VID_0421.MOV", Size: 210_000_000, Bytes: 88_000_000},
		}
	}
	u.ApplyLink(s)
}

func TestGoldenLinks(t *testing.T) {
	for _, variant := range []struct {
		name  string
		theme fyne.Theme
	}{{"light", theme.LightTheme()}, {"dark", theme.DarkTheme()}} { //nolint:staticcheck // fixed variants on purpose
		for _, view := range []struct {
			name string
			show func(t *testing.T, u *UI, be *linkFake)
		}{
			{"linkmain", func(t *testing.T, u *UI, be *linkFake) {
				openLink(t, u, be, LinkRequest{Kind: LinkReceive})
				u.linkPanel.open["link-1"].dlg.dlg.Hide()
			}},
			{"linksetup", func(_ *testing.T, u *UI, _ *linkFake) { u.showLinkSetup(LinkShare, []string{"/home/sam/Holiday 2026"}) }},
			{"linkpreparing", func(_ *testing.T, u *UI, _ *linkFake) {
				u.preparingLinkDialog(LinkRequest{Kind: LinkShare, Paths: []string{"/home/sam/Photos"}}, func() {})
			}},
			{"linkshare", func(t *testing.T, u *UI, be *linkFake) {
				openLink(t, u, be, LinkRequest{Kind: LinkShare, PIN: "4821"})
				goldenLinkActivity(u, LinkShare)
			}},
			{"linkreceive", func(t *testing.T, u *UI, be *linkFake) {
				openLink(t, u, be, LinkRequest{Kind: LinkReceive})
				goldenLinkActivity(u, LinkReceive)
			}},
		} {
			name := fmt.Sprintf("%s-large-%s", view.name, variant.name)
			t.Run(name, func(t *testing.T) {
				u, be, c := newLinkUI(t)
				fyne.CurrentApp().Settings().SetTheme(variant.theme)
				u.win.Resize(sizeLarge)
				goldenState(u, be.fakeBackend, c)
				view.show(t, u, be)
				assertGolden(t, name, u.win.Canvas().Capture())
			})
		}
	}
}

// overlayButton is the button labelled text on the topmost dialog.
func overlayButton(u *UI, text string) *button {
	var found *button
	if top := u.win.Canvas().Overlays().Top(); top != nil {
		uitree.Walk(top, func(x fyne.CanvasObject) {
			if b, ok := x.(*button); ok && b.Text == text {
				found = b
			}
		})
	}
	return found
}

// TestShareLinkListsFilesOffTheUIGoroutine: sharing a big folder by link
// lists its files first (seconds for 10^5 files; a minute on a slow disk).
// That runs off the Fyne goroutine, so the window goes on drawing; a
// dialog says it is under way, and its Cancel stops the listing and opens
// no link. Before, "Create link" listed them on the Fyne goroutine: the
// window froze until the link was open.
func TestShareLinkListsFilesOffTheUIGoroutine(t *testing.T) {
	u, be, _ := newLinkUI(t)
	u.preparingDelay = 0
	be.ctxErr = make(chan error, 1)
	create := func() {
		t.Helper()
		be.hold = make(chan struct{})
		s := u.showLinkSetup(LinkShare, []string{"/home/sam/Photos"})
		tapped := make(chan struct{})
		go func() { test.Tap(s.create); close(tapped) }()
		select {
		case <-tapped:
		case <-time.After(5 * time.Second):
			t.Fatal("Create link blocked the Fyne goroutine while the files were listed")
		}
		awaitDo(t, be) // the preparing dialog
		if got := renderedText(u.win.Canvas().Overlays().Top()); !strings.Contains(got, "Listing the files in “Photos” for the link") {
			t.Fatalf("while listing, the dialog says %q", got)
		}
	}

	// Cancel: the listing stops (its context ends), no link, no error.
	create()
	cancel := overlayButton(u, "Cancel")
	if cancel == nil {
		t.Fatal("the preparing dialog has no Cancel")
	}
	test.Tap(cancel)
	if err := <-be.ctxErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("after Cancel the listing's context says %v", err)
	}
	awaitDo(t, be) // the answer, ignored
	if len(u.modals) != 0 || len(u.linkPanel.open) != 0 || len(be.reqs) != 0 {
		t.Fatalf("after Cancel: %d dialogs, %d links open, requests %v", len(u.modals), len(u.linkPanel.open), be.reqs)
	}

	// Listed: the preparing dialog gives way to the link's.
	create()
	close(be.hold)
	if err := <-be.ctxErr; err != nil {
		t.Fatalf("the listing's context ended early: %v", err)
	}
	awaitDo(t, be)
	v := u.linkPanel.open["link-1"]
	if v == nil || v.dlg == nil {
		t.Fatal("the link has no row or no dialog")
	}
	if len(u.modals) != 1 {
		t.Errorf("%d dialogs shown, want the link's alone", len(u.modals))
	}
	if overlayButton(u, "Cancel") != nil {
		t.Error("the preparing dialog is still shown")
	}
}

// A share says in its window what its folders hold that it does not serve
// (it said nothing of it).
func TestLinkDialogSaysWhatIsNotShared(t *testing.T) {
	u, be, _ := newLinkUI(t)
	be.skipped = "2 symbolic links (not followed)"
	openLink(t, u, be, LinkRequest{Kind: LinkShare, Paths: []string{"/home/sam/Holiday"}})
	d := u.linkPanel.open["link-1"].dlg
	if !strings.Contains(d.hint.Text, "Not shared: 2 symbolic links (not followed) (a link shares regular files).") {
		t.Errorf("hint %q", d.hint.Text)
	}
}

// Escape closes a link's options dialog wherever the focus is, as it does
// every other dialog: with the PIN focused (as the dialog opens) or the
// expiry, it did nothing, and Enter on the expiry creates the link.
func TestLinkSetupEscapeCloses(t *testing.T) {
	u, be, _ := newLinkUI(t)
	for _, focus := range []string{"pin", "expire"} {
		s := u.showLinkSetup(LinkReceive, nil)
		if focus == "expire" {
			u.win.Canvas().Focus(s.expire)
		} else if u.win.Canvas().Focused() != s.pin {
			t.Fatalf("the dialog opens with %v focused, want the PIN", u.win.Canvas().Focused())
		}
		press(u, fyne.KeyEscape)
		if n := overlays(u); n != 0 {
			t.Errorf("Escape with the %s focused: %d dialogs still shown", focus, n)
			u.win.Canvas().Overlays().Remove(u.win.Canvas().Overlays().Top())
		}
	}
	if len(be.reqs) != 0 {
		t.Errorf("Escape opened %d links", len(be.reqs))
	}
	s := u.showLinkSetup(LinkReceive, nil)
	u.win.Canvas().Focus(s.expire)
	press(u, fyne.KeyReturn)
	awaitDo(t, be)
	if len(be.reqs) != 1 {
		t.Errorf("Enter on the expiry: %d links opened, want 1", len(be.reqs))
	}
}

// A link's counts have their thousands apart: "Share link: 100000 files"
// was hard to read at a glance.
func TestLinkCountsHaveThousandsApart(t *testing.T) {
	s := linkState(LinkShare, "")
	s.Files, s.Bytes = 100_000, 2_000_000_000
	for i := range 1200 {
		s.Activities = append(s.Activities, LinkActivity{ID: int64(i), Device: "192.168.1.31", Name: "f"})
	}
	if got := linkRowText(s, goldenNow); !strings.HasPrefix(got, "Share link: 100,000 files · 1,200 in progress") {
		t.Errorf("row = %q", got)
	}
	u, be, _ := newLinkUI(t)
	openLink(t, u, be, LinkRequest{Kind: LinkShare, Paths: []string{"/a"}})
	u.linkPanel.open["link-1"].dlg.dlg.Hide()
	s = linkState(LinkShare, "")
	s.Files = 100_000
	u.ApplyLink(s)
	u.showLink("link-1")
	d := u.linkPanel.open["link-1"].dlg
	if !strings.Contains(d.hint.Text, "lists 100,000 files (") {
		t.Errorf("hint = %q", d.hint.Text)
	}
}

// An ended link sums up what happened in the past tense; a stopped one said
// "No device has opened the link yet", as if it could still be.
func TestStoppedLinkSaysWhatItServed(t *testing.T) {
	u, be, _ := newLinkUI(t)
	openLink(t, u, be, LinkRequest{Kind: LinkShare, Paths: []string{"/a"}})
	d := u.linkPanel.open["link-1"].dlg
	s := linkState(LinkShare, "")
	s.Ended, s.Why = true, "The link was stopped."
	u.ApplyLink(s)
	if got, want := d.people.Text, "It shared 3 files (160.2 MB). No device opened it."; got != want {
		t.Errorf("stopped, never opened: %q, want %q", got, want)
	}
	if d.when.Text != "The link was stopped." {
		t.Errorf("when = %q", d.when.Text)
	}

	for _, c := range []struct {
		kind LinkKind
		acts []LinkActivity
		want string
	}{
		{LinkShare, []LinkActivity{
			{ID: 1, Device: "192.168.1.31", Name: "a.jpg", Size: 1_000_000, Bytes: 1_000_000, Done: true},
			{ID: 2, Device: "192.168.1.31", Zip: true, Size: -1, Bytes: 2_000_000, Done: true},
			{ID: 3, Device: "192.168.1.31", Name: "b.mov", Size: 9_000_000, Bytes: 100, Done: true, Err: "The browser stopped."},
		}, "It shared 3 files (160.2 MB). Opened by 1 device: 192.168.1.31. 2 downloads finished (3.0 MB)."},
		{LinkShare, nil, "It shared 3 files (160.2 MB). Opened by 1 device: 192.168.1.31. No download finished."},
		{LinkReceive, []LinkActivity{
			{ID: 1, Device: "192.168.1.31", Upload: true, Name: "IMG.HEIC", Size: 3_000_000, Bytes: 3_000_000, Done: true},
			{ID: 2, Device: "192.168.1.31", Upload: true, Name: "VID.MOV", Size: 200_000_000, Bytes: 50_000_000},
		}, "Opened by 1 device: 192.168.1.31. 1 file arrived (3.0 MB)."},
	} {
		u, be, _ := newLinkUI(t)
		openLink(t, u, be, LinkRequest{Kind: c.kind, Paths: []string{"/a"}})
		d := u.linkPanel.open["link-1"].dlg
		s := linkState(c.kind, "")
		s.Devices, s.Activities = []string{"192.168.1.31"}, c.acts
		u.ApplyLink(s)
		s.Ended, s.Why = true, "The link was stopped."
		u.ApplyLink(s)
		if got := d.people.Text; got != c.want {
			t.Errorf("%v: %q, want %q", c.kind, got, c.want)
		}
	}
}

// TestExpiredLinkSaysItIsFinishing: a receive link past its expiry that
// lets the files on their way finish (weblink's ExpiryGrace: its end comes
// once they did) says it expired and that they are finishing, in its
// window and its row. Before, both said it "ends in less than a minute"
// for as long as the files took.
func TestExpiredLinkSaysItIsFinishing(t *testing.T) {
	u, be, c := newLinkUI(t)
	openLink(t, u, be, LinkRequest{Kind: LinkReceive})
	v := u.linkPanel.open["link-1"]
	d := v.dlg
	s := linkState(LinkReceive, "")
	s.Devices = []string{"192.168.1.31"}
	s.Activities = []LinkActivity{{ID: 1, Device: "192.168.1.31", Upload: true, Name: "VID_0421.MOV", Size: 200_000_000, Bytes: 150_000_000}}
	c.t = s.Expires.Add(2 * time.Minute)
	u.ApplyLink(s)
	if got := d.when.Text; got != "The link expired: no new file gets in, and the files on their way are finishing." {
		t.Errorf("window says %q", got)
	}
	if got := v.label.Text; got != "Receive link · 1 device · 1 in progress · expired, finishing" {
		t.Errorf("row says %q", got)
	}
	// A share link past its expiry is ending (its downloads are cut).
	sh := linkState(LinkShare, "")
	if got := linkRowText(sh, sh.Expires); got != "Share link: 3 files · expired" {
		t.Errorf("share row says %q", got)
	}
	// Before its expiry it says when it ends, as before.
	if got := linkRowText(s, s.Expires.Add(-30*time.Second)); !strings.HasSuffix(got, "ends in less than a minute") {
		t.Errorf("before the expiry the row says %q", got)
	}
	// Its end says why, as every link's does.
	s.Ended, s.Why = true, "The link expired."
	u.ApplyLink(s)
	if d.when.Text != s.Why {
		t.Errorf("ended: %q", d.when.Text)
	}
}

// TestLinkWindowShowsAnEmptyFolderAsAFolder: a receive link's empty folder
// (a folder dropped onto its page with an empty folder in it) is a folder
// in the link window and in History, not a file: its line says the empty
// folder was sent, the ended link's sum says "2 files arrived (2.0 kB) and
// 1 empty folder.", and History's Details "2 files and 1 empty folder".
// Before, it was a 0-byte file, "192.168.1.31 sent Trip/day 2/empty (0 B)",
// and "3 files arrived".
func TestLinkWindowShowsAnEmptyFolderAsAFolder(t *testing.T) {
	u, be, _ := newLinkUI(t)
	openLink(t, u, be, LinkRequest{Kind: LinkReceive})
	d := u.linkPanel.open["link-1"].dlg
	s := linkState(LinkReceive, "")
	s.Devices = []string{"192.168.1.31"}
	s.Activities = []LinkActivity{
		{ID: 1, Device: "192.168.1.31", Upload: true, Name: "Trip/a.jpg", Size: 1000, Bytes: 1000, Done: true},
		{ID: 2, Device: "192.168.1.31", Upload: true, Folder: true, Name: "Trip/day 2/empty", Done: true},
		{ID: 3, Device: "192.168.1.31", Upload: true, Name: "Trip/b.jpg", Size: 1000, Bytes: 1000, Done: true},
		{ID: 4, Device: "192.168.1.31", Upload: true, Folder: true, Name: "Trip/x"},
	}
	u.ApplyLink(s)
	if got, want := d.bars[2].label.Text, "192.168.1.31 sent the empty folder Trip/day 2/empty"; got != want {
		t.Errorf("the folder's line %q, want %q", got, want)
	}
	if got, want := d.bars[4].label.Text, "192.168.1.31 sends the empty folder Trip/x"; got != want {
		t.Errorf("a folder on its way: %q, want %q", got, want)
	}
	if !d.bars[2].bar.Visible() || d.bars[2].bar.Value != d.bars[2].bar.Max {
		t.Errorf("the folder made has no full bar")
	}
	s.Activities = s.Activities[:3]
	s.Ended, s.Why = true, "The link was stopped."
	u.ApplyLink(s)
	if got, want := d.people.Text, "Opened by 1 device: 192.168.1.31. 2 files arrived (2.0 kB) and 1 empty folder."; got != want {
		t.Errorf("ended: %q, want %q", got, want)
	}

	u.history.showDetails(HistoryEntry{ID: "h", Direction: Incoming, PeerName: "a browser at 192.168.1.31", Files: 2, Folders: 1,
		Bytes: 2000, State: StateDone, Finished: goldenNow, Destination: "/home/u/Downloads"})
	ov := u.win.Canvas().Overlays().Top()
	if ov == nil || !strings.Contains(renderedText(ov), "2 files and 1 empty folder, 2.0 kB") {
		t.Errorf("History's Details: %q", renderedText(ov))
	}
}

// TestLinkWindowSaysWhereAFileWasSavedAs: two browsers sending photo.jpg
// through one receive link, the second saved as "photo (1).jpg": the link
// window says so on its line, as the page and ferry-cli do; a name only
// composed (a Mac's decomposed accents) is not said again, and a saved
// name's bidi override is escaped. Before, both lines said "sent photo.jpg"
// and nothing in the window told which file was which.
func TestLinkWindowSaysWhereAFileWasSavedAs(t *testing.T) {
	u, be, _ := newLinkUI(t)
	openLink(t, u, be, LinkRequest{Kind: LinkReceive})
	d := u.linkPanel.open["link-1"].dlg
	s := linkState(LinkReceive, "")
	s.Devices = []string{"192.168.1.31", "192.168.1.44"}
	s.Activities = []LinkActivity{
		{ID: 1, Device: "192.168.1.31", Upload: true, Name: "photo.jpg", Size: 3000, Bytes: 3000, Done: true},
		{ID: 2, Device: "192.168.1.44", Upload: true, Name: "photo.jpg", Size: 2000, Bytes: 2000, Done: true, SavedAs: "photo (1).jpg"},
		{ID: 3, Device: "192.168.1.44", Upload: true, Name: "Re\u0301sume\u0301.md", Size: 10, Bytes: 10, Done: true, SavedAs: "R\u00e9sum\u00e9.md"},
		{ID: 4, Device: "192.168.1.44", Upload: true, Name: "x.txt", Size: 10, Bytes: 10, Done: true, SavedAs: "x\u202e (1).txt"},
	}
	u.ApplyLink(s)
	for id, want := range map[int64]string{
		1: "192.168.1.31 sent photo.jpg (3.0 kB)",
		2: "192.168.1.44 sent photo.jpg (2.0 kB), saved as photo (1).jpg",
		3: "192.168.1.44 sent Re\u0301sume\u0301.md (10 B)",
		4: "192.168.1.44 sent x.txt (10 B), saved as " + EscapeName("x\u202e (1).txt"),
	} {
		if got := d.bars[id].label.Text; got != want {
			t.Errorf("line %d: %q, want %q", id, got, want)
		}
	}
}

// TestLinkWindowListsTheLatestDownloads: a share's browser downloads
// thousands of files one by one through the page's pages, and the engine
// remembers the latest 1000. The link window lists the latest 100 and says
// how many earlier ones it does not list; before, it kept a row for each
// download it ever saw, 1500 here (5000 rows for a 5,000-photo share),
// and wrote every row again at each update.
func TestLinkWindowListsTheLatestDownloads(t *testing.T) {
	u, be, _ := newLinkUI(t)
	openLink(t, u, be, LinkRequest{Kind: LinkShare, Paths: []string{"/home/sam/Photos"}})
	d := u.linkPanel.open["link-1"].dlg
	s := linkState(LinkShare, "")
	s.Files, s.Devices = 5000, []string{"192.168.1.31"}
	remembered := func(from, to int) []LinkActivity {
		var acts []LinkActivity
		for i := from; i <= to; i++ {
			acts = append(acts, LinkActivity{ID: int64(i), Device: "192.168.1.31", Name: fmt.Sprintf("Photos/IMG_%04d.jpg", i), Size: 3_000_000, Bytes: 3_000_000, Done: true})
		}
		return acts
	}
	s.Activities = remembered(1, 1000)
	u.ApplyLink(s)
	s.Activities = remembered(501, 1500) // the engine forgot the first 500
	s.Activities[len(s.Activities)-1].Done, s.Activities[len(s.Activities)-1].Bytes = false, 1_000_000
	u.ApplyLink(s)
	if n := len(d.acts.Objects); n != maxLinkRows || len(d.bars) != maxLinkRows {
		t.Fatalf("%d rows (%d bars), want %d", n, len(d.bars), maxLinkRows)
	}
	if got, want := d.bars[1401].label.Text, "192.168.1.31 downloaded Photos/IMG_1401.jpg (3.0 MB)"; got != want {
		t.Errorf("the first row listed: %q, want %q", got, want)
	}
	if r := d.bars[1500]; r == nil || r.bar.Value != 1_000_000 {
		t.Errorf("the download on its way is not listed with its progress")
	}
	if !d.earlier.Visible() || d.earlier.Text != "900 earlier downloads not listed here." {
		t.Errorf("earlier: %q (shown %v)", d.earlier.Text, d.earlier.Visible())
	}
	// The rows are in order, the latest last.
	if last := d.acts.Objects[len(d.acts.Objects)-1]; last != d.bars[1500].obj {
		t.Errorf("the latest download is not the last row")
	}
}
