package ui

import (
	"context"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"

	"github.com/ferrydrop/ferry/engine/addr"
)

// Golden images: the main window, the incoming prompt (files grouped by
// folder; a text), the details of a transfer, the send sheet to several
// devices, History, the Devices page of Settings, this device's address
// with its QR code, the prompt of a sender not trusted yet (its
// verification code), the pairing dialog and the key-change warning, at the smallest window (488x320) and at the default size
// (980x640), in light and dark, drawn by Fyne's software renderer. The
// images in testdata/golden were looked at by a person; a change that
// alters them fails here until someone looks again and runs
//
//	go test ./ui -run TestGolden -update-golden
//
// (docs/screenshots/ holds copies of the dark 980x640 ones for the README;
// self-large-dark is address.png there).

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
	be.addrs = []string{"192.168.1.20:47800", "[fd00::20]:47800"}
	be.history = []HistoryEntry{
		{ID: "h1", Direction: Incoming, PeerName: "Pixel 8", PeerID: idPixel, Files: 4, Bytes: 9_800_000, State: StateDone, Transport: "tcp",
			Destination: "/home/sam/Downloads", Finished: c.t.Add(-40 * time.Minute), Names: []string{"IMG_2051.jpg", "IMG_2052.jpg", "IMG_2053.jpg"},
			Items: 4, Paths: []string{"/home/sam/Downloads/IMG_2051.jpg", "/home/sam/Downloads/IMG_2052.jpg"}},
		{ID: "h4", Direction: Incoming, PeerName: "Alice's MacBook", PeerID: idMac, State: StateDone, Transport: "quic",
			Finished: c.t.Add(-50 * time.Minute), Text: "https://example.org/tickets/2026-12-04"},
		{ID: "h2", Direction: Outgoing, PeerName: "Office PC", PeerID: idOffPC, Files: 1, Bytes: 2_100_000_000, State: StateFailed,
			Code: CodeNoSpace, ByPeer: true, Err: "Not enough space on the receiver: 2.1 GB needed, 0.8 GB free.", Finished: c.t.Add(-3 * time.Hour),
			Names: []string{"backup-2026.tar"}, Items: 1, Paths: []string{"/home/sam/backup-2026.tar"}},
		{ID: "h3", Direction: Incoming, PeerName: "Jonas's desktop", Files: 12, Bytes: 310_000_000, State: StateDeclined, Code: CodeExpired,
			Finished: c.t.Add(-26 * time.Hour), Names: []string{"Thesis drafts"}, Items: 1},
	}
	be.known = []KnownDevice{
		{ID: idPixel, Name: "Sam's phone", Announced: "Pixel 8", Renamed: true, LastSeen: c.t.Add(-2 * time.Minute), AutoAccept: true, Paired: true},
		{ID: idMac, Name: "Alice's MacBook", Announced: "Alice's MacBook", LastSeen: c.t.Add(-10 * time.Minute)},
		{ID: idOffPC, Name: "Office PC", Announced: "Office PC", LastSeen: c.t.Add(-26 * time.Hour)},
	}
	// A picture received from the phone: its thumbnail, as the backend would draw it.
	u.thumbs["/home/sam/Downloads/IMG_2051.jpg"] = goldenPicture()
	u.updateStatus()
	u.history.reload()
	u.updateTray()
	mac := Device{ID: idMac, Name: "Alice's MacBook", OS: "darwin", Addrs: reach("192.168.1.23:52000", addr.QUIC, addr.TCP),
		Online: true, Known: true, Source: "mdns"}
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: mac})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idPixel, Name: "Pixel 8", OS: "android",
		Addrs: reach("192.168.1.41:52000", addr.QUIC), Online: true, Trusted: true, Known: true, Paired: true, Source: "mdns"}})
	u.ApplyDevice(DeviceEvent{Kind: DeviceAppeared, Device: Device{ID: idOffPC, Name: "Office PC", OS: "windows", Known: true,
		Addrs: reach("192.168.1.7:52000", addr.TCP), LastSeen: c.t.Add(-26 * time.Hour), Source: "remembered"}})

	alice := Peer{ID: idMac, Name: "Alice's MacBook"}
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "s1", Direction: Outgoing, State: StateConnecting, Peer: alice,
		Offer: &Offer{Count: 7, Total: 1_480_000_000, FreeBytes: -1, Folders: []FolderInfo{{Path: "Holiday 2026", Files: 6, Bytes: 1_400_000_000}},
			Files:   []FileInfo{{Path: "Holiday 2026/beach.mov", Size: 1_400_000_000}, {Path: "itinerary.pdf", Size: 80_000_000}},
			Skipped: &Skipped{Summary: "1 symbolic link (not followed)", Count: 1, NotFiles: true, Examples: []string{"/home/sam/Pictures/Holiday 2026/latest.jpg"}}}})
	u.ApplyTransfer(TransferEvent{Kind: TransferTransport, ID: "s1", Direction: Outgoing, State: StateActive, Peer: alice, Transport: "quic",
		Reason: "QUIC is the default on this network"})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "s1", Direction: Outgoing, State: StateActive,
		Progress: &Progress{Bytes: 612_000_000, Total: 1_480_000_000, Files: 3, TotalFiles: 7, Rate: 112e6, ETA: 8 * time.Second}})
	jonas := Peer{ID: "JONASDSK" + idPixel[8:], Name: "Jonas's desktop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "r2", Direction: Incoming, State: StateActive, Peer: jonas,
		Offer: &Offer{Count: 12, Total: 310_000_000, FreeBytes: -1, Folders: []FolderInfo{{Path: "Thesis drafts", Files: 12, Bytes: 310_000_000}}}})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "r2", Direction: Incoming, State: StateActive, Peer: jonas,
		Progress: &Progress{Bytes: 96_000_000, Total: 310_000_000, Files: 4, TotalFiles: 12}})
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r2", Direction: Incoming, Peer: jonas,
		Result: &Result{State: StatePaused, Code: CodePaused, ByPeer: true, Files: 12, Bytes: 96_000_000}})
	pixel := Peer{ID: idPixel, Name: "Pixel 8"}
	var photos []FileInfo
	for _, n := range []string{"IMG_2051.jpg", "IMG_2052.jpg", "IMG_2053.jpg", "IMG_2054.jpg"} {
		photos = append(photos, FileInfo{Path: n, Size: 2_450_000})
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "r1", Direction: Incoming, State: StateActive, Peer: pixel,
		Offer: &Offer{Count: 4, Total: 9_800_000, FreeBytes: -1, Dest: "/home/sam/Downloads", Files: photos}})
	for _, f := range photos {
		u.ApplyTransfer(TransferEvent{Kind: TransferFile, ID: "r1", Direction: Incoming, State: StateActive, Peer: pixel,
			File: &FileResult{Path: f.Path, Size: f.Size, Verified: true}})
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r1", Direction: Incoming, Peer: pixel,
		Result: &Result{State: StateDone, Files: 4, Verified: 4, Bytes: 9_800_000, Transport: "tcp", Destination: "/home/sam/Downloads"}})
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "t1", Direction: Incoming, Peer: alice,
		Result: &Result{State: StateDone, Transport: "quic", Text: "https://example.org/tickets/2026-12-04"}})
}

// goldenPicture stands in for a thumbnail of a holiday photo.
func goldenPicture() image.Image {
	img := image.NewRGBA(image.Rect(0, 0, 96, 72))
	for y := 0; y < 72; y++ {
		for x := 0; x < 96; x++ {
			sky := y < 40
			c := color.RGBA{R: uint8(60 + x), G: uint8(140 + y), B: 230, A: 255}
			if !sky {
				c = color.RGBA{R: 230, G: uint8(200 - y), B: uint8(120 + x/2), A: 255}
			}
			img.Set(x, y, c)
		}
	}
	return img
}

// goldenTextOffer is a text from Alice: a link, and a character that would
// reverse what follows it, shown escaped.
func goldenTextOffer() TransferEvent {
	return TransferEvent{Kind: TransferOffer, ID: "p2", Direction: Incoming, State: StateWaiting, Peer: Peer{ID: idMac, Name: "Alice's MacBook"},
		Offer: &Offer{FreeBytes: -1, Dest: "/home/sam/Downloads",
			Text: "Tickets for Friday: https://example.org/tickets/2026-12-04\nSeats 14 and 15, row F.\nAnd the file is invoice\u202efdp.exe — don't open it."}}
}

// goldenSend opens the send sheet for three files with two devices checked.
// Their count is handed over to this goroutine, as to the Fyne one.
func goldenSend(u *UI) {
	u.be.(*fakeBackend).survey = func(context.Context, []string) (Contents, error) {
		return Contents{Files: 3, Bytes: 7_412_000}, nil
	}
	handed := make(chan func(), 16)
	u.opt.Do = func(f func()) { handed <- f }
	u.askSend(Items{Paths: []string{"/home/sam/Pictures/IMG_3001.jpg", "/home/sam/Pictures/IMG_3002.jpg", "/home/sam/Documents/plan.pdf"}}, nil)
	for u.ask.size.Text == "Counting…" {
		select {
		case f := <-handed:
			f()
		case <-time.After(10 * time.Second):
			panic("the send sheet's count was not handed over in 10 s")
		}
	}
	u.ask.choose(0)
	u.ask.choose(1)
}

// goldenDevices shows the Devices page of Settings.
func goldenDevices(u *UI) {
	u.tabs.SelectIndex(2)
	u.settings.tabs.SelectIndex(1)
}

// goldenOffer is an offer from Alice's MacBook.
func goldenOffer() TransferEvent {
	o := &Offer{Dest: "/home/sam/Downloads", FreeBytes: 212_000_000_000, Expires: time.Date(2026, 11, 29, 12, 1, 47, 0, time.UTC)}
	for _, f := range []FileInfo{
		{Path: "Holiday 2026/IMG_2041.jpg", Size: 4_200_000}, {Path: "Holiday 2026/IMG_2042.jpg", Size: 3_900_000},
		{Path: "Holiday 2026/IMG_2047.heic", Size: 2_800_000}, {Path: "Holiday 2026/beach.mov", Size: 148_000_000},
		{Path: "Holiday 2026/route.gpx", Size: 86_000},
	} {
		o.Files = append(o.Files, f)
		o.Total += f.Size
	}
	o.Folders = []FolderInfo{{Path: "Holiday 2026", Files: 5, Bytes: o.Total}}
	o.Files = append(o.Files, FileInfo{Path: "notes.txt", Size: 2_300})
	o.Total += 2_300
	o.Count = len(o.Files)
	return TransferEvent{Kind: TransferOffer, ID: "p1", Direction: Incoming, State: StateWaiting,
		Peer: Peer{ID: idMac, Name: "Alice's MacBook"}, Offer: o}
}

// goldenCodeOffer is an offer from a device not trusted yet, with its
// verification code.
func goldenCodeOffer() TransferEvent {
	ev := goldenOffer()
	ev.Offer.PairCode = "482 913"
	return ev
}

// goldenPairing is Pair… on Alice's MacBook once the code arrived.
func goldenPairing(u *UI) {
	mac := u.devices.devices[idMac]
	u.pairWith(mac)
	u.ApplyTransfer(TransferEvent{Kind: TransferPair, ID: "pair-1", Direction: Outgoing, State: StateWaiting, Pairing: true,
		Peer: Peer{ID: idMac, Name: "Alice's MacBook"}, Pair: &PairCode{Code: "771 204", Only: true}})
}

// goldenKeyChanged is the warning about a paired device with a new key.
func goldenKeyChanged(u *UI) {
	u.ApplyTransfer(TransferEvent{Kind: TransferKeyChanged, Direction: Incoming, Peer: Peer{ID: idOffPC, Name: "Sam's phone"},
		KeyChange: &KeyChange{Known: Peer{ID: idPixel, Name: "Sam's phone", Trusted: true}, PresentedID: idOffPC,
			Warning: `A device calling itself "Sam's phone" tried to connect with a key that is not the one of the "Sam's phone" you paired with (PIXEL8Z3). ` +
				"If that device was reinstalled, forget the old one here and pair again; otherwise someone may be pretending to be it."}})
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
	}{{"light", variantTheme{Theme(), theme.VariantLight}}, {"dark", variantTheme{Theme(), theme.VariantDark}}} {
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
				{"send", goldenSend},
				{"text", func(u *UI) { u.ApplyTransfer(goldenTextOffer()) }},
				{"history", func(u *UI) { u.tabs.SelectIndex(1) }},
				{"devices", goldenDevices},
				{"self", func(u *UI) { u.showSelf() }},
				{"codeprompt", func(u *UI) { u.ApplyTransfer(goldenCodeOffer()) }},
				{"pairing", goldenPairing},
				{"keychanged", goldenKeyChanged},
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
