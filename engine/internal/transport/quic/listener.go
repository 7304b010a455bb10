package quic

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
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

	liveMu sync.Mutex                // guards the fields below
	live   map[string]int            // connections per source (see admit)
	states map[*quic.Conn]*admission // accepted connections, until they end

	mu          sync.Mutex     // guards the fields below
	ln          *quic.Listener // nil while withdrawn
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
	l := &Listener{cfg: cfg, tlsConf: tlsConf, udp: udp, live: map[string]int{},
		states:     map[*quic.Conn]*admission{},
		unadmitted: fair.New(unadmitted),
		gate:       join.NewGate(reg, transport.QUIC, cfg.HandshakeTimeout)}
	l.tr = &quic.Transport{Conn: udp, ConnContext: l.admit}
	ln, err := l.tr.Listen(tlsConf, l.quicConfig())
	if err != nil {
		l.tr.Close()
		udp.Close()
		return nil, &transport.LocalError{Err: fmt.Errorf("listen quic: %w", err)}
	}
	l.ln = ln
	l.wg.Go(func() { l.acceptLoop(ln) })
	return l, nil
}

// maxLiveConnsPerSource bounds the QUIC connections one source address
// holds at once, from its first packet (before any cryptography) to its
// end: a real sender uses a few sessions of up to transport.MaxQUICConns.
// Beyond, quic-go refuses the connection at once (CONNECTION_REFUSED), so
// a flood from one address costs this many handshakes at most.
const maxLiveConnsPerSource = 4 * transport.MaxQUICConns

var errSourceBusy = errors.New("too many connections from this address")

// admit is the quic.Transport's ConnContext: it counts a new connection
// against its source, or refuses it.
func (l *Listener) admit(ctx context.Context, ci *quic.ClientInfo) (context.Context, error) {
	src := fair.Source(ci.RemoteAddr.String())
	l.liveMu.Lock()
	defer l.liveMu.Unlock()
	if l.live[src] >= maxLiveConnsPerSource {
		return nil, errSourceBusy
	}
	l.live[src]++
	// quic-go ends ctx when the connection is closed or its handshake failed.
	context.AfterFunc(ctx, func() {
		l.liveMu.Lock()
		defer l.liveMu.Unlock()
		if l.live[src]--; l.live[src] <= 0 {
			delete(l.live, src)
		}
	})
	return ctx, nil
}

// An accepted connection whose session the engine has not admitted yet
// (its hello passed, see Session.Admitted) may hold what its initial
// flow-control window lets a peer send, and no more (conn.go). Those
// connections share a budget, fairly by source address (package fair),
// so that many addresses together cannot make the listener buffer more
// than maxUnadmitted × initialConnectionWindow (64 MiB) either: a
// newcomer takes the place of the oldest connection of the busiest
// source, which is closed. A real sender needs one place for its first
// connection, and its session is admitted a round trip after its hello.
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
	a.slot = l.unadmitted.Take(fair.Source(qc.RemoteAddr().String()), func() {
		qc.CloseWithError(quic.ApplicationErrorCode(errcode.AppOfErr(errcode.ErrListenerBusy)), errcode.ErrListenerBusy.Error())
	})
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

func (l *Listener) acceptLoop(ln *quic.Listener) {
	for {
		c, err := ln.Accept(l.gate.Context())
		if err != nil {
			return
		}
		a, ok := l.waitAdmission(c)
		if !ok || !l.gate.Handshake(c.RemoteAddr().String(), func(ctx context.Context) { l.handshake(ctx, c, a) }) {
			c.CloseWithError(quic.ApplicationErrorCode(errcode.AppOfErr(errcode.ErrListenerBusy)), errcode.ErrListenerBusy.Error())
		}
	}
}

// handshake reads a new connection's header and starts, joins or attaches its session.
func (l *Listener) handshake(ctx context.Context, qc *quic.Conn, a *admission) {
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
	if d, ok := ctx.Deadline(); ok {
		st.SetReadDeadline(d)
	}
	token, flag, err := join.ReadHeader(st)
	st.SetReadDeadline(time.Time{})
	if err != nil || flag == join.FlagSpare {
		c.refuse(errcode.ErrBadHeader)
		return
	}
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
	ln, err := l.tr.Listen(l.tlsConf, l.quicConfig())
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
	cfg = cfg.WithDefaults()
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial quic %s: %w", addr, err)
	}
	c, err := dialConn(ctx, ra, tlsConf, cfg)
	if err != nil {
		return nil, fmt.Errorf("dial quic %s: %w", addr, err)
	}
	return &Raw{c: c}, nil
}

// OpenStream opens a stream and writes nothing on it.
func (r *Raw) OpenStream(ctx context.Context) (transport.Stream, error) { return r.c.openStream(ctx) }

// Done is closed when the connection ended.
func (r *Raw) Done() <-chan struct{} { return r.c.done() }

// Close closes the connection.
func (r *Raw) Close() { r.c.closeWait(0, "") }
