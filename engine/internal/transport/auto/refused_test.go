package auto

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// A receiver that was starting as the dial began (a restart, which is how
// a send resumes) refuses TCP at once while QUIC's dial, which resends its
// first packet, is answered: on a clean local link auto dials TCP once
// more rather than carry the batch over QUIC. A TCP refused again, or one
// that failed otherwise, is not dialled twice.
func TestRefusedTCPIsDialledAgainOnceQUICAnswered(t *testing.T) {
	t.Parallel()
	refusedErr := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	clean := &transport.Metrics{SmoothedRTTms: 0.1, MinRTTms: 0.1, CongestionControl: "cubic"}
	for _, tc := range []struct {
		name   string
		second error // the second TCP dial's error (nil: it connects)
		first  error // the first TCP dial's error
		want   transport.Kind
		dials  int32
		why    string
	}{
		{"it listens now", nil, refusedErr, transport.TCP, 2, "clean low-latency path"},
		{"refused again", refusedErr, refusedErr, transport.QUIC, 2, "connection refused"},
		{"not refused", nil, errTimedOut, transport.QUIC, 1, "timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var closed, dials atomic.Int32
			table := []Entry{
				{Kind: transport.QUIC, Priority: 0, Dial: func(ctx context.Context, _ string, _ *tls.Config) (transport.Conn, error) {
					select {
					case <-time.After(50 * time.Millisecond): // after TCP's first dial failed
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return &fakeConn{kind: transport.QUIC, closed: &closed, m: clean}, nil
				}},
				{Kind: transport.TCP, Priority: 1, Dial: func(context.Context, string, *tls.Config) (transport.Conn, error) {
					err := tc.first
					if dials.Add(1) > 1 {
						err = tc.second
					}
					if err != nil {
						return nil, err
					}
					return &fakeConn{kind: transport.TCP, closed: &closed, m: clean}, nil
				}},
			}
			cfg := transport.Config{HeadStart: 5 * time.Millisecond}
			d, err := Dial(t.Context(), Request{Table: table, Addrs: at("x", table), TLS: noTLS, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Conn.Close(nil)
			if d.Conn.Transport() != tc.want || !strings.Contains(d.Why, tc.why) {
				t.Errorf("%s: %s", d.Conn.Transport(), d.Why)
			}
			if got := dials.Load(); got != tc.dials {
				t.Errorf("TCP dialled %d times, want %d", got, tc.dials)
			}
		})
	}
}

var errTimedOut = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ETIMEDOUT)}
