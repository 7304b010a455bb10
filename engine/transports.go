package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/core"
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

// AddrsAt returns an address of every kind of the transport table at
// hostport ("host:port"): a device's listeners share one port number when
// they can, so an address typed by the user, or one a device was last
// reached at, is tried over every transport.
func AddrsAt(hostport string) []addr.Addr {
	var out []addr.Addr
	for _, e := range transportTable(TransportConfig{}, nil) {
		out = append(out, addr.New(e.Kind, hostport))
	}
	return out
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

// dial connects to one of addrs with the requested transport (one race
// over address x kind, each host stagger after the one before) and checks
// who answers, saying why it chose the transport it did and which address
// it reached.
func (e *Engine) dial(ctx context.Context, addrs []addr.Addr, stagger time.Duration, want identity.DeviceID, kind transport.Kind) (auto.Dialled, error) {
	// Refusals are remembered here, by address, because QUIC reports a
	// failed handshake as a transport error carrying only the message.
	var mu sync.Mutex
	refused := map[string]error{}
	verify := func(hostport string) func(identity.DeviceID) error {
		return func(got identity.DeviceID) error {
			var err error
			switch {
			case want.IsZero():
				err = e.trust.CheckAddr(hostport, got.Peer())
			case got != want:
				err = &identity.MismatchError{Expected: want.Peer(), Presented: got.Peer()}
			}
			if err != nil {
				mu.Lock()
				refused[hostport] = err
				mu.Unlock()
			}
			return err
		}
	}
	d, err := auto.Dial(ctx, auto.Request{
		Table:   e.transports,
		Kind:    kind,
		Addrs:   addrs,
		Stagger: stagger,
		TLS:     func(hostport string) *tls.Config { return e.ident.TLSConfig(false, verify(hostport)) },
		Refused: func(hostport string) error {
			mu.Lock()
			defer mu.Unlock()
			return refused[hostport]
		},
		Config: e.opts.Transport,
	})
	if err != nil {
		return auto.Dialled{}, connectError(err)
	}
	return d, nil
}

// connectError turns dial failures into a sentence about what to check.
func connectError(err error) error {
	var mm *identity.MismatchError
	var kc *identity.KeyChangedError
	var le *LocalError
	if errors.As(err, &mm) || errors.As(err, &kc) || errors.As(err, &le) {
		return err
	}
	if host := unknownHost(err); host != "" {
		return &core.HostNotFoundError{Host: host}
	}
	if at := nothingListening(err, nil); len(at) > 0 {
		return &core.NothingListeningError{Addr: strings.Join(at, " or "), Err: err}
	}
	return fmt.Errorf("could not connect to the receiver (is Ferry running and receiving there, and is the address right?): %w", err)
}

// nothingListening adds to at the addresses where the dials of err found
// nothing listening (transport.NothingListeningError: TCP refused, or a
// QUIC port its host refused), each once; nil when any dial failed
// otherwise (a timeout tells nothing).
func nothingListening(err error, at []string) []string {
	var nl *transport.NothingListeningError
	switch x := err.(type) {
	case *transport.NothingListeningError:
		nl = x
	case interface{ Unwrap() []error }:
		for _, e := range x.Unwrap() {
			if at = nothingListening(e, at); at == nil {
				return nil
			}
		}
		return at
	case interface{ Unwrap() error }:
		return nothingListening(x.Unwrap(), at)
	default:
		return nil
	}
	if !slices.Contains(at, nl.Addr) {
		at = append(at, nl.Addr)
	}
	return at
}

// unknownHost is the name every dial of err failed to resolve because it
// does not exist (DNS: no such host), "" when some failed otherwise.
func unknownHost(err error) string {
	switch x := err.(type) {
	case *net.DNSError:
		if x.IsNotFound {
			return x.Name
		}
	case interface{ Unwrap() []error }:
		host := ""
		for _, e := range x.Unwrap() {
			h := unknownHost(e)
			if h == "" || host != "" && h != host {
				return ""
			}
			host = h
		}
		return host
	case interface{ Unwrap() error }:
		return unknownHost(x.Unwrap())
	}
	return ""
}
