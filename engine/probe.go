package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferrydrop/ferry/engine/wire"
)

// probeTimeout bounds one Probe.
const probeTimeout = 5 * time.Second

// Probe connects to addr (by transport priority: QUIC, then TCP), proves who
// answers there and reads its name, without offering anything. Discovery uses
// it for remembered and manually added devices.
func (e *Engine) Probe(ctx context.Context, addr string) (PeerInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	// Dial every transport at once: one of them may be blocked, and a probe
	// should not wait for its timeout before trying the other.
	results := make(chan dialResult, len(transports))
	for _, k := range transports {
		go func() {
			c, err := k.dial(ctx, addr, e.ident.TLSConfig(false, nil))
			results <- dialResult{c, k.name, err}
		}()
	}
	var errs []error
	for pending := len(transports); pending > 0; {
		r := <-results
		pending--
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.kind, r.err))
			continue
		}
		go drainLoser(results, pending)
		info, err := e.probeHello(ctx, r.conn)
		r.conn.Close(0, "probe")
		if err != nil {
			return PeerInfo{}, err
		}
		info.Addr = addr
		return info, nil
	}
	return PeerInfo{}, fmt.Errorf("nothing answers at %s: %w", addr, errors.Join(errs...))
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
	return e.peerInfo(c.PeerID(), h.Name, ""), nil
}
