package engine

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport/auto"
	"github.com/ferrydrop/ferry/engine/wire"
)

// probeTimeout bounds one Probe.
const probeTimeout = 5 * time.Second

// Probe connects to addr over every transport of the table at once, proves
// who answers there and reads its name, without offering anything. Discovery uses
// it for remembered and manually added devices.
func (e *Engine) Probe(ctx context.Context, addr string) (PeerInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	// Dial every transport at once: one of them may be blocked, and a probe
	// should not wait for its timeout before trying the other.
	c, err := auto.First(ctx, e.transports, AddrsAt(addr),
		func(string) *tls.Config { return e.ident.TLSConfig(false, nil) })
	if err != nil {
		return PeerInfo{}, fmt.Errorf("nothing answers at %s: %w", addr, err)
	}
	info, err := e.probeHello(ctx, c)
	c.Close(nil)
	if err != nil {
		return PeerInfo{}, err
	}
	info.Addr = addr
	return info, nil
}

func (e *Engine) probeHello(ctx context.Context, c Conn) (PeerInfo, error) {
	s, err := c.OpenStream(ctx)
	if err != nil {
		return PeerInfo{}, err
	}
	if _, err := s.Write([]byte{wire.KindControl}); err != nil {
		return PeerInfo{}, err
	}
	ctl := newControl(s)
	if err := ctl.send(e.hello()); err != nil {
		return PeerInfo{}, err
	}
	h, err := expect[*wire.Hello](ctl.recvTimeout(probeTimeout))
	if err != nil {
		return PeerInfo{}, fmt.Errorf("probe: %w", err)
	}
	if err := checkHello(h, c); err != nil {
		return PeerInfo{}, err
	}
	return e.peerInfo(c.PeerID().Peer(), h.Name, ""), nil
}
