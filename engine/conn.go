package engine

import (
	"context"
	"io"

	"github.com/ferrydrop/ferry/engine/identity"
)

// Stream is one ordered, reliable byte stream inside a connection: a QUIC
// stream, or one TLS connection of a TCP session. The protocol is written
// against this interface only.
type Stream interface {
	io.Reader
	io.Writer
	// Close ends our write direction; the peer reads io.EOF after the data.
	Close() error
	// Abort resets both directions at once (error paths).
	Abort()
}

// Conn is an authenticated connection to one peer that carries many streams.
type Conn interface {
	OpenStream(ctx context.Context) (Stream, error)
	AcceptStream(ctx context.Context) (Stream, error)
	// PeerID is the device ID proven by the TLS handshake.
	PeerID() identity.DeviceID
	RemoteAddr() string
	// Transport is "quic" or "tcp".
	Transport() string
	// Metrics returns a snapshot of the transport's counters.
	Metrics() Metrics
	// Close ends the connection; code 0 means a normal end.
	Close(code uint64, reason string) error
	// Done is closed when the connection is gone.
	Done() <-chan struct{}
}
