package quic

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
)

// Listener accepts QUIC sessions on one UDP socket.
type Listener struct {
	cfg     transport.Config
	tlsConf *tls.Config
	udp     *countingUDP
	tr      *quic.Transport
	gate    *join.Gate
	wg      sync.WaitGroup // accept loops

	mu          sync.Mutex     // guards the fields below
	ln          *quic.Listener // nil while withdrawn
	releaseOnce sync.Once
}

// Listen opens a listener on addr whose sessions are known to reg.
func Listen(addr string, tlsConf *tls.Config, reg *join.Registry, cfg transport.Config) (*Listener, error) {
	cfg = cfg.WithDefaults()
	// A listener's socket is ours: whatever keeps it from opening is local.
	udp, err := listenUDP(addr)
	if err != nil {
		return nil, &transport.LocalError{Err: fmt.Errorf("listen quic: %w", err)}
	}
	tr := &quic.Transport{Conn: udp}
	ln, err := tr.Listen(tlsConf, quicConfig(cfg))
	if err != nil {
		tr.Close()
		udp.Close()
		return nil, &transport.LocalError{Err: fmt.Errorf("listen quic: %w", err)}
	}
	l := &Listener{cfg: cfg, tlsConf: tlsConf, udp: udp, tr: tr, ln: ln,
		gate: join.NewGate(reg, transport.QUIC, cfg.HandshakeTimeout)}
	l.wg.Go(func() { l.acceptLoop(ln) })
	return l, nil
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
		if !l.gate.Handshake(c.RemoteAddr().String(), func(ctx context.Context) { l.handshake(ctx, c) }) {
			c.CloseWithError(quic.ApplicationErrorCode(errcode.AppOfErr(errcode.ErrListenerBusy)), errcode.ErrListenerBusy.Error())
		}
	}
}

// handshake reads a new connection's header and starts, joins or attaches its session.
func (l *Listener) handshake(ctx context.Context, qc *quic.Conn) {
	c, err := newConn(qc, l.udp, nil, l.cfg)
	if err != nil {
		return
	}
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
			s.Close(uint64(errcode.AppOfErr(refusal)), refusal.Error())
		}
		return
	}
	var refusal error
	if flag == join.FlagAttach {
		s := newListenerSession(l.cfg, c, token, nil)
		if refusal = l.gate.Attach(token, s); refusal != nil {
			defer s.Close(0, "")
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
	ln, err := l.tr.Listen(l.tlsConf, quicConfig(l.cfg))
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
