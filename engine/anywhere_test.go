package engine

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/internal/anywhere"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/relay"
	"github.com/ferrydrop/ferry/internal/clock"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// pairEngines pairs a with recv (both confirm), as the users would on the LAN.
func pairEngines(t testing.TB, a, recv *Engine) {
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
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
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
	tx, rx := sendThroughRelay(t, a, recv, relayAddr, "far.bin", 2<<20)
	if !strings.HasPrefix(tx.Reason, "through the internet, direct") {
		t.Errorf("transport reason %q", tx.Reason)
	}
	if tx.Route != RouteInternet || tx.Relay != relayAddr {
		t.Errorf("route %q via %q, want %q via %q", tx.Route, tx.Relay, RouteInternet, relayAddr)
	}
	// The receiving side says the same way.
	if rx.Route != RouteInternet || rx.Relay != relayAddr || rx.Name != "quic" {
		t.Errorf("receiving side: %+v, want %q via %q", rx, RouteInternet, relayAddr)
	}

	stranger := testEngine(t, Options{})
	if _, err := stranger.PairedDevice("Desktop"); !errors.Is(err, ErrNotPaired) {
		t.Errorf("a stranger looks the device up: %v", err)
	}
	if err := stranger.FindAnywhere(t.Context(), relayAddr, id); !errors.Is(err, ErrNotPaired) {
		t.Errorf("a stranger calls it: %v", err)
	}
}

// receivedTransport is the receiving side's first transport event.
func receivedTransport(t *testing.T, events <-chan Event) *TransportInfo {
	t.Helper()
	for {
		ev := firstEvent(t, events, EventTransport)
		if ev.Direction == Receiving && ev.Transport != nil {
			if ev.Delivery == "" {
				t.Errorf("a transport event without its delivery: %+v", ev)
			}
			return ev.Transport
		}
	}
}

// TestSendFromAnywhereRelayedWithSecret: a relay with a secret, and ICE
// offering relay candidates only, so that the path goes through the
// relay's TURN (on loopback): both sides say "relayed" and the relay, the
// file arrives; a device with another secret, or none, hears that the
// relay refused its relay secret, naming the relay.
func TestSendFromAnywhereRelayedWithSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("ICE through TURN: a few seconds")
	}
	const secret = "the relay's own secret, 32 chars"
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	relayAddr := r.Addr().String()
	recv := startReceiver(t, Options{Accept: AcceptTrusted, Name: "Desktop"})
	a := testEngine(t, Options{Name: "Laptop"})
	pairEngines(t, a, recv)
	recv.anywhereLoopback, a.anywhereLoopback = true, true
	recv.anywhereRelayOnly, a.anywhereRelayOnly = true, true

	// The receiver without the secret, then with a wrong one.
	if _, err := recv.ServeAnywhere(relayAddr); !errors.Is(err, ErrRelaySecret) || !strings.Contains(err.Error(), relayAddr) || !strings.Contains(err.Error(), "relay secret") {
		t.Fatalf("serving without the secret: %v", err)
	}
	if err := recv.SetRelaySecret(relayAddr, "not the relay's secret, 32 chars"); err != nil {
		t.Fatal(err)
	}
	if _, err := recv.ServeAnywhere(relayAddr); !errors.Is(err, ErrRelaySecret) || !strings.Contains(err.Error(), relayAddr) || !strings.Contains(err.Error(), "relay secret") {
		t.Fatalf("serving with a wrong secret: %v", err)
	}
	if err := recv.SetRelaySecret(relayAddr, "short"); err == nil {
		t.Fatal("a short secret was taken")
	}
	if err := recv.SetRelaySecret(relayAddr, secret+"\n"); err != nil {
		t.Fatal(err)
	}
	stop, err := recv.ServeAnywhere(relayAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	id := recv.ID()
	if err := a.FindAnywhere(t.Context(), relayAddr, id); !errors.Is(err, ErrRelaySecret) || !strings.Contains(err.Error(), relayAddr) {
		t.Fatalf("a sender without the secret: %v", err)
	}
	if err := a.SetRelaySecret(relayAddr, secret); err != nil {
		t.Fatal(err)
	}
	if err := a.FindAnywhere(t.Context(), relayAddr, id); err != nil {
		t.Fatal(err)
	}

	tx, rx := sendThroughRelay(t, a, recv, relayAddr, "relayed.bin", 1<<20)
	if tx.Route != RouteRelayed || tx.Relay != relayAddr {
		t.Errorf("sending side: route %q via %q, want %q via %q", tx.Route, tx.Relay, RouteRelayed, relayAddr)
	}
	if rx.Route != RouteRelayed || rx.Relay != relayAddr {
		t.Errorf("receiving side: %+v, want %q via %q", rx, RouteRelayed, relayAddr)
	}
}

// TestCallEndsWithItsSession: once a session that came through a relay
// ends, the receiver ends the call it came by, and the relay has its TURN
// allocations back within seconds, on a direct path (ICE on the
// listener's own socket) and on a relayed one (a bridge); before, the
// receiver's stayed until ICE saw the sender gone (about 30 s), holding a
// place in the relay's bound on allocations per address for every call.
func TestCallEndsWithItsSession(t *testing.T) {
	if testing.Short() {
		t.Skip("ICE through a relay: a few seconds")
	}
	for _, relayOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "relayed"}[relayOnly], func(t *testing.T) {
			r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			relayAddr := r.Addr().String()
			recv := startReceiver(t, Options{Accept: AcceptTrusted, Name: "Desktop"})
			a := testEngine(t, Options{Name: "Laptop"})
			pairEngines(t, a, recv)
			recv.anywhereLoopback, a.anywhereLoopback = true, true
			recv.anywhereRelayOnly, a.anywhereRelayOnly = relayOnly, relayOnly
			stop, err := recv.ServeAnywhere(relayAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			for i := range 2 { // a second call after the first ended
				tx, _ := sendThroughRelay(t, a, recv, relayAddr, fmt.Sprint("far-", i, ".bin"), 1<<20)
				if (tx.Route == RouteRelayed) != relayOnly {
					t.Fatalf("route %q", tx.Route)
				}
				// The bound is for a loaded machine; pion takes 30 s.
				w0 := time.Now()
				testutil.WaitForWithin(t, "the call's TURN allocations given back", 10*time.Second, func() bool { return r.Allocations() == 0 })
				t.Logf("allocs back in %v", time.Since(w0))
			}
		})
	}
}

// sendThroughRelay sends a file of size bytes from a to recv by the
// rendezvous address of relay alone, checks it arrived whole, and returns
// the two sides' first transport events.
func sendThroughRelay(t *testing.T, a, recv *Engine, relay, name string, size int) (sent, received *TransportInfo) {
	t.Helper()
	src := filepath.Join(t.TempDir(), name)
	data := writeFile(t, src, size)
	events, unsub := a.Subscribe(256)
	defer unsub()
	rxEvents, unsubRx := recv.Subscribe(256)
	defer unsubRx()
	tr, err := a.Send(t.Context(), Target{ID: recv.ID(), Addrs: []addr.Addr{addr.NewRendezvous(relay)}}, []string{src}, SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := firstEvent(t, events, EventTransport)
	<-tr.Done()
	res := tr.Result()
	if res.State != StateDone {
		t.Fatalf("send: %s %s", res.State, res.Err)
	}
	// Its connecting (the call, ICE) is said apart from the files' time.
	if res.Connecting <= 0 || res.Connecting >= res.Duration {
		t.Errorf("connecting %.3fs of %.3fs", res.Connecting, res.Duration)
	}
	got, err := os.ReadFile(filepath.Join(recv.DownloadDir(), name))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file did not arrive whole: %d bytes, %v", len(got), err)
	}
	return ev.Transport, receivedTransport(t, rxEvents)
}

// TestClosedReceiverSaysSoThroughTheRelay: a receiver that closes while a
// session reaches it through the relay's TURN tells the sender so (QUIC's
// CONNECTION_CLOSE), as on the LAN: the sender's retry says "Ferry was
// closed there" at once. The bridge to the relayed path closed with the
// engine, before that word went through it, and the sender heard nothing
// until "the connection went silent for 10s".
func TestClosedReceiverSaysSoThroughTheRelay(t *testing.T) {
	if testing.Short() {
		t.Skip("ICE through TURN: a few seconds")
	}
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	relayAddr := r.Addr().String()
	recv := startReceiver(t, Options{Accept: AcceptAsk, Name: "Desktop"})
	a := testEngine(t, Options{Name: "Laptop"})
	pairEngines(t, a, recv)
	recv.anywhereLoopback, a.anywhereLoopback = true, true
	recv.anywhereRelayOnly, a.anywhereRelayOnly = true, true
	if _, err := recv.ServeAnywhere(relayAddr); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 1<<20)
	events, unsub := a.Subscribe(256)
	defer unsub()
	rxEvents, unsubRx := recv.Subscribe(256)
	defer unsubRx()
	tr, err := a.Send(t.Context(), Target{ID: recv.ID(), Addrs: []addr.Addr{addr.NewRendezvous(relayAddr)}}, []string{src}, SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Cancel(tr.ID())
	if tx := firstEvent(t, events, EventTransport).Transport; tx.Route != RouteRelayed {
		t.Fatalf("not relayed: %+v", tx)
	}
	firstEvent(t, rxEvents, EventOffer) // asked about: the session is up
	closed := time.Now()
	recv.Close()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.TransferID != tr.ID() || ev.Kind != EventState || ev.State != StateRetrying || ev.Result == nil {
				continue
			}
			if took := time.Since(closed); !strings.Contains(ev.Result.Err, "Ferry was closed there") || took > 5*time.Second {
				t.Fatalf("after %v the sender says %q", took.Round(time.Millisecond), ev.Result.Err)
			}
			return
		case <-timeout:
			t.Fatal("the sender never retried")
		}
	}
}

// A session reached through the relay on a direct path tells when its
// path went away with this device's address (transport.PathLoser), as a
// LAN session does, so that watchPath ends the attempt at once and the
// send calls again: in the NAT lab, a sender whose address changed
// mid-transfer heard nothing for QUIC's 10 s idle timeout, then waited
// the LAN's 1.5 s head start, a 12.6 s stall in all.
func TestAnywhereSessionCanLoseItsPath(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	relayAddr := r.Addr().String()
	recv := startReceiver(t, Options{Accept: AcceptTrusted, Name: "Desktop"})
	a := testEngine(t, Options{Name: "Laptop"})
	pairEngines(t, a, recv)
	recv.anywhereLoopback, a.anywhereLoopback = true, true
	stop, err := recv.ServeAnywhere(relayAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	d, err := a.dialAnywhere(t.Context(), relayAddr, recv.ident.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Conn.Close(nil)
	pl, ok := d.Conn.(transport.PathLoser)
	if !ok {
		t.Fatalf("a session from anywhere (%T) cannot tell that its path is lost", d.Conn)
	}
	if pl.PathLost() == nil {
		t.Fatal("a session from anywhere on a direct path follows no network: its path is never lost")
	}
}

// TestRelayGoneAndBackIsAnEvent: a device serving through a relay
// publishes EventListener for the relay once it could not be reached for
// the grace, naming it, and once it answers again (ferry-cli receive
// --anywhere prints them; it said nothing, the log alone knew).
func TestRelayGoneAndBackIsAnEvent(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	relayAddr := r.Addr().String()
	relayEvent := serveAnywhereWatched(t, relayAddr)
	r.Close()
	if st := relayEvent(); st.Addr != relayAddr || !strings.Contains(st.Err, relayAddr) {
		t.Errorf("the relay gone: %+v", st)
	}
	r, err = relay.Start(relay.Config{Listen: relayAddr, AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if st := relayEvent(); st.Addr != relayAddr || st.Err != "" {
		t.Errorf("the relay back: %+v", st)
	}
}

// TestRelayFailingLooksIsAnEvent: a relay (here a proxy before it that
// cuts held requests, as a web server's default timeouts can) that takes
// the presence but answers every look for calls with a failure is an
// EventListener in a sentence that says so: no call could reach the
// device, and nothing said it.
func TestRelayFailingLooksIsAnEvent(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pass := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: r.Addr().String()})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == anywhere.PathWait || req.URL.Path == anywhere.PathQueues {
			http.Error(w, "upstream timed out", http.StatusGatewayTimeout)
			return
		}
		pass.ServeHTTP(w, req)
	}))
	defer proxy.Close()
	relayAddr := proxy.Listener.Addr().String()
	st := serveAnywhereWatched(t, relayAddr)()
	want := "the relay " + relayAddr + " takes this device's presence but fails each of its looks for calls (it answered \"504 Gateway Timeout\"), so no call reaches this device through it"
	t.Logf("said: %s", st.Err)
	if !strings.HasPrefix(st.Err, want) {
		t.Errorf("said %q, want it to begin %q", st.Err, want)
	}
}

// serveAnywhereWatched starts a receiver, paired with a device (with none,
// nothing is asked of the relay), serving through relayAddr with a grace
// of 200 ms, and returns what waits for its next EventListener about the
// relay.
func serveAnywhereWatched(t *testing.T, relayAddr string) (relayEvent func() *ListenerStatus) {
	t.Helper()
	recv := startReceiver(t, Options{Accept: AcceptTrusted, Name: "Desktop"})
	pairEngines(t, testEngine(t, Options{Name: "Laptop"}), recv)
	recv.anywhereLoopback, recv.anywhereGrace = true, 200*time.Millisecond
	events, unsub := recv.Subscribe(64)
	t.Cleanup(unsub)
	stop, err := recv.ServeAnywhere(relayAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return func() *ListenerStatus {
		t.Helper()
		for {
			ev := firstEvent(t, events, EventListener)
			if ev.Listener.Transport == RelayListener {
				return ev.Listener
			}
		}
	}
}

// TestPairingWhileServingIsAnnouncedAtOnce: a device paired with a
// receiver already serving through a relay finds it there at once, and
// one forgotten there at once no more. The receiver put its presence for
// its paired devices every 30 s (presenceEvery) and no sooner, so a user
// who paired and sent at once heard "not receiving through relay" for up
// to 30 s. The receiver's clock is frozen: its period never passes, so
// only the pairing itself can put the presence.
func TestPairingWhileServingIsAnnouncedAtOnce(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	relayAddr := r.Addr().String()
	frozen := clock.NewFake(time.Now())
	recv := startReceiver(t, Options{Accept: AcceptTrusted, Name: "Desktop", Clock: frozen})
	recv.anywhereLoopback = true
	// A device paired before, so that the receiver has a presence to keep.
	pairEngines(t, testEngine(t, Options{Name: "Phone"}), recv)
	stop, err := recv.ServeAnywhere(relayAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	a := testEngine(t, Options{Name: "Laptop"})
	a.anywhereLoopback = true
	pairEngines(t, a, recv)
	testutil.WaitFor(t, "the receiver's presence for the device paired while it serves", func() bool {
		return a.FindAnywhere(t.Context(), relayAddr, recv.ID()) == nil
	})
	sendThroughRelay(t, a, recv, relayAddr, "paired-meanwhile.bin", 64<<10)

	if err := recv.Forget(a.ID()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the receiver's presence for a forgotten device taken back", func() bool {
		return errors.Is(a.FindAnywhere(t.Context(), relayAddr, recv.ID()), ErrDeviceNotFound)
	})
}

// Two processes of one device (the app and ferry-cli receive on one config
// folder: here two engines on it) do not both serve it from anywhere: the
// second is refused, in a sentence, while the first serves, where both
// served and replaced each other's presence at the relay, the one put last
// read by senders (and a restart in every change of it), and the first to
// stop took back the presence of the one still serving. Once the first
// stops, the second may serve.
func TestOneConfigServesFromAnywhereOnce(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	relayAddr := r.Addr().String()
	dir := t.TempDir()
	first := startReceiver(t, Options{ConfigDir: dir, Name: "Desktop"})
	second := startReceiver(t, Options{ConfigDir: dir, Name: "Desktop"})
	first.anywhereLoopback, second.anywhereLoopback = true, true
	stop, err := first.ServeAnywhere(relayAddr)
	if err != nil {
		t.Fatal(err)
	}
	if stop2, err := second.ServeAnywhere(relayAddr); !errors.Is(err, ErrServingElsewhere) || !strings.Contains(err.Error(), dir) {
		if err == nil {
			stop2()
		}
		t.Fatalf("a second process on the config folder: %v, want ErrServingElsewhere naming the folder", err)
	}
	// One engine may serve through two relays at once.
	r2, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	stopOther, err := first.ServeAnywhere(r2.Addr().String())
	if err != nil {
		t.Fatalf("the same engine through another relay: %v", err)
	}
	stopOther()
	if _, err := second.ServeAnywhere(relayAddr); !errors.Is(err, ErrServingElsewhere) {
		t.Fatalf("still serving through one relay, the first let go: %v", err)
	}
	stop()
	stop2, err := second.ServeAnywhere(relayAddr)
	if err != nil {
		t.Fatalf("once the first stopped: %v", err)
	}
	stop2()
}
