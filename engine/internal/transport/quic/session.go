package quic

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
	"github.com/ferrydrop/ferry/engine/internal/transport/spread"
	"github.com/ferrydrop/ferry/internal/clock"
)

// A QUIC session is the group of QUIC connections one dialer holds to a peer
// for one exchange. quic-go runs each connection in one goroutine (packing,
// encrypting, acknowledging), and on a fast local link that goroutine, not
// the wire, caps a transfer (`ferry-bench ceiling --proto quic --conns 2`,
// docs/benchmarks/loopback.md). So on a clean local path (RTT under
// Config.CleanRTT) the dialer adds connections as soon as it opens its second
// stream (the first data stream). On longer paths a session starts as one
// connection, so a transfer is one congestion-controlled flow where paths
// are shared; it grows to more connections, up to Config.MaxFlows, only
// when its path shows random loss (package spread): quic-go's Reno-style
// control reads each loss as congestion, and N connections carry about N
// times what one does. A new stream goes to the connection with the fewest.
//
// The first stream the dialer opens on each connection starts with a join
// header (package join):
//
//   - FlagNew: the stream is the session's first stream (the control
//     stream) and carries on with the protocol; the listener's Accept
//     returns the session. No status answers it.
//   - FlagJoin: the connection joins the session with that token. The
//     listener answers one status byte and the stream ends; the dialer uses
//     the connection only after an OK.
//
// The listener's own streams (OpenStream) and the dialer's AcceptStream use
// the first connection only; the session ends when the first connection does.

// Session is a QUIC session: the Conn of the QUIC transport.
type Session struct {
	cfg     transport.Config
	client  bool
	token   join.Token
	primary *conn

	ctx    context.Context // ends with Close or when the primary ends
	cancel context.CancelFunc
	wg     sync.WaitGroup // the session's goroutines
	paths  chan transport.PathChange

	// dialer only
	remote  *net.UDPAddr
	tlsConf *tls.Config
	nw      transport.Network // nil: the connections do not follow the network
	mig     *migrator         // the first connection's
	// advice carries the streams the sender should open (transport.Spreader);
	// nil when the session does not grow.
	advice chan transport.Advice
	// registered is closed once the peer wrote on the first stream: by then
	// the listener has registered the session.
	registered     chan struct{}
	registeredOnce sync.Once

	// listener only
	incoming   chan transport.Stream // the first stream, then streams of every connection
	acceptDone chan struct{}         // closed when the primary stops accepting
	acceptErr  error                 // why; read after acceptDone

	mu        sync.Mutex // guards the fields below
	conns     []*conn    // primary first
	takenOver []transport.Conn
	admitted  bool    // listener: the engine admitted the session (Admitted)
	opened    int     // dialer: streams opened so far
	slots     []*slot // dialer: the primary, then connections being added or added
	closed    bool
}

// slot is one connection of a dialer's session, or one being added.
type slot struct {
	ready   chan struct{} // closed once conn is set or the join failed
	conn    *conn         // nil if the join failed
	streams int           // streams placed on it (the primary's count the control stream); guarded by Session.mu
}

func (x *slot) failed() bool {
	select {
	case <-x.ready:
		return x.conn == nil
	default:
		return false
	}
}

func newSession(cfg transport.Config, client bool, token join.Token, primary *conn) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{cfg: cfg, client: client, token: token, primary: primary, ctx: ctx, cancel: cancel,
		conns: []*conn{primary}, paths: make(chan transport.PathChange, 16)}
	s.wg.Go(func() {
		select {
		case <-primary.done():
			// The session lives and dies with its first connection.
			s.closeExtras(nil)
		case <-ctx.Done():
		}
		cancel()
	})
	return s
}

// Dial dials a new session: its first connection now, extra ones when the
// second stream is opened on a clean local path. Its connections follow
// the network only as far as the system routes them (see DialNetwork).
func Dial(ctx context.Context, addr string, tlsConf *tls.Config, cfg transport.Config) (*Session, error) {
	return DialNetwork(ctx, addr, tlsConf, cfg, nil)
}

// DialNetwork is Dial for a session whose connections follow nw's changes
// and leave a silent path for another local address (connection
// migration, see migrator); it reports each change (PathChanges).
func DialNetwork(ctx context.Context, addr string, tlsConf *tls.Config, cfg transport.Config, nw transport.Network) (*Session, error) {
	cfg = cfg.WithDefaults()
	c, ra, err := dialAddr(ctx, addr, tlsConf, cfg, true)
	if err != nil {
		return nil, err
	}
	return dialledSession(c, ra, tlsConf, cfg, nw, netip.Addr{}), nil
}

// dialAddr resolves addr ("host:port") and dials one connection to it
// (dialConn): what Dial, DialBridged and DialRaw begin with. Its errors
// name the address. With checkPort, a port the peer's host refuses for a
// second ends the dial (watchDeadPort), a NothingListeningError: Dial's
// and DialNetwork's, not DialBridged's (its bridge on this host is always
// open, and would carry the checks' bytes on to the peer) nor DialRaw's
// (the hostile tool's dials stay as they were).
func dialAddr(ctx context.Context, addr string, tlsConf *tls.Config, cfg transport.Config, checkPort bool) (*conn, *net.UDPAddr, error) {
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("dial quic %s: %w", addr, err)
	}
	dctx, cancel := context.WithCancelCause(ctx)
	var watch sync.WaitGroup
	checked := func() {}
	if checkPort {
		var check func(context.Context) portWord
		check, checked = portCheck(ra)
		watch.Go(func() { watchDeadPort(dctx, clock.Real{}, check, cancel) })
	}
	c, err := dialConn(dctx, ra, tlsConf, cfg)
	dead := ctx.Err() == nil && errors.Is(context.Cause(dctx), errDeadPort)
	cancel(nil)
	watch.Wait()
	checked()
	if err != nil {
		err = fmt.Errorf("dial quic %s: %w", addr, err)
		if dead {
			err = &transport.NothingListeningError{Addr: addr, Err: err}
		}
		return nil, nil, err
	}
	return c, ra, nil
}

// DialBridged is Dial to a bridge on this host (addr, a loopback port)
// that carries the session on over a path of its own, such as a TURN
// allocation's: the session does not follow the network (the path beyond
// the bridge is not its socket's), but it watches its path's silence as a
// shared socket's session does, and asks follow.PeerGone then (the port
// check would only find the bridge open), ending the connection with its
// error. Without it a session over a bridge that fell silent waited for
// QUIC's idle timeout whatever the relay knew of the peer. follow.Network
// is not used.
func DialBridged(ctx context.Context, addr string, tlsConf *tls.Config, cfg transport.Config, follow SharedDial) (*Session, error) {
	cfg = cfg.WithDefaults()
	c, ra, err := dialAddr(ctx, addr, tlsConf, cfg, false)
	if err != nil {
		return nil, err
	}
	here, _ := netip.AddrFromSlice(ra.IP)
	ses := dialledSession(c, ra, tlsConf, cfg, stillNetwork{here.Unmap()}, here.Unmap())
	ses.mig.portClosed, ses.mig.peerGone = follow.PortClosed, follow.PeerGone
	return ses, nil
}

// stillNetwork is a network that never changes and has one address: the
// bridge's side of a bridged session, which has nowhere to move.
type stillNetwork struct{ addr netip.Addr }

func (stillNetwork) Changed() <-chan struct{} { return nil }
func (n stillNetwork) Addrs() []netip.Addr    { return []netip.Addr{n.addr} }

// dialledSession is the session of a dialled first connection c to ra.
// dialledSession is the session of a dialled connection; bound is the
// address its socket is bound to (the zero Addr: unbound, the system picks
// the source of each datagram).
func dialledSession(c *conn, ra *net.UDPAddr, tlsConf *tls.Config, cfg transport.Config, nw transport.Network, bound netip.Addr) *Session {
	s := newSession(cfg, true, join.NewToken(), c)
	s.remote, s.tlsConf, s.nw = ra, tlsConf, nw
	s.registered = make(chan struct{})
	primary := &slot{ready: make(chan struct{}), conn: c, streams: 1} // the control stream
	close(primary.ready)
	s.slots = []*slot{primary}
	if cfg.MaxFlows > 1 {
		s.advice = make(chan transport.Advice, 1)
		rule := cfg.SpreadRule()
		rule.Max = min(rule.Max, transport.MaxQUICConns)
		w := spread.Watch(s.ctx, rule, 1, s.sample)
		s.wg.Go(func() {
			defer w.Stop()
			s.followAdvice(w.Advice(), w.Reason)
		})
	}
	s.mig = s.followNetwork(c, bound, s.reportPath)
	return s
}

// sample is what the session's connections measured of the path.
func (s *Session) sample() spread.Sample {
	s.mu.Lock()
	conns := append([]*conn(nil), s.conns...)
	s.mu.Unlock()
	out := spread.Sample{Flows: len(conns)}
	for i, c := range conns {
		st := c.c.ConnectionStats()
		out.Sent += st.PacketsSent
		out.Lost += st.PacketsLost
		if i == 0 {
			out.SRTT, out.MinRTT, out.LatestRTT = st.SmoothedRTT, st.MinRTT, st.LatestRTT
		}
	}
	return out
}

// followAdvice adds the connections advised (a spread.Watcher's Advice,
// and the Reason of each), and tells the sender how many streams give each
// of them one.
func (s *Session) followAdvice(advice <-chan int, reason func() spread.Reason) {
	defer close(s.advice)
	for n := range advice {
		s.mu.Lock()
		s.grow(n)
		// Data streams open or being opened, and one for each connection
		// that has none yet; none for a connection whose join failed, or
		// the stream would go to a connection that has one already.
		streams := s.opened - 1
		for _, x := range s.slots[1:] {
			if x.streams == 0 && !x.failed() {
				streams++
			}
		}
		s.mu.Unlock()
		select { // replace advice the sender did not take yet
		case <-s.advice:
		default:
		}
		s.advice <- transport.Advice{Streams: streams, Flows: n, Reason: reason().Describe("QUIC connections")}
	}
}

// DataStreams is one for a session that may grow (transport.Spreader):
// streams share their connection's congestion window, so four streams on
// the first connection would each carry a quarter of what one stream on
// each added connection does, and hold the batch's last chunks longest
// (lab: 120 ms, 2 % loss, 380 small files, 6-9 s against 3-4 s). On a
// clean local link, where the session adds its connections at once, and
// without growth the sender keeps its default.
func (s *Session) DataStreams() int {
	if !s.client || s.advice == nil || s.primary.c.ConnectionStats().MinRTT < s.cfg.CleanRTT {
		return 0
	}
	return 1
}

// StreamsAdvised delivers how many data streams the sender should have open
// (transport.Spreader); nil on a listener's session or without growth.
func (s *Session) StreamsAdvised() <-chan transport.Advice { return s.advice }

// followNetwork starts the migrator of a dialled connection.
func (s *Session) followNetwork(c *conn, bound netip.Addr, report func(transport.PathChange)) *migrator {
	if s.nw == nil {
		return nil
	}
	m := newMigrator(c, s.nw, s.remote, s.cfg, report)
	if bound.IsValid() {
		m.pinned, m.local = true, bound
	}
	c.wg.Go(m.run)
	return m
}

// reportPath hands a path change to PathChanges, dropping it when nobody reads.
func (s *Session) reportPath(c transport.PathChange) {
	select {
	case s.paths <- c:
	default:
	}
}

// PathChanges delivers the changes of the session's path: its first
// connection's migrations (dialer), or the peer's moves (listener).
func (s *Session) PathChanges() <-chan transport.PathChange { return s.paths }

// PathLost is closed when the dialled session's address went away and no
// other path reached the peer (see migrator); nil on a session that does
// not follow the network (transport.PathLoser).
func (s *Session) PathLost() <-chan struct{} {
	if s.mig == nil {
		return nil
	}
	return s.mig.lost
}

// LocalAddr is the local address the first connection uses now.
func (s *Session) LocalAddr() string { return s.primary.localAddr() }

// OpenStream opens a stream. The dialer's first stream carries the session
// header; later ones go round-robin over the session's connections.
func (s *Session) OpenStream(ctx context.Context) (transport.Stream, error) {
	if !s.client {
		return s.primary.openStream(ctx)
	}
	s.mu.Lock()
	n := s.opened
	s.opened++
	if n == 1 {
		s.startExtras()
	}
	var x *slot
	if n > 0 {
		x = s.place()
	}
	s.mu.Unlock()
	if n == 0 {
		st, err := s.primary.openStream(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := st.Write(join.AppendHeader(nil, s.token, join.FlagNew)); err != nil {
			st.Abort()
			return nil, err
		}
		return firstStream{st, s}, nil
	}
	c := s.primary
	select {
	case <-x.ready:
		if x.conn != nil {
			c = x.conn
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return c.openStream(ctx)
}

// place picks the connection for a new stream: the one with the fewest
// streams, the first of those on a tie, skipping connections whose join
// failed. Called with s.mu held.
func (s *Session) place() *slot {
	best := s.slots[0]
	for _, x := range s.slots[1:] {
		if x.streams < best.streams && !x.failed() {
			best = x
		}
	}
	best.streams++
	return best
}

// firstStream is the dialer's first stream; it notes the peer's first answer.
type firstStream struct {
	transport.Stream
	s *Session
}

func (f firstStream) Read(p []byte) (int, error) {
	n, err := f.Stream.Read(p)
	if n > 0 {
		f.s.registeredOnce.Do(func() { close(f.s.registered) })
	}
	return n, err
}

// startExtras begins adding connections if the path is a clean local link.
// Called with s.mu held, once.
//
// The path's length is its minimum RTT: the smoothed one still carries the
// handshake's samples, which on a busy machine include seconds of
// scheduling and crypto work (5-10 ms on loopback with other processes
// running, against a minimum of 0.05 ms), and a session that stayed one
// connection there spent ~20 % more CPU per byte (docs/transport-choice.md).
func (s *Session) startExtras() {
	if rtt := s.primary.c.ConnectionStats().MinRTT; rtt < s.cfg.CleanRTT {
		s.grow(s.cfg.QUICConns)
	}
}

// grow starts adding connections until the session has n, at most
// MaxQUICConns, counting those joined or joining: a connection whose join
// failed (timed out on a busy host, say) is tried again. Called with s.mu
// held.
func (s *Session) grow(n int) {
	live := 0
	for _, x := range s.slots {
		if !x.failed() {
			live++
		}
	}
	for ; live < min(n, transport.MaxQUICConns) && !s.closed; live++ {
		x := &slot{ready: make(chan struct{})}
		s.slots = append(s.slots, x)
		s.wg.Go(func() { s.join(x) })
	}
}

// join dials one extra connection and asks the listener to add it. A join
// that fails only costs the parallelism: its streams go to the first
// connection.
func (s *Session) join(x *slot) {
	defer close(x.ready)
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.JoinTimeout)
	defer cancel()
	c, err := dialConn(ctx, s.remote, s.tlsConf, s.cfg)
	if err != nil {
		return
	}
	if err := joinConn(ctx, c, s.token); err != nil {
		c.closeWait(0, "join failed")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.closeWait(0, "session ended")
		return
	}
	s.conns = append(s.conns, c)
	x.conn = c
	s.followNetwork(c, netip.Addr{}, nil) // the first connection's changes stand for the session's
	s.wg.Go(func() { s.endOnReset(c) })
}

// endOnReset ends the session when its extra connection c gets a stateless
// reset: the listener restarted (killed, crashed) and knows none of the
// session's connections. The first one may be idle, its control stream
// waiting, and its keep-alives are too small to draw a reset of their own
// (RFC 9000 10.3): it would count as lost only after the idle timeout,
// and the sender would reconnect and resume that much later.
func (s *Session) endOnReset(c *conn) {
	select {
	case <-c.done():
	case <-s.ctx.Done():
		return
	}
	if err := c.resetErr(); err != nil {
		s.primary.lose(err)
	}
}

// joinConn sends the join header on a new connection and reads the answer.
func joinConn(ctx context.Context, c *conn, token join.Token) error {
	st, err := c.c.OpenStreamSync(ctx)
	if err != nil {
		return c.err(err)
	}
	defer st.CancelRead(0)
	if d, ok := ctx.Deadline(); ok {
		st.SetDeadline(d)
	}
	if _, err := st.Write(join.AppendHeader(nil, token, join.FlagJoin)); err != nil {
		return c.err(err)
	}
	st.Close()
	if err := join.ReadStatus(st); err != nil {
		return c.err(err)
	}
	return nil
}

// newListenerSession starts the listener's side of a new session whose
// first stream (header read) is first; an attaching session has none.
func newListenerSession(cfg transport.Config, primary *conn, token join.Token, first transport.Stream) *Session {
	s := newSession(cfg, false, token, primary)
	s.incoming = make(chan transport.Stream, 64)
	s.acceptDone = make(chan struct{})
	if first != nil {
		s.incoming <- first
	}
	s.wg.Go(func() { s.acceptFrom(primary.acceptStream, true) })
	s.wg.Go((&peerWatcher{c: primary, report: s.reportPath}).run)
	return s
}

// add joins a connection to a listener's session.
func (s *Session) add(c *conn) error {
	if err := join.CheckPeer(s.primary.peer, c.peer); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := join.CheckRoom(len(s.conns), transport.MaxQUICConns, s.closed); err != nil {
		return err
	}
	s.conns = append(s.conns, c)
	if s.admitted {
		c.admission.admit()
	}
	s.wg.Go(func() { s.acceptFrom(c.acceptStream, false) })
	return nil
}

// Admitted tells a listener's session that the engine admitted it (its
// hello passed; transport.Admitter): its connections' flow-control
// windows may grow from now on, and those it adds are admitted as they
// join.
func (s *Session) Admitted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admitted = true
	for _, c := range s.conns {
		c.admission.admit()
	}
}

// TakeOver accepts the streams of a session of another transport from now
// on (auto moving a batch to TCP, see join.TakeOver); the session closes it
// when it ends. One at most.
func (s *Session) TakeOver(c transport.Conn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := join.CheckRoom(len(s.takenOver), 1, s.closed || s.client); err != nil {
		return err
	}
	s.takenOver = append(s.takenOver, c)
	s.wg.Go(func() { s.acceptFrom(c.AcceptStream, false) })
	return nil
}

// acceptFrom feeds the session the streams the dialer opens on one connection.
func (s *Session) acceptFrom(accept func(context.Context) (transport.Stream, error), primary bool) {
	for {
		st, err := accept(s.ctx)
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

// AcceptStream returns the next stream the peer opened.
func (s *Session) AcceptStream(ctx context.Context) (transport.Stream, error) {
	if s.client {
		return s.primary.acceptStream(ctx)
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

// PeerID is the device the first connection proved.
func (s *Session) PeerID() identity.DeviceID { return s.primary.peer }

// RemoteAddr is the peer's address.
func (s *Session) RemoteAddr() string { return s.primary.remoteAddr() }

// Transport is transport.QUIC.
func (s *Session) Transport() transport.Kind { return transport.QUIC }

// Done is closed when the first connection ended.
func (s *Session) Done() <-chan struct{} { return s.primary.done() }

// Token is the session's token (join.Attachable).
func (s *Session) Token() join.Token { return s.token }

// Registered is closed once the listener knows the session (join.Attachable).
func (s *Session) Registered() <-chan struct{} { return s.registered }

// InFlightWindow is how far behind a stream's write offset its data may be
// unread by the peer (transport.Switcher).
func (s *Session) InFlightWindow() int64 { return inFlightWindow }

// PathSample reads the first connection's path figures (transport.PathSampler).
func (s *Session) PathSample() transport.PathSample {
	st := s.primary.c.ConnectionStats()
	return transport.PathSample{SmoothedRTT: st.SmoothedRTT, MinRTT: st.MinRTT, LatestRTT: st.LatestRTT, PacketsLost: st.PacketsLost}
}

// Close ends the first connection (err's code from the one table, and its
// reason, reach the peer first), then the others, and waits for the
// session's goroutines.
func (s *Session) Close(why error) error {
	code, reason := uint64(errcode.AppOfErr(why)), errcode.Reason(why)
	err := s.primary.close(code, reason)
	s.closeExtras(why)
	s.cancel()
	s.wg.Wait()
	s.primary.wg.Wait()
	return err
}

func (s *Session) closeExtras(why error) {
	code, reason := uint64(errcode.AppOfErr(why)), errcode.Reason(why)
	s.mu.Lock()
	s.closed = true
	conns := s.conns[1:]
	takenOver := s.takenOver
	s.mu.Unlock()
	for _, c := range conns {
		c.closeWait(code, reason)
	}
	for _, c := range takenOver {
		c.Close(why)
	}
}

// Metrics adds up the session's connections. RTTs and the path MTU are the
// first connection's; counters of a socket shared by several connections
// (the listener's) count once.
func (s *Session) Metrics() transport.Metrics {
	s.mu.Lock()
	conns := append([]*conn(nil), s.conns...)
	s.mu.Unlock()
	m := conns[0].metrics()
	m.Connections = len(conns)
	for _, c := range conns[1:] {
		x := c.metrics()
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
			m.RecvCalls += x.RecvCalls
			m.RecvDatagrams += x.RecvDatagrams
		}
	}
	return m
}

var errNoStream = errors.New("no stream")

// answerWait is how long a refused join's status gets to arrive before the
// connection closes (the dialer closes once it read it).
const answerWait = time.Second
