package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/internal/peerresolve"
	"github.com/ferrydrop/ferry/ui"

	"github.com/ferrydrop/ferry/engine/addr"
)

// newTestBackend wires a real engine (listening on loopback only) with a
// discovery that never touches the network.
// goPump runs b's event pump as Run does: subscribed to the engine's
// events before it returns (a goroutine that subscribes when it gets to
// it missed a quick transfer's events on a busy machine), pumping until
// ctx ends.
func goPump(t testing.TB, ctx context.Context, b *backend, out chan<- ui.TransferEvent, devices chan<- ui.DeviceEvent) {
	t.Helper()
	evs, stop := b.eng.Subscribe(256)
	t.Cleanup(stop)
	go pumpEvents(ctx, evs, b, out, devices)
}

func newTestBackend(t testing.TB, tune ...func(*engine.Options)) *backend {
	t.Helper()
	return newTestBackendIn(t, t.TempDir(), tune...)
}

// newTestBackendIn is newTestBackend on the config dir dir (a restart).
func newTestBackendIn(t testing.TB, dir string, tune ...func(*engine.Options)) *backend {
	t.Helper()
	resolver := &peerresolve.Resolver{}
	eo := engine.Options{ConfigDir: dir, Name: "test", DownloadDir: t.TempDir(), Listen: "127.0.0.1:0", Resolver: resolver}
	for _, f := range tune {
		f(&eo)
	}
	eng, err := engine.New(eo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	noIfaces := func() ([]net.Interface, error) { return nil, nil }
	disc, err := discovery.New(discovery.Options{SelfID: eng.ID(), Interfaces: noIfaces, Prober: prober(eng)})
	if err != nil {
		t.Fatal(err)
	}
	resolver.Use(disc)
	st, err := openSettings(dir, ui.Settings{DeviceName: "test", DownloadDir: t.TempDir(), Policy: ui.PolicyEveryone})
	if err != nil {
		t.Fatal(err)
	}
	h, err := openHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	devs, err := openDevices(dir)
	if err != nil {
		t.Fatal(err)
	}
	sends, err := openSends(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{ctx: ctx, eng: eng, disc: disc, settings: st, history: h, devices: devs, sends: sends, names: map[string]ui.Peer{},
		synthetic: func(ui.TransferEvent) {}, ls: lsHub{isolated: true},
		advertiseOpts: []discovery.AdvertiseOption{discovery.WithInterfaceLister(noIfaces)}}
	t.Cleanup(b.close)
	return b
}

func TestReceivingOffClosesListenersAndAdvertisement(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	b := newTestBackend(t)
	s := b.Settings()
	if err := b.SaveSettings(s); err != nil {
		t.Fatal(err)
	}
	q := listening(b.eng, addr.QUIC)
	if !b.eng.Receiving() || q == "" || b.adv == nil {
		t.Fatalf("policy everyone: receiving %v, quic %q, advertising %v", b.eng.Receiving(), q, b.adv != nil)
	}
	if got := b.adv.Service().Addrs; !slices.Equal(got, b.eng.Addrs()) {
		t.Errorf("advertised %v, listening on %v", got, b.eng.Addrs())
	}
	s.Policy = ui.PolicyOff
	if err := b.SaveSettings(s); err != nil {
		t.Fatal(err)
	}
	if b.eng.Receiving() || b.adv != nil {
		t.Fatalf("policy off: receiving %v, advertising %v", b.eng.Receiving(), b.adv != nil)
	}
	if c, err := net.Dial("udp", q); err == nil {
		c.Close() // UDP dials always succeed; the TCP side must refuse
	}
	if tcp := listening(b.eng, addr.TCP); tcp != "" {
		t.Errorf("TCP still listening on %s", tcp)
	}
	reloaded, err := openSettings(filepath.Dir(b.settings.path), ui.Settings{})
	if err != nil || reloaded.get().Policy != ui.PolicyOff {
		t.Fatalf("saved policy = %v, %v", reloaded.get().Policy, err)
	}
}

func TestStartAtLoginWritesAutostartEntry(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	b := newTestBackend(t)
	b.autostartArgs = []string{"--config", "/some/dir"}
	s := b.Settings()
	s.StartAtLogin = true
	if err := b.SaveSettings(s); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(xdg, "autostart", "ferry.desktop"))
	if err != nil {
		t.Fatal(err)
	}
	// "Start minimised" is unchecked: the login item opens the window
	// (issue 26, finding 11).
	if want := " --config /some/dir\n"; !contains(string(data), want) || contains(string(data), "--minimized") {
		t.Errorf("autostart entry without Start minimised: want %q and no --minimized:\n%s", want, data)
	}
	s.StartMinimized = true
	if err := b.SaveSettings(s); err != nil {
		t.Fatal(err)
	}
	if data, _ = os.ReadFile(filepath.Join(xdg, "autostart", "ferry.desktop")); !contains(string(data), " --minimized --config /some/dir\n") {
		t.Errorf("autostart entry with Start minimised lacks --minimized:\n%s", data)
	}
	s.StartAtLogin = false
	if err := b.SaveSettings(s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(xdg, "autostart", "ferry.desktop")); !os.IsNotExist(err) {
		t.Errorf("autostart entry still there: %v", err)
	}
}

func TestSendWithoutAddressFailsAtOnce(t *testing.T) {
	b := newTestBackend(t)
	if err := b.Send(ui.Device{Name: "x"}, ui.Items{Paths: []string{"/tmp"}}); err == nil {
		t.Fatal("Send to a device without address succeeded")
	}
}

func TestSendFailureBecomesFailedRow(t *testing.T) {
	b := newTestBackend(t)
	got := make(chan ui.TransferEvent, 1)
	b.synthetic = func(ev ui.TransferEvent) { got <- ev }
	missing := filepath.Join(t.TempDir(), "does-not-exist")
	if err := b.Send(ui.Device{Name: "Peer", Addrs: []addr.Addr{addr.New(addr.QUIC, "127.0.0.1:9")}}, ui.Items{Paths: []string{missing}}); err != nil {
		t.Fatal(err)
	}
	ev := <-got
	if ev.Kind != ui.TransferResult || ev.Result.State != ui.StateFailed || ev.Peer.Name != "Peer" || ev.Result.Err == "" {
		t.Fatalf("event = %+v result %+v", ev, ev.Result)
	}
	// Not the link's fault: the row said the device could not be reached.
	if !ev.Result.NotStarted {
		t.Errorf("a send that could not start is not NotStarted: %+v", ev.Result)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestAddDeviceVerifiesTheID(t *testing.T) {
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
	dev, err := b.AddDevice(context.Background(), q, "")
	if err != nil {
		t.Fatal(err)
	}
	if dev.ID != recv.ID() || dev.Name != "Receiver" || dev.Unverified || len(dev.Addrs) == 0 {
		t.Errorf("device = %+v, want the receiver's proven ID %s", dev, recv.ID())
	}
	// Remembered at that address: discovery looks for it there after a
	// restart, though nothing was sent to it.
	if rs := remembered(b.eng)(); len(rs) != 1 || rs[0].ID != recv.ID() || !slices.Equal(rs[0].Addrs, []string{q}) {
		t.Errorf("remembered %+v, want the receiver at %s", rs, q)
	}
	if err := b.eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddDevice(context.Background(), listening(b.eng, addr.QUIC), ""); err == nil || !strings.Contains(err.Error(), "this device's own address") {
		t.Errorf("this device's own address: %v", err)
	}
	// Nobody answers on a closed port: no row for a bare address.
	ln, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.LocalAddr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if d, err := b.AddDevice(ctx, dead, ""); err == nil {
		t.Errorf("AddDevice(%s) with nobody there = %+v", dead, d)
	}
}

// A name that does not exist is said as such, not as a device that did
// not answer.
func TestUnknownHostProblem(t *testing.T) {
	nx := fmt.Errorf("add: %w", &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "desk.lan", IsNotFound: true}})
	if p := unknownHostProblem(nx); p == nil || p.Text != "There is no host named desk.lan. Check the name, or enter the address that My address shows on the other device." {
		t.Errorf("got %+v", p)
	}
	for _, err := range []error{nil, errors.New("refused"), &net.DNSError{Err: "i/o timeout", Name: "desk.lan", IsTimeout: true}} {
		if p := unknownHostProblem(err); p != nil {
			t.Errorf("%v: %+v", err, p)
		}
	}
}

func TestAddDeviceChecksTheAddress(t *testing.T) {
	b := newTestBackend(t)
	for _, bad := range []string{"", "10.0.0.1", "host:", "::1"} {
		if _, err := b.AddDevice(context.Background(), bad, ""); err == nil {
			t.Errorf("AddDevice(%q) accepted", bad)
		}
	}
}

// TestRetryThroughBackend sends to a real receiving engine on loopback that
// declines, retries through the backend, and checks that a new transfer to
// the same device appears in the UI's event stream, named after it.
func TestRetryThroughBackend(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	b := newTestBackend(t)
	// Declining would mute this sender for a while (issue #14); the test
	// retries at once, as a user who changed their mind would.
	recv, err := engine.New(engine.Options{ConfigDir: t.TempDir(), Name: "Receiver", DownloadDir: t.TempDir(),
		Listen: "127.0.0.1:0", Accept: engine.AcceptAsk, MuteDeclined: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { recv.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := recv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	offers, stop := recv.Subscribe(64)
	t.Cleanup(stop)
	out := make(chan ui.TransferEvent, 256)
	goPump(t, ctx, b, out, make(chan ui.DeviceEvent, 16))

	file := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(file, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	dev := ui.Device{ID: recv.ID(), Name: "Receiver", Addrs: recv.Addrs()}
	if err := b.Send(dev, ui.Items{Paths: []string{file}}); err != nil {
		t.Fatal(err)
	}
	decide := func(accept bool) {
		t.Helper()
		for ev := range offers {
			if ev.Kind == engine.EventOffer {
				if err := recv.Decide(ev.TransferID, engine.Decision{Accept: accept}); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
	}
	result := func() ui.TransferEvent {
		t.Helper()
		for ev := range out {
			if ev.Kind == ui.TransferResult {
				return ev
			}
		}
		panic("unreachable")
	}
	decide(false)
	first := result()
	if first.Result.State != ui.StateDeclined {
		t.Fatalf("first attempt: %+v", first.Result)
	}

	if err := b.Pause(first.ID); err == nil {
		t.Error("Pause of a finished transfer succeeded")
	}
	if err := b.Retry("no-such-transfer"); err == nil {
		t.Error("Retry of an unknown transfer succeeded")
	}
	// The user's Retry and the rejoin's (the device seen again) at once:
	// one of them runs it, the other adds no row of its own.
	var mu sync.Mutex
	var rows []ui.TransferEvent
	b.synthetic = func(ev ui.TransferEvent) { mu.Lock(); rows = append(rows, ev); mu.Unlock() }
	for range 2 {
		if err := b.Retry(first.ID); err != nil {
			t.Fatal(err)
		}
	}
	b.starting.Wait()
	mu.Lock()
	for _, ev := range rows {
		t.Errorf("a second Retry of a running send made a row %s: %+v", ev.ID, ev.Result)
	}
	mu.Unlock()
	decide(true)
	second := result()
	if second.ID != first.ID || second.Result.State != ui.StateDone || second.Peer.Name != "Receiver" || second.Peer.ID != recv.ID() {
		t.Fatalf("retry: id %s (want the same transfer, %s), result %+v, peer %+v", second.ID, first.ID, second.Result, second.Peer)
	}
	if ps := b.Partials(); len(ps) != 0 {
		t.Errorf("sender holds partials: %+v", ps)
	}
}

// TestResumeAfterReceiverMoved: a send the receiver declined is resumed
// from its row after the receiver restarted on another port; the backend's
// send follows the device by ID, so Resume finds it where discovery sees
// it now instead of dialling the old port.
func TestResumeAfterReceiverMoved(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	b := newTestBackend(t)
	rcvDir := t.TempDir()
	start := func(accept engine.AcceptPolicy) *engine.Engine {
		t.Helper()
		return startedEngine(t, engine.Options{ConfigDir: rcvDir, Name: "Receiver", DownloadDir: t.TempDir(), Listen: "127.0.0.1:0", Accept: accept})
	}
	recv := start(engine.AcceptTrusted) // refuses the unknown sender
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out := make(chan ui.TransferEvent, 256)
	goPump(t, ctx, b, out, make(chan ui.DeviceEvent, 16))
	result := func() ui.TransferEvent {
		t.Helper()
		for ev := range out {
			if ev.Kind == ui.TransferResult {
				return ev
			}
		}
		panic("unreachable")
	}
	file := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(file, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	q := listening(recv, addr.QUIC)
	if err := b.Send(ui.Device{ID: recv.ID(), Name: "Receiver", Addrs: recv.Addrs()}, ui.Items{Paths: []string{file}}); err != nil {
		t.Fatal(err)
	}
	first := result()
	if first.Result.State == ui.StateDone {
		t.Fatalf("first attempt: %+v", first.Result)
	}
	recv.Close()
	moved := start(engine.AcceptAll) // same device, another port
	mq := listening(moved, addr.QUIC)
	if mq == q {
		t.Fatalf("the receiver came back on the same address %s", q)
	}
	if _, err := b.disc.AddManual(ctx, mq); err != nil { // discovery sees it there now
		t.Fatal(err)
	}
	if err := b.Retry(first.ID); err != nil {
		t.Fatal(err)
	}
	if second := result(); second.Result.State != ui.StateDone {
		t.Fatalf("Resume after the receiver moved: %+v", second.Result)
	}
}

// listening is where e listens for kind ("host:port"), "" when it does not.
// startedEngine is another device's engine, started, closed at the end.
func startedEngine(t testing.TB, o engine.Options) *engine.Engine {
	t.Helper()
	e, err := engine.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

func listening(e *engine.Engine, kind addr.Kind) string {
	a, _ := addr.First(e.Addrs(), kind)
	return a.HostPort()
}

// A download folder that cannot be used is refused in words the settings
// message shows (the reason, and where files still go), and not saved.
func TestBadDownloadFolderIsSaidInWords(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	b := newTestBackend(t)
	old := b.Settings().DownloadDir
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := b.Settings()
	s.DownloadDir = file
	err := b.SaveSettings(s)
	var p *ui.Problem
	if !errors.As(err, &p) || p.Text != "The folder "+file+" cannot be used for received files: it is a file. Files still go to "+old+"." {
		t.Fatalf("SaveSettings: %v (%#v)", err, p)
	}
	if got := b.Settings().DownloadDir; got != old {
		t.Errorf("download folder now %q, want %q", got, old)
	}
}

// A download folder typed as in a shell ("~/Pictures") or relative is in
// the home folder, and saved as the absolute path, which the form and the
// offer prompt then show. "~/Pictures" used to make a folder named "~" in
// the app's working folder, files went there, and the prompt said "Save to
// ~/Pictures".
func TestTypedDownloadFolderIsInHome(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	home, work := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Chdir(work)
	b := newTestBackend(t)
	for _, c := range []struct{ typed, want string }{
		{"~/Pictures", filepath.Join(home, "Pictures")},
		{" Music/From Ferry ", filepath.Join(home, "Music", "From Ferry")},
		{"~", home},
		{"/srv/../" + work + "/abs", filepath.Join(work, "abs")},
	} {
		s := b.Settings()
		s.DownloadDir = c.typed
		if err := b.SaveSettings(s); err != nil {
			t.Fatalf("%q: %v", c.typed, err)
		}
		if got := b.Settings().DownloadDir; got != c.want {
			t.Errorf("%q saved as %q, want %q", c.typed, got, c.want)
		}
		if fi, err := os.Stat(c.want); err != nil || !fi.IsDir() {
			t.Errorf("%q: %s is no folder: %v", c.typed, c.want, err)
		}
	}
	if left, _ := os.ReadDir(work); len(left) != 1 || left[0].Name() != "abs" {
		t.Errorf("the working folder holds %v, want only abs", left)
	}
}

// A device name other devices would refuse (over 255 bytes: every send
// then failed in the hello) is refused where it is typed, in words, and
// the name stays; an empty one too (it was dropped silently). A name saved
// before names were checked does not keep the app from starting.
func TestDeviceNameOthersRefuseIsSaidInWords(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	b := newTestBackend(t)
	for _, c := range []struct{ name, want string }{
		{strings.Repeat("ä", 150), "The device name is 300 bytes long; other devices take at most 255"},
		{"  ", `The device name is empty: other devices show it. It stays "test".`},
		{"Anna\u202eBob", "The device name holds an invisible character (U+202E)"},
	} {
		s := b.Settings()
		s.DeviceName = c.name
		err := b.SaveSettings(s)
		var p *ui.Problem
		if !errors.As(err, &p) || !strings.HasPrefix(p.Text, c.want) {
			t.Errorf("%q: %v", c.name, err)
		}
		if b.Settings().DeviceName != "test" || b.eng.Name() != "test" {
			t.Errorf("%q: name now %q, engine %q", c.name, b.Settings().DeviceName, b.eng.Name())
		}
	}

	dir := t.TempDir()
	st, err := openSettings(dir, ui.Settings{DeviceName: strings.Repeat("ä", 150), DownloadDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	eng, s, _, err := startEngine(dir, st, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("start with a saved name of 300 bytes: %v", err)
	}
	defer eng.Close()
	if engine.CheckName(eng.Name()) != nil || s.DeviceName != eng.Name() {
		t.Errorf("started as %q, settings %q", eng.Name(), s.DeviceName)
	}
}
