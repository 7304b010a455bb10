package engine

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
)

// A QUIC session is the group of QUIC connections one dialer holds to a peer
// for one exchange. quic-go runs each connection in one goroutine (packing,
// encrypting, acknowledging), and on a fast local link that goroutine, not
// the wire, caps a transfer: on the 2-core VM two bare connections move
// 1.2-1.3x the bytes of one (`ferry-bench ceiling --proto quic --conns 2`).
// So on a clean local path (RTT under cleanRTT) the dialer adds connections
// as soon as it opens its second stream (the first data stream), and spreads
// streams over them round-robin. On longer paths a session stays one
// connection, so a transfer is one congestion-controlled flow where paths are
// shared.
//
// The first stream the dialer opens on each connection starts with a join
// header in the TCP transport's format (16-byte session token, one flag
// byte):
//
//   - tcpFlagNew: the stream is the session's first stream (the control
//     stream) and carries on with the protocol; the listener's Accept returns
//     the session.
//   - tcpFlagJoin: the connection joins the session with that token. The
//     listener answers one status byte (tcpStatus*) and the stream ends; the
//     dialer uses the connection only after an OK.
//
// A join must present the session's certificate, unknown tokens are refused,
// and a session holds at most quicMaxSessionConns connections. The
// listener's own streams (OpenStream) and the dialer's AcceptStream use the
// first connection only; the session ends when the first connection does.
const quicMaxSessionConns = 8

// quicSessionConns is how many connections a session on a clean local path
// uses (1 turns the extra connections off). FERRY_QUIC_CONNS overrides it, so
// ferry-bench can compare.
var quicSessionConns = envInt("FERRY_QUIC_CONNS", 2)

// QUICSessionConns is how many connections a QUIC session uses on a clean
// local path (for benchmarks that compare with as many bare connections).
func QUICSessionConns() int { return min(quicSessionConns, quicMaxSessionConns) }

// quicJoinTimeout bounds an extra connection's handshake and join answer.
var quicJoinTimeout = 2 * time.Second

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// quicSession implements Conn over one or more quicConns.
type quicSession struct {
	client  bool
	token   [tcpTokenLen]byte
	primary *quicConn

	ctx    context.Context // ends with Close or when the primary ends
	cancel context.CancelFunc

	// dialer only
	remote  *net.UDPAddr
	tlsConf *tls.Config
	extras  []*quicExtra // connections being added or added
	// answered is closed once the peer wrote on the first stream: by then
	// the listener has registered the session (see autoswitch.go).
	answered     chan struct{}
	answeredOnce sync.Once

	// listener only
	incoming   chan Stream   // the first stream, then streams of every connection
	acceptDone chan struct{} // closed when the primary stops accepting
	acceptErr  error         // why; read after acceptDone

	mu       sync.Mutex
	conns    []*quicConn // primary first
	attached []Conn      // listener: TCP sessions auto moved the data to (see autoswitch.go)
	opened   int         // dialer: streams opened so far
	closed   bool
}

// quicExtra is one extra connection a dialer is adding.
type quicExtra struct {
	ready chan struct{} // closed once conn is set or the join failed
	conn  *quicConn
}

func newQUICSession(client bool, token [tcpTokenLen]byte, primary *quicConn) *quicSession {
	ctx, cancel := context.WithCancel(context.Background())
	s := &quicSession{client: client, token: token, primary: primary, ctx: ctx, cancel: cancel,
		conns: []*quicConn{primary}}
	go func() {
		select {
		case <-primary.Done():
			// The session lives and dies with its first connection.
			s.closeExtras(0, "session ended")
		case <-ctx.Done():
		}
		cancel()
	}()
	return s
}

// dialQUIC dials a new session: its first connection now, extra ones when
// the second stream is opened on a clean local path.
func dialQUIC(ctx context.Context, addr string, tlsConf *tls.Config) (Conn, error) {
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial quic %s: %w", addr, err)
	}
	c, err := dialQUICConn(ctx, ra, tlsConf)
	if err != nil {
		return nil, fmt.Errorf("dial quic %s: %w", addr, err)
	}
	var token [tcpTokenLen]byte
	rand.Read(token[:])
	s := newQUICSession(true, token, c)
	s.remote, s.tlsConf = ra, tlsConf
	s.answered = make(chan struct{})
	return s, nil
}

// dialQUICConn dials over a Transport of its own, kept open for the
// connection's whole life: connection migration (AddPath/Probe/Switch) needs
// client connection IDs, which quic.DialAddr does not use, and closing the
// original Transport after a switch would kill the connection.
func dialQUICConn(ctx context.Context, ra *net.UDPAddr, tlsConf *tls.Config) (*quicConn, error) {
	local := ":0"
	if ra.IP.To4() != nil {
		local = "0.0.0.0:0"
	}
	udp, err := listenUDP(local)
	if err != nil {
		return nil, err
	}
	tr := &quic.Transport{Conn: udp}
	c, err := tr.Dial(ctx, ra, tlsConf, quicConfig())
	if err != nil {
		tr.Close()
		udp.Close()
		return nil, err
	}
	return newQUICConn(c, udp, tr)
}

// OpenStream opens a stream. The dialer's first stream carries the session
// header; later ones go round-robin over the session's connections.
func (s *quicSession) OpenStream(ctx context.Context) (Stream, error) {
	if !s.client {
		return s.primary.OpenStream(ctx)
	}
	s.mu.Lock()
	n := s.opened
	s.opened++
	if n == 1 {
		s.startExtras()
	}
	var x *quicExtra
	if n > 0 {
		if slot := n % (1 + len(s.extras)); slot > 0 {
			x = s.extras[slot-1]
		}
	}
	s.mu.Unlock()
	if n == 0 {
		st, err := s.primary.OpenStream(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := st.Write(appendJoinHeader(nil, s.token, tcpFlagNew)); err != nil {
			st.Abort()
			return nil, quicError(err)
		}
		return firstStream{st, s}, nil
	}
	c := s.primary
	if x != nil {
		select {
		case <-x.ready:
			if x.conn != nil {
				c = x.conn
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.OpenStream(ctx)
}

// firstStream is the dialer's first stream; it notes the peer's first answer.
type firstStream struct {
	Stream
	s *quicSession
}

func (f firstStream) Read(p []byte) (int, error) {
	n, err := f.Stream.Read(p)
	if n > 0 {
		f.s.answeredOnce.Do(func() { close(f.s.answered) })
	}
	return n, err
}

// startExtras begins adding connections if the path is a clean local link.
// Called with s.mu held, once.
func (s *quicSession) startExtras() {
	rtt := s.primary.c.ConnectionStats().SmoothedRTT
	if quicSessionConns < 2 || rtt >= cleanRTT || s.closed {
		return
	}
	for range QUICSessionConns() - 1 {
		x := &quicExtra{ready: make(chan struct{})}
		s.extras = append(s.extras, x)
		go s.join(x)
	}
}

// join dials one extra connection and asks the listener to add it. A join
// that fails only costs the parallelism: its streams go to the first
// connection.
func (s *quicSession) join(x *quicExtra) {
	defer close(x.ready)
	ctx, cancel := context.WithTimeout(s.ctx, quicJoinTimeout)
	defer cancel()
	c, err := dialQUICConn(ctx, s.remote, s.tlsConf)
	if err != nil {
		return
	}
	if err := quicJoin(ctx, c, s.token); err != nil {
		c.Close(0, "join failed")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close(0, "session ended")
		return
	}
	s.conns = append(s.conns, c)
	x.conn = c
}

// quicJoin sends the join header on a new connection and reads the answer.
func quicJoin(ctx context.Context, c *quicConn, token [tcpTokenLen]byte) error {
	st, err := c.c.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	defer st.CancelRead(0)
	if d, ok := ctx.Deadline(); ok {
		st.SetDeadline(d)
	}
	if _, err := st.Write(appendJoinHeader(nil, token, tcpFlagJoin)); err != nil {
		return err
	}
	st.Close()
	var status [1]byte
	if _, err := io.ReadFull(st, status[:]); err != nil {
		return err
	}
	return tcpStatusErr(status[0])
}

// listenerSession starts the listener's side of a new session whose first
// stream (header read) is first.
func listenerSession(primary *quicConn, token [tcpTokenLen]byte, first Stream) *quicSession {
	s := newQUICSession(false, token, primary)
	s.incoming = make(chan Stream, 64)
	s.acceptDone = make(chan struct{})
	s.incoming <- first
	go s.acceptFrom(primary, true)
	return s
}

// add joins a connection to a listener's session.
func (s *quicSession) add(c *quicConn) byte {
	if c.peer != s.primary.peer {
		return byte(errcode.StatusOf(errcode.ErrPeerMismatch))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return byte(errcode.StatusOf(errcode.ErrUnknownSession))
	case len(s.conns) >= quicMaxSessionConns:
		return byte(errcode.StatusOf(errcode.ErrSessionFull))
	}
	s.conns = append(s.conns, c)
	go s.acceptFrom(c, false)
	return byte(errcode.StatusOK)
}

// attach adds a connection of another transport (auto's TCP session) whose
// streams the session accepts from now on; the session closes it when it ends.
func (s *quicSession) attach(c Conn) byte {
	if c.PeerID() != s.primary.peer {
		return byte(errcode.StatusOf(errcode.ErrPeerMismatch))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed || s.client:
		return byte(errcode.StatusOf(errcode.ErrUnknownSession))
	case len(s.attached) > 0:
		return byte(errcode.StatusOf(errcode.ErrSessionFull))
	}
	s.attached = append(s.attached, c)
	go s.acceptFrom(c, false)
	return byte(errcode.StatusOK)
}

// acceptFrom feeds the session the streams the dialer opens on c.
func (s *quicSession) acceptFrom(c Conn, primary bool) {
	for {
		st, err := c.AcceptStream(s.ctx)
		if err != nil {
			if primary {
				s.acceptErr = err
				close(s.acceptDone)
			}
			return
		}
		select {
		case s.incoming <- st:
		case <-s.ctx.Done():
			st.Abort()
			return
		}
	}
}

func (s *quicSession) AcceptStream(ctx context.Context) (Stream, error) {
	if s.client {
		return s.primary.AcceptStream(ctx)
	}
	select {
	case st := <-s.incoming:
		return st, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.acceptDone:
		select {
		case st := <-s.incoming:
			return st, nil
		default:
		}
		return nil, s.acceptErr
	}
}

func (s *quicSession) PeerID() identity.DeviceID { return s.primary.peer }
func (s *quicSession) RemoteAddr() string        { return s.primary.RemoteAddr() }
func (s *quicSession) Transport() string         { return "quic" }
func (s *quicSession) Done() <-chan struct{}     { return s.primary.Done() }

// Close ends the first connection (its reason reaches the peer first), then the others.
func (s *quicSession) Close(code uint64, reason string) error {
	err := s.primary.Close(code, reason)
	s.closeExtras(code, reason)
	s.cancel()
	return err
}

func (s *quicSession) closeExtras(code uint64, reason string) {
	s.mu.Lock()
	s.closed = true
	conns := s.conns[1:]
	attached := s.attached
	s.mu.Unlock()
	for _, c := range conns {
		c.Close(code, reason)
	}
	for _, c := range attached {
		c.Close(code, reason)
	}
}

// Metrics adds up the session's connections. RTTs and the path MTU are the
// first connection's; counters of a socket shared by several connections
// (the listener's) count once.
func (s *quicSession) Metrics() Metrics {
	s.mu.Lock()
	conns := append([]*quicConn(nil), s.conns...)
	s.mu.Unlock()
	m := conns[0].Metrics()
	m.Connections = len(conns)
	for _, c := range conns[1:] {
		x := c.Metrics()
		m.CongestionWindow += x.CongestionWindow
		m.CongestionEvents += x.CongestionEvents
		m.PacketsLost += x.PacketsLost
		m.BytesLost += x.BytesLost
		m.DatagramsRecv += x.DatagramsRecv
		m.BytesSent += x.BytesSent
		m.BytesRecv += x.BytesRecv
		if c.udp != conns[0].udp {
			m.DatagramsSent += x.DatagramsSent
			m.SendCalls += x.SendCalls
		}
	}
	return m
}

// quicListener accepts QUIC sessions on one UDP socket.
type quicListener struct {
	udp *countingUDP
	tr  *quic.Transport
	ln  *quic.Listener

	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	ready   chan *quicSession // new sessions for Accept
	pending chan struct{}     // one token per connection still in its header handshake

	mu       sync.Mutex
	sessions map[[tcpTokenLen]byte]*quicSession
}

func listenQUIC(addr string, tlsConf *tls.Config) (*quicListener, error) {
	udp, err := listenUDP(addr)
	if err != nil {
		return nil, fmt.Errorf("listen quic: %w", err)
	}
	tr := &quic.Transport{Conn: udp}
	ln, err := tr.Listen(tlsConf, quicConfig())
	if err != nil {
		tr.Close()
		udp.Close()
		return nil, fmt.Errorf("listen quic: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &quicListener{udp: udp, tr: tr, ln: ln, ctx: ctx, cancel: cancel,
		ready: make(chan *quicSession, tcpAcceptQueue), pending: make(chan struct{}, tcpMaxPending),
		sessions: make(map[[tcpTokenLen]byte]*quicSession)}
	go l.acceptLoop()
	return l, nil
}

func (l *quicListener) Addr() net.Addr { return l.udp.LocalAddr() }

func (l *quicListener) acceptLoop() {
	for {
		c, err := l.ln.Accept(l.ctx)
		if err != nil {
			return
		}
		select {
		case l.pending <- struct{}{}:
			go l.handshake(c)
		default:
			c.CloseWithError(quic.ApplicationErrorCode(errcode.AppOfErr(errcode.ErrListenerBusy)), errcode.ErrListenerBusy.Error())
		}
	}
}

// quicRefuse closes a connection whose header was refused; the code and reason reach the peer.
func quicRefuse(c *quicConn, err error) { c.Close(uint64(errcode.AppOfErr(err)), err.Error()) }

// handshake reads a new connection's header and starts or joins its session.
func (l *quicListener) handshake(qc *quic.Conn) {
	defer func() { <-l.pending }()
	c, err := newQUICConn(qc, l.udp, nil)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(l.ctx, tcpHandshakeTimeout)
	defer cancel()
	st, err := qc.AcceptStream(ctx)
	if err != nil {
		quicRefuse(c, errors.New("no stream"))
		return
	}
	st.SetReadDeadline(time.Now().Add(tcpHandshakeTimeout))
	var hdr [tcpJoinLen]byte
	if _, err := io.ReadFull(st, hdr[:]); err != nil {
		quicRefuse(c, errTCPBad)
		return
	}
	st.SetReadDeadline(time.Time{})
	token, flag, err := parseJoinHeader(hdr[:])
	if err != nil || flag == tcpFlagSpare {
		quicRefuse(c, errTCPBad)
		return
	}
	if flag == tcpFlagNew {
		l.start(c, token, quicStream{st})
		return
	}
	s := l.session(token)
	status := byte(errcode.StatusOf(errcode.ErrUnknownSession))
	if s != nil {
		status = s.add(c)
	}
	st.Write([]byte{status})
	st.Close()
	if status != byte(errcode.StatusOK) {
		// Give the answer time to arrive: the dialer closes once it read it.
		select {
		case <-c.Done():
		case <-time.After(time.Second):
		case <-l.ctx.Done():
		}
		quicRefuse(c, tcpStatusErr(status))
	}
}

// start registers a new session and queues it for Accept.
func (l *quicListener) start(c *quicConn, token [tcpTokenLen]byte, first Stream) {
	l.mu.Lock()
	if _, dup := l.sessions[token]; dup {
		l.mu.Unlock()
		quicRefuse(c, errTCPBad)
		return
	}
	s := listenerSession(c, token, first)
	l.sessions[token] = s
	l.mu.Unlock()
	go func() {
		<-s.ctx.Done()
		l.mu.Lock()
		delete(l.sessions, token)
		l.mu.Unlock()
	}()
	select {
	case l.ready <- s:
	default:
		s.Close(uint64(errcode.AppOfErr(errTCPBusy)), errTCPBusy.Error())
	}
}

// session finds a running session by its token.
func (l *quicListener) session(token [tcpTokenLen]byte) *quicSession {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sessions[token]
}

func (l *quicListener) Accept(ctx context.Context) (Conn, error) {
	select {
	case s := <-l.ready:
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.ctx.Done():
		return nil, net.ErrClosed
	}
}

func (l *quicListener) Close() error {
	l.cancel()
	for {
		select {
		case s := <-l.ready:
			s.Close(0, "listener closed")
			continue
		default:
		}
		break
	}
	err := l.ln.Close()
	l.tr.Close()
	l.udp.Close()
	return err
}
