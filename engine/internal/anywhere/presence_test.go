package anywhere_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/anywhere"
	"github.com/ferrydrop/ferry/engine/internal/rendezvous"
	"github.com/ferrydrop/ferry/engine/relay"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// A receiver that stops (Ctrl-C, the app's setting turned off) takes its
// presence back from the relay: a paired device that looks then hears at
// once that it is not receiving there. The relay kept the presence for two
// minutes, and a send in the meantime waited 10 s for an answer on every
// attempt of its two minutes of retries ("did not answer ... within 10s").
// Started again, it is found again.
func TestStoppedReceiverLeavesNoPresence(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 9
	serve := func() (stop func()) {
		started := make(chan struct{})
		srv := &anywhere.Server{
			Relay: r.Addr().String(), Self: b.ID, Loopback: true,
			Peers:    func() []anywhere.Peer { return []anywhere.Peer{{ID: a.ID, Secret: s}} },
			Listener: func() *net.UDPAddr { return nil },
			Started:  func() { close(started) },
		}
		ctx, cancel := context.WithCancel(t.Context())
		served := make(chan error, 1)
		go func() { served <- srv.Run(ctx) }()
		<-started
		return func() {
			cancel()
			if err := <-served; err != nil {
				t.Fatal(err)
			}
		}
	}
	look := func() error {
		return anywhere.Lookup(t.Context(), anywhere.DialRequest{Relay: r.Addr().String(), Secret: s, Self: a.ID, Peer: b.ID})
	}
	stop := serve()
	if err := look(); err != nil {
		t.Fatalf("a receiver serving: %v", err)
	}
	stop()
	if err := look(); !errors.Is(err, anywhere.ErrNotFound) {
		t.Fatalf("a receiver that stopped: %v, want ErrNotFound", err)
	}
	stop = serve()
	defer stop()
	if err := look(); err != nil {
		t.Fatalf("the receiver started again: %v", err)
	}
}

// Two devices whose clocks differ by more than MaxSkew cannot call each
// other (a message sealed that far from now is refused: the replay
// window): the sender says so, with the difference, and that the clocks
// are to be set right, not that the device is "not receiving through
// relay" (it is; its user would start it again in vain).
func TestClocksApartAreSaid(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 11
	started := make(chan struct{})
	srv := &anywhere.Server{
		Relay: r.Addr().String(), Self: b.ID, Loopback: true,
		Peers:    func() []anywhere.Peer { return []anywhere.Peer{{ID: a.ID, Secret: s}} },
		Listener: func() *net.UDPAddr { return nil },
		Started:  func() { close(started) },
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()
	defer func() { cancel(); <-served }()
	<-started
	for _, off := range []time.Duration{7 * time.Minute, -7 * time.Minute} {
		err := anywhere.Lookup(t.Context(), anywhere.DialRequest{Relay: r.Addr().String(), Secret: s, Self: a.ID, Peer: b.ID,
			Now: func() time.Time { return time.Now().Add(off) }})
		if errors.Is(err, anywhere.ErrNotFound) || err == nil || !strings.Contains(err.Error(), "clock") || !strings.Contains(err.Error(), "7 minutes") {
			t.Errorf("this device's clock %v off: %v", off, err)
		}
		t.Logf("this device's clock %v off: %v", off, err)
	}
}

// A relay that restarts keeps nothing: the receiver puts its presence
// there again as soon as the relay answers again, not at its next
// presenceEvery (30 s), during which paired devices heard "it is not
// receiving through relay ..." (NAT lab: the relay killed mid-transfer
// and started again; the sender's next call, 13 s later, still found no
// presence). The receiver's clock stands still here, so only the relay's
// failure can bring the presence back.
func TestRestartedRelayGetsThePresenceAgain(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	addr := r.Addr().String()
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 13
	at := time.Now()
	frozen := func() time.Time { return at }
	started := make(chan struct{})
	srv := &anywhere.Server{
		Relay: addr, Self: b.ID, Loopback: true, Poll: 20 * time.Millisecond, Now: frozen,
		Peers:    func() []anywhere.Peer { return []anywhere.Peer{{ID: a.ID, Secret: s}} },
		Listener: func() *net.UDPAddr { return nil },
		Started:  func() { close(started) },
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()
	defer func() { cancel(); <-served }()
	<-started
	look := func() error {
		return anywhere.Lookup(t.Context(), anywhere.DialRequest{Relay: addr, Secret: s, Self: a.ID, Peer: b.ID, Now: frozen})
	}
	if err := look(); err != nil {
		t.Fatalf("a receiver serving: %v", err)
	}
	r.Close()
	time.Sleep(200 * time.Millisecond) // the receiver's requests fail meanwhile (Poll: 20 ms)
	r, err = relay.Start(relay.Config{Listen: addr, AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := look()
		if err == nil {
			return
		}
		if !errors.Is(err, anywhere.ErrNotFound) || time.Now().After(deadline) {
			t.Fatalf("after the relay restarted: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRelayGoneAndBackIsToldOnce: a receiver serving through a relay hears
// (Server.Reach) once that the relay cannot be reached, after the grace
// and not per failed request, and once that it can again; ferry-cli
// receive --anywhere printed nothing either way. It hears the relay back
// as soon as the relay answers (the presence put again), not once the
// relay ends its wait for calls, which it holds up to anywhere.WaitFor
// when none come (3 s later; the relay back here holds it for an hour).
func TestRelayGoneAndBackIsToldOnce(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	addr := r.Addr().String()
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 14
	type told struct {
		ok  bool
		err error
	}
	reach := make(chan told, 16)
	started := make(chan struct{})
	srv := &anywhere.Server{
		Relay: addr, Self: b.ID, Loopback: true, Poll: 20 * time.Millisecond, Grace: 300 * time.Millisecond,
		Peers:    func() []anywhere.Peer { return []anywhere.Peer{{ID: a.ID, Secret: s}} },
		Listener: func() *net.UDPAddr { return nil },
		Started:  func() { close(started) },
		Reach:    func(ok bool, err error) { reach <- told{ok, err} },
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()
	defer func() { cancel(); <-served }()
	<-started
	r.Close()
	select {
	case got := <-reach:
		if got.ok || got.err == nil {
			t.Fatalf("the relay gone: told %+v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("never told that the relay cannot be reached")
	}
	time.Sleep(300 * time.Millisecond) // more failed requests (Poll: 20 ms), said once
	r, err = relay.Start(relay.Config{Listen: addr, AllowLoopbackPeers: true, Limits: relay.Limits{Wait: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	testutil.WaitFor(t, "the receiver's wait for calls held by the relay back", func() bool { return r.Waiting() == 1 })
	select {
	case got := <-reach:
		if !got.ok {
			t.Fatalf("the relay back: told %+v (said again per failed request?)", got)
		}
	default:
		t.Fatal("not told that the relay answers again before its wait for calls ends")
	}
	select {
	case got := <-reach:
		t.Errorf("told again: %+v", got)
	case <-time.After(200 * time.Millisecond):
	}
}

// A relay (or a proxy before it) that takes the receiver's presence but
// fails every look for calls is said to be unreachable, as one that does
// not answer is: nobody's call reaches the device through it. The presence
// going up each round told it "answers" again, so it was never said.
func TestRelayFailingEveryLookIsToldUnreachable(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	relayURL := &url.URL{Scheme: "http", Host: r.Addr().String()}
	var looks atomic.Int32
	pass := httputil.NewSingleHostReverseProxy(relayURL)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == anywhere.PathWait || req.URL.Path == anywhere.PathQueues {
			looks.Add(1)
			http.Error(w, "upstream timed out", http.StatusGatewayTimeout)
			return
		}
		pass.ServeHTTP(w, req)
	}))
	defer proxy.Close()
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 15
	reach := make(chan error, 16)
	srv := &anywhere.Server{
		Relay: proxy.Listener.Addr().String(), Self: b.ID, Loopback: true, Poll: 20 * time.Millisecond, Grace: 300 * time.Millisecond,
		Peers:    func() []anywhere.Peer { return []anywhere.Peer{{ID: a.ID, Secret: s}} },
		Listener: func() *net.UDPAddr { return nil },
		Reach: func(ok bool, err error) {
			if !ok {
				reach <- err
			}
		},
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()
	defer func() { cancel(); <-served }()
	select {
	case err := <-reach:
		if !errors.Is(err, anywhere.ErrLooksFail) || !errors.Is(err, anywhere.ErrNotRelay) || !strings.Contains(err.Error(), "504") {
			t.Errorf("told %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("never told that the relay fails every look for calls (%d looks failed)", looks.Load())
	}
}

// A device paired while the receiver serves gets its presence within a
// round of the receiver's loop, and one forgotten is told the receiver
// left, even when nothing calls PeersChanged: another process of the same
// config folder (ferry-cli pair, ferry-cli devices --forget) changes the
// trust store under a running receiver. The receiver's clock stands
// still, so its presence period (30 s) never passes.
func TestPeersChangedElsewhereReachTheRelay(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, b, c := ident(t), ident(t), ident(t)
	var sa, sc rendezvous.Secret
	sa[0], sc[0] = 21, 22
	at := time.Now()
	var mu sync.Mutex
	peers := []anywhere.Peer{{ID: a.ID, Secret: sa}}
	started := make(chan struct{})
	srv := &anywhere.Server{
		Relay: r.Addr().String(), Self: b.ID, Loopback: true,
		Peers: func() []anywhere.Peer {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(peers)
		},
		Listener: func() *net.UDPAddr { return nil },
		Started:  func() { close(started) },
		Now:      func() time.Time { return at },
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()
	defer func() { cancel(); <-served }()
	<-started
	look := func() error {
		return anywhere.Lookup(t.Context(), anywhere.DialRequest{Relay: r.Addr().String(), Secret: sc, Self: c.ID, Peer: b.ID})
	}
	if err := look(); !errors.Is(err, anywhere.ErrNotFound) {
		t.Fatalf("before the pairing: %v, want ErrNotFound", err)
	}
	mu.Lock()
	peers = append(peers, anywhere.Peer{ID: c.ID, Secret: sc})
	mu.Unlock()
	testutil.WaitFor(t, "the presence for a device paired meanwhile", func() bool { return look() == nil })
	mu.Lock()
	peers = peers[:1]
	mu.Unlock()
	testutil.WaitFor(t, "the presence for a device forgotten meanwhile taken back", func() bool {
		return errors.Is(look(), anywhere.ErrNotFound)
	})
}

// A receiver killed and started again puts a presence of its new run,
// which replaces the one of the run before at the relay: a caller whose
// session to the run before fell silent reads there that the device
// restarted. The run that answered reads as itself, and a presence that
// names no run (a device from before runs were named) says nothing.
func TestRestartedReceiverIsSeenAtTheRelay(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 7
	// serve runs a receiver of run instance until the test ends, as a
	// killed one does not take its presence back.
	serve := func(instance string) {
		started := make(chan struct{})
		srv := &anywhere.Server{
			Relay: r.Addr().String(), Self: b.ID, Loopback: true, Instance: instance,
			Peers:    func() []anywhere.Peer { return []anywhere.Peer{{ID: a.ID, Secret: s}} },
			Listener: func() *net.UDPAddr { return nil },
			Started:  func() { close(started) },
		}
		ctx, cancel := context.WithCancel(t.Context())
		served := make(chan error, 1)
		go func() { served <- srv.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-served })
		<-started
	}
	req := anywhere.DialRequest{Relay: r.Addr().String(), Secret: s, Self: a.ID, Peer: b.ID}
	first, second := anywhere.NewInstance(), anywhere.NewInstance()
	serve(first)
	if anywhere.Restarted(t.Context(), req, first) {
		t.Error("the run that answered reads as restarted")
	}
	serve(second)
	if !anywhere.Restarted(t.Context(), req, first) {
		t.Error("a receiver started again does not read as restarted to a session with the run before")
	}
	if anywhere.Restarted(t.Context(), req, second) {
		t.Error("the new run reads as restarted to a session with itself")
	}
	serve("")
	if anywhere.Restarted(t.Context(), req, second) {
		t.Error("a presence that names no run reads as a restart")
	}
}
