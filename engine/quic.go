package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"

	"github.com/ferrydrop/ferry/engine/identity"
)

// udpBufferSize is what we ask the kernel for on every QUIC socket: at high
// rates the default (~208 KiB on Linux, 64 KiB on macOS) overflows within a
// millisecond and the overflow looks like network loss to the congestion controller.
const udpBufferSize = 4 << 20

// quicIdleTimeout is how long a silent peer is given before the connection
// counts as lost (a killed process sends no goodbye). Short, because a lost
// connection is cheap: the sender reconnects and resumes. FERRY_QUIC_IDLE_TIMEOUT
// (a Go duration) overrides it for tests and the lab.
var quicIdleTimeout = envDuration("FERRY_QUIC_IDLE_TIMEOUT", 10*time.Second)

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

// quicConfig sizes flow control for high bandwidth-delay paths (1 Gbit/s at
// 100 ms needs ~12 MB in flight) while bounding what one peer can make us buffer.
func quicConfig() *quic.Config {
	return &quic.Config{
		HandshakeIdleTimeout:           5 * time.Second,
		MaxIdleTimeout:                 quicIdleTimeout,
		KeepAlivePeriod:                quicIdleTimeout / 4,
		InitialStreamReceiveWindow:     2 << 20,
		MaxStreamReceiveWindow:         8 << 20,
		InitialConnectionReceiveWindow: 8 << 20,
		MaxConnectionReceiveWindow:     32 << 20,
		MaxIncomingStreams:             256,
		MaxIncomingUniStreams:          -1,
		Tracer:                         connTracer,
		// 0-RTT stays off: every Ferry request changes state.
	}
}

// countingUDP counts send calls and the datagrams they carry. It embeds the
// *net.UDPConn so quic-go still finds ReadMsgUDP/WriteMsgUDP/SyscallConn and
// keeps its GSO and batched-receive paths.
type countingUDP struct {
	*net.UDPConn
	calls     atomic.Int64
	datagrams atomic.Int64
}

func (c *countingUDP) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (int, int, error) {
	c.calls.Add(1)
	c.datagrams.Add(int64(countDatagrams(len(b), oob)))
	return c.UDPConn.WriteMsgUDP(b, oob, addr)
}

func (c *countingUDP) WriteTo(b []byte, addr net.Addr) (int, error) {
	c.calls.Add(1)
	c.datagrams.Add(1)
	return c.UDPConn.WriteTo(b, addr)
}

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
	return &countingUDP{UDPConn: uc}, nil
}

// recorder is our qlog event sink: it keeps only what the metrics need, with
// atomics, so tracing costs nothing measurable.
type recorder struct {
	mtu         atomic.Int64
	congestion  atomic.Int64
	lost        atomic.Int64
	pathChanges atomic.Int64
}

type recorderKey struct{}

func (r *recorder) AddProducer() qlogwriter.Recorder { return r }
func (r *recorder) Close() error                     { return nil }
func (r *recorder) RecordEvent(ev qlogwriter.Event) {
	switch e := ev.(type) {
	case qlog.MTUUpdated:
		r.mtu.Store(int64(e.Value))
	case qlog.CongestionStateUpdated:
		if e.State == qlog.CongestionStateRecovery {
			r.congestion.Add(1)
		}
	case qlog.PacketLost:
		r.lost.Add(1)
	case qlog.TupleAssigned:
		r.pathChanges.Add(1)
	}
}

// connTracer finds the recorder that the dialer or ConnContext put in ctx.
func connTracer(ctx context.Context, _ bool, _ quic.ConnectionID) qlogwriter.Trace {
	if r, ok := ctx.Value(recorderKey{}).(*recorder); ok {
		return r
	}
	return nil
}

// quicListener accepts QUIC connections on one UDP socket.
type quicListener struct {
	udp *countingUDP
	tr  *quic.Transport
	ln  *quic.Listener
}

func listenQUIC(addr string, tlsConf *tls.Config) (*quicListener, error) {
	udp, err := listenUDP(addr)
	if err != nil {
		return nil, fmt.Errorf("listen quic: %w", err)
	}
	tr := &quic.Transport{
		Conn: udp,
		ConnContext: func(ctx context.Context, _ *quic.ClientInfo) (context.Context, error) {
			return context.WithValue(ctx, recorderKey{}, &recorder{}), nil
		},
	}
	// No tracer on the receiving side: with a tracer quic-go builds a qlog
	// event for every packet, which cost ~20 % of the receiver's throughput
	// (1 GiB on loopback: 104-115 MB/s traced on both sides, 120-133 traced on
	// the sender only). What the tracer adds (congestion events, path MTU)
	// describes the data direction, which the sender traces.
	lc := quicConfig()
	lc.Tracer = nil
	ln, err := tr.Listen(tlsConf, lc)
	if err != nil {
		tr.Close()
		udp.Close()
		return nil, fmt.Errorf("listen quic: %w", err)
	}
	return &quicListener{udp: udp, tr: tr, ln: ln}, nil
}

func (l *quicListener) Addr() net.Addr { return l.udp.LocalAddr() }

func (l *quicListener) Accept(ctx context.Context) (Conn, error) {
	c, err := l.ln.Accept(ctx)
	if err != nil {
		return nil, err
	}
	rec, _ := c.Context().Value(recorderKey{}).(*recorder)
	return newQUICConn(c, l.udp, nil, rec)
}

func (l *quicListener) Close() error {
	err := l.ln.Close()
	l.tr.Close()
	l.udp.Close()
	return err
}

// dialQUIC dials over a Transport of its own, kept open for the
// connection's whole life: connection migration (AddPath/Probe/Switch) needs
// client connection IDs, which quic.DialAddr does not use, and closing the
// original Transport after a switch would kill the connection.
func dialQUIC(ctx context.Context, addr string, tlsConf *tls.Config) (Conn, error) {
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial quic %s: %w", addr, err)
	}
	local := ":0"
	if ra.IP.To4() != nil {
		local = "0.0.0.0:0"
	}
	udp, err := listenUDP(local)
	if err != nil {
		return nil, fmt.Errorf("dial quic %s: %w", addr, err)
	}
	tr := &quic.Transport{Conn: udp}
	rec := &recorder{}
	c, err := tr.Dial(context.WithValue(ctx, recorderKey{}, rec), ra, tlsConf, quicConfig())
	if err != nil {
		tr.Close()
		udp.Close()
		return nil, fmt.Errorf("dial quic %s: %w", addr, err)
	}
	return newQUICConn(c, udp, tr, rec)
}

type quicConn struct {
	c    *quic.Conn
	udp  *countingUDP
	tr   *quic.Transport // owned by dialled connections only
	rec  *recorder
	peer identity.DeviceID

	closeOnce sync.Once
}

func newQUICConn(c *quic.Conn, udp *countingUDP, tr *quic.Transport, rec *recorder) (*quicConn, error) {
	peer, err := identity.PeerID(c.ConnectionState().TLS)
	if err != nil {
		c.CloseWithError(1, "no certificate")
		return nil, err
	}
	if rec == nil {
		rec = &recorder{}
	}
	qc := &quicConn{c: c, udp: udp, tr: tr, rec: rec, peer: peer}
	if tr != nil {
		// The dialled connection owns its socket: release it when the connection ends.
		go func() {
			<-c.Context().Done()
			tr.Close()
			udp.Close()
		}()
	}
	return qc, nil
}

func (q *quicConn) OpenStream(ctx context.Context) (Stream, error) {
	s, err := q.c.OpenStreamSync(ctx)
	if err != nil {
		return nil, quicError(err)
	}
	return quicStream{s}, nil
}

func (q *quicConn) AcceptStream(ctx context.Context) (Stream, error) {
	s, err := q.c.AcceptStream(ctx)
	if err != nil {
		return nil, err
	}
	return quicStream{s}, nil
}

func (q *quicConn) PeerID() identity.DeviceID { return q.peer }
func (q *quicConn) RemoteAddr() string        { return q.c.RemoteAddr().String() }
func (q *quicConn) Transport() string         { return "quic" }
func (q *quicConn) Done() <-chan struct{}     { return q.c.Context().Done() }

func (q *quicConn) Close(code uint64, reason string) error {
	var err error
	q.closeOnce.Do(func() { err = q.c.CloseWithError(quic.ApplicationErrorCode(code), reason) })
	return err
}

func (q *quicConn) Metrics() Metrics {
	st := q.c.ConnectionStats()
	recv, send := socketBuffers(q.udp.UDPConn)
	return Metrics{
		Transport:         "quic",
		CongestionControl: "reno",
		SmoothedRTTms:     ms(st.SmoothedRTT),
		MinRTTms:          ms(st.MinRTT),
		LatestRTTms:       ms(st.LatestRTT),
		CongestionWindow:  int64(st.CongestionWindow),
		CongestionEvents:  q.rec.congestion.Load(),
		PacketsLost:       int64(st.PacketsLost),
		BytesLost:         int64(st.BytesLost),
		DatagramsSent:     q.udp.datagrams.Load(),
		DatagramsRecv:     int64(st.PacketsReceived),
		BytesSent:         int64(st.BytesSent),
		BytesRecv:         int64(st.BytesReceived),
		SendCalls:         q.udp.calls.Load(),
		PathMTU:           int(q.rec.mtu.Load()),
		GSO:               q.c.ConnectionState().GSO,
		RecvBuffer:        recv,
		SendBuffer:        send,
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

type quicStream struct{ s *quic.Stream }

func (s quicStream) Read(p []byte) (int, error) {
	n, err := s.s.Read(p)
	return n, quicError(err)
}

func (s quicStream) Write(p []byte) (int, error) {
	n, err := s.s.Write(p)
	return n, quicError(err)
}

// quicError turns the peer's connection-close reason into the RemoteError it
// stands for, so the user reads why the peer ended the transfer.
func quicError(err error) error {
	var ae *quic.ApplicationError
	if err != nil && errors.As(err, &ae) && ae.Remote && ae.ErrorCode != 0 {
		return remoteClose(ae.ErrorMessage)
	}
	var ie *quic.IdleTimeoutError
	if errors.As(err, &ie) {
		return fmt.Errorf("the connection went silent for %v: %w", quicIdleTimeout, err)
	}
	return err
}
func (s quicStream) Close() error { return s.s.Close() }
func (s quicStream) Abort() {
	s.s.CancelRead(1)
	s.s.CancelWrite(1)
}

// isQUICClosed reports errors that just mean the connection ended.
func isQUICClosed(err error) bool {
	var ae *quic.ApplicationError
	return errors.As(err, &ae) || errors.Is(err, net.ErrClosed)
}
