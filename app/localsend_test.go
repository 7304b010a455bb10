package app

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/internal/lspeer"
	"github.com/ferrydrop/ferry/ui"
)

// The test backend keeps LocalSend on loopback with any free port and no
// multicast (lsHub.isolated): nothing here binds 53317 or announces.

func TestLocalSendFollowsSettings(t *testing.T) {
	b := newTestBackend(t)
	s := b.Settings()
	if err := b.SaveSettings(s); err != nil {
		t.Fatal(err)
	}
	port, fp := b.ls.status()
	if port == 0 || len(fp) != 64 {
		t.Fatalf("LocalSend on by default: port %d, fingerprint %q", port, fp)
	}
	if p, f, _ := b.LocalSendStatus(); p != port || f != fp {
		t.Errorf("Settings would say port %d, fingerprint %q", p, f)
	}

	// A PIN restarts the server with it.
	s.LocalSendPIN = "2468"
	if err := b.SaveSettings(s); err != nil {
		t.Fatal(err)
	}
	p, err := lspeer.New("Pixel")
	if err != nil {
		t.Fatal(err)
	}
	port, _ = b.ls.status()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	one := []lspeer.SendFile{{Name: "n.txt", Data: []byte("x")}}
	if sr, err := p.Send(context.Background(), addr, fp, true, "", "", one, nil); err != nil || sr.PrepareStatus != http.StatusUnauthorized {
		t.Fatalf("without the PIN: %+v %v", sr, err)
	}

	for _, c := range []struct {
		name string
		edit func(*ui.Settings)
	}{
		{"LocalSend off", func(s *ui.Settings) { s.LocalSendOff = true }},
		{"receiving off", func(s *ui.Settings) { s.LocalSendOff, s.Policy = false, ui.PolicyOff }},
	} {
		s2 := s
		c.edit(&s2)
		if err := b.SaveSettings(s2); err != nil {
			t.Fatal(err)
		}
		if port, _ := b.ls.status(); port != 0 {
			t.Errorf("%s: LocalSend still serves on %d", c.name, port)
		}
		if p, _, _ := b.LocalSendStatus(); p != 0 {
			t.Errorf("%s: Settings would say it serves on %d", c.name, p)
		}
		if _, err := p.Send(context.Background(), addr, fp, true, "", "", one, nil); err == nil {
			t.Errorf("%s: a LocalSend offer still reached this device", c.name)
		}
		if err := b.SaveSettings(s); err != nil { // back on
			t.Fatal(err)
		}
	}
	if got := b.Settings(); got.LocalSendPIN != "2468" || got.LocalSendOff {
		t.Errorf("saved settings %+v", got)
	}
}

// TestLocalSendOfferReachesThePrompt: a LocalSend sender's offer reaches
// the UI as an offer from a LocalSend peer, with its model and fingerprint,
// and unverified when it presented no certificate.
func TestLocalSendOfferReachesThePrompt(t *testing.T) {
	b := newTestBackend(t)
	if err := b.SaveSettings(b.Settings()); err != nil {
		t.Fatal(err)
	}
	port, fp := b.ls.status()
	events, unsub := b.eng.Subscribe(256)
	defer unsub()
	p, err := lspeer.New("Pixel")
	if err != nil {
		t.Fatal(err)
	}
	for _, withCert := range []bool{true, false} {
		done := make(chan int, 1)
		go func() {
			sr, _ := p.Send(context.Background(), "127.0.0.1:"+strconv.Itoa(port), fp, withCert, "", "", []lspeer.SendFile{{Name: "n.txt", Data: []byte("x")}}, nil)
			if sr == nil {
				done <- 0
				return
			}
			done <- sr.PrepareStatus
		}()
		var offer ui.TransferEvent
		timeout := time.After(20 * time.Second)
		for offer.Offer == nil {
			select {
			case ev := <-events:
				if u, ok := toUITransfer(ev); ok && u.Kind == ui.TransferOffer && u.Direction == ui.Incoming && u.State == ui.StateWaiting {
					offer = u
				}
			case <-timeout:
				t.Fatal("no offer")
			}
		}
		pe := offer.Peer
		if !pe.LocalSend || pe.Name != "Pixel" || pe.Model != "lspeer" || !strings.EqualFold(pe.Fingerprint, p.Fingerprint) || pe.Unverified == withCert || pe.Trusted {
			t.Errorf("with certificate %v: peer %+v", withCert, pe)
		}
		if err := b.Decide(offer.ID, ui.Decision{Accept: false, Reason: "declined"}); err != nil {
			t.Fatal(err)
		}
		if code := <-done; code != http.StatusForbidden {
			t.Errorf("declined offer answered %d", code)
		}
	}
}

// TestLocalSendKnownDevice: a LocalSend device this one received from is
// listed on the Devices page by its fingerprint, and can be renamed and
// forgotten.
func TestLocalSendKnownDevice(t *testing.T) {
	b := newTestBackend(t, func(o *engine.Options) { o.Accept = engine.AcceptAsk })
	if err := b.SaveSettings(b.Settings()); err != nil {
		t.Fatal(err)
	}
	port, fp := b.ls.status()
	events, unsub := b.eng.Subscribe(256)
	defer unsub()
	p, err := lspeer.New("Galaxy")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		sr, _ := p.Send(context.Background(), "127.0.0.1:"+strconv.Itoa(port), fp, true, "", "", []lspeer.SendFile{{Name: "k.txt", Data: []byte("k")}}, nil)
		if sr == nil {
			done <- 0
			return
		}
		done <- sr.PrepareStatus
	}()
	timeout := time.After(20 * time.Second)
	for decided := false; !decided; {
		select {
		case ev := <-events:
			if ev.Kind == engine.EventOffer && ev.Direction == engine.Receiving {
				if err := b.Decide(ev.TransferID, ui.Decision{Accept: true}); err != nil {
					t.Fatal(err)
				}
				decided = true
			}
		case <-timeout:
			t.Fatal("no offer")
		}
	}
	if code := <-done; code != http.StatusOK {
		t.Fatalf("accepted offer answered %d", code)
	}
	var k *ui.KnownDevice
	for _, d := range b.KnownDevices() {
		if d.LocalSend {
			k = &d
		}
	}
	if k == nil || !strings.EqualFold(k.Fingerprint, p.Fingerprint) || k.Name != "Galaxy" {
		t.Fatalf("known devices %+v", b.KnownDevices())
	}
	if err := b.RenameDevice(k.ID, "Sam's phone"); err != nil {
		t.Fatal(err)
	}
	if got := b.KnownDevices(); len(got) != 1 || got[0].Name != "Sam's phone" || !got[0].Renamed {
		t.Errorf("after rename %+v", got)
	}
	if err := b.ForgetDevice(k.ID); err != nil {
		t.Fatal(err)
	}
	if got := b.KnownDevices(); len(got) != 0 {
		t.Errorf("after forget %+v", got)
	}
}

// TestSendToLocalSendDevice: a device with only a LocalSend address gets
// its files over LocalSend, pinned to its fingerprint, with the PIN the
// user types when it asks for one.
func TestSendToLocalSendDevice(t *testing.T) {
	b := newTestBackend(t)
	events, unsub := b.eng.Subscribe(256)
	defer unsub()
	p, err := lspeer.New("Galaxy")
	if err != nil {
		t.Fatal(err)
	}
	p.PIN = "1357"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	defer func() { p.Close(); <-served }()
	var asked []bool
	b.askPIN = func(_ context.Context, device string, wrong bool) (string, error) {
		asked = append(asked, wrong)
		if device != "Galaxy" {
			t.Errorf("PIN asked for %q", device)
		}
		// LocalSend has no resume: the send is not kept for the app's
		// next start, and quitting promises it nothing (KeptForNextStart).
		if kept := b.sends.list(); len(kept) != 0 {
			t.Errorf("a send to a LocalSend device is kept for the next start: %+v", kept)
		}
		return "1357", nil
	}
	src := filepath.Join(t.TempDir(), "photo.jpg")
	if err := os.WriteFile(src, bytes.Repeat([]byte{9}, 70_000), 0o600); err != nil {
		t.Fatal(err)
	}
	dev := ui.Device{ID: "localsend:" + p.Fingerprint, Name: "Galaxy", Online: true,
		Addrs:     []addr.Addr{{Kind: lsAddrKind, URI: "https://" + ln.Addr().String() + "#" + p.Fingerprint}},
		LocalSend: &ui.LocalSendInfo{Fingerprint: p.Fingerprint, Type: "mobile", Verified: true}}
	if err := b.Send(dev, ui.Items{Paths: []string{src}}); err != nil {
		t.Fatal(err)
	}
	r := waitResult(t, events)
	if r.State != ui.StateDone || len(asked) != 1 || asked[0] {
		t.Fatalf("result %+v, PIN asked %v", r.Result, asked)
	}
	got, _, _, _, _, _ := p.Snapshot()
	if len(got["photo.jpg"]) != 70_000 {
		t.Fatalf("the device got %d files", len(got))
	}

	// A file the device's user leaves out is told as refused, not sent.
	other := filepath.Join(t.TempDir(), "other.jpg")
	if err := os.WriteFile(other, []byte("jpeg"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Skip = func(name string) bool { return name == "other.jpg" }
	if err := b.Send(dev, ui.Items{Paths: []string{src, other}}); err != nil {
		t.Fatal(err)
	}
	if r := waitResult(t, events); r.State != ui.StateDone || r.Result.Refused != 1 || r.Result.Verified != 1 || r.Result.Transport != "https" {
		t.Fatalf("a file left out: %+v", r.Result)
	}
	p.Skip = nil

	// A text goes as LocalSend's text message (the PIN asked again: a
	// LocalSend session holds none).
	if err := b.Send(dev, ui.Items{Text: "see you at 8"}); err != nil {
		t.Fatal(err)
	}
	if r := waitResult(t, events); r.State != ui.StateDone {
		t.Fatalf("text: %+v", r.Result)
	}
	if _, texts, _, _, _, _ := p.Snapshot(); len(texts) != 1 || texts[0] != "see you at 8" {
		t.Fatalf("the device got texts %q", texts)
	}

	// Pinned: a device that cannot prove the fingerprint gets nothing.
	dev.Addrs[0].URI = "https://" + ln.Addr().String() + "#" + strings.Repeat("AB", 32)
	if err := b.Send(dev, ui.Items{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if r := waitResult(t, events); r.State == ui.StateDone {
		t.Fatal("a send went to a device that did not prove the fingerprint")
	}
}

func waitResult(t *testing.T, events <-chan engine.Event) ui.TransferEvent {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if u, ok := toUITransfer(ev); ok && u.Kind == ui.TransferResult && u.Direction == ui.Outgoing {
				return u
			}
		case <-timeout:
			t.Fatal("no result")
		}
	}
}

func TestLSTarget(t *testing.T) {
	fp := strings.Repeat("AB", 32)
	ls := addr.Addr{Kind: lsAddrKind, URI: "https://10.0.0.9:53317#" + fp}
	for _, c := range []struct {
		name  string
		addrs []addr.Addr
		want  engine.LocalSendTarget
		ok    bool
	}{
		{"LocalSend only", []addr.Addr{ls}, engine.LocalSendTarget{Addr: "10.0.0.9:53317", Fingerprint: fp, Scheme: "https", Alias: "P"}, true},
		{"HTTP mode", []addr.Addr{{Kind: lsAddrKind, URI: "http://10.0.0.9:53317#x1"}}, engine.LocalSendTarget{Addr: "10.0.0.9:53317", Fingerprint: "x1", Scheme: "http", Alias: "P"}, true},
		{"speaks both: Ferry", []addr.Addr{ls, {Kind: addr.QUIC, URI: "quic://10.0.0.9:47800"}}, engine.LocalSendTarget{}, false},
		{"Ferry only", []addr.Addr{{Kind: addr.TCP, URI: "tcp://10.0.0.9:47800"}}, engine.LocalSendTarget{}, false},
		{"no host", []addr.Addr{{Kind: lsAddrKind, URI: "https://#" + fp}}, engine.LocalSendTarget{}, false},
	} {
		got, ok := lsTarget(ui.Device{Name: "P", Addrs: c.addrs})
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// TestScanLocalSend: the menu's scan registers with every host of the
// subnet (here loopback's /24, on the test peer's port) and the devices
// that answer reach the device list; with LocalSend off it says how to turn
// it on rather than scan.
func TestScanLocalSend(t *testing.T) {
	b := newTestBackend(t)
	if err := b.SaveSettings(b.Settings()); err != nil {
		t.Fatal(err)
	}
	p, err := lspeer.New("Pixel")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	defer func() { p.Close(); <-served }()
	var seen []localsend.Device
	var mu sync.Mutex
	b.ls.onDevice = func(d localsend.Device) { mu.Lock(); seen = append(seen, d); mu.Unlock() }
	b.ls.scanSubnets = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/24")}
	b.ls.scanPort = ln.Addr().(*net.TCPAddr).Port

	n, err := b.ScanLocalSend(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("scan found %d: %v", n, err)
	}
	mu.Lock()
	if len(seen) != 1 || seen[0].Fingerprint != p.Fingerprint || !seen[0].Verified || seen[0].Via != "scan" {
		t.Errorf("devices heard: %+v", seen)
	}
	mu.Unlock()
	if _, _, _, regs, _, _ := p.Snapshot(); len(regs) != 1 {
		t.Errorf("the peer heard %d registers, want 1", len(regs))
	}

	s := b.Settings()
	s.LocalSendOff = true
	if err := b.SaveSettings(s); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ScanLocalSend(context.Background()); !errors.Is(err, errLocalSendOff) {
		t.Errorf("scan with LocalSend off: %v", err)
	}
}
