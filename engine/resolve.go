package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// DefaultPort is the port Ferry listens on when it is free (UDP for QUIC,
// TCP for TCP+TLS); a device that moved is also looked for there.
const DefaultPort = "47800"

// Resolver finds where a device can be reached now: the engine asks it
// before each attempt of a send whose Target follows the device
// (Target.Follow). The app and ferry-cli give discovery's live table.
type Resolver interface {
	// ResolvePeer returns the device's current addresses, best first, or
	// none when it is not seen now. It must answer quickly (ctx is short).
	ResolvePeer(ctx context.Context, id string) []Target
}

// resolveWait bounds how long one attempt asks the Resolver.
const resolveWait = time.Second

// candidateStagger is the head start each address of a device gets over
// the next one when they are dialled (a dead address costs a QUIC dial its
// whole handshake timeout).
const candidateStagger = 250 * time.Millisecond

// maxCandidates bounds the addresses one attempt dials.
const maxCandidates = 8

// candidates lists where a followed device may be, best first: what the
// Resolver sees now (live discovery), the target's own addresses (where it
// was seen when the send started), the addresses it was last reached at
// (trust store), then each of those hosts on DefaultPort (a device that
// restarted on the default port).
func (e *Engine) candidates(ctx context.Context, to Target, id identity.DeviceID) []Target {
	var out []Target
	seen := map[[2]string]bool{}
	add := func(t Target) {
		t.ID, t.Follow = to.ID, false
		k := [2]string{t.quicAddr(), t.tcpAddr()}
		if (k[0] == "" && k[1] == "") || seen[k] || len(out) >= maxCandidates {
			return
		}
		seen[k] = true
		out = append(out, t)
	}
	if r := e.opts.Resolver; r != nil {
		rctx, cancel := context.WithTimeout(ctx, resolveWait)
		for _, t := range r.ResolvePeer(rctx, id.String()) {
			add(t)
		}
		cancel()
	}
	add(to)
	if p, ok := e.trust.Get(id.Peer()); ok {
		for _, a := range p.LastAddrs {
			add(Target{Addr: a})
		}
	}
	for _, t := range append([]Target(nil), out...) {
		for _, a := range []string{t.quicAddr(), t.tcpAddr()} {
			if host, port, err := net.SplitHostPort(a); err == nil && port != DefaultPort {
				add(Target{Addr: net.JoinHostPort(host, DefaultPort)})
			}
		}
	}
	return out
}

// dialTarget connects for one attempt of a send. A target that follows its
// device is looked up again first (see candidates) and its addresses are
// dialled with a stagger, the first that proves the device winning;
// another one is dialled as given. It returns the target it reached.
func (e *Engine) dialTarget(ctx context.Context, to Target, want identity.DeviceID, kind transport.Kind) (Conn, string, Target, error) {
	if !to.Follow || want.IsZero() {
		c, reason, err := e.dial(ctx, to, want, kind)
		return c, reason, to, err
	}
	cands := e.candidates(ctx, to, want)
	type result struct {
		i      int
		c      Conn
		reason string
		err    error
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result, len(cands))
	failed := make(chan struct{}, len(cands))
	go func() {
		for i, t := range cands {
			if i > 0 {
				timer := time.NewTimer(candidateStagger)
				select {
				case <-timer.C:
				case <-failed: // the one before failed: no need to wait
					timer.Stop()
				case <-dctx.Done():
					timer.Stop()
				}
			}
			if dctx.Err() != nil {
				for range cands[i:] {
					results <- result{err: dctx.Err()}
				}
				return
			}
			go func() {
				c, reason, err := e.dial(dctx, t, want, kind)
				if err != nil {
					failed <- struct{}{}
				}
				results <- result{i, c, reason, err}
			}()
		}
	}()
	var errs []error
	var win *result
	for range cands {
		r := <-results
		switch {
		case r.err != nil:
			errs = append(errs, r.err)
		case win == nil:
			win = &r
			cancel() // the others stop dialling
		default:
			r.c.Close(nil)
		}
	}
	if win != nil {
		e.log.Info("device found", "id", want.Short(), "at", cands[win.i].quicAddr(), "candidates", len(cands))
		return win.c, win.reason, cands[win.i], nil
	}
	// A device that moved away leaves someone else, or no one, at its old
	// addresses: report a failure to reach it (retried), not the refusal.
	for _, err := range errs {
		var mm *identity.MismatchError
		if !errors.As(err, &mm) && !errors.Is(err, context.Canceled) {
			return nil, "", to, err
		}
	}
	if len(errs) > 0 && ctx.Err() == nil {
		// Not the refusal itself: the device may show up elsewhere by the
		// next attempt.
		return nil, "", to, fmt.Errorf("could not reach device %s: other devices answer at the %d addresses it was known at", want.Short(), len(cands))
	}
	return nil, "", to, ctx.Err()
}
