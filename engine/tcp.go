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
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
)

// The TCP transport carries many streams per peer as a "session" of TLS
// connections: each stream is one TLS 1.3 connection. Right after the
// handshake the dialer sends a join header (16-byte session token + 1 flag
// byte) and the listener answers with one status byte:
//
//   - tcpFlagNew starts a session; Accept returns it, and this first
//     connection is the first stream on both sides (the control stream).
//   - tcpFlagJoin adds a stream opened by the dialer (its OpenStream); the
//     listener's AcceptStream returns it.
//   - tcpFlagSpare parks a connection the listener may claim for its own
//     OpenStream (it cannot dial back): it writes tcpClaim, the dialer echoes
//     it, its AcceptStream returns the connection, and it parks a new spare.
//     While parked, both ends block reading the spare: that is how each side
//     learns at once that the other ended the session (Done fires).
//
// A join must present the same certificate as the session, unknown tokens are
// refused, and a session holds at most tcpMaxSessionConns live connections.
const (
	tcpTokenLen = 16

	tcpFlagNew   byte = 1
	tcpFlagJoin  byte = 2
	tcpFlagSpare byte = 3

	tcpClaim byte = 0xC1

	// tcpMaxSessionConns bounds the live connections (streams and spares) of one session.
	tcpMaxSessionConns = 64
	// tcpMaxPending bounds handshakes in flight per listener.
	tcpMaxPending = 64
	// tcpAcceptQueue bounds new sessions waiting for Accept.
	tcpAcceptQueue = 16
)

// Tunables; variables so tests can shorten them.
var (
	// tcpHandshakeTimeout bounds the TLS handshake plus the join header.
	tcpHandshakeTimeout = 10 * time.Second
	// tcpUnclaimedTimeout drops a joined stream that AcceptStream has not
	// returned within this time, so a peer cannot pile up idle connections.
	tcpUnclaimedTimeout = 10 * time.Second
	// tcpStallTimeout fails a stream whose Read or Write makes no progress for
	// this long (the effective limit lies between 15/16 of it and all of it).
	// The control stream's reads are exempt: it may legitimately wait for a
	// user to answer; its liveness comes from keepalive and TCP_USER_TIMEOUT.
	tcpStallTimeout = 30 * time.Second
	// tcpKeepAlive is the idle time and probe interval of TCP keepalive.
	tcpKeepAlive = 5 * time.Second
)

// ErrTCPRefused is returned by dialTCP and OpenStream when the listener
// refuses a connection (and by a QUIC session's join, see quicsession.go).
var ErrTCPRefused = errcode.ErrRefused

// ErrStreamStalled is returned by a TCP stream whose Read or Write made no
// progress for tcpStallTimeout.
var ErrStreamStalled = errors.New("stream stalled")

var errTCPSessionClosed = errors.New("tcp: session closed")

// tcpJoinLen is the size of the join header: token, then flag.
const tcpJoinLen = tcpTokenLen + 1

// appendJoinHeader appends the header a dialer sends after the handshake.
func appendJoinHeader(b []byte, token [tcpTokenLen]byte, flag byte) []byte {
	return append(append(b, token[:]...), flag)
}

// parseJoinHeader parses the header read from a dialer (peer input).
func parseJoinHeader(b []byte) (token [tcpTokenLen]byte, flag byte, err error) {
	if len(b) != tcpJoinLen {
		return token, 0, errTCPBad
	}
	copy(token[:], b)
	flag = b[tcpTokenLen]
	switch flag {
	case tcpFlagNew, tcpFlagJoin, tcpFlagSpare:
		return token, flag, nil
	}
	return token, 0, errTCPBad
}

// Refusals by status byte (package errcode has the table); each wraps ErrTCPRefused.
var (
	errTCPUnknown = errcode.ErrUnknownSession
	errTCPPeer    = errcode.ErrPeerMismatch
	errTCPFull    = errcode.ErrSessionFull
	errTCPBusy    = errcode.ErrListenerBusy
	errTCPBad     = errcode.ErrBadHeader
	errTCPClaim   = errors.New("tcp: bad spare claim")
)

func tcpStatusErr(st byte) error { return errcode.FromStatus(errcode.Status(st)) }

// countConn counts the bytes and write calls on one TCP socket (TLS records
// included, like QUIC's counters include packet headers). It embeds the
// *net.TCPConn so tls.Conn still finds CloseWrite and deadlines.
type countConn struct {
	*net.TCPConn
	sess *tcpConn
}

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	c.sess.bytesRecv.Add(int64(n))
	return n, err
}

func (c *countConn) Write(p []byte) (int, error) {
	n, err := c.TCPConn.Write(p)
	c.sess.sendCalls.Add(1)
	c.sess.bytesSent.Add(int64(n))
	return n, err
}

// tcpListener accepts TCP+TLS sessions on one socket.
type tcpListener struct {
	ln       net.Listener
	tlsConf  *tls.Config
	ctx      context.Context
	cancel   context.CancelFunc
	accepted chan *tcpConn
	pending  chan struct{} // semaphore: handshakes in flight
	wg       sync.WaitGroup

	mu       sync.Mutex // guards the fields below
	sessions map[[tcpTokenLen]byte]*tcpConn
	closed   bool
}

func listenTCP(addr string, tlsConf *tls.Config) (*tcpListener, error) {
	lc := net.ListenConfig{
		KeepAliveConfig: tcpKeepAliveConfig(),
		Control:         tcpControl,
	}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen tcp: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &tcpListener{
		ln:       ln,
		tlsConf:  tlsConf,
		ctx:      ctx,
		cancel:   cancel,
		accepted: make(chan *tcpConn, tcpAcceptQueue),
		pending:  make(chan struct{}, tcpMaxPending),
		sessions: make(map[[tcpTokenLen]byte]*tcpConn),
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

func tcpKeepAliveConfig() net.KeepAliveConfig {
	return net.KeepAliveConfig{Enable: true, Idle: tcpKeepAlive, Interval: tcpKeepAlive, Count: 3}
}

func (l *tcpListener) Addr() net.Addr { return l.ln.Addr() }

func (l *tcpListener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if l.ctx.Err() != nil {
				return
			}
			// Transient (e.g. EMFILE): back off briefly rather than spin.
			select {
			case <-l.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		select {
		case l.pending <- struct{}{}:
		default:
			c.Close() // too many handshakes in flight: shed load
			continue
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer func() { <-l.pending }()
			l.handshake(c.(*net.TCPConn))
		}()
	}
}

// handshake runs TLS and reads the join header of one accepted connection,
// bounded by tcpHandshakeTimeout and by the listener's life.
func (l *tcpListener) handshake(raw *net.TCPConn) {
	ctx, cancel := context.WithTimeout(l.ctx, tcpHandshakeTimeout)
	defer cancel()
	// Until the connection is handed over, listener close or timeout kills it.
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	setTCPOptions(raw)
	cc := &countConn{TCPConn: raw, sess: &tcpConn{}} // re-pointed to the session below
	tc := tls.Server(cc, l.tlsConf)
	fail := func() {
		stop()
		raw.Close()
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		fail()
		return
	}
	peer, err := identity.PeerID(tc.ConnectionState())
	if err != nil {
		fail()
		return
	}
	var hdr [tcpJoinLen]byte
	if _, err := io.ReadFull(tc, hdr[:]); err != nil {
		fail()
		return
	}
	token, flag, herr := parseJoinHeader(hdr[:])

	var (
		sess *tcpConn
		st   = byte(errcode.StatusOK)
	)
	l.mu.Lock()
	switch {
	case herr != nil:
		st = byte(errcode.StatusOf(errcode.ErrBadHeader))
	case l.closed:
		st = byte(errcode.StatusOf(errcode.ErrListenerBusy))
	case flag == tcpFlagNew:
		if _, dup := l.sessions[token]; dup {
			st = byte(errcode.StatusOf(errcode.ErrBadHeader))
			break
		}
		sess = newTCPConn(false, token, peer, raw.RemoteAddr().String())
		sess.ln = l
		select {
		case l.accepted <- sess:
			l.sessions[token] = sess
		default:
			st, sess = byte(errcode.StatusOf(errcode.ErrListenerBusy)), nil
		}
	default: // join or spare
		sess = l.sessions[token]
		switch {
		case sess == nil:
			st = byte(errcode.StatusOf(errcode.ErrUnknownSession))
		case sess.peer != peer:
			st, sess = byte(errcode.StatusOf(errcode.ErrPeerMismatch)), nil
		}
	}
	l.mu.Unlock()

	var s *tcpStream
	if sess != nil {
		cc.sess = sess
		s, err = sess.add(tc, cc, flag == tcpFlagNew)
		if err != nil {
			st = byte(errcode.StatusOf(errcode.ErrSessionFull))
			if errors.Is(err, errTCPSessionClosed) {
				st = byte(errcode.StatusOf(errcode.ErrUnknownSession))
			}
			if flag == tcpFlagNew {
				sess.Close(0, "")
			}
		}
	}
	if _, err := tc.Write([]byte{st}); err != nil || st != byte(errcode.StatusOK) {
		if s != nil {
			s.release()
		}
		fail()
		return
	}
	if !stop() {
		// The deadline fired (timeout or listener close) while we finished.
		s.release()
		return
	}
	raw.SetDeadline(time.Time{})
	switch flag {
	case tcpFlagNew, tcpFlagJoin:
		s.unclaimed = time.AfterFunc(tcpUnclaimedTimeout, s.Abort)
		sess.incoming <- s // cannot block: capacity is tcpMaxSessionConns
	case tcpFlagSpare:
		sp := &tcpSpare{s: s, echo: make(chan error, 1)}
		if !sess.goTracked(func() { sess.watchSpare(sp) }) {
			s.release()
			return
		}
		sess.spares <- sp
	}
}

// Accept returns the next new session. A session whose control stream
// nobody accepted within tcpUnclaimedTimeout has ended and is skipped.
func (l *tcpListener) Accept(ctx context.Context) (Conn, error) {
	for {
		select {
		case c := <-l.accepted:
			if c.ctx.Err() != nil {
				continue
			}
			return c, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.ctx.Done():
			return nil, net.ErrClosed
		}
	}
}

// Close stops accepting, ends every session it accepted, and waits for its goroutines.
func (l *tcpListener) Close() error {
	l.mu.Lock()
	l.closed = true
	sessions := make([]*tcpConn, 0, len(l.sessions))
	for _, s := range l.sessions {
		sessions = append(sessions, s)
	}
	l.mu.Unlock()
	l.cancel()
	err := l.ln.Close()
	l.wg.Wait()
	for _, s := range sessions {
		s.Close(0, "listener closed")
	}
	return err
}

func (l *tcpListener) forget(token [tcpTokenLen]byte) {
	l.mu.Lock()
	delete(l.sessions, token)
	l.mu.Unlock()
}

// dialTCP opens a session to addr. The TLS config is cloned and given a
// session cache, so the session's later connections resume TLS.
func dialTCP(ctx context.Context, addr string, tlsConf *tls.Config) (Conn, error) {
	conf := tlsConf.Clone()
	conf.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	var token [tcpTokenLen]byte
	rand.Read(token[:])
	sess := newTCPConn(true, token, identity.DeviceID{}, addr)
	sess.addr, sess.tlsConf = addr, conf
	s, err := sess.dial(ctx, tcpFlagNew)
	if err != nil {
		sess.Close(0, "")
		return nil, fmt.Errorf("dial tcp %s: %w", addr, err)
	}
	sess.remote = s.raw.RemoteAddr().String()
	sess.firstCh <- s
	sess.goTracked(sess.spareLoop)
	return sess, nil
}

// tcpConn is one session: the Conn of the TCP transport.
type tcpConn struct {
	client  bool
	token   [tcpTokenLen]byte
	remote  string
	addr    string      // dialer only
	tlsConf *tls.Config // dialer only, with its session cache
	ln      *tcpListener

	ctx      context.Context // cancelled by Close
	cancel   context.CancelFunc
	incoming chan *tcpStream // listener: first + joins; dialer: claimed spares
	spares   chan *tcpSpare  // listener only: spares to claim in OpenStream
	wg       sync.WaitGroup  // goroutines of the session (spare loop, spare watchers)

	firstCh chan *tcpStream // dialer only: the first connection until OpenStream takes it
	// spareParked is closed when the dialer's first spare is parked: from
	// then on the listener side notices at once if this session ends.
	spareParked chan struct{}
	parkOnce    sync.Once

	bytesSent, bytesRecv, sendCalls atomic.Int64

	mu      sync.Mutex // guards the fields below
	peer    identity.DeviceID
	first   *tcpStream
	streams map[*tcpStream]struct{}
	retired tcpStats // counters of connections already closed
	// lastPath is what TCP_INFO said of a connection as it closed, so the
	// final result still reports the path once every connection is gone;
	// peak is the most connections in use at once.
	lastPath tcpStats
	peak     int
	closed   bool
}

func newTCPConn(client bool, token [tcpTokenLen]byte, peer identity.DeviceID, remote string) *tcpConn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &tcpConn{
		client:   client,
		token:    token,
		peer:     peer,
		remote:   remote,
		ctx:      ctx,
		cancel:   cancel,
		incoming: make(chan *tcpStream, tcpMaxSessionConns),
		streams:  make(map[*tcpStream]struct{}),
	}
	if client {
		c.firstCh = make(chan *tcpStream, 1)
		c.spareParked = make(chan struct{})
	} else {
		c.spares = make(chan *tcpSpare, tcpMaxSessionConns)
	}
	return c
}

// add registers a connection with the session.
func (c *tcpConn) add(tc *tls.Conn, cc *countConn, first bool) (*tcpStream, error) {
	s := &tcpStream{tc: tc, raw: cc.TCPConn, sess: c, first: first}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errTCPSessionClosed
	}
	if len(c.streams) >= tcpMaxSessionConns {
		return nil, tcpStatusErr(byte(errcode.StatusOf(errcode.ErrSessionFull)))
	}
	c.streams[s] = struct{}{}
	c.peak = max(c.peak, len(c.streams))
	if first {
		c.first = s
	}
	return s, nil
}

func (c *tcpConn) remove(s *tcpStream) {
	st, _ := tcpInfo(s.raw)
	c.mu.Lock()
	if _, ok := c.streams[s]; ok {
		delete(c.streams, s)
		c.retired.retrans += st.retrans
		if st.srtt > 0 {
			c.lastPath = st
		}
	}
	c.mu.Unlock()
}

// dial opens one more TLS connection of this session (dialer side).
func (c *tcpConn) dial(ctx context.Context, flag byte) (*tcpStream, error) {
	ctx, cancel := context.WithTimeout(ctx, tcpHandshakeTimeout)
	defer cancel()
	defer context.AfterFunc(c.ctx, cancel)()
	d := net.Dialer{KeepAliveConfig: tcpKeepAliveConfig(), Control: tcpControl}
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, err
	}
	raw := nc.(*net.TCPConn)
	setTCPOptions(raw)
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	cc := &countConn{TCPConn: raw, sess: c}
	tc := tls.Client(cc, c.tlsConf)
	fail := func(err error) (*tcpStream, error) {
		stop()
		raw.Close()
		if c.ctx.Err() != nil {
			return nil, errTCPSessionClosed
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, err
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		return fail(err)
	}
	peer, err := identity.PeerID(tc.ConnectionState())
	if err != nil {
		return fail(err)
	}
	c.mu.Lock()
	if flag == tcpFlagNew {
		c.peer = peer
	}
	same := c.peer == peer
	c.mu.Unlock()
	if !same {
		return fail(fmt.Errorf("%w: peer certificate changed within the session", ErrTCPRefused))
	}
	if _, err := tc.Write(appendJoinHeader(nil, c.token, flag)); err != nil {
		return fail(err)
	}
	// In TLS 1.3 the server checks our certificate after our handshake
	// returned: a refusal shows up here, as an alert, instead of the status.
	var st [1]byte
	if _, err := io.ReadFull(tc, st[:]); err != nil {
		return fail(err)
	}
	if err := tcpStatusErr(st[0]); err != nil {
		return fail(err)
	}
	s, err := c.add(tc, cc, flag == tcpFlagNew)
	if err != nil {
		return fail(err)
	}
	if !stop() {
		s.release()
		return fail(ctx.Err())
	}
	raw.SetDeadline(time.Time{})
	return s, nil
}

// spareLoop keeps one spare connection parked at the listener so the
// listener can open streams too; it returns when the session ends.
func (c *tcpConn) spareLoop() {
	backoff := 100 * time.Millisecond
	for c.ctx.Err() == nil {
		s, err := c.dial(c.ctx, tcpFlagSpare)
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			// Full session or a transient failure: retry later, bounded.
			select {
			case <-c.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		c.parkOnce.Do(func() { close(c.spareParked) })
		var b [1]byte
		_, err = io.ReadFull(s.tc, b[:])
		if err == nil && b[0] == tcpClaim {
			_, err = s.tc.Write(b[:])
		}
		if err != nil || b[0] != tcpClaim {
			// A parked spare only ends when the peer's session does.
			s.Abort()
			c.shutdown(false)
			return
		}
		c.incoming <- s
	}
}

func (c *tcpConn) OpenStream(ctx context.Context) (Stream, error) {
	if c.client {
		// The session's first connection is the dialer's first stream.
		select {
		case s := <-c.firstCh:
			return s, nil
		default:
		}
		s, err := c.dial(ctx, tcpFlagJoin)
		if err != nil {
			return nil, fmt.Errorf("tcp open stream: %w", err)
		}
		return s, nil
	}
	for {
		select {
		case sp := <-c.spares:
			sp.claimed.Store(true)
			s := sp.s
			s.armWrite()
			if _, err := s.tc.Write([]byte{tcpClaim}); err != nil {
				s.Abort()
				continue // the spare died while parked: wait for the next
			}
			select {
			case err := <-sp.echo:
				if err != nil {
					s.Abort()
					continue
				}
				return s, nil
			case <-ctx.Done():
				s.Abort()
				return nil, ctx.Err()
			case <-c.ctx.Done():
				return nil, errTCPSessionClosed
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.ctx.Done():
			return nil, errTCPSessionClosed
		}
	}
}

func (c *tcpConn) AcceptStream(ctx context.Context) (Stream, error) {
	for {
		select {
		case s := <-c.incoming:
			if s.unclaimed != nil && !s.unclaimed.Stop() {
				continue // dropped for waiting too long
			}
			return s, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.ctx.Done():
			return nil, errTCPSessionClosed
		}
	}
}

func (c *tcpConn) PeerID() identity.DeviceID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peer
}
func (c *tcpConn) RemoteAddr() string    { return c.remote }
func (c *tcpConn) Transport() string     { return "tcp" }
func (c *tcpConn) Done() <-chan struct{} { return c.ctx.Done() }

// tcpSpare is a parked connection on the listener side; watchSpare reads it.
type tcpSpare struct {
	s       *tcpStream
	claimed atomic.Bool
	echo    chan error // the dialer's echo of our claim, or the read error
}

// watchSpare blocks reading a parked spare: an error before we claimed it
// means the peer ended the session.
func (c *tcpConn) watchSpare(sp *tcpSpare) {
	var b [1]byte
	_, err := io.ReadFull(sp.s.tc, b[:])
	if err == nil && b[0] != tcpClaim {
		err = errTCPClaim
	}
	sp.echo <- err
	if err != nil && !sp.claimed.Load() {
		sp.s.Abort()
		c.shutdown(false)
	}
}

// goTracked runs f in a goroutine that Close waits for, unless the session is closed.
func (c *tcpConn) goTracked(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// Close ends every connection of the session and waits for its goroutines.
// TCP has no connection-level close frame: the peer sees its streams reset
// (or ended, where both sides had finished writing) and its Done fires, but
// it does not learn code and reason.
func (c *tcpConn) Close(code uint64, reason string) error {
	c.shutdown(code != 0)
	c.wg.Wait()
	return nil
}

// shutdown closes the session without waiting for its goroutines, so they
// may call it themselves.
func (c *tcpConn) shutdown(abort bool) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	streams := make([]*tcpStream, 0, len(c.streams))
	for s := range c.streams {
		streams = append(streams, s)
	}
	c.mu.Unlock()
	c.cancel()
	for _, s := range streams {
		// A stream still writing is reset, so the peer reads an error rather
		// than a clean end; finished ones close gracefully.
		if abort || !s.writeDone.Load() {
			s.raw.SetLinger(0)
		}
		s.closeConn()
	}
	if c.ln != nil {
		c.ln.forget(c.token)
	}
	// Streams queued but never handed out were closed above; drop them.
	for {
		select {
		case <-c.incoming:
		case <-c.spares:
		case <-c.firstCh:
		default:
			return
		}
	}
}

// Metrics sums counters over the session's connections; RTT and buffer
// sizes come from the first (control) connection.
func (c *tcpConn) Metrics() Metrics {
	c.mu.Lock()
	first := c.first
	streams := make([]*tcpStream, 0, len(c.streams))
	for s := range c.streams {
		streams = append(streams, s)
	}
	retrans := c.retired.retrans
	last, peak := c.lastPath, c.peak
	c.mu.Unlock()
	m := Metrics{
		Transport:   "tcp",
		BytesSent:   c.bytesSent.Load(),
		BytesRecv:   c.bytesRecv.Load(),
		SendCalls:   c.sendCalls.Load(),
		Connections: len(streams),
	}
	for _, s := range streams {
		st, ok := tcpInfo(s.raw)
		if !ok {
			continue
		}
		retrans += st.retrans
		m.CongestionWindow += st.cwnd
		if s == first {
			m.CongestionControl = st.cc
			m.SmoothedRTTms = ms(st.srtt)
			m.MinRTTms = ms(st.minRTT)
			m.LatestRTTms = ms(st.srtt) // TCP_INFO keeps no separate latest sample
		}
	}
	m.PacketsLost = retrans
	if first != nil {
		m.RecvBuffer, m.SendBuffer = socketBuffers(first.raw)
	}
	if m.SmoothedRTTms == 0 && last.srtt > 0 {
		// The session is over (or its first connection is): report the path
		// as the last connection to close saw it.
		m.CongestionControl = last.cc
		m.SmoothedRTTms, m.MinRTTms, m.LatestRTTms = ms(last.srtt), ms(last.minRTT), ms(last.srtt)
		m.CongestionWindow = max(m.CongestionWindow, last.cwnd)
		m.Connections = max(m.Connections, peak)
	}
	return m
}

// tcpStream is one TLS connection of a session.
type tcpStream struct {
	tc    *tls.Conn
	raw   *net.TCPConn
	sess  *tcpConn
	first bool
	// unclaimed drops a joined stream nobody accepted (listener side).
	unclaimed *time.Timer

	// Deadline bookkeeping; Read and Write are each used by one goroutine at a time.
	readArmed, writeArmed time.Time

	readDone, writeDone atomic.Bool
	closeOnce           sync.Once
}

// armRead and armWrite push the stall deadline forward, at most 16 times per
// timeout period so the hot path stays cheap.
func (s *tcpStream) armRead() {
	if s.first {
		return
	}
	now := time.Now()
	if now.Sub(s.readArmed) > tcpStallTimeout/16 {
		s.readArmed = now
		s.tc.SetReadDeadline(now.Add(tcpStallTimeout))
	}
}

func (s *tcpStream) armWrite() {
	now := time.Now()
	if now.Sub(s.writeArmed) > tcpStallTimeout/16 {
		s.writeArmed = now
		s.tc.SetWriteDeadline(now.Add(tcpStallTimeout))
	}
}

func (s *tcpStream) stalled(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.Abort()
		return fmt.Errorf("tcp stream: %w: no progress for %v", ErrStreamStalled, tcpStallTimeout)
	}
	return err
}

func (s *tcpStream) Read(p []byte) (int, error) {
	s.armRead()
	n, err := s.tc.Read(p)
	if err != nil {
		if err == io.EOF {
			s.readDone.Store(true)
			if s.writeDone.Load() {
				s.release()
			}
			return n, err
		}
		err = s.stalled(err)
		s.Abort() // the connection is broken: free it
		if s.first {
			s.sess.shutdown(true)
		}
	}
	return n, err
}

// writeChunk bounds how much one TLS write may carry between deadline refreshes.
const writeChunk = 1 << 20

func (s *tcpStream) Write(p []byte) (int, error) {
	var done int
	for done < len(p) {
		end := min(len(p), done+writeChunk)
		s.armWrite()
		n, err := s.tc.Write(p[done:end])
		done += n
		if err != nil {
			err = s.stalled(err)
			s.Abort()
			if s.first {
				s.sess.shutdown(true)
			}
			return done, err
		}
	}
	return done, nil
}

// Close sends close_notify and FIN; the connection is released once the
// peer's side has ended too.
func (s *tcpStream) Close() error {
	if s.writeDone.Swap(true) {
		return nil
	}
	s.armWrite()
	err := s.tc.CloseWrite()
	if s.readDone.Load() {
		s.release()
	}
	return err
}

// Abort resets the connection: the peer reads an error, not io.EOF.
func (s *tcpStream) Abort() {
	s.raw.SetLinger(0)
	s.release()
}

// release closes the connection and, for the control stream, the session.
func (s *tcpStream) release() {
	s.closeConn()
	if s.first {
		s.sess.shutdown(false)
	}
}

func (s *tcpStream) closeConn() {
	s.closeOnce.Do(func() {
		s.sess.remove(s)
		s.raw.Close() // not tc.Close: it would try to send close_notify and block
	})
}
