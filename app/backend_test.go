package app

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/ui"
)

// newTestBackend wires a real engine (listening on loopback only) with a
// discovery that never touches the network.
func newTestBackend(t *testing.T) *backend {
	t.Helper()
	dir := t.TempDir()
	eng, err := engine.New(engine.Options{ConfigDir: dir, Name: "test", DownloadDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	noIfaces := func() ([]net.Interface, error) { return nil, nil }
	disc, err := discovery.New(discovery.Options{SelfID: eng.ID(), Interfaces: noIfaces})
	if err != nil {
		t.Fatal(err)
	}
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
	b := &backend{ctx: ctx, eng: eng, disc: disc, settings: st, history: h, names: map[string]ui.Peer{},
		synthetic:     func(ui.TransferEvent) {},
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
	q, _ := b.eng.Addrs()
	if !b.eng.Receiving() || q == "" || b.adv == nil {
		t.Fatalf("policy everyone: receiving %v, quic %q, advertising %v", b.eng.Receiving(), q, b.adv != nil)
	}
	if got := b.adv.Service().QUICPort; got != port(q) {
		t.Errorf("advertised QUIC port %d, listening on %s", got, q)
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
	if _, tcp := b.eng.Addrs(); tcp != "" {
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
	if want := " --minimized --config /some/dir\n"; !contains(string(data), want) {
		t.Errorf("autostart entry lacks %q:\n%s", want, data)
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
	if err := b.Send(ui.Device{Name: "x"}, []string{"/tmp"}); err == nil {
		t.Fatal("Send to a device without address succeeded")
	}
}

func TestSendFailureBecomesFailedRow(t *testing.T) {
	b := newTestBackend(t)
	got := make(chan ui.TransferEvent, 1)
	b.synthetic = func(ev ui.TransferEvent) { got <- ev }
	missing := filepath.Join(t.TempDir(), "does-not-exist")
	if err := b.Send(ui.Device{Name: "Peer", QUICAddr: "127.0.0.1:9"}, []string{missing}); err != nil {
		t.Fatal(err)
	}
	ev := <-got
	if ev.Kind != ui.TransferResult || ev.Result.State != ui.StateFailed || ev.Peer.Name != "Peer" || ev.Result.Err == "" {
		t.Fatalf("event = %+v result %+v", ev, ev.Result)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestAddDeviceChecksTheAddress(t *testing.T) {
	b := newTestBackend(t)
	for _, bad := range []string{"", "10.0.0.1", "host:", "::1"} {
		if _, err := b.AddDevice(context.Background(), bad); err == nil {
			t.Errorf("AddDevice(%q) accepted", bad)
		}
	}
}
