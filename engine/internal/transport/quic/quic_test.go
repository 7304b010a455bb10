package quic

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
	"github.com/ferrydrop/ferry/engine/internal/transport/transporttest"
)

func TestMain(m *testing.M) { transporttest.Main(m) }

var newTestIdentity = transporttest.Identity

// quicPush dials through addr and writes size bytes on one stream, which the
// listener's side reads to the end.
func quicPush(t *testing.T, ln *Listener, addr string, size int64) (client, server *Session) {
	t.Helper()
	ctx := t.Context()
	c, s, st := sessionPair(t, ln, addr, transport.Config{})
	done := make(chan error, 1)
	go func() {
		st, err := s.AcceptStream(ctx)
		if err == nil {
			_, err = io.Copy(io.Discard, st)
		}
		done <- err
	}()
	buf := make([]byte, 256<<10)
	for left := size; left > 0; left -= int64(len(buf)) {
		if _, err := st.Write(buf[:min(left, int64(len(buf)))]); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return c, s
}

func newListener(t *testing.T, cfg transport.Config) *Listener {
	t.Helper()
	ln, err := Listen("127.0.0.1:0", newTestIdentity(t).TLSConfig(true, nil), join.NewRegistry(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// The metrics the issue asks for come without a qlog tracer: RTTs, window,
// datagrams and bytes each way, send calls (GSO batches), the path MTU.
func TestMetricsOnLoopback(t *testing.T) {
	t.Parallel()
	ln := newListener(t, transport.Config{})
	const size = 32 << 20
	c, s := quicPush(t, ln, ln.Addr().String(), size)
	m := c.Metrics()
	if m.Transport != string(transport.QUIC) || m.SmoothedRTTms <= 0 || m.MinRTTms <= 0 || m.CongestionWindow <= 0 {
		t.Errorf("RTT/window missing: %+v", m)
	}
	if m.BytesSent < size || m.DatagramsSent < size/1500 || m.SendCalls == 0 || m.DatagramsRecv == 0 {
		t.Errorf("counts too small for %d bytes: %+v", size, m)
	}
	// quic-go starts at 1280-byte packets and probes upwards; loopback takes
	// the largest it tries (1452 in quic-go v0.65).
	if m.PathMTU < 1280 || m.PathMTU > 1500 {
		t.Errorf("path MTU %d", m.PathMTU)
	}
	if runtime.GOOS == "linux" && m.GSO && m.DatagramsPerCall() < 2 {
		t.Errorf("GSO on but %.1f datagrams per send call", m.DatagramsPerCall())
	}
	if m.CongestionEvents != 0 || m.PacketsLost != 0 {
		t.Logf("loopback lost packets: %+v", m) // possible with a full socket buffer; not an error
	}
	// The receiving side sends mostly ACKs; its MTU shows only if its own
	// probes went out twice at one size, and never as an ACK's size.
	sm := s.Metrics()
	if sm.BytesRecv < size || (sm.PathMTU != 0 && sm.PathMTU < 1200) {
		t.Errorf("receiver metrics: %+v", sm)
	}
	// With GRO a GSO batch arrives whole on loopback: far more datagrams per
	// receive call than recvmmsg's 8.
	if runtime.GOOS == "linux" && (!sm.GRO || sm.RecvDatagrams < size/1500 || sm.DatagramsPerRecvCall() <= 8) {
		t.Errorf("receiver: GRO %v, %d datagrams in %d receive calls", sm.GRO, sm.RecvDatagrams, sm.RecvCalls)
	}
}

// Loss on the way to the receiver shows as lost packets and congestion
// events on the sender, counted by the window watcher.
func TestCongestionEventsUnderLoss(t *testing.T) {
	t.Parallel()
	ln := newListener(t, transport.Config{})
	relay := transporttest.NewLossyRelay(t, ln.Addr().String(), 0.03)
	c, _ := quicPush(t, ln, relay.Addr(), 8<<20)
	m := c.Metrics()
	if m.PacketsLost == 0 || m.CongestionEvents == 0 {
		t.Errorf("3%% loss left no trace: %+v", m)
	}
	if m.CongestionEvents > m.PacketsLost {
		t.Errorf("more congestion events (%d) than lost packets (%d)", m.CongestionEvents, m.PacketsLost)
	}
}

func TestCountingUDPPathMTU(t *testing.T) {
	t.Parallel()
	var c countingUDP
	c.sent(1, 1252) // a lone probe: not the MTU yet
	if got := c.mtu.Load(); got != 0 {
		t.Fatalf("a lone datagram set the MTU to %d", got)
	}
	c.sent(1, 1200)
	c.sent(1, 1200) // the same size twice in a row
	if got := c.mtu.Load(); got != 1200 {
		t.Fatalf("mtu %d, want 1200", got)
	}
	c.sent(5, 1452) // a GSO batch
	c.sent(1, 60)
	c.sent(1, 60) // small packets never lower it
	if got := c.mtu.Load(); got != 1452 {
		t.Fatalf("mtu %d, want 1452", got)
	}
	if c.calls.Load() != 6 || c.datagrams.Load() != 10 {
		t.Fatalf("calls %d datagrams %d", c.calls.Load(), c.datagrams.Load())
	}
}

// sessionPair dials a session and returns both ends once the first stream
// (which carries the session header) arrived.
func sessionPair(t *testing.T, ln *Listener, addr string, cfg transport.Config) (client, server *Session, first transport.Stream) {
	t.Helper()
	ctx := t.Context()
	c, err := Dial(ctx, addr, newTestIdentity(t).TLSConfig(false, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(nil) })
	first, err = c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(nil) })
	return c, s.(*Session), first
}

// pushStreams writes size bytes on each of n new streams and reads them all
// on the listener's side (after the first stream, whose header was read).
func pushStreams(t *testing.T, c, s *Session, n int, size int) {
	t.Helper()
	ctx := t.Context()
	if st, err := s.AcceptStream(ctx); err != nil {
		t.Fatal(err)
	} else {
		go io.Copy(io.Discard, st)
	}
	done := make(chan error, n)
	for range n {
		st, err := c.OpenStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_, err := st.Write(make([]byte, size))
			st.Close()
			done <- err
		}()
	}
	for range n {
		st, err := s.AcceptStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.Copy(io.Discard, st)
		if err != nil || got != int64(size) {
			t.Fatalf("read %d of %d bytes: %v", got, size, err)
		}
	}
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// On a clean local path a session adds a connection and spreads its data
// streams over both; the counters add up on both sides.
func TestSessionSpreadsStreams(t *testing.T) {
	t.Parallel()
	ln := newListener(t, transport.Config{})
	// Under the race detector a loopback handshake can take longer than CleanRTT.
	c, s, _ := sessionPair(t, ln, ln.Addr().String(), transport.Config{CleanRTT: time.Second})
	const size = 4 << 20
	pushStreams(t, c, s, 4, size)
	if m := c.Metrics(); m.Connections != 2 || m.BytesSent < 4*size {
		t.Errorf("dialer: %d connections, %d bytes sent", m.Connections, m.BytesSent)
	}
	if m := s.Metrics(); m.Connections != 2 || m.BytesRecv < 4*size {
		t.Errorf("listener: %d connections, %d bytes received", m.Connections, m.BytesRecv)
	}
	c.mu.Lock()
	conns := c.conns
	c.mu.Unlock()
	for i, qc := range conns {
		if sent := qc.c.ConnectionStats().BytesSent; sent < 2*size {
			t.Errorf("connection %d carried %d bytes, want two streams' worth", i, sent)
		}
	}
	// Closing the session ends every connection on both sides.
	c.Close(nil)
	for i, qc := range conns {
		select {
		case <-qc.done():
		case <-time.After(5 * time.Second):
			t.Fatalf("dialer connection %d still open", i)
		}
	}
	select {
	case <-s.ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("listener session still open")
	}
}

// Beyond a clean local path, or with QUICConns 1, a session is one connection.
func TestSessionOneConnection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  transport.Config
	}{
		{"long path", transport.Config{CleanRTT: -1, QUICConns: 2}},
		{"turned off", transport.Config{CleanRTT: time.Second, QUICConns: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ln := newListener(t, transport.Config{})
			c, s, _ := sessionPair(t, ln, ln.Addr().String(), tc.cfg)
			pushStreams(t, c, s, 3, 64<<10)
			if cm, sm := c.Metrics(), s.Metrics(); cm.Connections != 1 || sm.Connections != 1 {
				t.Errorf("connections: dialer %d, listener %d", cm.Connections, sm.Connections)
			}
		})
	}
}

// On a path with random loss a session grows to more connections (package
// spread), tells the sender how many streams to open, and places them on
// the new connections; without loss it does not (TestSessionOneConnection).
func TestSessionGrowsOnRandomLoss(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ln := newListener(t, transport.Config{})
	relay := transporttest.NewLossyRelay(t, ln.Addr().String(), 0.05)
	// Loopback has no queue to tell, but a busy machine delays RTT samples
	// by milliseconds: the queue test is spread's. A join's handshake
	// through 5 % loss took over the default 2 s on a loaded machine (with
	// -race and another package's tests beside it), and a session grows
	// past a failed join only on further advice
	// (TestSessionGrowsPastAFailedJoin): joins get the test's time.
	cfg := transport.Config{CleanRTT: -1, SpreadRTT: -1, MaxFlows: 4, LossRTTSlack: time.Second, JoinTimeout: 30 * time.Second}
	c, s, _ := sessionPair(t, ln, relay.Addr(), cfg)
	if _, err := s.AcceptStream(ctx); err != nil { // the first stream
		t.Fatal(err)
	}
	go func() { // the listener drains every data stream
		for {
			st, err := s.AcceptStream(ctx)
			if err != nil {
				return
			}
			go io.Copy(io.Discard, st)
		}
	}()
	push := func() {
		st, err := c.OpenStream(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		go func() {
			buf := make([]byte, 64<<10)
			for ctx.Err() == nil {
				if _, err := st.Write(buf); err != nil {
					return
				}
			}
		}()
	}
	push()
	streams := 1
	for streams < 4 {
		select {
		case adv, ok := <-c.StreamsAdvised():
			if !ok {
				t.Fatal("advice ended before 4 streams")
			}
			if !strings.Contains(adv.Reason, "random loss") || adv.Flows < 2 {
				t.Errorf("advice %+v", adv)
			}
			for ; streams < adv.Streams; streams++ {
				push()
			}
		case <-ctx.Done():
			t.Fatalf("5%% loss: no advice beyond %d streams", streams)
		}
	}
	if m := c.Metrics(); m.Connections != 4 {
		t.Errorf("dialer: %d connections, want 4", m.Connections)
	}
	c.mu.Lock()
	for i, x := range c.slots {
		want := 1 // a data stream each; the first connection has the control stream too
		if i == 0 {
			want = 2
		}
		if x.streams != want {
			t.Errorf("connection %d carries %d streams, want %d", i, x.streams, want)
		}
	}
	c.mu.Unlock()
	if m := s.Metrics(); m.Connections != 4 {
		t.Errorf("listener: %d connections, want 4", m.Connections)
	}
}

// Hostile joins are refused with the status that says why, and never reach
// the session; the session itself carries on.
func TestJoinRefused(t *testing.T) {
	t.Parallel()
	ln := newListener(t, transport.Config{})
	c, s, _ := sessionPair(t, ln, ln.Addr().String(), transport.Config{})
	ra := ln.Addr().(*net.UDPAddr)
	// A bound for a hung join, not a speed test: the 18 handshakes below
	// took over 5 s in a CI rehearsal with the suite's other packages and a
	// benchmark beside it.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cfg := transport.Config{}.WithDefaults()
	unknown := join.Token{0xEE}
	for _, tc := range []struct {
		name  string
		token join.Token
		own   bool // dial with the session's certificate
		want  error
	}{
		{"unknown token", unknown, true, errcode.ErrUnknownSession},
		{"other certificate", c.token, false, errcode.ErrPeerMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tlsConf := c.tlsConf
			if !tc.own {
				tlsConf = newTestIdentity(t).TLSConfig(false, nil)
			}
			qc, err := dialConn(ctx, ra, tlsConf, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer qc.closeWait(0, "")
			if err := joinConn(ctx, qc, tc.token); !errors.Is(err, tc.want) {
				t.Errorf("join: %v, want %v", err, tc.want)
			}
		})
	}
	// A session is full at MaxQUICConns connections. (Its connections are
	// admitted as they join once the engine admitted it; before, they
	// would count against their address's places among the unadmitted.)
	s.Admitted()
	for i := 1; ; i++ {
		qc, err := dialConn(ctx, ra, c.tlsConf, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer qc.closeWait(0, "")
		err = joinConn(ctx, qc, c.token)
		if i < transport.MaxQUICConns {
			if err != nil {
				t.Fatalf("join %d: %v", i, err)
			}
			continue
		}
		if !errors.Is(err, errcode.ErrSessionFull) {
			t.Fatalf("join %d: %v, want %v", i, err, errcode.ErrSessionFull)
		}
		break
	}
	if m := s.Metrics(); m.Connections != transport.MaxQUICConns {
		t.Errorf("listener session has %d connections", m.Connections)
	}
	pushStreams(t, c, s, 2, 1<<10)
}

// A connection whose first stream does not start with a valid header (a
// TCP spare flag, an unknown flag, too few bytes) is closed with a reason,
// and no session reaches Accept.
func TestBadHeader(t *testing.T) {
	t.Parallel()
	ln := newListener(t, transport.Config{HandshakeTimeout: 500 * time.Millisecond})
	ra := ln.Addr().(*net.UDPAddr)
	var token join.Token
	cfg := transport.Config{}.WithDefaults()
	for _, tc := range []struct {
		name string
		hdr  []byte
	}{
		{"spare flag", join.AppendHeader(nil, token, join.FlagSpare)},
		{"unknown flag", join.AppendHeader(nil, token, 9)},
		{"short", []byte("ferry")},
		{"no stream", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			qc, err := dialConn(ctx, ra, newTestIdentity(t).TLSConfig(false, nil), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer qc.closeWait(0, "")
			if tc.hdr != nil {
				st, err := qc.c.OpenStreamSync(ctx)
				if err != nil {
					t.Fatal(err)
				}
				st.Write(tc.hdr)
			}
			select {
			case <-qc.done():
			case <-ctx.Done():
				t.Fatal("listener kept the connection open")
			}
			if err := context.Cause(qc.c.Context()); err == nil || !strings.Contains(err.Error(), "header") && !strings.Contains(err.Error(), "no stream") {
				t.Errorf("closed with %v", err)
			}
			actx, acancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer acancel()
			if s, err := ln.Accept(actx); err == nil {
				t.Errorf("a session reached Accept: %v", s.RemoteAddr())
			}
		})
	}
}

// Withdraw stops new connections and keeps the socket for the running
// session, which goes on; the socket goes with the last session. A close
// with a code reaches the peer as the error it stands for.
func TestWithdrawAndCloseReason(t *testing.T) {
	t.Parallel()
	ln := newListener(t, transport.Config{})
	c, s, _ := sessionPair(t, ln, ln.Addr().String(), transport.Config{CleanRTT: -1})
	ln.Withdraw()
	pushStreams(t, c, s, 1, 64<<10)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if late, err := Dial(ctx, ln.Addr().String(), newTestIdentity(t).TLSConfig(false, nil), transport.Config{}); err == nil {
		late.Close(nil)
		t.Error("a new connection after Withdraw")
	}
	s.Close(errcode.WithCode(errcode.CodeCancelled, errors.New("receiving was turned off")))
	_, err := c.AcceptStream(t.Context())
	var re *errcode.RemoteError
	if !errors.As(err, &re) || re.Code != errcode.CodeCancelled || re.Reason != "receiving was turned off" {
		t.Fatalf("the peer read %v", err)
	}
	// The last session ended: the socket is released.
	for {
		pc, err := net.ListenPacket("udp", ln.Addr().String())
		if err == nil {
			pc.Close()
			break
		}
		runtime.Gosched()
	}
	if ln.Resume() {
		t.Error("Resume after the socket was released")
	}
}
