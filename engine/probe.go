package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport/auto"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/engine/wire"
)

// probeTimeout bounds one Probe.
const probeTimeout = 5 * time.Second

// Probe connects to addr over every transport of the table at once, proves
// who answers there and reads its name, without offering anything. Discovery uses
// it for remembered and manually added devices.
func (e *Engine) Probe(ctx context.Context, addr string) (PeerInfo, error) {
	info, _, err := e.probe(ctx, addr)
	return info, err
}

// AddDevice is Probe for a device the user adds by its address: the device
// that answers is remembered with that address, as a send to it would
// remember it, so that it is looked for there after a restart (it was
// forgotten unless something had been sent to it). With want set (a link
// named the device), another device that answers is only reported, in
// info, with ErrOtherDevice.
func (e *Engine) AddDevice(ctx context.Context, addr, want string) (PeerInfo, error) {
	info, id, err := e.probe(ctx, addr)
	if err != nil {
		return info, err
	}
	if info.ID == e.ID() {
		return info, ErrThisDevice
	}
	if want != "" && info.ID != want {
		return info, ErrOtherDevice
	}
	if err := e.trust.Seen(id, info.Name, addr); err != nil {
		e.log.Warn("trust store", "err", err)
	}
	return info, nil
}

// probe is Probe, with the proven ID of the device that answered.
func (e *Engine) probe(ctx context.Context, addr string) (PeerInfo, peer.ID, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	// Dial every transport at once: one of them may be blocked, and a probe
	// should not wait for its timeout before trying the other.
	c, err := auto.First(ctx, e.transports, AddrsAt(addr),
		func(string) *tls.Config { return e.ident.TLSConfig(false, nil) })
	if err != nil {
		return PeerInfo{}, peer.ID{}, fmt.Errorf("nothing answers at %s: %w", addr, err)
	}
	info, err := e.probeHello(ctx, c)
	id := c.PeerID().Peer()
	c.Close(nil)
	if err != nil {
		return PeerInfo{}, peer.ID{}, err
	}
	info.Addr = addr
	return info, id, nil
}

// Errors of AddDevice: another device than the one asked for answered,
// or this device did.
var (
	ErrOtherDevice = errors.New("another device answered there")
	ErrThisDevice  = errors.New("that address is this device")
)

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
