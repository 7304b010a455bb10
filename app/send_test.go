package app

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/ui"

	"github.com/ferrydrop/ferry/engine/addr"
)

// The UI's bound on a text is the engine's.
func TestTextLimitsAgree(t *testing.T) {
	if ui.MaxTextBytes != engine.MaxTextBytes {
		t.Fatalf("ui.MaxTextBytes %d, engine.MaxTextBytes %d", ui.MaxTextBytes, engine.MaxTextBytes)
	}
}

// A device link names the device that must answer: another one there is
// not added.
func TestAddDeviceByLinkChecksTheID(t *testing.T) {
	b := newTestBackend(t)
	recv, err := engine.New(engine.Options{ConfigDir: t.TempDir(), Name: "Receiver", DownloadDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { recv.Close() })
	if err := recv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	q := listening(recv, addr.QUIC)
	if dev, err := b.AddDevice(context.Background(), q, recv.ID()); err != nil || dev.ID != recv.ID() {
		t.Fatalf("the right ID: %+v %v", dev, err)
	}
	other := strings.Repeat("A", 52)
	if dev, err := b.AddDevice(context.Background(), q, other); err == nil {
		t.Fatalf("another device's link added %+v", dev)
	}
}

// The history keeps what a transfer held: names, the files as saved (for
// Open and Show in folder), and its text.
func TestHistoryEntryNamesFilesAndText(t *testing.T) {
	in := intent{offer: &ui.Offer{Count: 5, Folders: []ui.FolderInfo{{Path: "Photos", Files: 3}},
		Files: []ui.FileInfo{{Path: "Photos/a.jpg"}, {Path: "x.txt"}, {Path: "y.txt"}}, Text: "hi"},
		saved: []string{"Photos/a.jpg", "x (1).txt"}}
	ev := ui.TransferEvent{ID: "r1", Direction: ui.Incoming, Peer: ui.Peer{Name: "Alice"}, Time: time.Now(),
		Result: &ui.Result{State: ui.StateDone, Files: 5, Verified: 5, Destination: "/home/u/in", Text: "hi"}}
	e := historyEntry(ev, in, nil)
	if strings.Join(e.Names, "|") != "Photos|x.txt|y.txt" || e.Items != 3 || e.Text != "hi" {
		t.Fatalf("entry %+v", e)
	}
	if strings.Join(e.Paths, "|") != "/home/u/in/Photos/a.jpg|/home/u/in/x (1).txt" {
		t.Fatalf("paths %q", e.Paths)
	}
	// Sent: the local files and folders.
	ev.Direction = ui.Outgoing
	in.sent = []string{"/home/me/Photos", "/home/me/x.txt"}
	if e := historyEntry(ev, in, nil); strings.Join(e.Paths, "|") != "/home/me/Photos|/home/me/x.txt" {
		t.Fatalf("sent paths %q", e.Paths)
	}
}

// A send from the app (no offer event seen here) is named in History by the
// files and folders it sent, so a search for a file name finds it.
func TestHistoryEntryNamesAppSend(t *testing.T) {
	in := intent{sent: []string{"/home/me/Photos", "/home/me/x.txt", "/home/me/y.txt", "/home/me/z.txt"}}
	ev := ui.TransferEvent{ID: "s1", Direction: ui.Outgoing, Peer: ui.Peer{Name: "Bob"}, Time: time.Now(),
		Result: &ui.Result{State: ui.StateDone, Files: 4}}
	e := historyEntry(ev, in, nil)
	if strings.Join(e.Names, "|") != "Photos|x.txt|y.txt" || e.Items != 4 {
		t.Fatalf("names %q items %d", e.Names, e.Items)
	}
}

// Texts are up to 64 KiB: the history keeps the newest in full and cuts
// the older ones, so its file stays small.
func TestHistoryBoundsTexts(t *testing.T) {
	h, err := openHistory(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("é", engine.MaxTextBytes/2)
	for i := 0; i < 100; i++ {
		if err := h.add(ui.HistoryEntry{ID: string(rune('a'+i%26)) + strings.Repeat("x", i), Text: big, Finished: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for i, e := range h.list() {
		total += len(e.Text)
		if i == 0 && e.Text != big {
			t.Fatal("the newest text was cut")
		}
	}
	if total > maxHistoryText+engine.MaxTextBytes+100*historyTextCut {
		t.Fatalf("the history keeps %d bytes of text", total)
	}
	if err := h.clear(); err != nil || len(h.list()) != 0 {
		t.Fatalf("clear: %v, %d left", err, len(h.list()))
	}
	if h2, _ := openHistory(filepath.Dir(h.path)); len(h2.list()) != 0 {
		t.Fatal("a cleared history came back")
	}
}

// The user's own names for devices last across restarts and show wherever
// the device does; Forget drops it.
func TestDeviceNames(t *testing.T) {
	b := newTestBackend(t)
	recv, err := engine.New(engine.Options{ConfigDir: t.TempDir(), Name: "Laptop-7F3A", DownloadDir: t.TempDir(), Listen: "127.0.0.1:0",
		Accept: engine.AcceptAll})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { recv.Close() })
	if err := recv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A first exchange makes the device known.
	q := listening(recv, addr.QUIC)
	tr, err := b.eng.SendItems(context.Background(), engine.Target{Addrs: engine.AddrsAt(q)}, engine.Items{Text: "hello"}, engine.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if err := b.RenameDevice(recv.ID(), "  Anna's laptop "); err != nil {
		t.Fatal(err)
	}
	var k ui.KnownDevice
	for _, d := range b.KnownDevices() {
		if d.ID == recv.ID() {
			k = d
		}
	}
	if k.Name != "Anna's laptop" || !k.Renamed || k.Announced != "Laptop-7F3A" {
		t.Fatalf("known device %+v", k)
	}
	if d := b.named(ui.Device{ID: recv.ID(), Name: "Laptop-7F3A"}); d.Name != "Anna's laptop" {
		t.Fatalf("device row named %q", d.Name)
	}
	again, err := openDevices(filepath.Dir(b.devices.path))
	if err != nil || again.nickname(recv.ID()) != "Anna's laptop" {
		t.Fatalf("after a restart: %q %v", again.nickname(recv.ID()), err)
	}
	if err := b.SetAutoAccept(recv.ID(), true); err != nil {
		t.Fatal(err)
	}
	if err := b.ForgetDevice(recv.ID()); err != nil {
		t.Fatal(err)
	}
	if len(b.KnownDevices()) != 0 || b.devices.nickname(recv.ID()) != "" {
		t.Fatal("Forget left the device or its name")
	}
}

// This device's addresses: private IPv4 first, no loopback or link-local.
func TestHostAddrs(t *testing.T) {
	got := hostAddrs(47800, func() ([]net.Interface, error) { return net.Interfaces() })
	for _, a := range got {
		h, p, err := net.SplitHostPort(a)
		if err != nil || p != "47800" || strings.HasPrefix(h, "127.") || h == "::1" || strings.HasPrefix(h, "fe80") {
			t.Errorf("address %q", a)
		}
	}
	if hostAddrs(1, func() ([]net.Interface, error) { return nil, os.ErrPermission }) != nil {
		t.Error("addresses without interfaces")
	}
}

// Thumbnails come from pictures of bounded size only.
func TestThumbnail(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "wide.png")
	img := image.NewRGBA(image.Rect(0, 0, 400, 100))
	img.Set(10, 10, color.RGBA{255, 0, 0, 255})
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	png.Encode(f, img)
	f.Close()
	th := thumbnail(p, 96)
	if th == nil || th.Bounds().Dx() != 96 || th.Bounds().Dy() != 24 {
		t.Fatalf("thumbnail %v", th)
	}
	notPic := filepath.Join(dir, "x.jpg")
	os.WriteFile(notPic, []byte("not a picture"), 0o644)
	if thumbnail(notPic, 96) != nil || thumbnail(filepath.Join(dir, "missing.png"), 96) != nil || thumbnail(dir, 96) != nil {
		t.Fatal("a thumbnail of something that is no picture")
	}
}
