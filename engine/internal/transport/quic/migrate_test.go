package quic

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/transporttest"
)

// fakeNetwork is a transport.Network a test changes by hand.
type fakeNetwork struct {
	mu      sync.Mutex
	addrs   []netip.Addr
	changed chan struct{}
}

func newFakeNetwork(addrs ...string) *fakeNetwork {
	n := &fakeNetwork{changed: make(chan struct{})}
	for _, a := range addrs {
		n.addrs = append(n.addrs, netip.MustParseAddr(a))
	}
	return n
}

func (n *fakeNetwork) Changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.changed
}

func (n *fakeNetwork) Addrs() []netip.Addr {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.addrs)
}

// set replaces the addresses and tells the watchers.
func (n *fakeNetwork) set(addrs ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.addrs = nil
	for _, a := range addrs {
		n.addrs = append(n.addrs, netip.MustParseAddr(a))
	}
	close(n.changed)
	n.changed = make(chan struct{})
}

// flow keeps writing on a stream of c that s reads, until the test ends;
// received counts what arrived.
type flow struct {
	received atomic.Int64
	err      chan error
}

func startFlow(t *testing.T, c, s *Session) *flow {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	f := &flow{err: make(chan error, 2)}
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	st, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	context.AfterFunc(ctx, st.Abort)
	wg.Go(func() {
		buf := make([]byte, 64<<10)
		for ctx.Err() == nil {
			if _, err := st.Write(buf); err != nil {
				if ctx.Err() == nil {
					f.err <- err
				}
				return
			}
		}
		st.Abort()
	})
	rs, err := s.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	context.AfterFunc(ctx, rs.Abort)
	wg.Go(func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := rs.Read(buf)
			f.received.Add(int64(n))
			if err != nil {
				if ctx.Err() == nil && err != io.EOF {
					f.err <- err
				}
				return
			}
		}
	})
	return f
}

// moreThan waits until the flow has carried more than n bytes, failing the
// test if the flow breaks first or nothing moves for 20 s.
func (f *flow) moreThan(t *testing.T, n int64) {
	t.Helper()
	last, lastAt := f.received.Load(), time.Now()
	for f.received.Load() <= n {
		select {
		case err := <-f.err:
			t.Fatalf("the flow broke after %d bytes: %v", f.received.Load(), err)
		case <-time.After(10 * time.Millisecond):
		}
		if now := f.received.Load(); now != last {
			last, lastAt = now, time.Now()
		} else if time.Since(lastAt) > 20*time.Second {
			t.Fatalf("the flow stopped at %d bytes", now)
		}
	}
}

// nextChange waits for a session's next path change.
func nextChange(t *testing.T, s *Session, f *flow) transport.PathChange {
	t.Helper()
	select {
	case c := <-s.PathChanges():
		t.Logf("path change: %+v", c)
		return c
	case err := <-f.err:
		t.Fatalf("the flow broke before the path changed: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no path change reported")
	}
	panic("unreachable")
}

// relayedPair dials a session through a NAT relay in front of a listener.
func relayedPair(t *testing.T, nw transport.Network) (c, s *Session, relay *transporttest.NATRelay) {
	t.Helper()
	ln := newListener(t, transport.Config{})
	relay = transporttest.NewNATRelay(t, ln.Addr().String())
	ctx := t.Context()
	cfg := transport.Config{QUICConns: 1}
	c, err := DialNetwork(ctx, relay.Addr(), newTestIdentity(t).TLSConfig(false, nil), cfg, nw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(nil) })
	first, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first.Write([]byte{0})
	sc, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close(nil) })
	if _, err := sc.AcceptStream(ctx); err != nil { // the first stream, header read
		t.Fatal(err)
	}
	return c, sc.(*Session), relay
}

// NAT rebinding: the client's source port changes under the connection;
// the listener validates the new address and follows it, the stream goes
// on, and the listener's session reports the peer's move.
func TestNATRebindingFollowed(t *testing.T) {
	c, s, relay := relayedPair(t, nil)
	f := startFlow(t, c, s)
	f.moreThan(t, 4<<20)
	if err := relay.Rebind(); err != nil {
		t.Fatal(err)
	}
	ch := nextChange(t, s, f)
	if ch.Local || ch.From == ch.To || ch.Reason != reasonPeerMoved {
		t.Errorf("listener reported %+v, want the peer's move", ch)
	}
	at := f.received.Load()
	f.moreThan(t, at+4<<20)
}

// A path that goes silent with its address still there (a Wi-Fi link up
// but dead): the dialler probes a path from its other address, switches,
// and the stream goes on.
func TestLeavesSilentPath(t *testing.T) {
	nw := newFakeNetwork("127.0.0.1", "127.0.0.2")
	c, s, relay := relayedPair(t, nw)
	f := startFlow(t, c, s)
	f.moreThan(t, 4<<20)
	select {
	case <-c.mig.standbyUp: // the path from 127.0.0.2 answered its probe
	case <-time.After(20 * time.Second):
		t.Fatal("the standby path never answered")
	}

	relay.Cut(netip.MustParseAddr("127.0.0.1"), true)
	ch := nextChange(t, c, f)
	if !ch.Local || ch.From != "127.0.0.1" || ch.To != "127.0.0.2" || ch.Reason != reasonSilent || ch.Probe <= 0 {
		t.Errorf("dialler reported %+v, want 127.0.0.1 -> 127.0.0.2 after a silence, probed", ch)
	}
	if got := c.LocalAddr(); got != "127.0.0.2" {
		t.Errorf("LocalAddr = %s after the move", got)
	}
	at := f.received.Load()
	f.moreThan(t, at+4<<20)

	if m := c.Metrics(); m.DatagramsSent == 0 || m.SendCalls == 0 {
		t.Errorf("metrics lost the migrated sockets' counts: %+v", m)
	}
}

// A peer that vanished without a word (killed) while its host still
// answers: the dialler notices the closed port once the path falls silent
// and ends the connection itself, long before the idle timeout.
func TestPeerGoneEndsConnection(t *testing.T) {
	c, s, relay := relayedPair(t, newFakeNetwork("127.0.0.1"))
	f := startFlow(t, c, s)
	f.moreThan(t, 1<<20)
	relay.Close()
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the connection outlived its peer")
	}
	var ae *quic.ApplicationError
	cause := context.Cause(c.primary.c.Context())
	if !errors.As(cause, &ae) || ae.Remote || ae.ErrorCode != 0 {
		t.Errorf("the connection ended with %v, want our own close for the closed port", cause)
	}
	// What its streams' errors say, and the user reads: why, not quic-go's
	// "Application error 0x0 (local): " before it.
	if err := c.primary.err(cause); !errors.Is(err, errPeerGone) {
		t.Errorf("its streams end with %q, want %q", err, errPeerGone)
	}
}

// An address that is listed but cannot be used any more (removed while the
// migrator looked at it) gives no standby, and its disappearance later
// harms nothing.
func TestStandbyOnVanishedAddress(t *testing.T) {
	nw := newFakeNetwork("127.0.0.1", "192.0.2.1") // 192.0.2.1: listed, but no socket binds to it here
	c, s, _ := relayedPair(t, nw)
	f := startFlow(t, c, s)
	f.moreThan(t, 4<<20)
	nw.set("127.0.0.1")
	at := f.received.Load()
	f.moreThan(t, at+4<<20)
	nw.set("127.0.0.1", "192.0.2.1")
	nw.set("127.0.0.1")
	f.moreThan(t, f.received.Load()+4<<20)
}

// The address in use goes away and no other path reaches the peer (leaving
// the LAN): the session says its path is lost, so the sender reconnects
// another way, instead of running on until the idle timeout ends it.
func TestAddressGoneWithoutPathIsLost(t *testing.T) {
	nw := newFakeNetwork("127.0.0.1")
	c, s, relay := relayedPair(t, nw)
	f := startFlow(t, c, s)
	f.moreThan(t, 1<<20)
	select {
	case <-c.PathLost():
		t.Fatal("path lost while it works")
	default:
	}
	relay.Cut(netip.MustParseAddr("127.0.0.1"), true)
	nw.set()
	select {
	case <-c.PathLost():
	case <-c.Done():
		t.Fatal("the connection ended by itself (idle timeout) before its path was declared lost")
	case <-time.After(30 * time.Second):
		t.Fatal("the path was never declared lost")
	}
}

// The address in use goes away while another one reaches the peer: the
// connection moves there and goes on, and its path is not declared lost.
func TestAddressGoneMigrates(t *testing.T) {
	nw := newFakeNetwork("127.0.0.1", "127.0.0.2")
	c, s, relay := relayedPair(t, nw)
	f := startFlow(t, c, s)
	f.moreThan(t, 4<<20)
	select {
	case <-c.mig.standbyUp:
	case <-time.After(20 * time.Second):
		t.Fatal("the standby path never answered")
	}
	relay.Cut(netip.MustParseAddr("127.0.0.1"), true)
	nw.set("127.0.0.2")
	ch := nextChange(t, c, f)
	if !ch.Local || ch.From != "127.0.0.1" || ch.To != "127.0.0.2" {
		t.Errorf("dialler reported %+v, want 127.0.0.1 -> 127.0.0.2", ch)
	}
	at := f.received.Load()
	f.moreThan(t, at+4<<20)
	// Well past the grace: the path that works is not declared lost.
	time.Sleep(2 * lostGrace)
	f.moreThan(t, f.received.Load()+1<<20)
	select {
	case <-c.PathLost():
		t.Error("the path was declared lost though the connection moved to one that works")
	default:
	}
}

// sharedPair is relayedPair for a session dialled from a shared socket
// bound to 127.0.0.1 (the socket ICE checked a path on, beyond the LAN).
func sharedPair(t *testing.T, follow SharedDial) (c, s *Session, relay *transporttest.NATRelay) {
	t.Helper()
	ln := newListener(t, transport.Config{})
	relay = transporttest.NewNATRelay(t, ln.Addr().String())
	sock, err := ListenShared("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sock.Close)
	ctx := t.Context()
	c, err = sock.Dial(ctx, relay.Addr(), newTestIdentity(t).TLSConfig(false, nil), transport.Config{}, follow)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(nil) })
	first, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first.Write([]byte{0})
	sc, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close(nil) })
	if _, err := sc.AcceptStream(ctx); err != nil {
		t.Fatal(err)
	}
	return c, sc.(*Session), relay
}

// A session from a shared socket, which is bound to one address: when
// that address goes away and the peer falls silent, the path is declared
// lost, as for a session from an unbound socket, not left to the idle
// timeout (in the NAT lab, a sender whose address changed mid-transfer
// through the relay stalled 10 s, then 1.5 s more).
func TestSharedSocketAddressGoneIsLost(t *testing.T) {
	nw := newFakeNetwork("127.0.0.1")
	c, s, relay := sharedPair(t, SharedDial{Network: nw})
	f := startFlow(t, c, s)
	f.moreThan(t, 1<<20)
	select {
	case <-c.PathLost():
		t.Fatal("path lost while it works")
	default:
	}
	relay.Cut(netip.MustParseAddr("127.0.0.1"), true)
	nw.set()
	select {
	case <-c.PathLost():
	case <-c.Done():
		t.Fatal("the connection ended by itself (idle timeout) before its path was declared lost")
	case <-time.After(30 * time.Second):
		t.Fatal("the path was never declared lost")
	}
}

// A session from a shared socket whose remote is a relay's port (the
// peer's TURN allocation): when the path falls silent and that port turns
// out closed, the connection ends saying what SharedDial.PortClosed says
// (the relay stopped), not that the other device did.
func TestSharedSocketRemotePortClosedSaysWhose(t *testing.T) {
	relayGone := errors.New("the relay stopped")
	c, s, relay := sharedPair(t, SharedDial{Network: newFakeNetwork("127.0.0.1"), PortClosed: relayGone})
	f := startFlow(t, c, s)
	f.moreThan(t, 1<<20)
	relay.Close()
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the connection outlived the relay's port")
	}
	if err := c.primary.err(context.Cause(c.primary.c.Context())); !errors.Is(err, relayGone) {
		t.Errorf("its streams end with %q, want %q", err, relayGone)
	}
}

// A session from a shared socket whose path falls silent while its
// remote's port stays open (a receiver killed beyond the LAN: the port is
// its TURN allocation, which the relay keeps) asks SharedDial.PeerGone
// too, and ends with its word that the peer is gone for good (it
// restarted) before the idle timeout; asked while the path works, it
// ends nothing.
func TestSharedSocketPeerGoneEndsTheSilence(t *testing.T) {
	restarted := errors.New("the other device restarted")
	var asked atomic.Int32
	var cut atomic.Bool
	c, s, relay := sharedPair(t, SharedDial{Network: newFakeNetwork("127.0.0.1"), PeerGone: func(context.Context) error {
		asked.Add(1)
		if cut.Load() {
			return restarted
		}
		return nil
	}})
	f := startFlow(t, c, s)
	f.moreThan(t, 1<<20)
	cut.Store(true)
	relay.Cut(netip.MustParseAddr("127.0.0.1"), true)
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the connection outlived the peer's restart")
	}
	if err := c.primary.err(context.Cause(c.primary.c.Context())); !errors.Is(err, restarted) {
		t.Errorf("its streams end with %q, want %q", err, restarted)
	}
	var idle *quic.IdleTimeoutError
	if err := context.Cause(c.primary.c.Context()); errors.As(err, &idle) {
		t.Errorf("it ended at the idle timeout (%v), not when PeerGone said so (asked %d times)", err, asked.Load())
	}
}

// A session from a shared socket stays one connection even on a clean
// local path: an extra connection would come from another socket, which
// the peer's NAT (or the relay's TURN permission) does not let in, and the
// data stream placed on it waited for its join to time out: every send
// beyond the LAN took 2 s more than its bytes did (NAT lab: a 3-byte file
// 2.0 s from offer to verified, direct or relayed).
func TestSharedSocketSessionIsOneConnection(t *testing.T) {
	ln := newListener(t, transport.Config{})
	sock, err := ListenShared("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sock.Close)
	// CleanRTT of a second: loopback counts as a clean local path even
	// under the race detector.
	c, err := sock.Dial(t.Context(), ln.Addr().String(), newTestIdentity(t).TLSConfig(false, nil), transport.Config{CleanRTT: time.Second}, SharedDial{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(nil) })
	first, err := c.OpenStream(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	first.Write([]byte{0})
	sc, err := ln.Accept(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close(nil) })
	s := sc.(*Session)
	pushStreams(t, c, s, 3, 64<<10)
	c.mu.Lock()
	slots := len(c.slots)
	c.mu.Unlock()
	if m := c.Metrics(); slots != 1 || m.Connections != 1 {
		t.Errorf("the session tried %d connections and has %d, want 1", slots, m.Connections)
	}
}
