package anywhere_test

import (
	"context"
	"net"
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

// TestGoodbyesGoThroughTheBridges: on a path through the relay's TURN,
// where each side's QUIC reaches ICE through a bridge, a session closed on
// one side is over on the other at once: its CONNECTION_CLOSE goes
// through the bridge before the bridge closes. The caller's bridge closed
// with its session and dropped the goodbye in some runs; the receiver's
// session then waited seconds to hear the end (and, with it, to give its
// TURN allocation back). And the receiver's end of the call, once its
// session ended (Server.EndOf), gives the relay back its allocation.
func TestGoodbyesGoThroughTheBridges(t *testing.T) {
	if testing.Short() {
		t.Skip("ICE through TURN, several calls")
	}
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	relayAddr := r.Addr().String()
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 7
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ln, err := quic.Listen("127.0.0.1:0", b.TLSConfig(true, func(identity.DeviceID) error { return nil }), join.NewRegistry(), transport.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	started := make(chan struct{})
	srv := &anywhere.Server{
		Relay: relayAddr, Self: b.ID, Loopback: true, RelayOnly: true, Poll: 50 * time.Millisecond,
		Peers:    func() []anywhere.Peer { return []anywhere.Peer{{ID: a.ID, Secret: s}} },
		Listener: func() *net.UDPAddr { return ln.Addr().(*net.UDPAddr) },
		Started:  func() { close(started) },
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Run(sctx) }()
	defer func() { stop(); <-served }()
	<-started
	// Each side closes first in turn, three times each (before the fix the
	// caller's goodbye was lost within its three rounds in 3 runs of 3).
	for i := range 6 {
		c, err := anywhere.Dial(ctx, anywhere.DialRequest{
			Relay: relayAddr, Secret: s, Self: a.ID, Peer: b.ID, Loopback: true, RelayOnly: true,
			TLS: a.TLSConfig(false, func(identity.DeviceID) error { return nil }),
		})
		if err != nil {
			t.Fatal(err)
		}
		if !c.Path().Relayed {
			t.Fatalf("path %v, want one through the relay", c.Path())
		}
		st, err := c.OpenStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st.Write([]byte("hello"))
		in, err := ln.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		end, ok := srv.EndOf(in.RemoteAddr())
		if !ok {
			t.Fatalf("no call for the session from %s", in.RemoteAddr())
		}
		if _, err := in.AcceptStream(ctx); err != nil {
			t.Fatal(err)
		}
		first, other := transport.Conn(c), in
		if i%2 == 1 {
			first, other = in, c
		}
		first.Close(nil)
		// QUIC's idle timeout, had the goodbye been lost, is 10 s or more.
		select {
		case <-other.Done():
		case <-time.After(3 * time.Second):
			t.Fatalf("round %d: the %s's goodbye did not reach the other side", i, map[bool]string{true: "caller", false: "receiver"}[i%2 == 0])
		}
		other.Close(nil)
		end()
		deadline := time.Now().Add(5 * time.Second)
		for r.Allocations() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d TURN allocations held after both sides ended the call", i, r.Allocations())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
