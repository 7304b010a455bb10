package quic

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/internal/clock"
)

// A dial to a port where nothing listens ends once the host refused the
// port twice, a second apart (a NothingListeningError that names the
// address), where quic-go, whose socket never hears the host's
// "port unreachable", resent its first packet until the handshake's
// timeout: 'dial quic ADDR: timeout: no recent network activity' after 5 s.
func TestDialToAClosedPortEnds(t *testing.T) {
	t.Parallel()
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	hp := uc.LocalAddr().String()
	uc.Close()
	_, err = Dial(t.Context(), hp, &tls.Config{}, transport.Config{})
	var nl *transport.NothingListeningError
	if !errors.As(err, &nl) || nl.Addr != hp || !errors.Is(err, errDeadPort) {
		t.Fatalf("dial %s: %v", hp, err)
	}
}

// The rule of watchDeadPort, with the port check stood in for: the dial
// ends only when the port was refused twice, a second or more apart (a
// host that refuses about once a second, as Linux does beyond loopback,
// stays silent in between); a port that answers ends the checks, and one
// that opens meanwhile (a receiver starting as the dial began) or a check
// that hears nothing (a firewall that drops, Windows) leaves the dial to
// run as before.
func TestDeadPortNeedsTwoRefusalsASecondApart(t *testing.T) {
	t.Parallel()
	const R, S, A = portRefused, portSilent, portAnswered
	for _, tc := range []struct {
		name  string
		heard []portWord // what each check hears, in turn (deadPortEvery apart)
		ended bool
	}{
		{"refused, silent, refused a second later", []portWord{S, R, S, S, S, S, R}, true},
		{"refused at once and a second later", []portWord{R, R, R, R, R, R}, true},
		{"refused twice within the second", []portWord{R, R, S, S}, false},
		{"refused, then open", []portWord{R, S, A}, false},
		{"silent", []portWord{S, S, S, S, S, S, S, S}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			errOut := errors.New("no more words")
			// The checks' pace runs on a fake clock, moved on by each
			// wait's deadPortEvery: on the real one a loaded machine's
			// late timers put the fifth check of "refused at once and a
			// second later" past the second and ended the dial a check
			// early ("checked 5 times, want 6").
			fake := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			watched, advanced := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(advanced)
				wctx, stop := context.WithCancel(context.Background())
				defer stop()
				go func() {
					<-watched
					stop()
				}()
				for fake.WaitTimers(wctx, 1) == nil {
					fake.Advance(deadPortEvery)
				}
			}()
			n := 0
			watchDeadPort(ctx, fake, func(context.Context) portWord {
				if n == len(tc.heard) {
					cancel(errOut)
					return portSilent
				}
				n++
				return tc.heard[n-1]
			}, cancel)
			close(watched)
			<-advanced
			if n != len(tc.heard) {
				t.Errorf("checked %d times, want %d", n, len(tc.heard))
			}
			if ended := errors.Is(context.Cause(ctx), errDeadPort); ended != tc.ended {
				t.Errorf("ended %v, want %v (%v)", ended, tc.ended, context.Cause(ctx))
			}
		})
	}
}
