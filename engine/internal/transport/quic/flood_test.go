package quic

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
	"github.com/ferrydrop/ferry/engine/internal/transport/transporttest"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// Issue #14 (5): QUIC connections that finish their handshake and never
// open a stream do not keep a real sender out ("listener busy"), whether
// they come from one address or from many.
func TestNoStreamFlood(t *testing.T) {
	t.Parallel()
	const flood = 100 // more than join.MaxPending; ferry-bench hostile runs 1000
	for _, sources := range []int{1, flood} {
		t.Run(fmt.Sprintf("%d sources", sources), func(t *testing.T) {
			t.Parallel()
			ln := newListener(t, transport.Config{HandshakeTimeout: time.Minute})
			ra := ln.Addr().(*net.UDPAddr)
			tlsConf := newTestIdentity(t).TLSConfig(false, nil)
			cfg := quicConfig(transport.Config{}.WithDefaults())
			for i := range flood {
				from := transporttest.LoopbackSource(t, 2+i%sources)
				udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: from})
				if err != nil {
					t.Fatal(err)
				}
				tr := &quic.Transport{Conn: udp}
				t.Cleanup(func() {
					tr.Close()
					udp.Close()
				})
				// A shed connection is closed by the listener at once;
				// the others sit there, opening nothing.
				// Beyond what one address may hold, quic-go refuses the
				// connection before its handshake.
				tr.Dial(t.Context(), ra, tlsConf, cfg)
			}
			want := min(join.MaxPendingPerSource*sources, join.MaxPending)
			testutil.WaitFor(t, "the handshakes to be pending", func() bool { return ln.gate.Pending() == want })

			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			c, err := Dial(ctx, ln.Addr().String(), newTestIdentity(t).TLSConfig(false, nil), transport.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(nil)
			if _, err := c.OpenStream(ctx); err != nil {
				t.Fatal(err)
			}
			s, err := ln.Accept(ctx)
			if err != nil {
				t.Fatalf("a real sender's session was not accepted during the flood: %v", err)
			}
			s.Close(nil)
		})
	}
}

// quic-go asks the listener about every new connection before any
// cryptography; one address gets maxLiveConnsPerSource live ones at most,
// and a place comes back when one of them ends.
func TestLiveConnectionsPerSource(t *testing.T) {
	t.Parallel()
	ln := newListener(t, transport.Config{})
	from := &quic.ClientInfo{RemoteAddr: &net.UDPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 1000}}
	var cancels []context.CancelFunc
	for i := range maxLiveConnsPerSource {
		ctx, cancel := context.WithCancel(t.Context())
		cancels = append(cancels, cancel)
		if _, err := ln.admit(ctx, from); err != nil {
			t.Fatalf("connection %d refused: %v", i+1, err)
		}
	}
	if _, err := ln.admit(t.Context(), from); err == nil {
		t.Fatal("one connection too many from one address was let in")
	}
	other := &quic.ClientInfo{RemoteAddr: &net.UDPAddr{IP: net.IPv4(198, 51, 100, 1), Port: 1000}}
	if _, err := ln.admit(t.Context(), other); err != nil {
		t.Fatalf("another address was refused: %v", err)
	}
	cancels[0]() // quic-go ends a connection's context when it ends
	testutil.WaitFor(t, "the source to be admitted again", func() bool {
		_, err := ln.admit(t.Context(), from)
		return err == nil
	})
	for _, c := range cancels {
		c()
	}
}
