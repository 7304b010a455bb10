// Package tcp is the TCP transport: a session is a group of TLS 1.3
// connections to one peer, and each stream is one of them, so streams never
// block each other and each gets its own congestion window.
//
// Every connection starts with a join header (package join) and the
// listener answers one status byte:
//
//   - FlagNew starts a session; Accept returns it, and this first connection
//     is the first stream on both sides (the control stream). The dialer
//     sends it with its first OpenStream, so a dialled session can still
//     attach instead (FlagAttach): then its first connection only links the
//     two sessions and carries no stream.
//   - FlagJoin adds a stream opened by the dialer (its OpenStream); the
//     listener's AcceptStream returns it.
//   - FlagSpare parks a connection the listener may claim for its own
//     OpenStream (it cannot dial back): it writes claim, the dialer echoes
//     it, its AcceptStream returns the connection, and it parks a new spare.
//     While parked, both ends block reading the spare: that is how each side
//     learns at once that the other ended the session (Done fires).
package tcp

import (
	"context"
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
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
	"github.com/ferrydrop/ferry/engine/internal/transport/spread"
)

const (
	// claim is what the listener writes on a parked spare to take it.
	claim byte = 0xC1
	// maxSessionConns bounds the live connections (streams and spares) of one session.
	maxSessionConns = 64
	// writeChunk bounds how much one TLS write may carry between stall-deadline refreshes.
	writeChunk = 1 << 20
	// maxDialing bounds the connections a dialled session has in handshake
	// at once. A listener sheds what one source address has beyond
	// join.MaxPendingPerSource in handshake (a flood's defence), and admits
	// join.PendingFloor however busy it is: a session that grows by many
	// connections at once (spread: 4 to 26 streams on random loss) lost
	// the excess, and with it the transfer (docs/benchmarks/lab-fastlossy.md).
	// The rest wait their turn, a few round trips.
	maxDialing = join.PendingFloor
)

var errClaim = errors.New("tcp: bad spare claim")

// countConn counts the bytes and write calls on one TCP socket (TLS records
// included, like QUIC's counters include packet headers). It embeds the
// *net.TCPConn so tls.Conn still finds CloseWrite and deadlines.
//
// While a stream's Write is under way the connection gathers: the TLS
// records that one Write makes (at most 16 KiB of data each, so a data
// stream's 256 KiB flush is 16 of them) go to the socket together, in one
// write of up to gatherMax bytes, not one write each. That is a fraction
// of the write system calls, and of the segments the kernel builds and
// the receiver takes in, for one copy of the bytes in memory
// (docs/benchmarks/trees.md). The records are on the socket, in order,
// before the stream's Write returns; writes outside one (the handshake,
// close_notify) go at once as before.
type countConn struct {
	*net.TCPConn
	sess *Session
	// arrived, if set, is called at the first bytes read, and cleared
	// (tls.Conn serialises its reads).
	arrived func()

	mu       sync.Mutex // guards the fields below
	gather   bool       // a stream's Write is under way
	gathered []byte     // records not yet written, at most gatherMax bytes
	writes   int64      // write calls on this socket (the session counts all of its own)
}

// gatherMax bounds the bytes a connection gathers before it writes them:
// a data stream's flush (256 KiB of data) and its records' overhead.
const gatherMax = 256<<10 + 16<<10

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	if n > 0 && c.arrived != nil {
		c.arrived()
		c.arrived = nil
	}
	c.sess.bytesRecv.Add(int64(n))
	return n, err
}

func (c *countConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.gather {
		return c.write(p)
	}
	if len(c.gathered)+len(p) > gatherMax {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) > gatherMax {
			return c.write(p)
		}
	}
	// Grown as needed, not made gatherMax at once: a control stream's
	// messages are small, and a peer's sessions each have one.
	c.gathered = append(c.gathered, p...)
	return len(p), nil
}

// write writes p to the socket. Called with c.mu held.
func (c *countConn) write(p []byte) (int, error) {
	c.writes++
	n, err := c.TCPConn.Write(p)
	c.sess.sendCalls.Add(1)
	c.sess.bytesSent.Add(int64(n))
	return n, err
}

// startGather makes the records written from now on wait in memory, until
// endGather.
func (c *countConn) startGather() {
	c.mu.Lock()
	c.gather = true
	c.mu.Unlock()
}

// endGather writes what was gathered and ends gathering.
func (c *countConn) endGather() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gather = false
	return c.flushLocked()
}

func (c *countConn) flushLocked() error {
	if len(c.gathered) == 0 {
		return nil
	}
	_, err := c.write(c.gathered)
	c.gathered = c.gathered[:0]
	return err
}

// Listener accepts TCP+TLS sessions on one socket.
type Listener struct {
	ln      net.Listener
	tlsConf *tls.Config
	cfg     transport.Config
	gate    *join.Gate
	wg      sync.WaitGroup // the accept loop
}

// Listen opens a listener on addr whose sessions are known to reg.
func Listen(addr string, tlsConf *tls.Config, reg *join.Registry, cfg transport.Config) (*Listener, error) {
	cfg = cfg.WithDefaults()
	lc := net.ListenConfig{KeepAliveConfig: keepAlive(cfg), Control: listenControl(cfg)}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		// A listener's socket is ours: whatever keeps it from opening is local.
		return nil, &transport.LocalError{Err: fmt.Errorf("listen tcp: %w", err)}
	}
	l := &Listener{ln: ln, tlsConf: tlsConf, cfg: cfg, gate: join.NewGate(reg, transport.TCP, cfg.HandshakeTimeout)}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

func keepAlive(cfg transport.Config) net.KeepAliveConfig {
	return net.KeepAliveConfig{Enable: true, Idle: cfg.KeepAlive, Interval: cfg.KeepAlive, Count: 3}
}

// Addr is the listening address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Kind is transport.TCP.
func (l *Listener) Kind() transport.Kind { return transport.TCP }

func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if l.gate.Context().Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient (e.g. EMFILE): back off briefly rather than spin.
			select {
			case <-l.gate.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		raw := c.(*net.TCPConn)
		stage := join.Connected
		if arrived(raw) {
			stage = join.Talking
		}
		if !l.gate.Handshake(raw.RemoteAddr().String(), stage, func(ctx context.Context, p *join.Pending) { l.handshake(ctx, raw, p) }) {
			c.Close() // too many handshakes in flight from its source: shed load
		}
	}
}

// handshake runs TLS and reads the join header of one accepted connection,
// bounded by ctx (the handshake timeout, the listener's life, and a
// newcomer taking its place), reporting its progress on p.
func (l *Listener) handshake(ctx context.Context, raw *net.TCPConn, p *join.Pending) {
	// Until the connection is handed over, listener close or timeout kills it.
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	setOptions(raw, l.cfg)
	cc := &countConn{TCPConn: raw, sess: &Session{}, // re-pointed to the session below
		arrived: func() { p.Reached(join.Talking) }}
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
	p.Reached(join.Identified)
	token, flag, refusal := join.ReadHeader(tc)
	if refusal == nil {
		p.Reached(join.Joined)
	}
	var (
		sess *Session
		s    *stream
	)
	switch {
	case refusal != nil:
	case flag == join.FlagNew, flag == join.FlagAttach:
		sess = newSession(l.cfg, false, token, peer, raw.RemoteAddr().String())
		cc.sess = sess
		s, _ = sess.add(tc, cc, true) // a new session has room
		if flag == join.FlagNew {
			refusal = l.gate.Start(token, sess)
		} else {
			refusal = l.gate.Attach(token, sess)
		}
	case flag == join.FlagJoin, flag == join.FlagSpare:
		var c transport.Conn
		if c, refusal = l.gate.Find(token, peer); refusal == nil {
			sess = c.(*Session)
			cc.sess = sess
			s, refusal = sess.add(tc, cc, false)
		}
	}
	if err := join.WriteStatus(tc, refusal); err != nil || refusal != nil {
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
	case join.FlagNew, join.FlagJoin:
		s.unclaimed = time.AfterFunc(l.cfg.UnclaimedTimeout, s.Abort)
		sess.incoming <- s // cannot block: capacity is maxSessionConns
	case join.FlagSpare:
		sp := &spare{s: s, echo: make(chan error, 1)}
		if !sess.goTracked(func() { sess.watchSpare(sp) }) {
			s.release()
			return
		}
		sess.spares <- sp
	case join.FlagAttach:
		// The first connection links the sessions; it carries no stream.
	}
}

// Accept returns the next new session. A session whose control stream
// nobody accepted within the unclaimed timeout has ended and is skipped.
func (l *Listener) Accept(ctx context.Context) (transport.Conn, error) {
	return l.gate.Accept(ctx)
}

// Withdraw refuses new sessions; running sessions go on and may still join
// connections, so the socket stays open until the last of them ended.
func (l *Listener) Withdraw() { l.gate.Withdraw(func() { l.ln.Close() }) }

// Resume takes new sessions again, unless the socket was released.
func (l *Listener) Resume() bool { return l.gate.Resume() }

// Close stops accepting, ends every session it accepted, and waits for its goroutines.
func (l *Listener) Close() error {
	err := l.ln.Close()
	if errors.Is(err, net.ErrClosed) && l.gate.Released() {
		err = nil
	}
	l.gate.Close()
	l.wg.Wait()
	return err
}

// Dial opens a session to addr: its first connection's TCP and TLS
// handshakes. The join header goes with the first OpenStream (or Attach).
// The TLS config is cloned and given a session cache, so the session's later
// connections resume TLS.
func Dial(ctx context.Context, addr string, tlsConf *tls.Config, cfg transport.Config) (*Session, error) {
	conf := tlsConf.Clone()
	conf.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	sess := newSession(cfg.WithDefaults(), true, join.NewToken(), identity.DeviceID{}, addr)
	sess.addr, sess.tlsConf = addr, conf
	s, err := sess.connect(ctx)
	if err != nil {
		sess.Close(nil)
		if oe := (*net.OpError)(nil); !errors.As(err, &oe) || oe.Op != "dial" {
			err = fmt.Errorf("dial tcp %s: %w", addr, err)
		} // else it says "dial tcp ADDR: ..." itself
		if transport.Refused(err) {
			err = &transport.NothingListeningError{Addr: addr, Err: err}
		}
		return nil, err
	}
	sess.remote = s.raw.RemoteAddr().String()
	sess.local = s.raw.LocalAddr().String()
	// BBR does not read random loss as congestion: one connection per
	// stream is enough. A loss-based control (Cubic, Reno) gains from more.
	if st, ok := tcpInfo(s.raw); ok && st.cc != "bbr" && sess.cfg.MaxFlows > 1 {
		w := spread.Watch(sess.ctx, sess.cfg.SpreadRule(), 1, sess.sample)
		sess.watch = w
		sess.advice = make(chan transport.Advice, 1)
		sess.wg.Go(func() { sess.follow(w) })
	}
	return sess, nil
}

// follow passes w's advice on: for TCP a flow is a stream.
func (c *Session) follow(w *spread.Watcher) {
	defer close(c.advice)
	defer w.Stop()
	for n := range w.Advice() {
		select { // replace advice the sender did not take yet
		case <-c.advice:
		default:
		}
		c.advice <- transport.Advice{Streams: n, Flows: n, Reason: w.Reason().Describe("TCP connections")}
	}
}

// sample is what the session's connections measured of the path: segments
// sent and retransmitted by every connection, the smallest minimum RTT and
// the mean smoothed RTT of those carrying data.
func (c *Session) sample() spread.Sample {
	c.mu.Lock()
	streams := make([]*stream, 0, len(c.streams))
	for s := range c.streams {
		streams = append(streams, s)
	}
	out := spread.Sample{Sent: uint64(c.retired.sent), Lost: uint64(c.retired.retrans)}
	c.mu.Unlock()
	var srtt time.Duration
	for _, s := range streams {
		st, ok := tcpInfo(s.raw)
		if !ok {
			continue
		}
		out.Sent += uint64(st.sent)
		out.Lost += uint64(st.retrans)
		if st.minRTT > 0 && (out.MinRTT == 0 || st.minRTT < out.MinRTT) {
			out.MinRTT = st.minRTT
		}
		if !s.first && st.sent >= 4 { // more than a join header: a data stream
			out.Flows++
			srtt += st.srtt
		}
	}
	if out.Flows > 0 {
		out.SRTT = srtt / time.Duration(out.Flows)
	}
	return out
}

// StreamsAdvised delivers how many streams (each its own connection) the
// sender should have open (transport.Spreader); nil when the session does
// not grow: a listener's, or one whose congestion control is BBR.
func (c *Session) StreamsAdvised() <-chan transport.Advice { return c.advice }

// LimitStreams bounds the streams the session advises to n: a stream is a
// flow (transport.StreamLimiter).
func (c *Session) LimitStreams(n int) {
	if c.watch != nil {
		c.watch.Limit(n)
	}
}

// DataStreams leaves the first streams to the sender (transport.Spreader):
// each is a connection of its own already.
func (c *Session) DataStreams() int { return 0 }

// Session is one session: the Conn of the TCP transport.
type Session struct {
	cfg     transport.Config
	client  bool
	remote  string
	local   string      // dialer only: the first connection's local address
	addr    string      // dialer only
	tlsConf *tls.Config // dialer only, with its session cache

	ctx      context.Context // cancelled by Close
	cancel   context.CancelFunc
	dialing  chan struct{}  // dialer only: a token per connection in handshake (maxDialing)
	incoming chan *stream   // listener: first + joins; dialer: claimed spares
	spares   chan *spare    // listener only: spares to claim in OpenStream
	wg       sync.WaitGroup // goroutines of the session (spare loop, spare watchers)

	// spareParked is closed when the dialer's first spare is parked: from
	// then on the listener side notices at once if this session ends.
	spareParked chan struct{}
	parkOnce    sync.Once

	bytesSent, bytesRecv, sendCalls atomic.Int64

	// advice carries spread's advice (dialer, loss-based congestion
	// control only); set before the session is handed out.
	advice chan transport.Advice
	watch  *spread.Watcher // the advice's source; nil when advice is

	// startMu orders the dialer's first header (FlagNew or FlagAttach)
	// before every join.
	startMu sync.Mutex
	started bool       // guarded by startMu
	token   join.Token // set before started; read only after

	mu      sync.Mutex // guards the fields below
	peer    identity.DeviceID
	first   *stream
	streams map[*stream]struct{}
	retired stats // counters of connections already closed
	// lastPath is what TCP_INFO said of a connection as it closed, so the
	// final result still reports the path once every connection is gone;
	// peak is the most connections in use at once.
	lastPath stats
	peak     int
	closed   bool
}

func newSession(cfg transport.Config, client bool, token join.Token, peer identity.DeviceID, remote string) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Session{
		cfg:      cfg,
		client:   client,
		token:    token,
		peer:     peer,
		remote:   remote,
		ctx:      ctx,
		cancel:   cancel,
		incoming: make(chan *stream, maxSessionConns),
		streams:  make(map[*stream]struct{}),
	}
	if client {
		c.spareParked = make(chan struct{})
		c.dialing = make(chan struct{}, maxDialing)
	} else {
		c.started = true
		c.spares = make(chan *spare, maxSessionConns)
	}
	return c
}

// add registers a connection with the session.
func (c *Session) add(tc *tls.Conn, cc *countConn, first bool) (*stream, error) {
	s := &stream{tc: tc, raw: cc.TCPConn, cc: cc, sess: c, first: first}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := join.CheckRoom(len(c.streams), maxSessionConns, c.closed); err != nil {
		return nil, err
	}
	c.streams[s] = struct{}{}
	c.peak = max(c.peak, len(c.streams))
	if first {
		c.first = s
	}
	return s, nil
}

func (c *Session) remove(s *stream) {
	st, _ := tcpInfo(s.raw)
	c.mu.Lock()
	if _, ok := c.streams[s]; ok {
		delete(c.streams, s)
		c.retired.retrans += st.retrans
		c.retired.sent += st.sent
		if st.srtt > 0 {
			c.lastPath = st
		}
	}
	c.mu.Unlock()
}

// connect opens one more TLS connection of this session (dialer side); the
// session's first one becomes its first stream.
func (c *Session) connect(ctx context.Context) (*stream, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HandshakeTimeout)
	defer cancel()
	defer context.AfterFunc(c.ctx, cancel)()
	d := net.Dialer{KeepAliveConfig: keepAlive(c.cfg), Control: control(c.cfg)}
	if c.cfg.LocalIP != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(c.cfg.LocalIP)}
	}
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, transport.Local(err)
	}
	raw := nc.(*net.TCPConn)
	setOptions(raw, c.cfg)
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	cc := &countConn{TCPConn: raw, sess: c}
	tc := tls.Client(cc, c.tlsConf)
	fail := func(err error) (*stream, error) {
		stop()
		raw.Close()
		return nil, c.dialErr(ctx, err)
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		return fail(err)
	}
	peer, err := identity.PeerID(tc.ConnectionState())
	if err != nil {
		return fail(err)
	}
	c.mu.Lock()
	first := c.first == nil && len(c.streams) == 0 && c.peer.IsZero()
	if first {
		c.peer = peer
	}
	perr := join.CheckPeer(c.peer, peer)
	c.mu.Unlock()
	if perr != nil {
		return fail(perr)
	}
	s, err := c.add(tc, cc, first)
	if err != nil {
		return fail(err)
	}
	if !stop() {
		s.release()
		return nil, c.dialErr(ctx, ctx.Err())
	}
	raw.SetDeadline(time.Time{})
	return s, nil
}

func (c *Session) dialErr(ctx context.Context, err error) error {
	switch {
	case c.ctx.Err() != nil:
		return transport.ErrSessionClosed
	case ctx.Err() != nil:
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

// header sends the join header on s and reads the listener's answer.
func (c *Session) header(ctx context.Context, s *stream, token join.Token, flag join.Flag) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HandshakeTimeout)
	defer cancel()
	defer context.AfterFunc(c.ctx, cancel)()
	stop := context.AfterFunc(ctx, func() { s.raw.SetDeadline(time.Unix(1, 0)) })
	_, err := s.tc.Write(join.AppendHeader(nil, token, flag))
	// In TLS 1.3 the server checks our certificate after our handshake
	// returned: a refusal shows up here, as an alert, instead of the status.
	if err == nil {
		err = join.ReadStatus(s.tc)
	}
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return c.dialErr(ctx, err)
	}
	s.raw.SetDeadline(time.Time{})
	return nil
}

// dial opens a connection that joins the session with flag (dialer side),
// at most maxDialing at once.
func (c *Session) dial(ctx context.Context, flag join.Flag) (*stream, error) {
	select {
	case c.dialing <- struct{}{}:
		defer func() { <-c.dialing }()
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ctx.Done():
		return nil, transport.ErrSessionClosed
	}
	s, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.header(ctx, s, c.token, flag); err != nil {
		s.Abort()
		return nil, err
	}
	return s, nil
}

// start sends the first connection's header: the session begins at the
// listener. Called with startMu held.
func (c *Session) start(ctx context.Context, token join.Token, flag join.Flag) (*stream, error) {
	c.mu.Lock()
	s := c.first
	c.mu.Unlock()
	if s == nil {
		return nil, transport.ErrSessionClosed
	}
	if err := c.header(ctx, s, token, flag); err != nil {
		s.Abort()
		return nil, err
	}
	c.token, c.started = token, true
	c.goTracked(c.spareLoop)
	return s, nil
}

// Attach makes this dialled session take over the running session with
// token on another transport (see join.Attacher), instead of starting its
// own. It must come before any OpenStream.
func (c *Session) Attach(ctx context.Context, token join.Token) error {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	if c.started {
		return errors.New("tcp: attach after the session started")
	}
	_, err := c.start(ctx, token, join.FlagAttach)
	return err
}

// spareLoop keeps one spare connection parked at the listener so the
// listener can open streams too; it returns when the session ends.
func (c *Session) spareLoop() {
	backoff := 100 * time.Millisecond
	for c.ctx.Err() == nil {
		s, err := c.dial(c.ctx, join.FlagSpare)
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
		if err == nil && b[0] == claim {
			_, err = s.tc.Write(b[:])
		}
		if err != nil || b[0] != claim {
			// A parked spare only ends when the peer's session does.
			s.Abort()
			c.shutdown(endPeer)
			return
		}
		c.incoming <- s
	}
}

// SpareParked is closed once the dialer's first spare is parked (tests).
func (c *Session) SpareParked() <-chan struct{} { return c.spareParked }

// Token is the session's token.
func (c *Session) Token() join.Token {
	c.startMu.Lock()
	defer c.startMu.Unlock()
	return c.token
}

// OpenStream opens a stream: the dialer's first is the session's first
// connection, later ones join it; the listener claims a parked spare.
func (c *Session) OpenStream(ctx context.Context) (transport.Stream, error) {
	if c.client {
		c.startMu.Lock()
		if !c.started {
			s, err := c.start(ctx, c.token, join.FlagNew)
			c.startMu.Unlock()
			if err != nil {
				c.shutdown(endLocal)
				return nil, fmt.Errorf("tcp open stream: %w", err)
			}
			return s, nil
		}
		c.startMu.Unlock()
		s, err := c.dial(ctx, join.FlagJoin)
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
			if _, err := s.tc.Write([]byte{claim}); err != nil {
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
				return nil, transport.ErrSessionClosed
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.ctx.Done():
			return nil, transport.ErrSessionClosed
		}
	}
}

// AcceptStream returns the next stream the peer opened.
func (c *Session) AcceptStream(ctx context.Context) (transport.Stream, error) {
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
			return nil, transport.ErrSessionClosed
		}
	}
}

// PeerID is the device the session's connections proved.
func (c *Session) PeerID() identity.DeviceID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peer
}

// RemoteAddr is the peer's address.
func (c *Session) RemoteAddr() string { return c.remote }

// LocalAddr is the local address of a dialled session's first connection
// (transport.LocalAddresser): TCP cannot move a connection, so when it goes
// away the session is lost.
func (c *Session) LocalAddr() string { return c.local }

// Transport is transport.TCP.
func (c *Session) Transport() transport.Kind { return transport.TCP }

// Done is closed when the session ended.
func (c *Session) Done() <-chan struct{} { return c.ctx.Done() }

// spare is a parked connection on the listener side; watchSpare reads it.
type spare struct {
	s       *stream
	claimed atomic.Bool
	echo    chan error // the dialer's echo of our claim, or the read error
}

// watchSpare blocks reading a parked spare: an error before we claimed it
// means the peer ended the session.
func (c *Session) watchSpare(sp *spare) {
	var b [1]byte
	_, err := io.ReadFull(sp.s.tc, b[:])
	if err == nil && b[0] != claim {
		err = errClaim
	}
	sp.echo <- err
	if err != nil && !sp.claimed.Load() {
		sp.s.Abort()
		c.shutdown(endPeer)
	}
}

// goTracked runs f in a goroutine that Close waits for, unless the session is closed.
func (c *Session) goTracked(f func()) bool {
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
// it does not learn err's code and reason. With an error, every stream is
// reset but the first, which ends after what was written on it: the
// protocol's cancel message, which tells the peer why.
func (c *Session) Close(err error) error {
	how := endLocal
	if errcode.AppOfErr(err) != errcode.AppNone {
		how = endAbort
	}
	c.shutdown(how)
	c.mu.Lock()
	first := c.first
	c.mu.Unlock()
	if first != nil {
		first.closeConn() // left open when the peer ended the session
	}
	c.wg.Wait()
	return nil
}

// ending says how a session ends.
type ending int

const (
	// endLocal: streams still writing are reset, so the peer reads an error
	// rather than a clean end; finished ones close gracefully.
	endLocal ending = iota
	// endAbort: every stream is reset but the first, which closes after
	// what was written on it (see Close).
	endAbort
	// endPeer: the peer ended the session. Every stream closes but the
	// first, whose reader still gets what the peer wrote last (its cancel)
	// before the end; Close closes it.
	endPeer
)

// shutdown closes the session without waiting for its goroutines, so they
// may call it themselves.
func (c *Session) shutdown(how ending) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	streams := make([]*stream, 0, len(c.streams))
	for s := range c.streams {
		streams = append(streams, s)
	}
	c.mu.Unlock()
	c.cancel()
	for _, s := range streams {
		switch {
		case s.first && how == endPeer:
			continue
		case s.first && how == endAbort:
		case how == endAbort || !s.writeDone.Load():
			s.raw.SetLinger(0)
		}
		s.closeConn()
	}
	// Streams queued but never handed out were closed above; drop them.
	for {
		select {
		case <-c.incoming:
		case <-c.spares:
		default:
			return
		}
	}
}

// Metrics sums counters over the session's connections; RTT and buffer
// sizes come from the first connection.
func (c *Session) Metrics() transport.Metrics {
	c.mu.Lock()
	first := c.first
	streams := make([]*stream, 0, len(c.streams))
	for s := range c.streams {
		streams = append(streams, s)
	}
	retrans := c.retired.retrans
	last, peak := c.lastPath, c.peak
	c.mu.Unlock()
	m := transport.Metrics{
		Transport:   string(transport.TCP),
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
			m.SmoothedRTTms = transport.Ms(st.srtt)
			m.MinRTTms = transport.Ms(st.minRTT)
			m.LatestRTTms = transport.Ms(st.srtt) // TCP_INFO keeps no separate latest sample
		}
	}
	m.PacketsLost = retrans
	if first != nil {
		m.RecvBuffer, m.SendBuffer = transport.SocketBuffers(first.raw)
	}
	if m.SmoothedRTTms == 0 && last.srtt > 0 {
		// The session is over (or its first connection is): report the path
		// as the last connection to close saw it.
		m.CongestionControl = last.cc
		m.SmoothedRTTms, m.MinRTTms, m.LatestRTTms = transport.Ms(last.srtt), transport.Ms(last.minRTT), transport.Ms(last.srtt)
		m.CongestionWindow = max(m.CongestionWindow, last.cwnd)
		m.Connections = max(m.Connections, peak)
	}
	return m
}

// stream is one TLS connection of a session.
type stream struct {
	tc    *tls.Conn
	raw   *net.TCPConn
	cc    *countConn // under tc
	sess  *Session
	first bool
	// unclaimed drops a joined stream nobody accepted (listener side).
	unclaimed *time.Timer

	// Deadline bookkeeping; Read and Write are each used by one goroutine at a time.
	readArmed, writeArmed time.Time

	readDone, writeDone atomic.Bool
	closeOnce           sync.Once
}

// armRead and armWrite push the stall deadline forward, at most 16 times per
// timeout period so the hot path stays cheap. Deadlines are the kernel's
// wall clock, not an injected one.
func (s *stream) armRead() {
	if s.first {
		return
	}
	now := time.Now()
	if stall := s.sess.cfg.StallTimeout; now.Sub(s.readArmed) > stall/16 {
		s.readArmed = now
		s.tc.SetReadDeadline(now.Add(stall))
	}
}

func (s *stream) armWrite() {
	now := time.Now()
	if stall := s.sess.cfg.StallTimeout; now.Sub(s.writeArmed) > stall/16 {
		s.writeArmed = now
		s.tc.SetWriteDeadline(now.Add(stall))
	}
}

func (s *stream) stalled(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.Abort()
		return fmt.Errorf("tcp stream: %w: no progress for %v", transport.ErrStreamStalled, s.sess.cfg.StallTimeout)
	}
	return err
}

func (s *stream) Read(p []byte) (int, error) {
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
			s.sess.shutdown(endAbort)
		}
	}
	return n, err
}

func (s *stream) Write(p []byte) (int, error) {
	var done int
	for done < len(p) {
		end := min(len(p), done+writeChunk)
		s.armWrite()
		s.cc.startGather()
		n, err := s.tc.Write(p[done:end])
		if ferr := s.cc.endGather(); err == nil && ferr != nil {
			// tls.Conn took the records: the stream is broken all the same.
			n, err = 0, ferr
		}
		done += n
		if err != nil {
			err = s.stalled(err)
			s.Abort()
			if s.first {
				s.sess.shutdown(endAbort)
			}
			return done, err
		}
	}
	return done, nil
}

// Close sends close_notify and FIN; the connection is released once the
// peer's side has ended too.
func (s *stream) Close() error {
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
func (s *stream) Abort() {
	s.raw.SetLinger(0)
	s.release()
}

// release closes the connection and, for the first stream, the session.
func (s *stream) release() {
	s.closeConn()
	if s.first {
		s.sess.shutdown(endLocal)
	}
}

func (s *stream) closeConn() {
	s.closeOnce.Do(func() {
		s.sess.remove(s)
		s.raw.Close() // not tc.Close: it would try to send close_notify and block
	})
}
