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

	"github.com/quic-go/quic-go"

	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// Sharing a socket with ICE (issue #29, docs/beyond-the-lan.md): quic-go
// owns the UDP socket and hands over the packets that are not QUIC (STUN's
// first two bits are zero), which ICE reads through NonQUIC; once ICE has
// chosen a direct pair, QUIC runs on that same socket to the pair's remote
// address, through the NAT mapping ICE's checks opened, and costs what
// QUIC costs on the LAN.

// nonQUIC is a socket as another protocol sees it when quic-go owns it:
// the packets quic-go did not take, and writes through quic-go's transport.
type nonQUIC struct {
	tr     *quic.Transport
	local  net.Addr
	ctx    context.Context
	cancel context.CancelFunc
}

func newNonQUIC(tr *quic.Transport, local net.Addr) *nonQUIC {
	ctx, cancel := context.WithCancel(context.Background())
	return &nonQUIC{tr: tr, local: local, ctx: ctx, cancel: cancel}
}

func (p *nonQUIC) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := p.tr.ReadNonQUICPacket(p.ctx, b)
	if err != nil && p.ctx.Err() != nil {
		return 0, nil, net.ErrClosed
	}
	return n, a, err
}
func (p *nonQUIC) WriteTo(b []byte, a net.Addr) (int, error) { return p.tr.WriteTo(b, a) }

// Close ends this view only: the socket is its QUIC transport's.
func (p *nonQUIC) Close() error                       { p.cancel(); return nil }
func (p *nonQUIC) LocalAddr() net.Addr                { return p.local }
func (p *nonQUIC) SetDeadline(t time.Time) error      { return nil }
func (p *nonQUIC) SetReadDeadline(t time.Time) error  { return nil }
func (p *nonQUIC) SetWriteDeadline(t time.Time) error { return nil }

// NonQUIC is the listener's socket as ICE sees it: the packets that are
// not QUIC, and writes from the same port. One reader at a time.
func (l *Listener) NonQUIC() net.PacketConn { return newNonQUIC(l.tr, l.udp.LocalAddr()) }

// Shared is a dialling socket QUIC shares with ICE: ICE gathers and checks
// on it (NonQUIC), then Dial runs a session on it.
type Shared struct {
	udp  *countingUDP
	tr   *quic.Transport
	once sync.Once
	used bool // a session owns the socket now
}

// ListenShared opens a dialling socket on local ("0.0.0.0:0").
func ListenShared(local string) (*Shared, error) {
	udp, err := listenUDP(local)
	if err != nil {
		return nil, &transport.LocalError{Err: err}
	}
	return &Shared{udp: udp, tr: &quic.Transport{Conn: udp}}, nil
}

// NonQUIC is the socket as ICE sees it.
func (s *Shared) NonQUIC() net.PacketConn { return newNonQUIC(s.tr, s.udp.LocalAddr()) }

// LocalAddr is the socket's address.
func (s *Shared) LocalAddr() net.Addr { return s.udp.LocalAddr() }

// SharedDial is what a session dialled from a shared socket follows.
type SharedDial struct {
	// Network, when set, tells the session when this device's addresses
	// change, as DialNetwork's does, from a socket that stays where it is
	// bound: when its address goes away, the connection moves to a
	// standby path that answers, or else its path is declared lost
	// (Session.PathLost), so that the sender calls again instead of
	// waiting for the idle timeout.
	Network transport.Network
	// PortClosed, when set, is what the connection ends with when the
	// remote's port turns out closed while the path is silent. The zero
	// value says the peer stopped; a remote that is a relay's port (a TURN
	// allocation) says the relay did.
	PortClosed error
	// PeerGone, when set, is asked too while the path is silent, as the
	// peer's port is: a non-nil error says that the peer is gone for good
	// (a device beyond the LAN that restarted, as the relay it announces
	// itself at tells) and ends the connection with it, instead of after
	// the idle timeout. It is asked once per silent period at most.
	PeerGone func(context.Context) error
}

// Dial runs a session to remote on the socket; the session then owns the
// socket and closes it when it ends. One session per socket.
func (s *Shared) Dial(ctx context.Context, remote string, tlsConf *tls.Config, cfg transport.Config, follow SharedDial) (*Session, error) {
	if s.used {
		return nil, errors.New("shared socket already carries a session")
	}
	cfg = cfg.WithDefaults()
	// Extra connections would come from other sockets, which need NAT
	// mappings (or TURN permissions) of their own that ICE never made: a
	// join through them only timed out (JoinTimeout), and the data stream
	// placed on it waited that long.
	cfg.MaxFlows, cfg.QUICConns = 1, 1
	ra, err := net.ResolveUDPAddr("udp", remote)
	if err != nil {
		return nil, fmt.Errorf("dial quic %s: %w", remote, err)
	}
	qc, err := s.tr.Dial(ctx, ra, tlsConf, quicConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("dial quic %s: %w", remote, transport.Local(err))
	}
	c, err := newConn(qc, s.udp, s.tr, cfg)
	if err != nil {
		return nil, err
	}
	s.used = true
	var bound netip.Addr
	if la, ok := s.udp.LocalAddr().(*net.UDPAddr); ok {
		if a, ok := netip.AddrFromSlice(la.IP); ok && !a.Unmap().IsUnspecified() {
			bound = a.Unmap()
		}
	}
	ses := dialledSession(c, ra, tlsConf, cfg, follow.Network, bound)
	if ses.mig != nil {
		ses.mig.portClosed, ses.mig.peerGone = follow.PortClosed, follow.PeerGone
	}
	return ses, nil
}

// Close releases the socket unless a session owns it.
func (s *Shared) Close() {
	s.once.Do(func() {
		if !s.used {
			s.tr.Close()
			s.udp.Close()
		}
	})
}
