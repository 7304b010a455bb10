// Package auto chooses the transport for a session. Its table lists the
// transports ({Kind, Priority, Listen, Dial}); a race dials them in
// priority buckets, each with a head start over the next, in the shape of
// syncthing's dialParallel; Dial then keeps the winner, or picks another
// transport for the path, or starts on QUIC and may move the batch to TCP
// mid-way (see switch.go). Probes use the same table and race.
package auto

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
	"github.com/ferrydrop/ferry/internal/clock"
)

// Entry is one row of the transport table.
type Entry struct {
	Kind transport.Kind
	// Priority orders dialling: lower dials first, equal ones together.
	Priority int
	// Listen opens a listener on addr whose sessions reg knows.
	Listen func(addr string, tlsConf *tls.Config, reg *join.Registry) (transport.Listener, error)
	// Dial opens a session to addr.
	Dial func(ctx context.Context, addr string, tlsConf *tls.Config) (transport.Conn, error)
	// BBR reports whether the transport's connections run BBR on this
	// device, known before dialling; nil means they do not.
	BBR func() bool
}

// Find returns the entry of kind.
func Find(table []Entry, kind transport.Kind) (Entry, bool) {
	for _, e := range table {
		if e.Kind == kind {
			return e, true
		}
	}
	return Entry{}, false
}

// result is what one dial of a race gave.
type result struct {
	kind transport.Kind
	conn transport.Conn
	err  error
}

// race dials transports by priority: each bucket of equal priority starts
// once the bucket before it had its head start, or at once when every dial
// started so far failed. Results come in the order they finish. A race is
// used by one goroutine; close ends it.
type race struct {
	ctx     context.Context // cancelled by close
	cancel  context.CancelFunc
	dial    func(ctx context.Context, e Entry) (transport.Conn, error)
	buckets [][]Entry
	started int // buckets started
	head    time.Duration
	clock   clock.Clock
	timer   clock.Timer
	headC   <-chan time.Time // the timer's channel
	results chan result
	running int                      // dials whose result was not taken yet
	failed  map[transport.Kind]error // dials that ended with an error
	wg      sync.WaitGroup
}

// newRace starts the first bucket of entries.
func newRace(ctx context.Context, entries []Entry, head time.Duration, clk clock.Clock, dial func(ctx context.Context, e Entry) (transport.Conn, error)) *race {
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b Entry) int { return a.Priority - b.Priority })
	var buckets [][]Entry
	for i, e := range entries {
		if i == 0 || e.Priority != entries[i-1].Priority {
			buckets = append(buckets, nil)
		}
		buckets[len(buckets)-1] = append(buckets[len(buckets)-1], e)
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &race{ctx: rctx, cancel: cancel, dial: dial, buckets: buckets, head: head, clock: clock.Or(clk),
		results: make(chan result, len(entries)), failed: map[transport.Kind]error{}}
	r.startBucket()
	return r
}

// startBucket starts the next bucket and arms its head start.
func (r *race) startBucket() {
	if r.started >= len(r.buckets) {
		return
	}
	for _, e := range r.buckets[r.started] {
		r.running++
		r.wg.Go(func() {
			c, err := r.dial(r.ctx, e)
			if err != nil {
				c = nil
			}
			r.results <- result{e.Kind, c, err}
		})
	}
	r.started++
	if r.timer != nil {
		r.timer.Stop()
	}
	if r.started < len(r.buckets) {
		r.timer, r.headC = r.clock.NewTimer(r.head)
	}
}

// next returns the next dial to finish; ok is false when every dial finished.
func (r *race) next(ctx context.Context) (res result, ok bool) {
	for {
		if r.running == 0 {
			if r.started == len(r.buckets) {
				return result{}, false
			}
			r.startBucket() // everything so far failed: no point waiting
			continue
		}
		var head <-chan time.Time
		if r.timer != nil && r.started < len(r.buckets) {
			head = r.headC
		}
		select {
		case <-head:
			r.startBucket()
		case res := <-r.results:
			r.running--
			if res.err != nil {
				r.failed[res.kind] = res.err
			}
			return res, true
		case <-ctx.Done():
			return result{err: context.Cause(ctx)}, true
		}
	}
}

// wait returns the result of kind's dial, starting buckets until it runs;
// results of other kinds that arrive meanwhile lose.
func (r *race) wait(ctx context.Context, kind transport.Kind) (transport.Conn, error) {
	for r.notStarted(kind) && r.started < len(r.buckets) {
		r.startBucket()
	}
	if r.notStarted(kind) {
		return nil, fmt.Errorf("%s is not in the race", kind)
	}
	if err := r.failed[kind]; err != nil {
		return nil, err
	}
	for {
		res, ok := r.next(ctx)
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: its dial was taken already", kind)
		case res.kind == "" && res.err != nil: // ctx ended
			return nil, res.err
		case res.kind == kind:
			return res.conn, res.err
		case res.conn != nil:
			res.conn.Close(nil)
		}
	}
}

func (r *race) notStarted(kind transport.Kind) bool {
	for _, b := range r.buckets[:r.started] {
		for _, e := range b {
			if e.Kind == kind {
				return false
			}
		}
	}
	return true
}

// close ends the race: dials still running are cancelled, the sessions
// they may still produce are closed, and their goroutines are waited for.
func (r *race) close() {
	r.cancel()
	if r.timer != nil {
		r.timer.Stop()
	}
	for ; r.running > 0; r.running-- {
		if res := <-r.results; res.conn != nil {
			res.conn.Close(nil)
		}
	}
	r.wg.Wait()
}

// First dials every entry with an address, all at once, and returns the
// first session that connects; the others are closed. Probes use it.
func First(ctx context.Context, table []Entry, addr func(transport.Kind) string, tlsConf func(addr string) *tls.Config) (transport.Conn, error) {
	var entries []Entry
	for _, e := range table {
		if addr(e.Kind) != "" {
			e.Priority = 0
			entries = append(entries, e)
		}
	}
	r := newRace(ctx, entries, 0, nil, func(ctx context.Context, e Entry) (transport.Conn, error) {
		a := addr(e.Kind)
		return e.Dial(ctx, a, tlsConf(a))
	})
	defer r.close()
	var errs []error
	for {
		res, ok := r.next(ctx)
		switch {
		case !ok:
			return nil, joinErrs(errs)
		case res.kind == "":
			return nil, res.err
		case res.err != nil:
			errs = append(errs, tagged(res.kind, res.err))
		default:
			return res.conn, nil
		}
	}
}

// tagged names the transport an error came from.
func tagged(kind transport.Kind, err error) error { return fmt.Errorf("%s: %w", kind, err) }

// joinErrs joins the dials' errors. It stays a LocalError only when every
// dial failed for a local reason: a device that cannot open one transport's
// socket may still reach the peer over another, later.
func joinErrs(errs []error) error {
	if len(errs) == 0 {
		return errors.New("no transport to dial")
	}
	allLocal := true
	for _, err := range errs {
		var le *transport.LocalError
		allLocal = allLocal && errors.As(err, &le)
	}
	if !allLocal {
		for i, err := range errs {
			var le *transport.LocalError
			if errors.As(err, &le) {
				errs[i] = errors.New(err.Error())
			}
		}
	}
	return errors.Join(errs...)
}
