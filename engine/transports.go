package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/netwatch"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/auto"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
	"github.com/ferrydrop/ferry/engine/internal/transport/quic"
	"github.com/ferrydrop/ferry/engine/internal/transport/tcp"
)

// The engine sees its transports through package transport only; these
// aliases are the names its API uses.
type (
	// Stream is one ordered, reliable byte stream of a session.
	Stream = transport.Stream
	// Conn is an authenticated session with one peer that carries many streams.
	Conn = transport.Conn
	// Metrics is a snapshot of a session's transport metrics.
	Metrics = transport.Metrics
	// TransportConfig tunes the transports (Options.Transport); the zero
	// value of every field means its documented default.
	TransportConfig = transport.Config
	// LocalError is a failure of this device (its own socket could not be
	// opened), not of the path or the peer: trying again will not help.
	LocalError = transport.LocalError
)

// switcher is a Conn whose data may move to another transport mid-batch.
type switcher = transport.Switcher

// spreader is a Conn that may ask for more data streams mid-batch.
type spreader = transport.Spreader

// transportTable is the engine's transport table: what it listens on and
// dials, in priority order (QUIC first: it answers in fewer round trips).
// QUIC connections follow nw's changes (connection migration); nw may be nil.
func transportTable(cfg TransportConfig, nw *netwatch.Watcher) []auto.Entry {
	var network transport.Network
	if nw != nil {
		network = nw
	}
	return []auto.Entry{
		{
			Kind:     transport.QUIC,
			Priority: 0,
			Listen: func(addr string, tlsConf *tls.Config, reg *join.Registry) (transport.Listener, error) {
				return transport.AsListener(quic.Listen(addr, tlsConf, reg, cfg))
			},
			Dial: func(ctx context.Context, addr string, tlsConf *tls.Config) (transport.Conn, error) {
				return transport.AsConn(quic.DialNetwork(ctx, addr, tlsConf, cfg, network))
			},
		},
		{
			Kind:     transport.TCP,
			Priority: 1,
			Listen: func(addr string, tlsConf *tls.Config, reg *join.Registry) (transport.Listener, error) {
				return transport.AsListener(tcp.Listen(addr, tlsConf, reg, cfg))
			},
			Dial: func(ctx context.Context, addr string, tlsConf *tls.Config) (transport.Conn, error) {
				return transport.AsConn(tcp.Dial(ctx, addr, tlsConf, cfg))
			},
			BBR: func() bool { return tcp.BBR(cfg) },
		},
	}
}

// addr is the target's address for a transport.
func (t Target) addr(k transport.Kind) string {
	switch k {
	case transport.QUIC:
		return t.quicAddr()
	case transport.TCP:
		return t.tcpAddr()
	}
	return t.Addr
}

// parseTransport reads SendOptions.Transport: "" or "auto" is auto (the empty Kind).
func parseTransport(s string) (transport.Kind, error) {
	switch k := transport.Kind(s); k {
	case "", "auto":
		return "", nil
	case transport.QUIC, transport.TCP:
		return k, nil
	}
	return "", fmt.Errorf("unknown transport %q: use auto, quic or tcp", s)
}

// dial connects to the target with the requested transport and checks who
// answers, saying why it chose the transport it did.
func (e *Engine) dial(ctx context.Context, to Target, want identity.DeviceID, kind transport.Kind) (Conn, string, error) {
	// The refusal is remembered here because QUIC reports a failed
	// handshake as a transport error carrying only the message.
	var refused atomic.Pointer[identity.MismatchError]
	verify := func(addr string) func(identity.DeviceID) error {
		return func(got identity.DeviceID) error {
			if !want.IsZero() {
				if got != want {
					me := &identity.MismatchError{Expected: want.Peer(), Presented: got.Peer()}
					refused.Store(me)
					return me
				}
				return nil
			}
			return e.trust.CheckAddr(addr, got.Peer())
		}
	}
	c, reason, err := auto.Dial(ctx, auto.Request{
		Table:  e.transports,
		Kind:   kind,
		Addr:   to.addr,
		TLS:    func(addr string) *tls.Config { return e.ident.TLSConfig(false, verify(addr)) },
		Config: e.opts.Transport,
	})
	if me := refused.Load(); err != nil && me != nil {
		return nil, "", me
	}
	if err != nil {
		return nil, "", connectError(err)
	}
	return c, reason, nil
}

// connectError turns dial failures into a sentence about what to check.
func connectError(err error) error {
	var mm *identity.MismatchError
	var kc *identity.KeyChangedError
	var le *LocalError
	if errors.As(err, &mm) || errors.As(err, &kc) || errors.As(err, &le) {
		return err
	}
	return fmt.Errorf("could not connect to the receiver (is Ferry running and receiving there, and is the address right?): %w", err)
}
