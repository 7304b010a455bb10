package ui

import (
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// Golden images: the main window, the incoming prompt and the details of a
// transfer, at the smallest window (488x320) and at the default size
// (980x640), in light and dark, drawn by Fyne's software renderer. The
// images in testdata/golden were looked at by a person; a change that
// alters them fails here until someone looks again and runs
//
//	go test ./ui -run TestGolden -update-golden
//
// (docs/screenshots/ holds copies of the dark 980x640 ones for the README).

var updateGolden = flag.Bool("update-golden", false, "rewrite ui/testdata/golden/*.png from this run")

// Sizes the golden images are drawn at.
var (
	sizeMin   = fyne.NewSize(488, 320) // the window's smallest size
	sizeLarge = fyne.NewSize(980, 640) // the size it opens at
)

const (
	idSam   = "SAMLPTP7QK2M4XWJ5N6V3ZB8RD2FHC4G7TY9LQE5U3KP6WJN2XAA"
	idMac   = "ALICEMB4R7T2KXQ9N3W6ZV5HJ8PL2DC4FG7MY3BQ6TK9UR5WE2NA"
	idPixel = "PIXEL8Z3Q5W7E9R2T4Y6U8I3O5P7A9S2D4F6G8H3J5K7L9Z2X4CA"
	idOffPC = "OFFICEPC5T7Y9U2I4O6P8A3S5D7F9G2H4J6K8L3Z5X7C9V2B4NA"
)

// goldenState fills the UI with what a user might see on a working day.
func goldenState(u *UI, be *fakeBackend, c *clock) {
	be.settings = Settings{DeviceName: "Sam's laptop", DownloadDir: "/home/sam/Downloads", Policy: PolicyEveryone, AutoAcceptTrusted: true}
	u.self = Device{ID: idSam, Name: "Sam's laptop"}
	u.updateStatus()
	be.history = []HistoryEntry{
		{ID: "h1", Direction: Incoming, PeerName: "Pixel 8", PeerID: idPixel, Files: 4, Bytes: 9_800_000, State: StateDone, Transport: "tcp",
			Destination: "/home/sam/Downloads", Finished: c.t.Add(-40 * time.Minute)},
		{ID: "h2", Direction: Outgoing, PeerName: "Office PC", PeerID: idOffPC, Files: 1, Bytes: 2_100_000_000, State: StateFailed,
			Code: CodeNoSpace, ByPeer: true, Err: "Not enough space on the receiver: 2.1 GB needed, 0.8 GB free.", Finished: c.t.Add(-3 * time.Hour)},
		{ID: "h3", Direction: Incoming, PeerName: "Jonas's desktop", Files: 12, Bytes: 310_000_000, State: StateDeclined, Code: CodeExpired,
			Finished: c.t.Add(-26 * time.Hour)},
	}
	u.history.reload()
	u.updateTray()
	mac := Device{ID: idMac, Name: "Alice's MacBook", OS: "darwin", QUICAddr: "192.168.1.23:52000", TCPAddr: "192.168.1.23:52000",
		Online: true, Known: true, Source: "mdns"}
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: mac})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idPixel, Name: "Pixel 8", OS: "android",
		QUICAddr: "192.168.1.41:52000", Online: true, Trusted: true, Known: true, Source: "mdns"}})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idOffPC, Name: "Office PC", OS: "windows", Known: true,
		TCPAddr: "192.168.1.7:52000", LastSeen: c.t.Add(-26 * time.Hour), Source: "remembered"}})

	alice := Peer{ID: idMac, Name: "Alice's MacBook"}
	u.ApplyTransfer(TransferEvent{Kind: TransferTransport, ID: "s1", Direction: Outgoing, State: StateActive, Peer: alice, Transport: "quic",
		Reason: "QUIC is the default on this network"})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "s1", Direction: Outgoing, State: StateActive,
		Progress: &Progress{Bytes: 612_000_000, Total: 1_480_000_000, Files: 3, TotalFiles: 7, Rate: 112e6, ETA: 8 * time.Second}})
	jonas := Peer{ID: "JONASDSK" + idPixel[8:], Name: "Jonas's desktop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "r2", Direction: Incoming, State: StateActive, Peer: jonas,
		Progress: &Progress{Bytes: 96_000_000, Total: 310_000_000, Files: 4, TotalFiles: 12}})
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r2", Direction: Incoming, Peer: jonas,
		Result: &Result{State: StatePaused, Code: CodePaused, ByPeer: true, Files: 12, Bytes: 96_000_000}})
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r1", Direction: Incoming, Peer: Peer{ID: idPixel, Name: "Pixel 8"},
		Result: &Result{State: StateDone, Files: 4, Verified: 4, Bytes: 9_800_000, Transport: "tcp", Destination: "/home/sam/Downloads"}})
}

// goldenOffer is an offer from Alice's MacBook.
func goldenOffer() TransferEvent {
	o := &Offer{Dest: "/home/sam/Downloads", FreeBytes: 212_000_000_000}
	for _, f := range []FileInfo{
		{"Holiday 2026/IMG_2041.jpg", 4_200_000}, {"Holiday 2026/IMG_2042.jpg", 3_900_000}, {"Holiday 2026/IMG_2047.heic", 2_800_000},
		{"Holiday 2026/beach.mov", 148_000_000}, {"Holiday 2026/route.gpx", 86_000},
	} {
		o.Files = append(o.Files, f)
		o.Total += f.Size
	}
	return TransferEvent{Kind: TransferOffer, ID: "p1", Direction: Incoming, State: StateWaiting,
		Peer: Peer{ID: idMac, Name: "Alice's MacBook"}, Offer: o}
}

// goldenDetails finishes the transfer to Alice and opens its details.
func goldenDetails(u *UI) {
	u.ApplyTransfer(TransferEvent{Kind: TransferMetrics, ID: "s1", State: StateActive, Metrics: &Metrics{Transport: "quic",
		SmoothedRTT: 1200 * time.Microsecond, MinRTT: 400 * time.Microsecond, CongestionWindow: 2_400_000, CongestionEvents: 3,
		PacketsLost: 41, PathMTU: 1452, DatagramsPerCall: 8.7, GSO: true, RecvBuffer: 7_340_032}})
	for _, f := range []FileResult{
		{Path: "Holiday 2026/IMG_2041.jpg", Size: 4_200_000, Verified: true}, {Path: "Holiday 2026/IMG_2042.jpg", Size: 3_900_000, Verified: true},
		{Path: "Holiday 2026/beach.mov", Size: 148_000_000, Verified: true},
	} {
		u.ApplyTransfer(TransferEvent{Kind: TransferFile, ID: "s1", State: StateActive, File: &f})
	}
	u.transfers.showDetails("s1")
}

func TestGolden(t *testing.T) {
	for _, variant := range []struct {
		name  string
		theme fyne.Theme
	}{{"light", theme.LightTheme()}, {"dark", theme.DarkTheme()}} { //nolint:staticcheck // fixed variants on purpose
		for _, size := range []struct {
			name string
			size fyne.Size
		}{{"min", sizeMin}, {"large", sizeLarge}} {
			for _, view := range []struct {
				name string
				show func(u *UI)
			}{
				{"main", func(*UI) {}},
				{"prompt", func(u *UI) { u.ApplyTransfer(goldenOffer()) }},
				{"details", goldenDetails},
			} {
				name := fmt.Sprintf("%s-%s-%s", view.name, size.name, variant.name)
				t.Run(name, func(t *testing.T) {
					u, be, c := newTestUI(t)
					fyne.CurrentApp().Settings().SetTheme(variant.theme)
					u.win.Resize(size.size)
					goldenState(u, be, c)
					view.show(u)
					assertGolden(t, name, u.win.Canvas().Capture())
				})
			}
		}
	}
}

// assertGolden compares img with testdata/golden/name.png. Tiny differences
// (anti-aliasing on another CPU) pass; a moved or changed widget does not.
func assertGolden(t *testing.T, name string, img image.Image) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".png")
	if *updateGolden {
		if err := writePNG(path, img); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := readPNG(path)
	if err != nil {
		t.Fatalf("%v (run with -update-golden to create it, then look at it)", err)
	}
	if diff, total := pixelDiff(want, img); diff*1000 > total {
		got := filepath.Join(os.TempDir(), "ferry-golden-failed", name+".png")
		_ = writePNG(got, img)
		t.Errorf("%s: %d of %d pixels differ from %s; this run drew %s", name, diff, total, path, got)
	}
}

// pixelDiff counts the pixels whose colour differs clearly (more than 16
// in a channel); a size change makes every pixel count.
func pixelDiff(a, b image.Image) (diff, total int) {
	ra, rb := a.Bounds(), b.Bounds()
	total = ra.Dx() * ra.Dy()
	if ra.Size() != rb.Size() {
		return total, total
	}
	for y := 0; y < ra.Dy(); y++ {
		for x := 0; x < ra.Dx(); x++ {
			r1, g1, b1, a1 := a.At(ra.Min.X+x, ra.Min.Y+y).RGBA()
			r2, g2, b2, a2 := b.At(rb.Min.X+x, rb.Min.Y+y).RGBA()
			if far(r1, r2) || far(g1, g2) || far(b1, b2) || far(a1, a2) {
				diff++
			}
		}
	}
	return diff, total
}

func far(x, y uint32) bool {
	d := int(x>>8) - int(y>>8)
	return d > 16 || d < -16
}

func readPNG(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return png.Decode(f)
}

func writePNG(path string, img image.Image) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// TestGoldenSanity keeps the comparison honest: an image matches itself and
// not a different one.
func TestGoldenSanity(t *testing.T) {
	u, be, c := newTestUI(t)
	u.win.Resize(sizeMin)
	goldenState(u, be, c)
	a := u.win.Canvas().Capture()
	if d, _ := pixelDiff(a, a); d != 0 {
		t.Fatalf("an image differs from itself in %d pixels", d)
	}
	u.ApplyTransfer(goldenOffer())
	b := u.win.Canvas().Capture()
	if d, n := pixelDiff(a, b); d*1000 <= n {
		t.Fatalf("the prompt changed only %d of %d pixels", d, n)
	}
}
