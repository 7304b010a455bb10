package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
)

// Happy-Eyeballs timing: QUIC gets a head start; TCP follows if QUIC has not
// connected by then (UDP blocked or dropped costs at most this much).
var (
	quicHeadStart = 200 * time.Millisecond
	// cleanRTT is the round trip under which a path counts as a clean local
	// link, where kernel TCP's offloads beat QUIC on bytes per second.
	cleanRTT = 5 * time.Millisecond
	// switchRTT is the round trip from which auto starts on QUIC and moves
	// to TCP on random loss (autoswitch.go), rather than picking TCP with
	// BBR before it starts: where round trips are dear, QUIC's fewer of them
	// and its better use of a clean long pipe pay for the switch; on shorter
	// paths the switch costs more than it saves (lab: 20 ms, 0.5-2 % loss,
	// B: 2.3-2.4 s with the switch, 2.1 s over TCP from the start).
	switchRTT = 50 * time.Millisecond
)

// autoSwitch turns on auto's start-on-QUIC-then-maybe-TCP mode on paths that
// are not clean local links (autoswitch.go); off, auto picks one transport
// before the transfer starts (pickForPath). FERRY_AUTO_SWITCH=0 turns it off
// so the lab can compare.
var autoSwitch = os.Getenv("FERRY_AUTO_SWITCH") != "0"

// tcpUpgradeWait bounds how long auto waits for TCP after QUIC connected
// before it settles for QUIC: long enough for one lost SYN (retried after
// 1 s) and a lost handshake flight on a path of the given RTT. With 1 s flat,
// the lab's 5 %-loss cells fell back to QUIC in 2 of 3 runs (1 ms RTT: 10.7
// s instead of 2.7 s) and timed out at 120 ms; a peer whose TCP port
// silently drops costs this much before the transfer starts over QUIC.
func tcpUpgradeWait(rtt time.Duration) time.Duration { return 2500*time.Millisecond + 4*rtt }

type dialResult struct {
	conn Conn
	kind string
	err  error
}

// dialTransports connects with one transport, or with "auto" races them and
// picks the one that suits the path, returning the reason for the choice.
func (e *Engine) dialTransports(ctx context.Context, to Target, verify func(addr string) func(identity.DeviceID) error, transport string) (Conn, string, error) {
	dialOne := func(ctx context.Context, kind string) (Conn, error) {
		k, ok := transports[kind]
		if !ok {
			return nil, fmt.Errorf("%s is not available in this build", kind)
		}
		addr := to.quicAddr()
		if kind == "tcp" {
			addr = to.tcpAddr()
		}
		if addr == "" {
			return nil, fmt.Errorf("the peer has no %s address", kind)
		}
		return k.dial(ctx, addr, e.ident.TLSConfig(false, verify(addr)))
	}
	switch transport {
	case "quic", "tcp":
		c, err := dialOne(ctx, transport)
		if err != nil {
			return nil, "", connectError(err)
		}
		return c, "requested with --transport " + transport, nil
	}
	_, haveTCP := transports["tcp"]
	if !haveTCP || to.tcpAddr() == "" {
		c, err := dialOne(ctx, "quic")
		if err != nil {
			return nil, "", connectError(err)
		}
		return c, "TCP is not available", nil
	}
	if to.quicAddr() == "" {
		c, err := dialOne(ctx, "tcp")
		if err != nil {
			return nil, "", connectError(err)
		}
		return c, "the peer has no QUIC address", nil
	}

	rctx, cancel := context.WithCancel(ctx)
	keepRace := false // an autoConn keeps the TCP dial going
	defer func() {
		if !keepRace {
			cancel()
		}
	}()
	results := make(chan dialResult, 2)
	start := func(kind string) {
		go func() {
			c, err := dialOne(rctx, kind)
			results <- dialResult{c, kind, err}
		}()
	}
	start("quic")
	head := time.NewTimer(quicHeadStart)
	defer head.Stop()
	tcpStarted, pending := false, 1
	var errs []error
	for pending > 0 {
		select {
		case <-head.C:
			if !tcpStarted {
				start("tcp")
				tcpStarted, pending = true, pending+1
			}
		case r := <-results:
			pending--
			if r.err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", r.kind, r.err))
				var mm *identity.MismatchError
				var kc *identity.KeyChangedError
				if errors.As(r.err, &mm) || errors.As(r.err, &kc) {
					return nil, "", r.err // the wrong device answered: do not try harder
				}
				if !tcpStarted {
					start("tcp")
					tcpStarted, pending = true, pending+1
				}
				continue
			}
			if r.kind == "tcp" {
				// First secure connection wins; close the loser when it arrives.
				go drainLoser(results, pending)
				return r.conn, "TCP connected first (QUIC did not answer within " + quicHeadStart.String() + ")", nil
			}
			// QUIC won. pickForPath may still want TCP: the dial under way
			// since the head start is the one to wait for (it may have
			// survived a lost SYN already), not a new one.
			tcpErr := errors.Join(errs...)
			tcp := func(ctx context.Context) (Conn, error) {
				switch {
				case !tcpStarted:
					return dialOne(ctx, "tcp")
				case pending == 0:
					return nil, tcpErr
				}
				select {
				case r := <-results:
					return r.conn, r.err
				case <-ctx.Done():
					go drainLoser(results, pending)
					return nil, context.Cause(ctx)
				}
			}
			if q, ok := r.conn.(*quicSession); ok && autoSwitch {
				if rtt := r.conn.Metrics().SmoothedRTTms; rtt >= ms(switchRTT) {
					keepRace = true
					return newAutoConn(q, tcp, cancel), fmt.Sprintf("RTT %.1f ms: QUIC answered first and starts at once; "+
						"TCP takes the rest of the batch if it connects with BBR and QUIC sees random loss", rtt), nil
				}
			}
			return e.pickForPath(ctx, r.conn, tcp)
		case <-ctx.Done():
			go drainLoser(results, pending)
			return nil, "", context.Cause(ctx)
		}
	}
	return nil, "", connectError(errors.Join(errs...))
}

// drainLoser closes connections from dials that lost the race.
func drainLoser(results <-chan dialResult, pending int) {
	for range pending {
		if r := <-results; r.conn != nil {
			r.conn.Close(0, "lost the race")
		}
	}
}

// pickForPath decides between the QUIC connection we have and TCP, following
// what ferry-bench measured (docs/transport-choice.md):
//   - on a clean local link (RTT under cleanRTT) kernel TCP moves more bytes
//     per second than quic-go (segmentation offload, no user-space pacing);
//   - on a long or lossy path TCP with BBR beats QUIC by a wide margin,
//     because quic-go's congestion control is Reno-style and fixed;
//   - only with a loss-based TCP (Cubic, Reno) on such a path does QUIC's
//     per-stream loss isolation make it the better choice.
func (e *Engine) pickForPath(ctx context.Context, q Conn, tcp func(context.Context) (Conn, error)) (Conn, string, error) {
	m := q.Metrics()
	rtt := time.Duration(m.SmoothedRTTms * float64(time.Millisecond))
	tctx, cancel := context.WithTimeoutCause(ctx, tcpUpgradeWait(rtt), errors.New("no TCP connection in time"))
	defer cancel()
	t, err := tcp(tctx)
	if err != nil {
		return q, fmt.Sprintf("TCP did not connect (%v); QUIC answered with RTT %.2f ms", shortErr(err), m.SmoothedRTTms), nil
	}
	tm := t.Metrics()
	switch {
	case rtt < cleanRTT && tcpFasterOnCleanPaths:
		q.Close(0, "switching to tcp")
		return t, fmt.Sprintf("clean low-latency path (RTT %.2f ms): TCP moves more bytes per second here", m.SmoothedRTTms), nil
	case tm.CongestionControl == "bbr":
		q.Close(0, "switching to tcp")
		return t, fmt.Sprintf("RTT %.1f ms: TCP with BBR copes with latency and loss better than QUIC's Reno-style control", m.SmoothedRTTms), nil
	default:
		t.Close(0, "quic chosen")
		cc := tm.CongestionControl
		if cc == "" {
			cc = "a loss-based congestion control"
		}
		return q, fmt.Sprintf("RTT %.1f ms and TCP uses %s: QUIC isolates loss per stream", m.SmoothedRTTms, cc), nil
	}
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}

// connectError turns dial failures into a sentence about what to check.
func connectError(err error) error {
	var mm *identity.MismatchError
	var kc *identity.KeyChangedError
	if errors.As(err, &mm) || errors.As(err, &kc) {
		return err
	}
	return fmt.Errorf("could not connect to the receiver (is Ferry running and receiving there, and is the address right?): %w", err)
}
