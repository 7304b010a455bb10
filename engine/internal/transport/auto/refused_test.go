package auto

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/internal/clock"
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
			tcpDialled := make(chan struct{})
			table := []Entry{
				{Kind: transport.QUIC, Priority: 0, Dial: func(ctx context.Context, _ string, _ *tls.Config) (transport.Conn, error) {
					select {
					case <-tcpDialled: // after TCP's first dial failed
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					select {
					case <-time.After(50 * time.Millisecond): // and the race heard of it
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return &fakeConn{kind: transport.QUIC, closed: &closed, m: clean}, nil
				}},
				// Started with QUIC (one bucket): no head start to wait
				// for, so the race's clock can be a fake that never moves,
				// and a busy machine that holds QUIC's answer past the grace
				// a refused TCP gives it (DeadPortGrace) cannot end it.
				{Kind: transport.TCP, Priority: 0, Dial: func(context.Context, string, *tls.Config) (transport.Conn, error) {
					err := tc.first
					if dials.Add(1) > 1 {
						err = tc.second
					} else {
						defer close(tcpDialled)
					}
					if err != nil {
						return nil, err
					}
					return &fakeConn{kind: transport.TCP, closed: &closed, m: clean}, nil
				}},
			}
			cfg := transport.Config{Clock: clock.NewFake(time.Now())}
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

// Ferry listens for QUIC and TCP on one port number, so a host that
// refuses TCP at a port twice, transport.DeadPortGrace apart, has no Ferry
// there: the QUIC dial to the same host:port ends then, nothing listening,
// where a host whose ICMP never reaches it (a firewall that drops it, a
// Windows sender) left it resending its first packet until the handshake's
// timeout (5 s). A QUIC that answers within the grace still wins; a TCP
// that connects at its second dial (the receiver opened meanwhile) wins; a
// refusal at another port of the host (a receiver whose TCP port was taken
// listens for TCP elsewhere) ends nothing.
func TestRefusedTCPEndsTheQUICDialToItsPort(t *testing.T) {
	t.Parallel()
	const (
		head      = 200 * time.Millisecond
		handshake = 5 * time.Second // QUIC's own timeout
	)
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	errHandshakeTimeout := errors.New("timeout: no recent network activity")
	for _, tc := range []struct {
		name     string
		tcpAt    string        // TCP's address; QUIC's is x:1
		answer   time.Duration // when QUIC answers after it began; 0: never
		second   error         // TCP's second dial (nil: it connects)
		advance  time.Duration // the clock's move after TCP's refusal, to the next result
		want     transport.Kind
		wantErr  error // the next result's (nil: it connected)
		tcpDials int32
	}{
		{"nothing at the port", "x:1", 0, refused, transport.DeadPortGrace, transport.QUIC, errRefusedTwice, 2},
		{"QUIC answers within the grace", "x:1", time.Second, refused, time.Second - head, transport.QUIC, nil, 1},
		{"the receiver opened within the grace", "x:1", 0, nil, transport.DeadPortGrace, transport.TCP, nil, 2},
		{"TCP refused at another port", "x:2", 0, refused, handshake - head, transport.QUIC, errHandshakeTimeout, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			begin := fake.Now()
			var closed, tcpDials atomic.Int32
			quicEnded := make(chan time.Time, 1) // when QUIC's dial returned, on the fake clock
			table := []Entry{
				{Kind: transport.QUIC, Priority: 0, Dial: func(ctx context.Context, hp string, _ *tls.Config) (transport.Conn, error) {
					defer func() { quicEnded <- fake.Now() }()
					timeout, timedOut := fake.NewTimer(handshake)
					defer timeout.Stop()
					var answered <-chan time.Time
					if tc.answer > 0 {
						t, c := fake.NewTimer(tc.answer)
						defer t.Stop()
						answered = c
					}
					select {
					case <-answered:
						return &fakeConn{kind: transport.QUIC, closed: &closed}, nil
					case <-timedOut:
						return nil, fmt.Errorf("dial quic %s: %w", hp, errHandshakeTimeout)
					case <-ctx.Done(): // quic-go's Dial returns the cause
						return nil, fmt.Errorf("dial quic %s: %w", hp, context.Cause(ctx))
					}
				}},
				{Kind: transport.TCP, Priority: 1, Dial: func(_ context.Context, hp string, _ *tls.Config) (transport.Conn, error) {
					if tcpDials.Add(1) > 1 && tc.second == nil {
						return &fakeConn{kind: transport.TCP, closed: &closed}, nil
					}
					return nil, &transport.NothingListeningError{Addr: hp, Err: refused} // as tcp.Dial says it
				}},
			}
			as := []addr.Addr{addr.New(transport.QUIC, "x:1"), addr.New(transport.TCP, tc.tcpAt)}
			r := newRace(t.Context(), legs(table, as, ""), head, 0, fake, raceDial)
			defer r.close()
			// The head start's timer and QUIC's own: then TCP dials, refused at once.
			if err := fake.WaitTimers(t.Context(), 2); err != nil {
				t.Fatal(err)
			}
			fake.Advance(head)
			res, ok := r.next(t.Context())
			if !ok || res.kind != transport.TCP || !transport.Refused(res.err) {
				t.Fatalf("first result: %+v, want TCP refused", res)
			}
			r.startDue() // as the next call of next does first
			grace := tc.tcpAt == "x:1"
			if want := 1 + btoi(tc.answer > 0) + btoi(grace); fake.Timers() != want {
				t.Fatalf("%d timers armed after TCP's refusal, want %d (QUIC's timeout, its answer: %v, the grace: %v)",
					fake.Timers(), want, tc.answer > 0, grace)
			}
			got := make(chan result, 1)
			go func() {
				res, _ := r.next(t.Context())
				got <- res
			}()
			fake.Advance(tc.advance - time.Nanosecond)
			select {
			case res := <-got:
				t.Fatalf("a result before its time: %+v", res)
			default:
			}
			fake.Advance(time.Nanosecond)
			res = <-got
			if res.kind != tc.want {
				t.Fatalf("second result: %+v, want %s's", res, tc.want)
			}
			if n := tcpDials.Load(); n != tc.tcpDials {
				t.Errorf("TCP dialled %d times, want %d", n, tc.tcpDials)
			}
			if tc.wantErr == nil {
				if res.err != nil || res.conn == nil {
					t.Fatalf("%s: %v, want it connected", res.kind, res.err)
				}
				res.conn.Close(nil)
				return
			}
			if at := <-quicEnded; at.Sub(begin) != head+tc.advance {
				t.Errorf("QUIC's dial ended %v after it began, want %v", at.Sub(begin), head+tc.advance)
			}
			if !errors.Is(res.err, tc.wantErr) {
				t.Fatalf("QUIC: %v, want %v", res.err, tc.wantErr)
			}
			if _, ok := r.next(t.Context()); ok {
				t.Fatal("a dial ran still")
			}
			// What Dial returns: every dial met nothing listening (the
			// engine's "Nothing is listening at x:1"), or QUIC's timeout.
			err := joinErrs(r.errs())
			leaves := err.(interface{ Unwrap() []error }).Unwrap()
			if len(leaves) != 2 {
				t.Fatalf("%d failures, want 2: %v", len(leaves), err)
			}
			for _, leaf := range leaves {
				var nl *transport.NothingListeningError
				dialled := tc.tcpAt
				if strings.HasPrefix(leaf.Error(), "quic: ") {
					dialled = "x:1"
				}
				if nothing := errors.As(leaf, &nl); nothing != (grace || dialled == tc.tcpAt) {
					t.Errorf("%v: met nothing listening %v", leaf, nothing)
				} else if nothing && nl.Addr != dialled {
					t.Errorf("%v: nothing listening at %s, want %s", leaf, nl.Addr, dialled)
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
