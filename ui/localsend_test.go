package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/uitree"
)

const fpPixel = "5D2B7A91C3E04F68A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718"

// goldenLocalSendOffer is a photo from a phone running LocalSend.
func goldenLocalSendOffer(verified bool) TransferEvent {
	ev := goldenOffer()
	ev.Offer.Files = ev.Offer.Files[:2]
	ev.Offer.Folders = nil
	ev.Offer.Count, ev.Offer.Total = 2, 8_100_000
	ev.Peer = Peer{ID: "localsend:" + fpPixel, Name: "Pixel 8", LocalSend: true, Model: "Google Pixel 8", DeviceType: "mobile",
		Fingerprint: fpPixel, Unverified: !verified}
	if !verified {
		ev.Peer.ID = "anon:192.168.1.31"
	}
	return ev
}

// texts collects the text of every label under o.
func texts(o fyne.CanvasObject) string {
	var b strings.Builder
	var walk func(fyne.CanvasObject)
	walk = func(o fyne.CanvasObject) {
		switch w := o.(type) {
		case *widget.Label:
			b.WriteString(w.Text + "\n")
		case *container.Scroll:
			walk(w.Content)
		case *fyne.Container:
			for _, c := range w.Objects {
				walk(c)
			}
		}
	}
	walk(o)
	return b.String()
}

func TestLocalSendPrompt(t *testing.T) {
	for _, verified := range []bool{true, false} {
		t.Run(fmt.Sprint("verified=", verified), func(t *testing.T) {
			u, _, _ := newTestUI(t)
			u.ApplyTransfer(goldenLocalSendOffer(verified))
			p := u.prompts.queue[0]
			got := texts(p.scroll)
			for _, want := range []string{"Pixel 8", "Uses LocalSend · Google Pixel 8 (phone)", "Fingerprint 5D2B 7A91 C3E0 4F68 A1B2 C3D4 E5F6 0718…"} {
				if !strings.Contains(got, want) {
					t.Errorf("prompt misses %q:\n%s", want, got)
				}
			}
			if strings.Contains(got, "Device ID") {
				t.Errorf("a LocalSend sender's prompt shows a Ferry device ID:\n%s", got)
			}
			unverified := strings.Contains(got, "presented no certificate") && strings.Contains(got, "Unverified")
			if unverified == verified {
				t.Errorf("verified %v, says unverified %v:\n%s", verified, unverified, got)
			}
			if p.always.Visible() != verified {
				t.Errorf("verified %v: 'always accept' shown %v", verified, p.always.Visible())
			}
		})
	}
}

func TestGroupFingerprint(t *testing.T) {
	for in, want := range map[string]string{
		"":                 "unknown",
		"abcd1234":         "ABCD 1234",
		fpPixel:            "5D2B 7A91 C3E0 4F68 A1B2 C3D4 E5F6 0718…",
		"ab\u202ecd\n1234": "ABCD 1234",
	} {
		if got := GroupFingerprint(in); got != want {
			t.Errorf("GroupFingerprint(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLocalSendSettings(t *testing.T) {
	u, be, _ := newTestUI(t)
	v := u.settings.localSend
	if !v.on.Checked || v.pin.Text != "" || v.port.Text != "" {
		t.Fatalf("defaults: on %v, pin %q, port %q", v.on.Checked, v.pin.Text, v.port.Text)
	}
	test.Type(v.pin, "2468")
	test.Type(v.port, "53400")
	u.settings.apply()
	if s := be.settings; s.LocalSendOff || s.LocalSendPIN != "2468" || s.LocalSendPort != 53400 {
		t.Errorf("saved %+v", s)
	}
	v.on.SetChecked(false)
	if !v.pin.Disabled() || !v.port.Disabled() {
		t.Error("PIN and port stay editable with LocalSend off")
	}
	v.port.SetText("70000")
	u.settings.apply()
	if s := be.settings; !s.LocalSendOff || s.LocalSendPort != 53400 {
		t.Errorf("off, bad port: saved %+v", s)
	}
	u.settings.load()
	if v.on.Checked || v.port.Text != "53400" || v.pin.Text != "2468" {
		t.Errorf("reloaded: on %v port %q pin %q", v.on.Checked, v.port.Text, v.pin.Text)
	}
}

func TestGoldenLocalSend(t *testing.T) {
	for _, variant := range []struct {
		name  string
		theme fyne.Theme
	}{{"light", theme.LightTheme()}, {"dark", theme.DarkTheme()}} { //nolint:staticcheck // fixed variants on purpose
		for _, view := range []struct {
			name string
			show func(u *UI)
		}{
			{"lsprompt", func(u *UI) { u.ApplyTransfer(goldenLocalSendOffer(true)) }},
			{"lsprompt-unverified", func(u *UI) { u.ApplyTransfer(goldenLocalSendOffer(false)) }},
			{"lssettings", func(u *UI) { u.tabs.SelectIndex(2) }},
		} {
			name := fmt.Sprintf("%s-large-%s", view.name, variant.name)
			t.Run(name, func(t *testing.T) {
				u, be, c := newTestUI(t)
				fyne.CurrentApp().Settings().SetTheme(variant.theme)
				u.win.Resize(sizeLarge)
				goldenState(u, be, c)
				u.settings.load()
				view.show(u)
				assertGolden(t, name, u.win.Canvas().Capture())
			})
		}
	}
}

// lsPhone is a phone that speaks only LocalSend.
func lsPhone() Device {
	return Device{ID: "localsend:" + fpPixel, Name: "Galaxy S24", Online: true, Source: "localsend",
		Addrs:     []addr.Addr{{Kind: "localsend", URI: "https://192.168.1.31:53317#" + fpPixel}},
		LocalSend: &LocalSendInfo{Model: "Samsung", Type: "mobile", Fingerprint: fpPixel, Verified: true}}
}

func TestLocalSendDeviceRow(t *testing.T) {
	u, be, _ := newTestUI(t)
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: lsPhone()})
	both := alice(true)
	both.LocalSend = &LocalSendInfo{Model: "MacBook", Type: "desktop", Fingerprint: fpPixel}
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: both})
	u.win.Resize(fyne.NewSize(900, 600))
	var phone, mac *deviceRow
	for _, r := range u.devices.rows {
		switch r.dev.Name {
		case "Galaxy S24":
			phone = r
		case "Alice's laptop":
			mac = r
		}
	}
	if got := rowText(phone); !contains(got, "Galaxy S24", "Samsung", "5D2B-7A91", "LocalSend") || strings.Contains(got, "LOCA") {
		t.Errorf("LocalSend row %q", got)
	}
	if got := rowText(mac); !contains(got, "macOS", ShortID(idAlice), "QUIC+TCP+LocalSend") {
		t.Errorf("a device that speaks both: %q", got)
	}
	if canPair(phone.dev) || !canPair(mac.dev) {
		t.Error("Pair… is offered to a LocalSend-only device, or not to a Ferry one")
	}

	// Files dropped on the LocalSend row go to it like to any device.
	pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(phone.obj).Add(fyne.NewPos(20, phone.obj.Size().Height/2))
	u.HandleDrop(pos, []fyne.URI{fileURI("/tmp/a.txt")})
	if len(be.sends) != 1 || be.sends[0].dev.LocalSend == nil || be.sends[0].dev.ID != lsPhone().ID {
		t.Fatalf("sends = %+v", be.sends)
	}
}

func TestLocalSendKnownDevice(t *testing.T) {
	u, be, _ := newTestUI(t)
	be.known = []KnownDevice{{ID: "localsend:" + fpPixel, Name: "Galaxy S24", Announced: "Galaxy S24", LocalSend: true, Fingerprint: fpPixel, LastSeen: goldenNow}}
	u.known.reload()
	got := texts(u.known.box)
	if !strings.Contains(got, "LocalSend · fingerprint 5D2B 7A91") || strings.Contains(got, "LOCA-LSEN") {
		t.Errorf("known LocalSend device:\n%s", got)
	}
	if r := u.known.rows[0]; r.pair.Visible() || !r.rename.Visible() || !r.forget.Visible() {
		t.Error("a LocalSend device offers Pair…, or not Rename…/Forget…")
	}
}

func TestGoldenLocalSendDevices(t *testing.T) {
	for _, variant := range []struct {
		name  string
		theme fyne.Theme
	}{{"light", theme.LightTheme()}, {"dark", theme.DarkTheme()}} { //nolint:staticcheck // fixed variants on purpose
		for _, view := range []struct {
			name string
			show func(u *UI, be *fakeBackend)
		}{
			{"lsdevices", func(u *UI, be *fakeBackend) { u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: lsPhone()}) }},
			{"lsknown", func(u *UI, be *fakeBackend) {
				be.known = append([]KnownDevice{{ID: "localsend:" + fpPixel, Name: "Galaxy S24", Announced: "Galaxy S24", LocalSend: true,
					Fingerprint: fpPixel, LastSeen: goldenNow.Add(-1 * time.Minute), AutoAccept: true}}, be.known...)
				goldenDevices(u)
			}},
		} {
			name := fmt.Sprintf("%s-large-%s", view.name, variant.name)
			t.Run(name, func(t *testing.T) {
				u, be, c := newTestUI(t)
				fyne.CurrentApp().Settings().SetTheme(variant.theme)
				u.win.Resize(sizeLarge)
				goldenState(u, be, c)
				view.show(u, be)
				assertGolden(t, name, u.win.Canvas().Capture())
			})
		}
	}
}

func TestAskPIN(t *testing.T) {
	u, _, _ := newTestUI(t)
	var got []string
	u.showAskPIN("Galaxy S24", false, func(p string) { got = append(got, p) })
	pin := u.win.Canvas().Focused().(*entry)
	test.Type(pin, " 1357 ")
	u.typedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	if len(got) != 1 || got[0] != "1357" || len(u.modals) != 0 {
		t.Fatalf("answers %q, modals %d", got, len(u.modals))
	}
	// Escape cancels: no PIN, once.
	u.showAskPIN("Galaxy S24", true, func(p string) { got = append(got, p) })
	u.typedKey(&fyne.KeyEvent{Name: fyne.KeyEscape})
	if len(got) != 2 || got[1] != "" {
		t.Fatalf("answers %q", got)
	}
}

// TestAskPINEnterInTheField: Enter typed into the PIN field sends, as
// Send does, as Enter in a link's PIN creates the link. The field has the
// focus, so a desktop gives it the key, not the window: it did nothing
// there, and the PIN could only be sent with the mouse or Tab, Tab, Space.
func TestAskPINEnterInTheField(t *testing.T) {
	u, _, _ := newTestUI(t)
	var got []string
	u.showAskPIN("Galaxy S24", false, func(p string) { got = append(got, p) })
	pin := u.win.Canvas().Focused().(*entry)
	test.Type(pin, "1357")
	u.win.Canvas().Focused().TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn}) // as the driver does
	if len(got) != 1 || got[0] != "1357" || len(u.modals) != 0 {
		t.Fatalf("Enter in the field: answers %q, modals %d", got, len(u.modals))
	}
}

// lsStatusFake is the fake backend that says where LocalSend serves.
type lsStatusFake struct {
	*fakeBackend
	port int
	note string
}

func (f *lsStatusFake) LocalSendStatus() (int, string, string) { return f.port, fpPixel, f.note }

func TestLocalSendStatusInSettings(t *testing.T) {
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	be := &lsStatusFake{fakeBackend: newFake()}
	u := New(a, w, be, Device{Name: "Desk", ID: idBob}, Options{})
	v := u.settings.localSend
	if v.state.Visible() {
		t.Fatalf("LocalSend off, but the settings say %q", v.state.Text)
	}
	be.port, be.note = 53318, "port 53317 was taken, so LocalSend devices reach this one on port 53318: devices that find others only by scanning the network will not see it"
	u.SelfChanged() // receiving started
	if !v.state.Visible() || !strings.Contains(v.state.Text, "port 53318; its fingerprint starts 5D2B 7A91") || !strings.Contains(v.state.Text, " Port 53317 was taken") ||
		strings.Contains(v.state.Text, "….") {
		t.Errorf("status %q", v.state.Text)
	}
}

// scanFake is a backend that can look for LocalSend devices: each scan
// hands its context to the test and returns what the test answers.
type scanFake struct {
	*fakeBackend
	ctxs    chan context.Context
	answers chan scanAnswer
}

type scanAnswer struct {
	n   int
	err error
}

func (s *scanFake) ScanLocalSend(ctx context.Context) (int, error) {
	s.ctxs <- ctx
	a := <-s.answers
	return a.n, a.err
}

// TestLookForLocalSend: the menu offers the scan only where the backend
// can run one; the dialog says it runs, then what it found (or why it
// could not look), and Stop ends the scan.
func TestLookForLocalSend(t *testing.T) {
	plain, _, _ := newTestUI(t)
	if got := strings.Join(menuLabels(plain.mainMenu().Items[0]), "|"); strings.Contains(got, "LocalSend") {
		t.Errorf("menu without a scanner = %q", got)
	}
	a := test.NewTempApp(t)
	w := test.NewTempWindow(t, nil)
	w.Resize(fyne.NewSize(900, 600))
	be := &scanFake{fakeBackend: newFake(), ctxs: make(chan context.Context, 1), answers: make(chan scanAnswer, 1)}
	done := make(chan struct{}, 64)
	u := New(a, w, be, Device{Name: "Desk", ID: idBob}, Options{Do: func(f func()) {
		f()
		select {
		case done <- struct{}{}:
		default:
		}
	}})
	drain := func() {
		for len(done) > 0 {
			<-done
		}
	}
	buttonText := func() string {
		var out []string
		uitree.Walk(u.win.Canvas().Overlays().Top(), func(x fyne.CanvasObject) {
			if b, ok := x.(*button); ok {
				out = append(out, b.Text)
			}
		})
		return strings.Join(out, "|")
	}
	var look *fyne.MenuItem
	for _, i := range u.mainMenu().Items[0].Items {
		if i.Label == "Look for LocalSend devices…" {
			look = i
		}
	}
	if look == nil {
		t.Fatalf("no scan in the menu: %q", menuLabels(u.mainMenu().Items[0]))
	}
	for _, c := range []struct {
		answer scanAnswer
		want   string
	}{
		{scanAnswer{2, nil}, "2 LocalSend devices answered; they are in the device list."},
		{scanAnswer{0, nil}, "No LocalSend device answered on this network."},
		{scanAnswer{0, errLocalSendOffForTest}, "Could not look for LocalSend devices: LocalSend is off"},
	} {
		look.Action()
		<-be.ctxs
		if got := renderedText(u.win.Canvas().Overlays().Top()); !strings.Contains(got, "whether it runs LocalSend") {
			t.Fatalf("while scanning the dialog says %q", got)
		}
		if b := buttonText(); b != "Stop" {
			t.Errorf("while scanning the buttons are %q", b)
		}
		drain()
		be.answers <- c.answer
		<-done
		got := renderedText(u.win.Canvas().Overlays().Top())
		if !strings.Contains(got, c.want) || buttonText() != "Close" {
			t.Errorf("after %+v the dialog says %q with %q, want %q and Close", c.answer, got, buttonText(), c.want)
		}
		press(u, fyne.KeyEscape)
		if u.win.Canvas().Overlays().Top() != nil {
			t.Fatal("Escape left the dialog up")
		}
	}

	// Stop: the scan's context ends and the dialog goes at once.
	look.Action()
	ctx := <-be.ctxs
	press(u, fyne.KeyEscape)
	if ctx.Err() == nil || u.win.Canvas().Overlays().Top() != nil {
		t.Errorf("Stop: scan context %v, dialog still up %v", ctx.Err(), u.win.Canvas().Overlays().Top() != nil)
	}
	drain()
	be.answers <- scanAnswer{0, ctx.Err()}
	<-done // the late answer changes nothing that shows
	if u.win.Canvas().Overlays().Top() != nil {
		t.Error("a stopped scan's answer brought a dialog back")
	}
}

var errLocalSendOffForTest = errors.New("LocalSend is off on this device")
