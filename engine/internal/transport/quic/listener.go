package quic

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
	"github.com/ferrydrop/ferry/internal/clock"
	"github.com/ferrydrop/ferry/internal/fair"
)

// Listener accepts QUIC sessions on one UDP socket.
type Listener struct {
	cfg     transport.Config
	tlsConf *tls.Config
	udp     *countingUDP
	tr      *quic.Transport
	gate    *join.Gate
	wg      sync.WaitGroup // accept loops

	// unadmitted holds a place for every accepted connection until its
	// session is admitted (see waitAdmission).
	unadmitted *fair.Slots
	// live holds a place for every connection from its first packet to
	// its end (see admit).
	live *fair.Slots
	// joining holds a place for every connection from its first packet
	// until its join header arrived (see maxJoining).
	joining *fair.Slots

	liveMu    sync.Mutex                // guards the fields below
	states    map[*quic.Conn]*admission // accepted connections, until they end
	lingering map[string]int            // per source: connections ended before they were accepted (see admit)

	mu          sync.Mutex          // guards the fields below
	ln          *quic.EarlyListener // nil while withdrawn
	releaseOnce sync.Once
}

// Listen opens a listener on addr whose sessions are known to reg.
func Listen(addr string, tlsConf *tls.Config, reg *join.Registry, cfg transport.Config) (*Listener, error) {
	return listen(addr, tlsConf, reg, cfg, fair.Limits{Total: maxUnadmitted, PerSource: maxUnadmittedPerSource, Floor: unadmittedFloor})
}

// listen is Listen with the budget of connections not admitted yet.
func listen(addr string, tlsConf *tls.Config, reg *join.Registry, cfg transport.Config, unadmitted fair.Limits) (*Listener, error) {
	cfg = cfg.WithDefaults()
	// A listener's socket is ours: whatever keeps it from opening is local.
	udp, err := listenUDP(addr)
	if err != nil {
		return nil, &transport.LocalError{Err: fmt.Errorf("listen quic: %w", err)}
	}
	unadmitted.Renew = true
	l := &Listener{cfg: cfg, tlsConf: tlsConf, udp: udp,
		states:     map[*quic.Conn]*admission{},
		lingering:  map[string]int{},
		unadmitted: fair.New(unadmitted),
		live:       fair.New(fair.Limits{Total: math.MaxInt, PerSource: maxLiveConnsPerSource, Renew: true}),
		// Per source, live decides (Renew); joining only shares the total.
		joining: fair.New(fair.Limits{Total: maxJoining, PerSource: math.MaxInt, Floor: join.PendingFloor}),
		gate:    join.NewGate(reg, transport.QUIC, cfg.HandshakeTimeout)}
	l.tr = &quic.Transport{Conn: udp, ConnContext: l.admit, StatelessResetKey: resetKey(tlsConf)}
	ln, err := l.tr.ListenEarly(tlsConf, l.quicConfig())
	if err != nil {
		l.tr.Close()
		udp.Close()
		return nil, &transport.LocalError{Err: fmt.Errorf("listen quic: %w", err)}
	}
	l.ln = ln
	l.wg.Go(func() { l.acceptLoop(ln) })
	return l, nil
}

// resetKey derives the listener's stateless reset key from this device's
// private key: a receiver killed and started again on its port then knows
// its predecessor's connections well enough to end them (RFC 9000 10.3)
// when their sender next speaks, and the sender reconnects and resumes at
// once instead of waiting out the idle timeout. The key stays as secret
// as the private key (one-way, and labelled for this use alone). Without a
// certificate, nil: no stateless resets, as before.
func resetKey(c *tls.Config) *quic.StatelessResetKey {
	if c == nil || len(c.Certificates) == 0 {
		return nil
	}
	der, err := x509.MarshalPKCS8PrivateKey(c.Certificates[0].PrivateKey)
	if err != nil {
		return nil
	}
	k := quic.StatelessResetKey(sha256.Sum256(append([]byte("ferry quic stateless reset key\x00"), der...)))
	return &k
}

// maxLiveConnsPerSource bounds the QUIC connections one source address
// holds at once, from its first packet (before any cryptography) to its
// end: a real sender uses a few sessions of up to transport.MaxQUICConns.
// A newcomer from a source that holds this many ends another of that
// source's connections that has not joined a session yet (liveRank), the
// oldest first: a flood of handshakes from a real sender's own address
// (behind the same NAT, issue #27) then churns among its own connections
// instead of shutting the sender out. Only when every one of them joined a
// session does quic-go refuse the newcomer (CONNECTION_REFUSED).
const maxLiveConnsPerSource = 4 * transport.MaxQUICConns

// maxJoining bounds the connections, from every source together, that
// have not sent their join header yet: handshakes in flight and
// connections that say nothing. Each costs quic-go's connection state,
// TLS state and three goroutines (about 60 KiB), and the number of them
// grows with how fast a flood from many addresses dials and how slowly a
// loaded receiver finishes handshakes: 730 at once under ferry-bench
// hostile combined (docs/hostile.md), with the heap's garbage collection
// doubling what they hold. A newcomer beyond it ends the oldest of the
// source holding the most (package fair), or, while its own source holds
// fewer than join.PendingFloor, the oldest of any source: a real sender's
// connections, which send their header a round trip after the handshake,
// get their places.
const maxJoining = 256

// Ranks of a live connection: a newcomer of its source ends the lowest
// ranked first. Once its join header arrived it is never ended for a
// newcomer of its own source.
const (
	// Its handshake finished silentAfter ago or more and it opened no
	// stream: a real sender opens its first stream right behind its
	// handshake, a flood of connections without a stream never does.
	// First, so that such a flood's newcomers end its own connections
	// rather than a real sender's whose handshake still runs.
	liveSilent      = iota
	liveHandshaking // accepted early: its handshake runs
	liveHandshook   // its handshake finished within silentAfter, or a stream opened; its join header has not arrived
	// Before quic-go processed its ClientHello there is nothing to close
	// yet: ended, it lingers until it is accepted (and closed at once) or
	// its handshake times out. Last, so that a flood costs few of those.
	liveFirstPacket
)

// silentAfter is how long after its handshake a connection may open no
// stream before it ranks liveSilent. A sender writes its join header as
// soon as its handshake finished, in the flight of its last handshake
// packet or right behind it: the bound is for a loaded sender's
// scheduling, not for the path. Reaching it costs a real connection
// little: among the silent ones it is the youngest, ended last.
const silentAfter = time.Second

var errSourceBusy = errors.New("too many connections from this address")

// liveConn is a connection's place among the live ones of its source.
type liveConn struct {
	l       *Listener
	src     string
	slot    *fair.Slot
	joining *fair.Slot // released once its join header arrived

	mu       sync.Mutex // guards the fields below
	qc       *quic.Conn // once accepted
	doomed   bool       // a newcomer took its place: close it once accepted
	lingers  bool       // doomed before it was accepted: counted in Listener.lingering
	ended    bool
	silence  clock.Timer // ranks it liveSilent silentAfter after its handshake
	streamed bool        // a stream opened: never liveSilent
}

type liveKey struct{}

// admit is the quic.Transport's ConnContext: it gives a new connection a
// place among the live ones of its source, or refuses it. Connections
// whose place was taken before they could be closed still count against
// their source (lingering) until they end: a source holds
// maxLiveConnsPerSource of each at most.
func (l *Listener) admit(ctx context.Context, ci *quic.ClientInfo) (context.Context, error) {
	lc := &liveConn{l: l, src: fair.Source(ci.RemoteAddr.String())}
	l.liveMu.Lock()
	lingering := l.lingering[lc.src]
	l.liveMu.Unlock()
	if lingering >= maxLiveConnsPerSource {
		return nil, errSourceBusy
	}
	lc.slot = l.live.TakeRanked(lc.src, liveFirstPacket, lc.end)
	if lc.slot == nil {
		return nil, errSourceBusy
	}
	if lc.joining = l.joining.Take(lc.src, lc.end); lc.joining == nil {
		lc.slot.Release()
		return nil, errSourceBusy
	}
	// quic-go ends ctx when the connection is closed or its handshake failed.
	context.AfterFunc(ctx, lc.gone)
	return context.WithValue(ctx, liveKey{}, lc), nil
}

// end closes the connection a newcomer took the place of, now or once
// accepted; until then it lingers, counted against its source.
func (lc *liveConn) end() {
	lc.mu.Lock()
	if lc.ended || lc.doomed { // both its places may be taken
		lc.mu.Unlock()
		return
	}
	lc.doomed = true
	qc := lc.qc
	lc.lingers = qc == nil
	lc.mu.Unlock()
	if qc != nil {
		lc.l.shed(qc)
		return
	}
	lc.l.liveMu.Lock()
	lc.l.lingering[lc.src]++
	lc.l.liveMu.Unlock()
}

// gone frees what the connection held once it ended.
func (lc *liveConn) gone() {
	lc.slot.Release()
	lc.joining.Release()
	lc.mu.Lock()
	lc.ended = true
	lingered := lc.lingers
	lc.qc = nil
	if lc.silence != nil {
		lc.silence.Stop()
	}
	lc.mu.Unlock()
	if !lingered {
		return
	}
	lc.l.liveMu.Lock()
	defer lc.l.liveMu.Unlock()
	if lc.l.lingering[lc.src]--; lc.l.lingering[lc.src] <= 0 {
		delete(lc.l.lingering, lc.src)
	}
}

// accepted hands the live place its connection; false if it was taken
// (the connection is closed).
func (lc *liveConn) accepted(qc *quic.Conn) bool {
	lc.mu.Lock()
	doomed := lc.doomed
	if !doomed && !lc.ended {
		lc.qc = qc
	}
	lc.mu.Unlock()
	if doomed {
		lc.l.shed(qc) // gone releases its lingering count
		return false
	}
	lc.slot.SetRank(liveHandshaking)
	return true
}

// handshakeDone ranks the connection handshook, and silent once
// silentAfter passed on c unless a stream opened by then.
func (lc *liveConn) handshakeDone(c clock.Clock) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.ended || lc.streamed {
		return
	}
	lc.slot.SetRank(liveHandshook)
	lc.silence = c.AfterFunc(silentAfter, func() {
		lc.mu.Lock()
		defer lc.mu.Unlock()
		if !lc.ended && !lc.streamed {
			lc.slot.SetRank(liveSilent)
		}
	})
}

// streamOpened ranks a connection that opened a stream handshook again,
// however late the stream came: it is no longer silent.
func (lc *liveConn) streamOpened() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.streamed = true
	if lc.silence != nil {
		lc.silence.Stop()
	}
	lc.slot.SetRank(liveHandshook)
}

func liveOf(qc *quic.Conn) *liveConn {
	lc, _ := qc.Context().Value(liveKey{}).(*liveConn)
	return lc
}

// shed closes qc as busy without waiting for it to end: quic-go's
// CloseWithError waits for the connection's own goroutine, and those that
// shed connections (admit on quic-go's goroutine that reads every
// newcomer's first packet, the accept loop, a newcomer's place among the
// unadmitted) must not wait behind it. Close waits for the closing.
func (l *Listener) shed(qc *quic.Conn) { l.wg.Go(func() { closeBusy(qc) }) }

func closeBusy(qc *quic.Conn) {
	qc.CloseWithError(quic.ApplicationErrorCode(errcode.AppOfErr(errcode.ErrListenerBusy)), errcode.ErrListenerBusy.Error())
}

// An accepted connection whose session the engine has not admitted yet
// (its hello passed, see Session.Admitted) may hold what its initial
// flow-control window lets a peer send, and no more (conn.go). Those
// connections share a budget, fairly by source address (package fair),
// so that many addresses together cannot make the listener buffer more
// than maxUnadmitted × initialConnectionWindow (64 MiB) either: a
// newcomer takes the place of the oldest connection of the busiest
// source, which is closed, and a newcomer from a source that holds its
// share closes the oldest of that source's connections whose join header
// has not arrived (package fair, Renew). A real sender needs one place for
// its first connection, and its session is admitted a round trip after its
// hello.
const (
	maxUnadmitted          = 128
	maxUnadmittedPerSource = join.MaxPendingPerSource
	unadmittedFloor        = join.PendingFloor
)

// admission is an accepted connection's standing until its session is admitted.
type admission struct {
	slot     *fair.Slot // its place among the unadmitted; nil once admitted
	admitted atomic.Bool
	once     sync.Once
}

// admit marks the connection admitted: its windows may grow, and its
// place among the unadmitted is free. Nil (a dialled connection) is admitted.
func (a *admission) admit() {
	if a == nil {
		return
	}
	a.admitted.Store(true)
	a.once.Do(func() { a.slot.Release() })
}

// quicConfig is quic-go's configuration for the listener's connections.
func (l *Listener) quicConfig() *quic.Config {
	c := quicConfig(l.cfg)
	c.AllowConnectionWindowIncrease = l.allowIncrease
	return c
}

// allowIncrease lets a connection's window grow once its session is
// admitted. quic-go calls it from the connection's own goroutine, under
// the flow controller's lock: it only looks the connection up.
func (l *Listener) allowIncrease(qc *quic.Conn, _ uint64) bool {
	l.liveMu.Lock()
	a := l.states[qc]
	l.liveMu.Unlock()
	return a != nil && a.admitted.Load()
}

// waitAdmission gives an accepted connection its place among the
// unadmitted ones, or refuses it (false) when its source holds as many as
// it may. A newcomer from a less busy source closes the connection.
func (l *Listener) waitAdmission(qc *quic.Conn) (*admission, bool) {
	a := &admission{}
	a.slot = l.unadmitted.Take(fair.Source(qc.RemoteAddr().String()), func() { l.shed(qc) })
	if a.slot == nil {
		return nil, false
	}
	l.liveMu.Lock()
	l.states[qc] = a
	l.liveMu.Unlock()
	context.AfterFunc(qc.Context(), func() {
		a.once.Do(func() { a.slot.Release() })
		l.liveMu.Lock()
		delete(l.states, qc)
		l.liveMu.Unlock()
	})
	return a, true
}

// Addr is the listening address.
func (l *Listener) Addr() net.Addr { return l.udp.LocalAddr() }

// Kind is transport.QUIC.
func (l *Listener) Kind() transport.Kind { return transport.QUIC }

// acceptLoop takes connections as soon as quic-go processed their
// ClientHello (ListenEarly), so that a newcomer can end one whose
// handshake stalls (admit); each then waits for its handshake in a
// goroutine of its own, bounded by quic-go's HandshakeIdleTimeout.
func (l *Listener) acceptLoop(ln *quic.EarlyListener) {
	for {
		c, err := ln.Accept(l.gate.Context())
		if err != nil {
			return
		}
		lc := liveOf(c)
		if lc == nil || !lc.accepted(c) {
			continue
		}
		l.wg.Go(func() { l.handshook(c, lc) })
	}
}

// handshook waits for an accepted connection's handshake, then gives it
// its place among the unadmitted and a handshake at the gate.
func (l *Listener) handshook(c *quic.Conn, lc *liveConn) {
	select {
	case <-c.HandshakeComplete():
	case <-c.Context().Done():
		return
	case <-l.gate.Context().Done():
		c.CloseWithError(0, "")
		return
	}
	lc.handshakeDone(l.cfg.Clock)
	a, ok := l.waitAdmission(c)
	if !ok || !l.gate.Handshake(c.RemoteAddr().String(), join.Identified, func(ctx context.Context, p *join.Pending) { l.handshake(ctx, c, a, lc, p) }) {
		closeBusy(c)
	}
}

// handshake reads a new connection's header and starts, joins or attaches its session.
func (l *Listener) handshake(ctx context.Context, qc *quic.Conn, a *admission, lc *liveConn, p *join.Pending) {
	c, err := newConn(qc, l.udp, nil, l.cfg)
	if err != nil {
		return
	}
	c.admission = a
	st, err := qc.AcceptStream(ctx)
	if err != nil {
		c.refuse(fmt.Errorf("%w: %w", errcode.ErrBadHeader, errNoStream))
		return
	}
	lc.streamOpened()
	if d, ok := ctx.Deadline(); ok {
		st.SetReadDeadline(d)
	}
	token, flag, err := join.ReadHeader(st)
	st.SetReadDeadline(time.Time{})
	if err != nil || flag == join.FlagSpare {
		c.refuse(errcode.ErrBadHeader)
		return
	}
	// It made progress: no newcomer of its own source ends it now.
	p.Reached(join.Joined)
	lc.slot.Hold(true)
	lc.joining.Release()
	a.slot.Hold(true)
	if flag == join.FlagNew {
		s := newListenerSession(l.cfg, c, token, stream{st, c})
		if refusal := l.gate.Start(token, s); refusal != nil {
			s.Close(refusal)
		}
		return
	}
	var refusal error
	if flag == join.FlagAttach {
		s := newListenerSession(l.cfg, c, token, nil)
		if refusal = l.gate.Attach(token, s); refusal != nil {
			defer s.Close(nil)
		}
	} else {
		var sc transport.Conn
		if sc, refusal = l.gate.Find(token, c.peer); refusal == nil {
			refusal = sc.(*Session).add(c)
		}
	}
	join.WriteStatus(st, refusal)
	st.Close()
	if refusal != nil {
		select {
		case <-c.done():
		case <-time.After(answerWait):
		case <-ctx.Done():
		}
		c.refuse(refusal)
	}
}

// Accept returns the next new session.
func (l *Listener) Accept(ctx context.Context) (transport.Conn, error) {
	return l.gate.Accept(ctx)
}

// Withdraw closes the quic.Listener: no new connections (a running session
// then adds none either, which only costs parallelism). The socket stays
// open for the running sessions and is released after the last one.
func (l *Listener) Withdraw() {
	l.mu.Lock()
	ln := l.ln
	l.ln = nil
	l.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	l.gate.Withdraw(l.release)
}

// Resume listens again on the same socket, unless it was released.
func (l *Listener) Resume() bool {
	if !l.gate.Resume() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		return true
	}
	ln, err := l.tr.ListenEarly(l.tlsConf, l.quicConfig())
	if err != nil {
		l.gate.Withdraw(l.release)
		return false
	}
	l.ln = ln
	l.wg.Go(func() { l.acceptLoop(ln) })
	return true
}

// release closes the socket.
func (l *Listener) release() {
	l.releaseOnce.Do(func() {
		l.tr.Close()
		l.udp.Close()
	})
}

// Close ends every session (each peer is told, CONNECTION_CLOSE), then
// closes the socket, and waits for the listener's goroutines.
func (l *Listener) Close() error {
	l.mu.Lock()
	ln := l.ln
	l.ln = nil
	l.mu.Unlock()
	var err error
	if ln != nil {
		err = ln.Close()
	}
	l.gate.Close()
	l.wg.Wait()
	l.release()
	return err
}

// Raw is one dialled QUIC connection whose streams carry no join header:
// a peer that breaks the protocol on purpose (engine/hostile) opens it.
// Nothing else should.
type Raw struct{ c *conn }

// DialRaw dials one QUIC connection to addr.
func DialRaw(ctx context.Context, addr string, tlsConf *tls.Config, cfg transport.Config) (*Raw, error) {
	c, _, err := dialAddr(ctx, addr, tlsConf, cfg.WithDefaults(), false)
	if err != nil {
		return nil, err
	}
	return &Raw{c: c}, nil
}

// OpenStream opens a stream and writes nothing on it.
func (r *Raw) OpenStream(ctx context.Context) (transport.Stream, error) { return r.c.openStream(ctx) }

// Done is closed when the connection ended.
func (r *Raw) Done() <-chan struct{} { return r.c.done() }

// Close closes the connection.
func (r *Raw) Close() { r.c.closeWait(0, "") }

// StallHandshake dials addr from a socket of its own that sends the first
// flight of the handshake and, once the listener answered, nothing more:
// the handshake stalls until the listener ends it or timeout passes. It
// returns when the connection ended: nil, or why it could not start. A
// peer that breaks the protocol on purpose (engine/hostile) uses it.
// Nothing else should.
func StallHandshake(ctx context.Context, addr string, tlsConf *tls.Config, localIP string, timeout time.Duration) error {
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return err
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(localIP)})
	if err != nil {
		return err
	}
	defer udp.Close()
	tr := &quic.Transport{Conn: &stallingConn{PacketConn: udp}}
	defer tr.Close()
	c, err := tr.Dial(ctx, ra, tlsConf, &quic.Config{HandshakeIdleTimeout: timeout})
	if err == nil { // the listener's handshake finished after all: hold it
		select {
		case <-c.Context().Done():
		case <-ctx.Done():
		}
		c.CloseWithError(0, "")
	}
	return nil
}

// stallingConn is a socket that sends until it heard from the other side,
// and then nothing.
type stallingConn struct {
	net.PacketConn
	heard atomic.Bool
}

func (c *stallingConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, a, err := c.PacketConn.ReadFrom(p)
	c.heard.Store(true)
	return n, a, err
}

func (c *stallingConn) WriteTo(p []byte, a net.Addr) (int, error) {
	if c.heard.Load() {
		return len(p), nil
	}
	return c.PacketConn.WriteTo(p, a)
}
