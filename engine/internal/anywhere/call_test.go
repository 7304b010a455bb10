package anywhere_test

import (
	"context"
	"errors"
	"io"
	"net"
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

func ident(t *testing.T) *identity.Identity {
	t.Helper()
	id, err := identity.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestCallOverLoopback runs the whole call on loopback (the NAT cases are
// ferry-cli's lab tests): the relay's mailbox and STUN/TURN, presence,
// call, answer, ICE, and QUIC over the bridge, with the callee proving its
// identity. When someone else's QUIC listener answers the call, the
// handshake fails: reaching the rendezvous is not reaching the device.
func TestCallOverLoopback(t *testing.T) {
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	relayAddr := r.Addr().String()
	a, b, stranger := ident(t), ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 42
	for _, tc := range []struct {
		name     string
		listener *identity.Identity
		ok       bool
	}{
		{"the paired device", b, true},
		{"a stranger's listener behind the rendezvous", stranger, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ln, err := quic.Listen("127.0.0.1:0", tc.listener.TLSConfig(true, func(identity.DeviceID) error { return nil }), join.NewRegistry(), transport.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			started := make(chan struct{})
			srv := &anywhere.Server{
				Relay: relayAddr, Self: b.ID, Loopback: true, Poll: 50 * time.Millisecond,
				Peers:    func() []anywhere.Peer { return []anywhere.Peer{{ID: a.ID, Secret: s}} },
				Listener: func() *net.UDPAddr { return ln.Addr().(*net.UDPAddr) },
				Started:  func() { close(started) },
			}
			sctx, stop := context.WithCancel(ctx)
			served := make(chan error, 1)
			go func() { served <- srv.Run(sctx) }()
			defer func() { stop(); <-served }()
			<-started
			var presented atomic.Pointer[identity.DeviceID]
			c, err := anywhere.Dial(ctx, anywhere.DialRequest{
				Relay: relayAddr, Secret: s, Self: a.ID, Peer: b.ID, Loopback: true,
				TLS: a.TLSConfig(false, func(got identity.DeviceID) error {
					presented.Store(&got)
					if got != b.ID {
						return &identity.MismatchError{Expected: b.ID.Peer(), Presented: got.Peer()}
					}
					return nil
				}),
			})
			if !tc.ok {
				if err == nil {
					c.Close(nil)
					t.Fatal("a session with a stranger's listener")
				}
				if p := presented.Load(); p == nil || *p != stranger.ID {
					t.Fatalf("failed before the handshake (%v): the test did not reach the stranger", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(nil)
			if c.Path().Relayed {
				t.Errorf("loopback path relayed: %v", c.Path())
			}
			st, err := c.OpenStream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			st.Write([]byte("hello from anywhere"))
			st.Close()
			in, err := ln.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if in.PeerID() != a.ID {
				t.Errorf("the receiver sees %s, not the caller", in.PeerID().Short())
			}
			// The receiving side knows the session came by the call: the
			// listener hears it from the bridge, on the path ICE chose.
			if p, ok := srv.PathOf(in.RemoteAddr()); !ok || p.Relayed || p.Relay != relayAddr {
				t.Errorf("the receiver's path of %s: %+v, %v", in.RemoteAddr(), p, ok)
			}
			if _, ok := srv.PathOf("192.0.2.1:4000"); ok {
				t.Error("a path for an address no call came from")
			}
			rs, err := in.AcceptStream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rs)
			if err != nil || string(got) != "hello from anywhere" {
				t.Fatalf("read %q, %v", got, err)
			}
			in.Close(nil)
		})
	}
}

// TestDialErrors: what a caller hears before any ICE runs.
func TestDialErrors(t *testing.T) {
	t.Parallel()
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	addr := r.Addr().String()
	a, b := ident(t), ident(t)
	req := anywhere.DialRequest{Relay: addr, Self: a.ID, Peer: b.ID, TLS: a.TLSConfig(false, func(identity.DeviceID) error { return nil })}
	req.Secret[0] = 1
	ctx := context.Background()
	if _, err := anywhere.Dial(ctx, req); !errors.Is(err, anywhere.ErrNotFound) {
		t.Errorf("no presence: %v", err)
	}
	r.Close()
	if _, err := anywhere.Dial(ctx, req); !errors.Is(err, anywhere.ErrRelayUnreachable) {
		t.Errorf("relay down: %v", err)
	}
}

// TestRelayedPairAcceptedEarly: where only a relayed pair works, the
// caller takes it once no direct pair answered for relayWait (half a
// second on loopback), not after pion's default 2 s for relay candidates,
// which was half of a relayed call's set-up at 80 ms round trip.
func TestRelayedPairAcceptedEarly(t *testing.T) {
	if testing.Short() {
		t.Skip("ICE checks through TURN take a second")
	}
	// The relay on 127.0.0.2, the devices' own candidates on 127.0.0.1,
	// which no check may reach: only relayed pairs work.
	r, err := relay.Start(relay.Config{Listen: "127.0.0.2:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	took, path, err := anywhere.RelayOnlyChecks(ctx, r.Addr().String(), net.IPv4(127, 0, 0, 2), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checks took %v: %v", took, path)
	if !path.Relayed {
		t.Fatalf("path %v, want a relayed one (the test offers no other)", path)
	}
	// pion accepts a relay candidate no sooner than 2 s after the checks
	// start by default (defaultRelayAcceptanceMinWait).
	if took >= 2*time.Second {
		t.Errorf("the relayed pair was accepted after %v: not before pion's default wait for relay candidates", took)
	}
}
