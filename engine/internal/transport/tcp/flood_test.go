package tcp

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
	"github.com/ferrydrop/ferry/engine/internal/transport/transporttest"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// Issue #14 (5): idle TCP connections, each held until the handshake
// timeout, do not keep a real sender out, whether they come from one
// address or from many.
func TestIdleConnectionFlood(t *testing.T) {
	t.Parallel()
	for _, sources := range []int{1, join.MaxPending} {
		t.Run(fmt.Sprintf("%d sources", sources), func(t *testing.T) {
			t.Parallel()
			srv, cli := newTestIdentity(t), newTestIdentity(t)
			ln, err := Listen("127.0.0.1:0", srv.TLSConfig(true, nil), join.NewRegistry(), transport.Config{HandshakeTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			// The flood comes from other loopback addresses than the sender's.
			var idle []net.Conn
			t.Cleanup(func() {
				for _, c := range idle {
					c.Close()
				}
			})
			for i := range 64 {
				from := transporttest.LoopbackSource(t, 2+i%sources)
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: from}}
				c, err := d.DialContext(t.Context(), "tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				idle = append(idle, c)
			}
			want := min(64, join.MaxPendingPerSource*sources, join.MaxPending)
			testutil.WaitFor(t, "the handshakes to be pending", func() bool { return ln.gate.Pending() == want })

			c, err := Dial(t.Context(), ln.Addr().String(), cli.TLSConfig(false, nil), transport.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close(nil) })
			if _, err := c.OpenStream(t.Context()); err != nil {
				t.Fatalf("a real sender could not start its session during the flood: %v", err)
			}
			s, err := ln.Accept(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(nil)
			// Its data streams join at once, several handshakes together.
			var g errgroup.Group
			for range 4 {
				g.Go(func() error {
					st, err := c.OpenStream(t.Context())
					if err == nil {
						st.Abort()
					}
					return err
				})
			}
			if err := g.Wait(); err != nil {
				t.Fatalf("a real sender could not open its data streams during the flood: %v", err)
			}
		})
	}
}

// Issue #27 (4): idle TCP connections from the real sender's own address
// (a flooder behind the same NAT), renewed as fast as the listener drops
// them, do not keep the sender out: on Linux the kernel holds connections
// that sent nothing (TCP_DEFER_ACCEPT) while the sender's, which speak
// first, are accepted; elsewhere a newcomer from an address holding its
// share of handshakes ends the least advanced of them (join.Stage, tested
// in package join) and the sender's connections advance at once.
func TestIdleFloodFromOwnAddress(t *testing.T) {
	t.Parallel()
	srv, cli := newTestIdentity(t), newTestIdentity(t)
	ln, err := Listen("127.0.0.1:0", srv.TLSConfig(true, nil), join.NewRegistry(), transport.Config{HandshakeTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	from := transporttest.LoopbackSource(t, 2)
	ctx, stop := context.WithCancel(t.Context())
	var flood sync.WaitGroup
	t.Cleanup(flood.Wait)
	t.Cleanup(stop)
	var dialled, dropped atomic.Int64
	const workers = 4 * join.MaxPendingPerSource
	for range workers {
		flood.Go(func() {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: from}}
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
				if err != nil {
					continue
				}
				dialled.Add(1)
				unblock := context.AfterFunc(ctx, func() { c.Close() })
				c.Read(make([]byte, 1)) // until the listener drops it
				unblock()
				c.Close()
				dropped.Add(1)
			}
		})
	}
	testutil.WaitFor(t, "the flood to connect", func() bool { return dialled.Load() >= workers })

	c, err := Dial(t.Context(), ln.Addr().String(), cli.TLSConfig(false, nil), transport.Config{LocalIP: from.String()})
	if err != nil {
		t.Fatalf("a real sender behind the flooder's address could not connect: %v", err)
	}
	t.Cleanup(func() { c.Close(nil) })
	if _, err := c.OpenStream(t.Context()); err != nil {
		t.Fatalf("a real sender behind the flooder's address could not start its session: %v", err)
	}
	s, err := ln.Accept(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(nil)
	var g errgroup.Group
	for range 4 {
		g.Go(func() error {
			st, err := c.OpenStream(t.Context())
			if err == nil {
				st.Abort()
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("a real sender behind the flooder's address could not open its data streams: %v", err)
	}
	t.Logf("the flood's connections: %d open, %d dropped by the listener", dialled.Load()-dropped.Load(), dropped.Load())
}
