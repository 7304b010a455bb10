// Package transport is the seam between Ferry's protocol and the ways to
// carry it. The protocol sees only this package's types: a Conn to one peer
// that carries many Streams, a Listener that accepts Conns, and the Metrics
// a Conn measures.
//
// The words mean one thing each, for every transport:
//   - a session is the group of connections of one exchange with a peer,
//     and the Conn the protocol holds (subpackage join holds the
//     sub-protocol that groups them);
//   - a connection is one QUIC connection or one TLS-over-TCP connection;
//   - a stream is a QUIC stream or, for TCP, one TLS connection of the session.
//
// The transports live in subpackages: quic (the only package that imports
// quic-go), tcp, and auto, which races the others and picks one for the path.
package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/identity"
)

// Kind names a transport: the kind of its addresses (package addr), so
// that a listener's kind and an address's are one value.
type Kind = addr.Kind

// The transports.
const (
	QUIC = addr.QUIC
	TCP  = addr.TCP
)

// Stream is one ordered, reliable byte stream inside a session: a QUIC
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

// Conn is an authenticated session with one peer that carries many streams.
type Conn interface {
	OpenStream(ctx context.Context) (Stream, error)
	AcceptStream(ctx context.Context) (Stream, error)
	// PeerID is the device ID proven by the TLS handshake.
	PeerID() identity.DeviceID
	RemoteAddr() string
	// Transport is the kind of transport carrying the session now.
	Transport() Kind
	// Metrics returns a snapshot of the transport's counters.
	Metrics() Metrics
	// Close ends the session because of err (nil: a normal end). Each
	// transport tells the peer through the one table (package errcode):
	// QUIC sends err's application code and reason in CONNECTION_CLOSE;
	// TCP has no close frame, so it resets the streams (the protocol's
	// cancel on the first one says why).
	Close(err error) error
	// Done is closed when the session is gone.
	Done() <-chan struct{}
}

// Listener accepts sessions on one socket.
type Listener interface {
	// Accept returns the next new session.
	Accept(ctx context.Context) (Conn, error)
	Addr() net.Addr
	Kind() Kind
	// Withdraw stops taking new sessions. Sessions already accepted go on
	// (and may still add connections where their transport needs that); the
	// socket is released once the last of them ended.
	Withdraw()
	// Resume takes new sessions again after Withdraw; it reports false once
	// the listener released its socket (listen anew then).
	Resume() bool
	// Close ends every session, releases the socket and waits for the
	// listener's goroutines.
	Close() error
}

// Switcher is a Conn whose data may move to another transport mid-batch
// (auto on a path that is not a clean local link).
type Switcher interface {
	// SwitchAdvised is closed when the data should move to the other transport.
	SwitchAdvised() <-chan struct{}
	// Switch makes new streams open on the other transport and says why;
	// the sender calls it once, after SwitchAdvised, if data is left to send.
	Switch() string
	// InFlightWindow is how far behind a stream's write offset its data may
	// still be unread by the peer on the first transport: what a switch
	// must send again.
	InFlightWindow() int64
}

// Admitter is an accepted Conn that buffers little for its peer until the
// protocol above admits it (QUIC: small flow-control windows until then,
// and a budget of connections not admitted yet). The engine calls
// Admitted once the peer's hello passed and the session holds its place
// among those waiting for a decision.
type Admitter interface {
	Admitted()
}

// Spreader is a dialled Conn that may ask for more data streams while a
// transfer runs: its path showed random loss, which caps every loss-based
// flow, and more parallel flows carry more (package spread).
type Spreader interface {
	// DataStreams is how many data streams the sender should start with;
	// 0 leaves it to the sender. A session that grows by adding connections
	// starts with one stream on its one connection, so that every
	// connection it adds carries as much as the first.
	DataStreams() int
	// StreamsAdvised delivers advice each time the session grows; advice
	// not taken yet is replaced by the next. It is closed when no more
	// advice will come.
	StreamsAdvised() <-chan Advice
}

// StreamLimiter is a Spreader whose advice the sender bounds once it
// knows how many data streams the peer takes (its hello comes after the
// session began). A Spreader that never advises more than the fewest a
// peer takes (a QUIC session: MaxQUICConns connections) need not be one.
type StreamLimiter interface {
	// LimitStreams bounds the Advice.Streams (and the flows) advised from
	// now on to n.
	LimitStreams(n int)
}

// Advice is what a Spreader asks of the sender.
type Advice struct {
	// Streams is how many data streams the sender should have open.
	Streams int
	// Flows is how many congestion-controlled flows the session grows to.
	Flows int
	// Reason says what the session saw, for the transfer's events.
	Reason string
}

// PathSample is a cheap snapshot of what a QUIC connection knows of its
// path, for watchers that sample it often.
type PathSample struct {
	SmoothedRTT, MinRTT, LatestRTT time.Duration
	PacketsLost                    uint64
}

// PathSampler is a Conn that measures its path itself (QUIC).
type PathSampler interface {
	PathSample() PathSample
}

// Network tells a transport what this device's network looks like and when
// it changes (package netwatch implements it).
type Network interface {
	// Changed returns a channel closed at the next change after the call.
	Changed() <-chan struct{}
	// Addrs lists the addresses a path can start from now.
	Addrs() []netip.Addr
}

// PathChange is one change of the network path under a session: a QUIC
// connection that migrated, or a peer whose address changed under it.
type PathChange struct {
	// Local is true when this device's address changed (it moved, or it
	// left a silent path); false when the peer's did (the peer moved, or a
	// NAT gave it another port).
	Local bool
	// From and To are the addresses before and after: this device's local
	// address when Local, else the peer's address.
	From, To string
	// Reason says why, in a few words.
	Reason string
	// Probe is how long validating the new path took (zero when this side
	// did not probe: the system or the peer moved the path).
	Probe time.Duration
	// Stall is the longest time nothing came from the peer around the
	// change, measured to the first packet on the new path.
	Stall time.Duration
}

// PathReporter is a Conn whose network path may change under it.
type PathReporter interface {
	// PathChanges delivers each change of the session's path. Changes are
	// dropped while the channel is full.
	PathChanges() <-chan PathChange
}

// PathLoser is a Conn that can tell its path is gone for good: this
// device's address under it went away and no other path reached the peer
// (a QUIC connection with nowhere to migrate). The engine then ends the
// attempt, as it does for a TCP session whose address went away, instead
// of waiting for the idle timeout.
type PathLoser interface {
	// PathLost is closed once the path is lost (nil: it never is).
	PathLost() <-chan struct{}
}

// PacketSharer is a Listener whose socket another protocol can share:
// NonQUIC reads the packets that are not the transport's own and writes
// from the same port (ICE's checks, so that a peer's QUIC reaches the
// listener through the NAT mapping they opened).
type PacketSharer interface {
	NonQUIC() net.PacketConn
}

// LocalAddresser is a Conn that knows the local address its path uses now.
type LocalAddresser interface {
	LocalAddr() string
}

// ErrStreamStalled is returned by a stream whose Read or Write made no
// progress for Config.StallTimeout.
var ErrStreamStalled = errors.New("stream stalled")

// ErrSessionClosed is returned by a session's calls after it ended.
var ErrSessionClosed = errors.New("session closed")

// LocalError is a failure of this device, not of the path or the peer: our
// own socket could not be opened. Trying again will not help.
type LocalError struct {
	Err error
}

func (e *LocalError) Error() string {
	return "could not open a network socket on this device: " + e.Err.Error()
}

func (e *LocalError) Unwrap() error { return e.Err }

// Local wraps err in a LocalError when it comes from opening our own socket
// (socket, bind, setsockopt or a platform's socket set-up call), and returns
// it unchanged otherwise: a failed connect or a lost handshake is the path's.
func Local(err error) error {
	var le *LocalError
	if err == nil || errors.As(err, &le) {
		return err
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		switch se.Syscall {
		case "connect", "connectex", "sendto", "sendmsg", "write", "writemsg", "wsasendto", "wsasendmsg",
			"read", "recvfrom", "recvmsg", "wsarecvfrom", "wsarecvmsg", "getsockopt":
			return err
		}
		return &LocalError{Err: err}
	}
	return err
}

// Ms converts a duration to float milliseconds, as Metrics reports them.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// AsConn returns a dial's session as a Conn, and a nil Conn (not a typed
// nil) with an error.
func AsConn[C Conn](c C, err error) (Conn, error) {
	if err != nil {
		return nil, err
	}
	return c, nil
}

// AsListener is AsConn for listeners.
func AsListener[L Listener](l L, err error) (Listener, error) {
	if err != nil {
		return nil, err
	}
	return l, nil
}

// DeadPortGrace is how long a port that the peer's host refused has to
// open before the dial ends: a receiver starting as the dial began (a
// restart, which is how a send resumes) opens its ports within it, and the
// handshake goes on. QUIC's port checks (quic.watchDeadPort) and a dial
// race's QUIC dial beside a refused TCP one (auto's endRefused) both wait
// it.
const DeadPortGrace = time.Second

// NothingListeningError is a dial that the peer's host answered with
// "nothing listens at that port": TCP's connection refused, or for QUIC a
// port the host refused datagrams at for a while (ICMP port unreachable).
// The address may be stale (the device's Ferry quit, or moved to another
// port); a later dial may find it listening again.
type NothingListeningError struct {
	Addr string // host:port dialled
	Err  error  // the dial's own error, which names the address
}

func (e *NothingListeningError) Error() string { return e.Err.Error() }

func (e *NothingListeningError) Unwrap() error { return e.Err }
