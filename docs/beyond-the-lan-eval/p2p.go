//go:build !nop2p

package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/sec"
	"github.com/libp2p/go-libp2p/p2p/host/basic"
	"github.com/libp2p/go-libp2p/p2p/host/eventbus"
	"github.com/libp2p/go-libp2p/p2p/host/observedaddrs"
	"github.com/libp2p/go-libp2p/p2p/host/peerstore/pstoremem"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/net/upgrader"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/quicreuse"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/quic-go/quic-go"
)

const evalProto = "/ferry-eval/1"

// newHost assembles a libp2p host without the root package (which does
// not compile against quic-go v0.65, see the doc): QUIC transport, the
// circuit v2 client transport (noise + yamux upgrade the relayed streams),
// identify's observed addresses, and DCUtR hole punching.
func newHost(listen string) (host.Host, error) {
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, err
	}
	pid, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		return nil, err
	}
	ps, err := pstoremem.NewPeerstore()
	if err != nil {
		return nil, err
	}
	ps.AddPrivKey(pid, priv)
	ps.AddPubKey(pid, priv.GetPublic())
	bus := eventbus.NewBus()
	sw, err := swarm.NewSwarm(pid, ps, bus)
	if err != nil {
		return nil, err
	}
	var rk quic.StatelessResetKey
	var tk quic.TokenGeneratorKey
	rand.Read(rk[:])
	rand.Read(tk[:])
	cm, err := quicreuse.NewConnManager(rk, tk)
	if err != nil {
		return nil, err
	}
	tpt, err := libp2pquic.NewTransport(priv, cm, nil, nil, &network.NullResourceManager{})
	if err != nil {
		return nil, err
	}
	if err := sw.AddTransport(tpt); err != nil {
		return nil, err
	}
	nz, err := noise.New(noise.ID, priv, nil)
	if err != nil {
		return nil, err
	}
	upg, err := upgrader.New([]sec.SecureTransport{nz}, []upgrader.StreamMuxer{{ID: yamux.ID, Muxer: yamux.DefaultTransport}}, nil, &network.NullResourceManager{}, nil)
	if err != nil {
		return nil, err
	}
	oam, err := observedaddrs.NewManager(bus, sw)
	if err != nil {
		return nil, err
	}
	h, err := basichost.NewHost(sw, &basichost.HostOpts{EventBus: bus, EnableHolePunching: true, ObservedAddrsManager: oam})
	if err != nil {
		return nil, err
	}
	if err := client.AddTransport(h, upg); err != nil {
		return nil, err
	}
	if err := sw.Listen(ma.StringCast(listen)); err != nil {
		return nil, err
	}
	oam.Start(sw)
	h.Start()
	return h, nil
}

// p2pRelay runs a circuit v2 relay (the one a user would self-host) and
// writes its address to dir/relay. infinite lifts the default per-circuit
// limits (2 minutes, 128 KiB each way).
func p2pRelay(ctx context.Context, dir, listen string, infinite bool) error {
	h, err := newHost(listen)
	if err != nil {
		return err
	}
	defer h.Close()
	var opts []relay.Option
	if infinite {
		opts = append(opts, relay.WithInfiniteLimits())
	}
	r, err := relay.New(h, opts...)
	if err != nil {
		return err
	}
	defer r.Close()
	addr := fmt.Sprintf("%s/p2p/%s", h.Addrs()[0], h.ID())
	if err := os.WriteFile(filepath.Join(dir, "relay.tmp"), []byte(addr), 0o600); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(dir, "relay.tmp"), filepath.Join(dir, "relay")); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// p2pPeer is side a (dials b through the relay, waits for DCUtR to give a
// direct connection, moves n bytes) or side b (reserves a slot on the
// relay, publishes its circuit address, receives).
func p2pPeer(ctx context.Context, side, dir string, n int64) result {
	start := time.Now()
	res := result{Engine: "go-libp2p", Path: "none"}
	fail := func(err error) result { res.Err = err.Error(); res.Connect = time.Since(start).Seconds(); return res }
	raw, err := waitFile(ctx, filepath.Join(dir, "relay"))
	if err != nil {
		return fail(err)
	}
	relayInfo, err := peer.AddrInfoFromString(string(raw))
	if err != nil {
		return fail(err)
	}
	h, err := newHost("/ip4/0.0.0.0/udp/0/quic-v1")
	if err != nil {
		return fail(err)
	}
	defer h.Close()
	if err := h.Connect(ctx, *relayInfo); err != nil {
		return fail(fmt.Errorf("relay: %w", err))
	}
	if side == "b" {
		if _, err := client.Reserve(ctx, h, *relayInfo); err != nil {
			return fail(fmt.Errorf("reserve: %w", err))
		}
		done := make(chan result, 1)
		h.SetStreamHandler(evalProto, func(s network.Stream) {
			got, err := io.Copy(io.Discard, s)
			r := res
			r.Bytes = got
			if err != nil {
				r.Err = err.Error()
			}
			s.Close()
			done <- r
		})
		// The hole-punching service only watches connections that arrive
		// after it saw a public address of this host (it polls for one
		// every 250 ms .. 5 s, holepunch/svc.go waitForPublicAddr); a
		// relayed connection that comes earlier is never punched. Give
		// it the time a real device would have before a peer calls.
		time.Sleep(1500 * time.Millisecond)
		circuit := fmt.Sprintf("%s/p2p-circuit/p2p/%s", raw, h.ID())
		if _, err := exchange(ctx, dir, "p2p-b", "p2p-a", circuit); err != nil {
			return fail(err)
		}
		select {
		case r := <-done:
			time.Sleep(500 * time.Millisecond) // let a's stream close arrive
			return r
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	rawB, err := exchange(ctx, dir, "p2p-a", "p2p-b", "ready")
	if err != nil {
		return fail(err)
	}
	infoB, err := peer.AddrInfoFromString(strings.Trim(string(rawB), `"`))
	if err != nil {
		return fail(err)
	}
	lctx := network.WithAllowLimitedConn(ctx, "eval")
	relayed := time.Now()
	if err := h.Connect(lctx, *infoB); err != nil {
		return fail(fmt.Errorf("through the relay: %w", err))
	}
	// DCUtR runs by itself once b sees the relayed connection; wait for a
	// direct (not limited) one, as long as the engine's own attempts last.
	deadline := time.Now().Add(20 * time.Second)
	var direct network.Conn
	for direct == nil && time.Now().Before(deadline) {
		for _, c := range h.Network().ConnsToPeer(infoB.ID) {
			if _, err := c.RemoteMultiaddr().ValueForProtocol(ma.P_CIRCUIT); err != nil {
				direct = c
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	sctx := ctx
	if direct != nil {
		res.Path = "direct"
		res.Detail = fmt.Sprintf("DCUtR %.2f s after the relayed connect: %s", time.Since(relayed).Seconds(), direct.RemoteMultiaddr())
	} else {
		res.Path = "relayed"
		res.Detail = "hole punching gave no direct connection in 20 s; trying the limited relayed connection"
		sctx = lctx
	}
	s, err := h.NewStream(sctx, infoB.ID, evalProto)
	if err != nil {
		return fail(err)
	}
	res.Connect = time.Since(start).Seconds()
	t0 := time.Now()
	if err := pump(s, n); err != nil {
		return fail(fmt.Errorf("after %v: %w", time.Since(t0).Round(time.Millisecond), err))
	}
	s.CloseWrite()
	if _, err := io.Copy(io.Discard, s); err != nil {
		return fail(err)
	}
	res.Bytes = n
	res.MBps = float64(n) / 1e6 / time.Since(t0).Seconds()
	return res
}
