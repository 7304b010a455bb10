package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
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
		// No Tracer: with one, quic-go builds a qlog event for every packet
		// it sends or receives, which cost ~20 % of a receiver's and ~5 % of
		// a sender's throughput on loopback. The metrics come from
		// ConnectionStats, our socket wrapper and a congestion-window watcher.
		// 0-RTT stays off: every Ferry request changes state.
	}
}

// countingUDP counts send calls and the datagrams they carry, and finds the
// path MTU in use. It embeds the *net.UDPConn so quic-go still finds
// ReadMsgUDP/WriteMsgUDP/SyscallConn and keeps its GSO and batched-receive
// paths.
type countingUDP struct {
	*net.UDPConn
	calls     atomic.Int64
	datagrams atomic.Int64
	mtu       atomic.Int64 // largest datagram size sent in a row (see sent)
	last      atomic.Int64 // size of the previous single datagram
}

func (c *countingUDP) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (int, int, error) {
	n, seg := countDatagrams(len(b), oob)
	c.sent(n, seg)
	return c.UDPConn.WriteMsgUDP(b, oob, addr)
}

func (c *countingUDP) WriteTo(b []byte, addr net.Addr) (int, error) {
	c.sent(1, len(b))
	return c.UDPConn.WriteTo(b, addr)
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

type quicConn struct {
	c    *quic.Conn
	udp  *countingUDP
	tr   *quic.Transport // owned by dialled connections only
	peer identity.DeviceID

	congestion atomic.Int64 // congestion-window reductions seen (see watchCongestion)

	closeOnce sync.Once
}

func newQUICConn(c *quic.Conn, udp *countingUDP, tr *quic.Transport) (*quicConn, error) {
	peer, err := identity.PeerID(c.ConnectionState().TLS)
	if err != nil {
		c.CloseWithError(quic.ApplicationErrorCode(errcode.AppOf(errcode.CodeProtocol)), "no certificate")
		return nil, err
	}
	qc := &quicConn{c: c, udp: udp, tr: tr, peer: peer}
	go qc.watchCongestion()
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

// congestionSample is how often watchCongestion looks at the window.
const congestionSample = 10 * time.Millisecond

// watchCongestion counts congestion events without a tracer: quic-go's
// Reno-style controller shrinks the window only on a congestion event (loss,
// or a retransmission timeout), at most once per round trip, so a smaller
// window than at the previous sample is one event. Two events within one
// sample period count once, which only happens on paths under ~10 ms.
func (q *quicConn) watchCongestion() {
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
		CongestionEvents:  q.congestion.Load(),
		PacketsLost:       int64(st.PacketsLost),
		BytesLost:         int64(st.BytesLost),
		DatagramsSent:     q.udp.datagrams.Load(),
		DatagramsRecv:     int64(st.PacketsReceived),
		BytesSent:         int64(st.BytesSent),
		BytesRecv:         int64(st.BytesReceived),
		SendCalls:         q.udp.calls.Load(),
		PathMTU:           int(q.udp.mtu.Load()),
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
		return errcode.FromApp(errcode.App(ae.ErrorCode), ae.ErrorMessage)
	}
	var ie *quic.IdleTimeoutError
	if errors.As(err, &ie) {
		return fmt.Errorf("the connection went silent for %v: %w", quicIdleTimeout, err)
	}
	return err
}
func (s quicStream) Close() error { return s.s.Close() }
func (s quicStream) Abort() {
	s.s.CancelRead(quic.StreamErrorCode(errcode.AppStreamAborted))
	s.s.CancelWrite(quic.StreamErrorCode(errcode.AppStreamAborted))
}

// isQUICClosed reports errors that just mean the connection ended.
func isQUICClosed(err error) bool {
	var ae *quic.ApplicationError
	return errors.As(err, &ae) || errors.Is(err, net.ErrClosed)
}
