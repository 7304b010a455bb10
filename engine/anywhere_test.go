package engine

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/relay"
)

// pairEngines pairs a with recv (both confirm), as the users would on the LAN.
func pairEngines(t *testing.T, a, recv *Engine) {
	t.Helper()
	rxEvents, unsub := recv.Subscribe(256)
	defer unsub()
	txEvents, unsub2 := a.Subscribe(256)
	defer unsub2()
	tr, err := a.Pair(t.Context(), target(recv))
	if err != nil {
		t.Fatal(err)
	}
	if err := recv.ConfirmPair(firstEvent(t, rxEvents, EventPair).TransferID, true); err != nil {
		t.Fatal(err)
	}
	if err := a.ConfirmPair(firstEvent(t, txEvents, EventPair).TransferID, true); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	firstEvent(t, rxEvents, EventResult)
}

// TestSendFromAnywhere: two devices paired on the LAN; later the receiver
// serves through a relay and the sender reaches it by its rendezvous
// address alone (the NAT cases are ferry-cli's lab tests; here ICE offers
// loopback only). A device that is not paired learns nothing.
func TestSendFromAnywhere(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	relayAddr := r.Addr().String()
	recv := startReceiver(t, Options{Accept: AcceptTrusted, Name: "Desktop"})
	a := testEngine(t, Options{Name: "Laptop"})
	pairEngines(t, a, recv)
	recv.anywhereLoopback, a.anywhereLoopback = true, true

	id, err := a.PairedDevice("Desktop")
	if err != nil || id != recv.ID() {
		t.Fatalf("PairedDevice: %q, %v", id, err)
	}
	if err := a.FindAnywhere(t.Context(), relayAddr, id); !errors.Is(err, ErrDeviceNotFound) {
		t.Fatalf("before it serves: %v", err)
	}
	stop, err := recv.ServeAnywhere(relayAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := a.FindAnywhere(t.Context(), relayAddr, id); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "far.bin")
	data := writeFile(t, src, 2<<20)
	events, unsub := a.Subscribe(256)
	defer unsub()
	tr, err := a.Send(t.Context(), Target{ID: id, Addrs: []addr.Addr{addr.NewRendezvous(relayAddr)}}, []string{src}, SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := firstEvent(t, events, EventTransport)
	<-tr.Done()
	if res := tr.Result(); res.State != StateDone {
		t.Fatalf("send: %s %s", res.State, res.Err)
	}
	if !strings.HasPrefix(ev.Transport.Reason, "through the internet, direct") {
		t.Errorf("transport reason %q", ev.Transport.Reason)
	}
	if ev.Transport.Route != RouteInternet || ev.Transport.Relay != relayAddr {
		t.Errorf("route %q via %q, want %q via %q", ev.Transport.Route, ev.Transport.Relay, RouteInternet, relayAddr)
	}
	got, err := os.ReadFile(filepath.Join(recv.DownloadDir(), "far.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file did not arrive whole: %d bytes, %v", len(got), err)
	}

	stranger := testEngine(t, Options{})
	if _, err := stranger.PairedDevice("Desktop"); !errors.Is(err, ErrNotPaired) {
		t.Errorf("a stranger looks the device up: %v", err)
	}
	if err := stranger.FindAnywhere(t.Context(), relayAddr, id); !errors.Is(err, ErrNotPaired) {
		t.Errorf("a stranger calls it: %v", err)
	}
}
