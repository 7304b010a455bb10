// Package quic is the QUIC transport, and the only package of the engine
// that imports quic-go. A session is one or more QUIC connections to a peer
// (see Session); a stream is a QUIC stream.
package quic

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// udpBufferSize is what we ask the kernel for on every QUIC socket: at high
// rates the default (~208 KiB on Linux, 64 KiB on macOS) overflows within a
// millisecond and the overflow looks like network loss to the congestion controller.
const udpBufferSize = 4 << 20

// Flow-control windows: sized for high bandwidth-delay paths (1 Gbit/s at
// 100 ms needs ~12 MB in flight) while bounding what one peer can make us buffer.
const (
	streamWindow     = 8 << 20
	connectionWindow = 32 << 20
)

// The windows a connection starts with are small: until its session has
// passed the hello and the engine's admission (Session.Admitted), a peer
// can make the listener buffer no more than initialConnectionWindow per
// connection, however many streams it opens (issue #27: 32 connections
// of one address filling 8 MiB windows took a receiver to 368 MiB). An
// accepted connection's window grows only once it is admitted
// (Listener.allowIncrease); quic-go's auto-tuning then doubles it each
// round trip the application reads it faster than it lasts, as far as
// streamWindow and connectionWindow, which a real transfer reaches within
// its first megabytes (docs/hostile.md has the figures).
const (
	initialStreamWindow     = 256 << 10
	initialConnectionWindow = 512 << 10
)

// inFlightWindow is how far behind a stream's write offset data may still
// be unread by the peer: flow control lets a stream run at most its window
// ahead of what the receiver consumed, plus what the socket buffers hold.
const inFlightWindow = streamWindow + udpBufferSize

// quicConfig returns quic-go's configuration for cfg (with defaults set).
func quicConfig(cfg transport.Config) *quic.Config {
	return &quic.Config{
		HandshakeIdleTimeout:           5 * time.Second,
		MaxIdleTimeout:                 cfg.QUICIdleTimeout,
		KeepAlivePeriod:                cfg.QUICIdleTimeout / 4,
		InitialStreamReceiveWindow:     initialStreamWindow,
		MaxStreamReceiveWindow:         streamWindow,
		InitialConnectionReceiveWindow: initialConnectionWindow,
		MaxConnectionReceiveWindow:     connectionWindow,
		MaxIncomingStreams:             256,
		MaxIncomingUniStreams:          -1,
		// No Tracer: with one, quic-go builds a qlog event for every packet
		// it sends or receives, which costs a good share of a receiver's
		// throughput on loopback (docs/benchmarks/loopback.md). The metrics
		// come from ConnectionStats, our socket wrapper and a
		// congestion-window watcher. 0-RTT stays off: every Ferry request
		// changes state.
	}
}

// countingUDP counts send calls and the datagrams they carry, and finds the
// path MTU in use. It embeds the *net.UDPConn so quic-go still finds
// ReadMsgUDP/WriteMsgUDP/SyscallConn and keeps its GSO path; on Linux it
// reads for quic-go with GRO (ReadBatch, gro_linux.go).
type countingUDP struct {
	*net.UDPConn
	calls     atomic.Int64
	datagrams atomic.Int64
	mtu       atomic.Int64 // largest datagram size sent in a row (see sent)
	last      atomic.Int64 // size of the previous single datagram
	// sendErrors counts datagrams the system refused because the path is
	// gone (see lost).
	sendErrors atomic.Int64
	gro        groReader // receiving with UDP GRO (gro_linux.go)
}

func (c *countingUDP) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (int, int, error) {
	n, seg := countDatagrams(len(b), oob)
	c.sent(n, seg)
	nb, noob, err := c.UDPConn.WriteMsgUDP(b, oob, addr)
	if err != nil && c.lost(err) {
		return len(b), len(oob), nil
	}
	return nb, noob, err
}

func (c *countingUDP) WriteTo(b []byte, addr net.Addr) (int, error) {
	c.sent(1, len(b))
	n, err := c.UDPConn.WriteTo(b, addr)
	if err != nil && c.lost(err) {
		return len(b), nil
	}
	return n, err
}

// lost reports whether a send error only means that the path is gone for
// now (no route, address removed, link down): quic-go closes a connection
// on any send error, so these count as datagrams lost on the way, which
// loss recovery and migration deal with.
func (c *countingUDP) lost(err error) bool {
	if !pathGone(err) {
		return false
	}
	c.sendErrors.Add(1)
	return true
}

// sent records one send call of n datagrams of size seg. The path MTU is the
// packet size quic-go settled on: the segment size of a GSO batch, or a size
// sent twice in a row. A lone path-MTU probe, which may never arrive, does
// not count, nor do datagrams below QUIC's minimum of 1200 bytes (a side
// that only acknowledges never shows its MTU).
func (c *countingUDP) sent(n, seg int) {
	c.calls.Add(1)
	c.datagrams.Add(int64(n))
	if seg < 1200 {
		return
	}
	if n > 1 || c.last.Swap(int64(seg)) == int64(seg) {
		for m := c.mtu.Load(); int64(seg) > m && !c.mtu.CompareAndSwap(m, int64(seg)); m = c.mtu.Load() {
		}
	}
}

// listenUDP opens a socket of our own.
func listenUDP(addr string) (*countingUDP, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	uc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, err
	}
	// Best effort: the kernel may clamp (rmem_max); we report what it granted.
	uc.SetReadBuffer(udpBufferSize)
	uc.SetWriteBuffer(udpBufferSize)
	c := &countingUDP{UDPConn: uc}
	c.enableGRO()
	return c, nil
}

// conn is one QUIC connection.
type conn struct {
	c    *quic.Conn
	udp  *countingUDP
	peer identity.DeviceID
	cfg  transport.Config

	// Read once: after a migration quic-go replaces what ConnectionState,
	// RemoteAddr and LocalAddr read on a dialled connection without a lock.
	gso    bool
	remote string // a dialled connection's peer address (it does not change)

	// admission is an accepted connection's standing until its session is
	// admitted (Listener.waitAdmission); nil for a dialled one.
	admission *admission

	congestion atomic.Int64               // congestion-window reductions seen (see watchCongestion)
	local      atomic.Pointer[netip.Addr] // dialled: the source address in use (see migrator)

	mu  sync.Mutex     // guards alt
	alt []*countingUDP // sockets of migrated paths (dialled connections)

	closeOnce sync.Once
	wg        sync.WaitGroup // watchCongestion, and the socket closer of a dialled connection

	// lost is why the connection was closed here for its peer's sake
	// (lose); err reports it in place of the local close.
	lost atomic.Pointer[error]
}

// resetErr is, once the connection ended with a stateless reset (its peer
// restarted and knows it no more), the error that says so; else nil.
func (q *conn) resetErr() error {
	cause := context.Cause(q.c.Context())
	var reset *quic.StatelessResetError
	if !errors.As(cause, &reset) {
		return nil
	}
	return q.err(cause)
}

// lose closes the connection because its peer is gone for the reason why,
// which its streams' errors then report. Nobody reads the close: it has no
// code.
func (q *conn) lose(why error) {
	q.lost.CompareAndSwap(nil, &why)
	q.close(0, why.Error())
}

// newConn wraps an established connection. tr is the Transport a dialled
// connection owns (nil for accepted ones): it is closed, with the socket,
// when the connection ends.
func newConn(c *quic.Conn, udp *countingUDP, tr *quic.Transport, cfg transport.Config) (*conn, error) {
	state := c.ConnectionState()
	peer, err := identity.PeerID(state.TLS)
	if err != nil {
		c.CloseWithError(quic.ApplicationErrorCode(errcode.AppOf(errcode.CodeProtocol)), "no certificate")
		if tr != nil {
			tr.Close()
			udp.Close()
		}
		return nil, err
	}
	qc := &conn{c: c, udp: udp, peer: peer, cfg: cfg, gso: state.GSO}
	if tr != nil {
		qc.remote = c.RemoteAddr().String()
	}
	qc.wg.Go(qc.watchCongestion)
	if tr != nil {
		qc.wg.Go(func() {
			<-c.Context().Done()
			tr.Close()
			udp.Close()
		})
	}
	return qc, nil
}

// remoteAddr is the peer's address: fixed for a dialled connection, the
// one quic-go last validated for an accepted one (the peer may move).
func (q *conn) remoteAddr() string {
	if q.remote != "" {
		return q.remote
	}
	return q.c.RemoteAddr().String()
}

// setLocal records the source address the connection uses now.
func (q *conn) setLocal(a netip.Addr) { q.local.Store(&a) }

// localAddr is the source address in use: a dialled connection's as its
// migrator last saw it, else the socket's.
func (q *conn) localAddr() string {
	if a := q.local.Load(); a != nil && a.IsValid() {
		return a.String()
	}
	return q.udp.LocalAddr().String()
}

// addSocket adds a migrated path's socket to the connection's counters.
func (q *conn) addSocket(u *countingUDP) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.alt = append(q.alt, u)
}

// sockets lists the connection's sockets, the first one first.
func (q *conn) sockets() []*countingUDP {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]*countingUDP{q.udp}, q.alt...)
}

// dialConn dials over a Transport of its own, kept open for the
// connection's whole life: connection migration (AddPath/Probe/Switch) needs
// client connection IDs, which quic.DialAddr does not use, and closing the
// original Transport after a switch would kill the connection.
func dialConn(ctx context.Context, ra *net.UDPAddr, tlsConf *tls.Config, cfg transport.Config) (*conn, error) {
	local := ":0"
	if ra.IP.To4() != nil {
		local = "0.0.0.0:0"
	}
	if cfg.LocalIP != "" {
		local = net.JoinHostPort(cfg.LocalIP, "0")
	}
	udp, err := listenUDP(local)
	if err != nil {
		return nil, &transport.LocalError{Err: err} // our own socket
	}
	tr := &quic.Transport{Conn: udp}
	c, err := tr.Dial(ctx, ra, tlsConf, quicConfig(cfg))
	if err != nil {
		tr.Close()
		udp.Close()
		return nil, transport.Local(err)
	}
	return newConn(c, udp, tr, cfg)
}

// congestionSample is how often watchCongestion looks at the window.
const congestionSample = 10 * time.Millisecond

// watchCongestion counts congestion events without a tracer: quic-go's
// Reno-style controller shrinks the window only on a congestion event (loss,
// or a retransmission timeout), at most once per round trip, so a smaller
// window than at the previous sample is one event. Two events within one
// sample period count once, which only happens on very short paths.
func (q *conn) watchCongestion() {
	t := time.NewTicker(congestionSample)
	defer t.Stop()
	var last uint64
	for {
		select {
		case <-q.c.Context().Done():
			return
		case <-t.C:
		}
		cw := q.c.ConnectionStats().CongestionWindow
		if cw < last {
			q.congestion.Add(1)
		}
		last = cw
	}
}

func (q *conn) openStream(ctx context.Context) (transport.Stream, error) {
	s, err := q.c.OpenStreamSync(ctx)
	if err != nil {
		return nil, q.err(err)
	}
	return stream{s, q}, nil
}

func (q *conn) acceptStream(ctx context.Context) (transport.Stream, error) {
	s, err := q.c.AcceptStream(ctx)
	if err != nil {
		return nil, q.err(err)
	}
	return stream{s, q}, nil
}

func (q *conn) done() <-chan struct{} { return q.c.Context().Done() }

// close closes the connection with an application code from package errcode.
func (q *conn) close(code uint64, reason string) error {
	var err error
	q.closeOnce.Do(func() { err = q.c.CloseWithError(quic.ApplicationErrorCode(code), reason) })
	return err
}

// closeWait closes the connection and waits for its goroutines.
func (q *conn) closeWait(code uint64, reason string) error {
	err := q.close(code, reason)
	q.wg.Wait()
	return err
}

// refuse closes a connection whose join was refused; the refusal's code
// and words reach the peer.
func (q *conn) refuse(refusal error) {
	q.closeWait(uint64(errcode.AppOfErr(refusal)), refusal.Error())
}

func (q *conn) metrics() transport.Metrics {
	st := q.c.ConnectionStats()
	recv, send := transport.SocketBuffers(q.udp.UDPConn)
	var datagrams, calls, mtu, rcalls, rdatagrams int64
	for _, u := range q.sockets() {
		datagrams += u.datagrams.Load()
		calls += u.calls.Load()
		mtu = max(mtu, u.mtu.Load())
		c, d := u.receiveCounts()
		rcalls += c
		rdatagrams += d
	}
	return transport.Metrics{
		Transport:         string(transport.QUIC),
		CongestionControl: "reno",
		SmoothedRTTms:     transport.Ms(st.SmoothedRTT),
		MinRTTms:          transport.Ms(st.MinRTT),
		LatestRTTms:       transport.Ms(st.LatestRTT),
		CongestionWindow:  int64(st.CongestionWindow),
		CongestionEvents:  q.congestion.Load(),
		PacketsLost:       int64(st.PacketsLost),
		BytesLost:         int64(st.BytesLost),
		DatagramsSent:     datagrams,
		DatagramsRecv:     int64(st.PacketsReceived),
		BytesSent:         int64(st.BytesSent),
		BytesRecv:         int64(st.BytesReceived),
		SendCalls:         calls,
		RecvCalls:         rcalls,
		RecvDatagrams:     rdatagrams,
		GRO:               q.udp.groOn(),
		PathMTU:           int(mtu),
		GSO:               q.gso,
		RecvBuffer:        recv,
		SendBuffer:        send,
	}
}

// err turns what the peer said when it closed the connection or reset a
// stream into the error it stands for (package errcode), so the user reads
// why the peer ended the transfer.
func (q *conn) err(err error) error {
	if err == nil {
		return nil
	}
	var ae *quic.ApplicationError
	if why := q.lost.Load(); why != nil && errors.As(err, &ae) && !ae.Remote {
		return *why
	}
	if errors.As(err, &ae) && ae.Remote && ae.ErrorCode != 0 {
		return errcode.FromApp(errcode.App(ae.ErrorCode), ae.ErrorMessage)
	}
	var ie *quic.IdleTimeoutError
	if errors.As(err, &ie) {
		return fmt.Errorf("the connection went silent for %v: %w", q.cfg.QUICIdleTimeout, err)
	}
	var re *quic.StatelessResetError
	if errors.As(err, &re) {
		return fmt.Errorf("the other device restarted: %w", err)
	}
	return err
}

type stream struct {
	s *quic.Stream
	c *conn
}

func (s stream) Read(p []byte) (int, error) {
	n, err := s.s.Read(p)
	if err != nil {
		err = s.c.err(err)
	}
	return n, err
}

func (s stream) Write(p []byte) (int, error) {
	n, err := s.s.Write(p)
	if err != nil {
		err = s.c.err(err)
	}
	return n, err
}

func (s stream) Close() error { return s.s.Close() }

func (s stream) Abort() {
	s.s.CancelRead(quic.StreamErrorCode(errcode.AppStreamAborted))
	s.s.CancelWrite(quic.StreamErrorCode(errcode.AppStreamAborted))
}
