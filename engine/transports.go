package engine

import (
	"context"
	"crypto/tls"
)

// transportKind is a way to carry the protocol: a listener and a dialer.
// Kinds register themselves by name (syncthing's lib/connections style); the
// engine dials them by priority.
type transportKind struct {
	name     string
	priority int // lower dials first
	listen   func(addr string, tlsConf *tls.Config) (listener, error)
	dial     func(ctx context.Context, addr string, tlsConf *tls.Config) (Conn, error)
}

var transports = map[string]transportKind{}

func registerTransport(k transportKind) { transports[k.name] = k }

func init() {
	registerTransport(transportKind{
		name:     "quic",
		priority: 0,
		listen: func(addr string, tlsConf *tls.Config) (listener, error) {
			return listenQUIC(addr, tlsConf)
		},
		dial: dialQUIC,
	})
	registerTransport(transportKind{
		name:     "tcp",
		priority: 1,
		listen: func(addr string, tlsConf *tls.Config) (listener, error) {
			return listenTCP(addr, tlsConf)
		},
		dial: dialTCP,
	})
}
