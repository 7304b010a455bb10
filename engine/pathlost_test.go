package engine

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/relay"
)

// lostConn is a session whose path the test declares lost
// (transport.PathLoser); nothing else of it is used.
type lostConn struct {
	Conn
	lost chan struct{}
}

func (c lostConn) PathLost() <-chan struct{} { return c.lost }

// silentBeyondLAN is a target of a device not paired here, with a LAN
// address that never answers (a UDP port that takes QUIC's handshake in
// silence) and a rendezvous address where nothing listens: a call through
// the relay fails at once with ErrNotPaired.
func silentBeyondLAN(t *testing.T) (Target, identity.DeviceID) {
	t.Helper()
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	other, err := identity.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return Target{ID: other.ID.String(), Addrs: []addr.Addr{addr.New(addr.QUIC, silent.LocalAddr().String()), addr.NewRendezvous("127.0.0.1:9")}}, other.ID
}

// A session that lost its path (a QUIC connection whose address went away
// with nowhere to migrate) ends its attempt at once as errPathGone, and
// the transfer's next attempt is told so, once.
func TestPathLostEndsAttempt(t *testing.T) {
	e := testEngine(t, Options{})
	tr := &Transfer{id: "lost", dir: Sending, done: make(chan struct{}), started: time.Now()}
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	c := lostConn{lost: make(chan struct{})}
	defer e.watchPath(ctx, tr, c, stop)()
	close(c.lost)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the attempt did not end when its path was lost")
	}
	if err := context.Cause(ctx); !errors.Is(err, errPathGone) {
		t.Errorf("the attempt ended with %v, want errPathGone", err)
	}
	if !tr.takePathLost() {
		t.Error("the next attempt is not told the path was lost")
	}
	if tr.takePathLost() {
		t.Error("told twice")
	}
}

// After a lost path the relay is called at once beside the LAN address
// (which is the one that just failed), not after the LAN's head start.
// The LAN address here never answers, and the device is not paired, so a
// call through the relay fails at once with ErrNotPaired; within half the
// head start only that call can have ended the dial.
func TestPathLostCallsRelayAtOnce(t *testing.T) {
	e := testEngine(t, Options{})
	to, other := silentBeyondLAN(t)
	for _, lost := range []bool{false, true} {
		checkRelayCalled(t, e, to, other, lost, map[bool]string{false: "a path not lost", true: "after a lost path"}[lost], lost)
	}
}

// checkRelayCalled dials to (silentBeyondLAN) from e for half the LAN's
// head start and fails t unless the relay was called at once (its answer,
// not paired, ended the dial) exactly when atOnce says so.
func checkRelayCalled(t *testing.T, e *Engine, to Target, other identity.DeviceID, pathLost bool, name string, atOnce bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), anywhereHeadStart/2)
	_, err := e.dialTarget(ctx, to, other, "", pathLost, nil)
	cancel()
	switch {
	case atOnce && !errors.Is(err, ErrNotPaired):
		t.Errorf("%s: %v, want the relay's answer (not paired) before the head start ended", name, err)
	case !atOnce && errors.Is(err, ErrNotPaired):
		t.Errorf("%s: the relay was called before the LAN's head start ended: %v", name, err)
	}
}

// absence is a Resolver that sees no device, and says whether it knows
// them to be away (AbsenceReporter).
type absence struct{ away bool }

func (absence) ResolvePeer(context.Context, string) []addr.Addr { return nil }
func (a absence) Absent(string) bool                            { return a.away }

// A device the Resolver knows to be away from the LAN is called through
// the relay at once beside its LAN address (which still races), not after
// the LAN's head start; one it does not know to be away, or with a
// Resolver that cannot tell, keeps the head start. As in
// TestPathLostCallsRelayAtOnce, the LAN address never answers and the
// relay's answer (not paired) comes at once.
func TestAbsentDeviceCallsRelayAtOnce(t *testing.T) {
	to, other := silentBeyondLAN(t)
	for _, c := range []struct {
		name     string
		resolver Resolver
		atOnce   bool
	}{
		{"away", absence{away: true}, true},
		{"not known to be away", absence{away: false}, false},
		{"a Resolver that cannot tell", &fakeResolver{}, false},
		{"no Resolver", nil, false},
	} {
		checkRelayCalled(t, testEngine(t, Options{Resolver: c.resolver}), to, other, false, c.name, c.atOnce)
	}
}

// A device every address of which (the target's, and where it was last
// reached) is on a network this device is not on is called through the
// relay at once beside them, as one the Resolver knows to be away; one
// with an address here keeps the LAN's head start. The test's reaches
// stands for the interfaces: the silent LAN address is on loopback, which
// the real ones always reach.
func TestDeviceOnAnotherNetworkCallsRelayAtOnce(t *testing.T) {
	to, other := silentBeyondLAN(t)
	home := "192.168.77.20:47800" // where it was last reached
	loopback := func(ip netip.Addr) bool { return ip.IsLoopback() }
	for _, c := range []struct {
		name    string
		reaches func(netip.Addr) bool
		atOnce  bool
	}{
		{"every address on another network", func(netip.Addr) bool { return false }, true},
		{"every address here", func(netip.Addr) bool { return true }, false},
		{"the given one here, the remembered one elsewhere", loopback, false},
		{"the given one elsewhere, the remembered one here", func(ip netip.Addr) bool { return !ip.IsLoopback() }, false},
		{"the interfaces as they are", nil, false},
	} {
		e := testEngine(t, Options{})
		e.reaches = c.reaches
		if err := e.trust.Seen(other.Peer(), "Desktop", home); err != nil {
			t.Fatal(err)
		}
		if p, _ := e.trust.Get(other.Peer()); len(p.LastAddrs) != 1 {
			t.Fatalf("remembered addresses %q", p.LastAddrs)
		}
		checkRelayCalled(t, e, to, other, false, c.name, c.atOnce)
	}
}

// switchedAbsence is absence with a switch.
type switchedAbsence struct{ away atomic.Bool }

func (*switchedAbsence) ResolvePeer(context.Context, string) []addr.Addr { return nil }
func (a *switchedAbsence) Absent(string) bool                            { return a.away.Load() }

// BenchmarkStaleLANThenRelay sends a 1 KiB file to a paired device served
// through a relay on loopback, by a target whose LAN address is stale (a
// UDP port that never answers: the device's old network, away), with the
// Resolver knowing it is away or not: the time of a whole send, from
// Send to its result (the LAN's head start, then the call, ICE, QUIC, the
// hello, the offer and the file); and with the stale address on a network
// this device is not on (Engine.onAnotherNetwork). The relay's lab figures are
// docs/beyond-the-lan.md's.
//
//	go test -run '^$' -bench StaleLANThenRelay -benchtime 5x ./engine
func BenchmarkStaleLANThenRelay(b *testing.B) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	relayAddr := r.Addr().String()
	resolver := &switchedAbsence{}
	recv := startReceiver(b, Options{Accept: AcceptTrusted, Name: "Desktop"})
	a := testEngine(b, Options{Name: "Laptop", Resolver: resolver})
	pairEngines(b, a, recv)
	recv.anywhereLoopback, a.anywhereLoopback = true, true
	stop, err := recv.ServeAnywhere(relayAddr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { silent.Close() })
	src := filepath.Join(b.TempDir(), "note.txt")
	if err := os.WriteFile(src, make([]byte, 1024), 0o644); err != nil {
		b.Fatal(err)
	}
	to := Target{ID: recv.ID(), Addrs: []addr.Addr{addr.New(addr.QUIC, silent.LocalAddr().String()), addr.NewRendezvous(relayAddr)}}
	for _, name := range []string{"seen", "away", "another_network"} {
		b.Run(name, func(b *testing.B) {
			resolver.away.Store(name == "away")
			a.reaches = nil
			if name == "another_network" { // its stale address is not on this device's networks
				a.reaches = func(netip.Addr) bool { return false }
			}
			for b.Loop() {
				tr, err := a.Send(b.Context(), to, []string{src}, SendOptions{})
				if err != nil {
					b.Fatal(err)
				}
				<-tr.Done()
				if res := tr.Result(); res.State != StateDone {
					b.Fatalf("send: %s %s", res.State, res.Err)
				}
			}
		})
	}
}
