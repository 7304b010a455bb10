package anywhere_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/anywhere"
	"github.com/ferrydrop/ferry/engine/internal/rendezvous"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
	"github.com/ferrydrop/ferry/engine/internal/transport/quic"
	"github.com/ferrydrop/ferry/engine/relay"
)

// cuttableUDP forwards datagrams between its clients and to, until cut:
// from then on it drops everything both ways, as a device killed does.
type cuttableUDP struct {
	pc  net.PacketConn
	cut atomic.Bool
}

func newCuttableUDP(t *testing.T, to net.Addr) *cuttableUDP {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttableUDP{pc: pc}
	var mu sync.Mutex
	ups := map[string]net.PacketConn{} // a socket towards to per client
	t.Cleanup(func() {
		pc.Close()
		mu.Lock()
		for _, u := range ups {
			u.Close()
		}
		mu.Unlock()
	})
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if p.cut.Load() {
				continue
			}
			mu.Lock()
			up := ups[from.String()]
			if up == nil {
				if up, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
					mu.Unlock()
					return
				}
				ups[from.String()] = up
				go func() {
					b := make([]byte, 64<<10)
					for {
						n, _, err := up.ReadFrom(b)
						if err != nil {
							return
						}
						if !p.cut.Load() {
							pc.WriteTo(b[:n], from)
						}
					}
				}()
			}
			mu.Unlock()
			up.WriteTo(buf[:n], to)
		}
	}()
	return p
}

// A session whose own end is a TURN allocation (QUIC through the bridge
// to pion's ICE connection) watches its path's silence as one from the
// shared socket does: when the device restarted, as its new run's presence
// at the relay says, the session ends with ErrPeerRestarted, not at QUIC's
// idle timeout (a minute here: the test fails on its 30 s bound first).
// The bridged session had no watcher at all.
func TestBridgedSessionSeesTheRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("ICE checks through TURN take a second")
	}
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	relayAddr := r.Addr().String()
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 9
	cfg := transport.Config{QUICIdleTimeout: time.Minute}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ln, err := quic.Listen("127.0.0.1:0", b.TLSConfig(true, func(identity.DeviceID) error { return nil }), join.NewRegistry(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	device := newCuttableUDP(t, ln.Addr())
	serve := func(instance string) {
		started := make(chan struct{})
		srv := &anywhere.Server{
			Relay: relayAddr, Self: b.ID, Loopback: true, RelayOnly: true, Instance: instance, Poll: 50 * time.Millisecond,
			Peers:    func() []anywhere.Peer { return []anywhere.Peer{{ID: a.ID, Secret: s}} },
			Listener: func() *net.UDPAddr { return device.pc.LocalAddr().(*net.UDPAddr) },
			Started:  func() { close(started) },
		}
		sctx, stop := context.WithCancel(t.Context())
		served := make(chan error, 1)
		go func() { served <- srv.Run(sctx) }()
		t.Cleanup(func() { stop(); <-served })
		<-started
	}
	serve(anywhere.NewInstance())
	c, err := anywhere.Dial(ctx, anywhere.DialRequest{
		Relay: relayAddr, Secret: s, Self: a.ID, Peer: b.ID, Loopback: true, RelayOnly: true, Transport: cfg,
		TLS: a.TLSConfig(false, func(identity.DeviceID) error { return nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(nil)
	if !c.Path().Relayed {
		t.Fatalf("path %v: this side's end is not its TURN allocation", c.Path())
	}
	st, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		buf := make([]byte, 32<<10)
		for {
			if _, err := st.Write(buf); err != nil {
				wrote <- err
				return
			}
		}
	}()
	in, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := in.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, rs, 1<<20); err != nil {
		t.Fatal(err)
	}
	// Killed: the device answers nothing more, and its new run announces
	// itself at the relay.
	device.cut.Store(true)
	serve(anywhere.NewInstance())
	select {
	case err := <-wrote:
		if !errors.Is(err, anywhere.ErrPeerRestarted) {
			t.Errorf("the session ended with %v, not ErrPeerRestarted", err)
		}
	case <-ctx.Done():
		t.Fatal("the bridged session outlived the device's restart (it waits for QUIC's idle timeout)")
	}
}
