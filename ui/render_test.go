package ui

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/engine/addr"
)

// populate gives the UI a realistic state: devices, transfers, history.
func populate(u *UI, be *fakeBackend, c *clock) {
	be.history = []HistoryEntry{
		{ID: "h1", Direction: Incoming, PeerName: "Alice's laptop", Files: 12, Bytes: 48_200_000, State: StateDone, Transport: "quic", Destination: "/home/u/Downloads", Finished: c.t.Add(-time.Hour)},
		{ID: "h2", Direction: Outgoing, PeerName: "Office PC", Files: 1, Bytes: 2_100_000_000, State: StateFailed, Err: "Office PC's disk is full", Finished: c.t.Add(-3 * time.Hour)},
	}
	u.history.reload()
	u.updateTray()
	a := alice(true)
	a.Trusted = true
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: a})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idBob, Name: "Bob's phone", OS: "android", Addrs: reach("10.0.0.9:4000", addr.QUIC), Online: true}})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: "OFFICEPC" + idAlice[8:], Name: "Office PC", OS: "windows", Trusted: true, Addrs: reach("10.0.0.7:4000", addr.TCP), LastSeen: c.t.Add(-26 * time.Hour), Source: "remembered"}})
	u.ApplyTransfer(TransferEvent{Kind: TransferTransport, ID: "s1", Direction: Outgoing, State: StateActive, Peer: Peer{ID: idAlice, Name: "Alice's laptop"}, Transport: "quic"})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "s1", Direction: Outgoing, State: StateActive,
		Progress: &Progress{Bytes: 612_000_000, Total: 1_480_000_000, Files: 3, TotalFiles: 7, Rate: 112e6, ETA: 8 * time.Second}})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "s2", Direction: Outgoing, State: StatePaused, Peer: Peer{ID: idBob, Name: "Bob's phone"},
		Progress: &Progress{Bytes: 40_000_000, Total: 120_000_000, TotalFiles: 2}})
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "s3", Direction: Outgoing, State: StateRetrying, Peer: Peer{Name: "Office PC"},
		Result: &Result{State: StateRetrying, Err: "the connection was lost"}})
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "s4", Direction: Outgoing, Peer: Peer{Name: "Office PC"},
		Result: &Result{State: StateFailed, Err: "Office PC stopped answering", Files: 3}})
	be.partials = []PartialTransfer{
		{Key: "k1", PeerName: "Alice's laptop", Files: 3, Bytes: 812_000_000, Updated: c.t.Add(-20 * time.Minute)},
		{Key: "k2", PeerID: idBob, Files: 1, Bytes: 4_000_000_000, Updated: c.t.Add(-72 * time.Hour)},
	}
	u.partials.reload()
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r1", Direction: Incoming, Peer: Peer{Name: "Bob's phone"},
		Result: &Result{State: StateDone, Files: 4, Verified: 4, Bytes: 9_800_000, Transport: "tcp", Destination: "/home/u/Downloads"}})
}

// TestRenderAtScalesAndThemes draws the main window, the prompt and the tray
// menu at 1x and 2x in light and dark. With FERRY_SCREENSHOT_DIR set it saves
// the images (used for docs/screenshots/tray.png and for looking at them).
func TestRenderAtScalesAndThemes(t *testing.T) {
	dir := os.Getenv("FERRY_SCREENSHOT_DIR")
	for _, variant := range []struct {
		name  string
		theme fyne.Theme
	}{{"light", theme.LightTheme()}, {"dark", theme.DarkTheme()}} { //nolint:staticcheck // fixed variants on purpose
		for _, scale := range []float32{1, 2} {
			u, be, c := newTestUI(t)
			fyne.CurrentApp().Settings().SetTheme(variant.theme)
			u.win.Canvas().(test.WindowlessCanvas).SetScale(scale)
			u.win.Resize(fyne.NewSize(980, 640))
			populate(u, be, c)
			save(t, dir, variant.name+"-main-"+scaleName(scale)+".png", u.win)
			u.tabs.SelectIndex(1)
			save(t, dir, variant.name+"-history-"+scaleName(scale)+".png", u.win)
			u.tabs.SelectIndex(2)
			save(t, dir, variant.name+"-settings-"+scaleName(scale)+".png", u.win)
			u.tabs.SelectIndex(0)

			odd := offerEvent("p1", 3)
			odd.Offer.Files[1].Path = "invoice\u202etxt.exe"
			odd.Offer.Files[2].Path = "notes\n.txt"
			u.ApplyTransfer(odd)
			save(t, dir, variant.name+"-prompt-"+scaleName(scale)+".png", u.win)

			// The tray menu as the tray host lists it (Quit is ours, last).
			w := test.NewTempWindow(t, widget.NewMenu(fyne.NewMenu("", u.Tray().Items...)))
			w.Canvas().(test.WindowlessCanvas).SetScale(scale)
			w.Resize(fyne.NewSize(240, 190))
			save(t, dir, variant.name+"-tray-"+scaleName(scale)+".png", w)
		}
	}
}

func scaleName(s float32) string {
	if s == 2 {
		return "2x"
	}
	return "1x"
}

func save(t *testing.T, dir, name string, w fyne.Window) {
	t.Helper()
	img := w.Canvas().Capture()
	if img.Bounds().Dx() == 0 {
		t.Fatalf("%s: empty capture", name)
	}
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

// TestKeyboardReachesDeviceSend checks that Tab reaches a device's Send button.
func TestKeyboardReachesDeviceSend(t *testing.T) {
	u, be, c := newTestUI(t)
	populate(u, be, c)
	c2 := u.win.Canvas()
	var want fyne.Focusable = u.devices.rows[0].send
	for i := 0; i < 40; i++ {
		test.FocusNext(c2)
		if c2.Focused() == want {
			return
		}
	}
	t.Fatal("Tab never focused the first device's Send button")
}
