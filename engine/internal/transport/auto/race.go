// Package auto chooses the transport for a session. Its table lists the
// transports ({Kind, Priority, Listen, Dial}); one race dials the peer's
// addresses by kind, host after host with a stagger and at each host in
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

	"github.com/ferrydrop/ferry/engine/addr"
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

// leg is one dial of a race: one row of the table at one place.
type leg struct {
	place int
	entry Entry
	addr  addr.Addr
}

// place is one host where the peer may be: the legs that dial it, in
// buckets of equal priority.
type place struct {
	buckets [][]leg
	started int       // buckets started
	due     time.Time // when its next bucket starts
	running int       // its dials whose result was not taken yet
	ctx     context.Context
	cancel  context.CancelFunc
	// dropped: another place won, or a different device answered here;
	// nothing more starts and what still connects is closed.
	dropped bool
	// gone are its addresses (host:port) where a different device
	// answered: another port of the host stays in the race.
	gone map[string]bool
	errs []result // its dials' failures
	// runs are its dials under way (their results not taken yet), by kind.
	runs map[transport.Kind]*run
	// refused are its addresses (host:port) whose dial the host refused:
	// its other dials there end once a second dial is refused too
	// (endRefused).
	refused map[string]*refusal
}

// run is one dial of a race under way, with a context of its own under
// its place's, so that it can end alone.
type run struct {
	leg    leg
	cancel context.CancelCauseFunc
	check  bool // endRefused's second dial of a refused address
	ended  bool // endRefused cancelled it
}

// refusal is a dial of a place that its host refused (connection
// refused): nothing listens at that host:port now.
type refusal struct {
	leg     leg
	at      time.Time // when
	checked bool      // its second dial started
}

// has reports whether the place has a leg of kind still in the race.
func (p *place) has(kind transport.Kind) bool {
	a, ok := p.addr(kind)
	return ok && !p.gone[a.HostPort()]
}

// addr is the place's address of kind.
func (p *place) addr(kind transport.Kind) (addr.Addr, bool) {
	for _, b := range p.buckets {
		for _, l := range b {
			if l.entry.Kind == kind {
				return l.addr, true
			}
		}
	}
	return addr.Addr{}, false
}

func (p *place) exhausted() bool {
	return p.running == 0 && (p.dropped || p.started == len(p.buckets))
}

// result is what one dial of a race gave.
type result struct {
	place int // -1: the caller's context ended
	kind  transport.Kind
	conn  transport.Conn
	err   error
}

type legKey struct {
	place int
	kind  transport.Kind
}

// race is the one dial race over (address x kind): each place (a host the
// peer may be at) starts stagger after the one before it, or at once when
// that one failed everywhere; within a place, the table's priority buckets
// start head after each other, or at once when every dial of the place
// started so far failed (syncthing's dialParallel, Happy Eyeballs). Results
// come in the order they finish. Once a place won (settle), the others are
// cancelled and whatever they still connect is closed. A race is used by
// one goroutine; close ends it and waits for every dial's goroutine.
type race struct {
	ctx     context.Context // cancelled by close
	cancel  context.CancelFunc
	dial    func(ctx context.Context, l leg) (transport.Conn, error)
	places  []*place
	opened  int       // places started
	nextDue time.Time // when places[opened] starts
	head    time.Duration
	stagger time.Duration
	clock   clock.Clock // drives the stagger and the head start
	timer   clock.Timer
	timerC  <-chan time.Time // the timer's channel
	results chan result
	running int              // dials whose result was not taken yet
	failed  map[legKey]error // dials that ended with an error
	won     int              // the place that won; -1 while none did
	wg      sync.WaitGroup
}

// newRace starts the first place. legs come grouped by place (place
// indexes 0, 1, ... in order).
func newRace(ctx context.Context, legs []leg, head, stagger time.Duration, clk clock.Clock, dial func(ctx context.Context, l leg) (transport.Conn, error)) *race {
	rctx, cancel := context.WithCancel(ctx)
	r := &race{ctx: rctx, cancel: cancel, dial: dial, head: head, stagger: stagger, clock: clock.Or(clk),
		results: make(chan result, len(legs)), failed: map[legKey]error{}, won: -1}
	for _, l := range legs {
		for l.place >= len(r.places) {
			pctx, pcancel := context.WithCancel(rctx)
			r.places = append(r.places, &place{ctx: pctx, cancel: pcancel, runs: map[transport.Kind]*run{}})
		}
		r.places[l.place].buckets = append(r.places[l.place].buckets, []leg{l})
	}
	for _, p := range r.places {
		var flat []leg
		for _, b := range p.buckets {
			flat = append(flat, b...)
		}
		slices.SortStableFunc(flat, func(a, b leg) int { return a.entry.Priority - b.entry.Priority })
		p.buckets = nil
		for i, l := range flat {
			if i == 0 || l.entry.Priority != flat[i-1].entry.Priority {
				p.buckets = append(p.buckets, nil)
			}
			p.buckets[len(p.buckets)-1] = append(p.buckets[len(p.buckets)-1], l)
		}
	}
	r.startDue()
	return r
}

// startBucket starts the next bucket of p.
func (r *race) startBucket(p *place, now time.Time) {
	for _, l := range p.buckets[p.started] {
		if p.gone[l.addr.HostPort()] {
			continue
		}
		r.running++
		p.running++
		ctx, cancel := context.WithCancelCause(p.ctx)
		p.runs[l.entry.Kind] = &run{leg: l, cancel: cancel}
		r.goDial(ctx, l)
	}
	p.started++
	p.due = now.Add(r.head)
}

// goDial runs the dial of l in a goroutine of the race, its result sent
// to r.results.
func (r *race) goDial(ctx context.Context, l leg) {
	r.wg.Go(func() {
		c, err := r.dial(ctx, l)
		if err != nil {
			c = nil
		}
		r.results <- result{l.place, l.entry.Kind, c, err}
	})
}

// startDue starts every place and bucket whose time came, and the second
// dial of a refused address whose grace ran out (endRefused), and arms the
// timer for the next of these.
func (r *race) startDue() {
	now := r.clock.Now()
	r.endRefused(now)
	for progressed := true; progressed; {
		progressed = false
		if r.won < 0 && r.opened < len(r.places) &&
			(!now.Before(r.nextDue) || r.running == 0 || r.opened > 0 && r.places[r.opened-1].exhausted()) {
			r.startBucket(r.places[r.opened], now)
			r.opened++
			r.nextDue = now.Add(r.stagger)
			progressed = true
		}
		for _, p := range r.places[:r.opened] {
			if !p.dropped && p.started < len(p.buckets) && (!now.Before(p.due) || p.running == 0) {
				r.startBucket(p, now)
				progressed = true
			}
		}
	}
	var next time.Time
	if r.won < 0 && r.opened < len(r.places) {
		next = r.nextDue
	}
	for _, p := range r.places[:r.opened] {
		if !p.dropped && p.started < len(p.buckets) && (next.IsZero() || p.due.Before(next)) {
			next = p.due
		}
		if end, ok := p.nextEnd(); ok && (next.IsZero() || end.Before(next)) {
			next = end
		}
	}
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	if !next.IsZero() {
		r.timer, r.timerC = r.clock.NewTimer(next.Sub(now))
	}
}

// next returns the next dial of a place still in the race to finish; ok
// is false when every dial finished. Sessions of dropped places are closed
// on the way.
func (r *race) next(ctx context.Context) (res result, ok bool) {
	for {
		r.startDue()
		if r.running == 0 {
			return result{}, false
		}
		var due <-chan time.Time
		if r.timer != nil {
			due = r.timerC
		}
		select {
		case <-due:
			r.timer = nil
		case res := <-r.results:
			r.running--
			p := r.places[res.place]
			p.running--
			ru := p.runs[res.kind]
			delete(p.runs, res.kind)
			if p.dropped {
				if res.conn != nil {
					res.conn.Close(nil)
				}
				continue
			}
			if ru.check {
				if !r.secondDial(p, ru, res) {
					continue
				}
			} else if res.err != nil {
				if ru.ended {
					res.err = endedErr(ru.leg.addr, res.err)
				}
				if hp := ru.leg.addr.HostPort(); transport.Refused(res.err) && p.refused[hp] == nil {
					if p.refused == nil {
						p.refused = map[string]*refusal{}
					}
					p.refused[hp] = &refusal{leg: ru.leg, at: r.clock.Now()}
				}
			}
			if res.err != nil {
				r.failed[legKey{res.place, res.kind}] = res.err
				p.errs = append(p.errs, res)
			}
			return res, true
		case <-ctx.Done():
			return result{place: -1, err: context.Cause(ctx)}, true
		}
	}
}

// endRefused ends the dials still under way to an address of a place
// whose host refused another of its dials (TCP's: connection refused)
// twice, transport.DeadPortGrace or more apart: a Ferry listens for every
// transport on one port number, so nothing Ferry is there, and a host
// whose ICMP never reaches the QUIC dial (a firewall that drops it, a
// Windows sender) left that dial resending its first packet until the
// handshake's timeout. The grace after the first refusal starts the
// second dial (secondDial): a receiver starting as the race began opens its
// ports within it, and that dial connects, where quic-go's next resent
// packet could come too late. Twice, as QUIC's own port checks
// (quic.watchDeadPort). Only the same host:port: a receiver whose port was
// taken for one transport listens for it on another (ferryReceiver.Listen).
func (r *race) endRefused(now time.Time) {
	for _, p := range r.places {
		if p.dropped {
			continue
		}
		for hp, rf := range p.refused {
			if rf.checked || now.Before(rf.at.Add(transport.DeadPortGrace)) || !p.runningAt(hp) {
				continue
			}
			rf.checked = true
			ctx, cancel := context.WithCancelCause(p.ctx)
			p.runs[rf.leg.entry.Kind] = &run{leg: rf.leg, cancel: cancel, check: true}
			r.running++
			p.running++
			r.goDial(ctx, rf.leg)
		}
	}
}

// runningAt reports whether p has a dial under way to hp that
// endRefused has not ended.
func (p *place) runningAt(hp string) bool {
	for _, ru := range p.runs {
		if ru.leg.addr.HostPort() == hp && !ru.ended {
			return true
		}
	}
	return false
}

// secondDial takes the result of endRefused's second dial of a refused
// address, ru, and reports whether it is a result of the race: a session
// (the receiver opened as the race began) is, with the first refusal
// forgotten; refused again, the place's other dials to that address end,
// nothing listening; another failure tells nothing, and they go on.
func (r *race) secondDial(p *place, ru *run, res result) bool {
	hp := ru.leg.addr.HostPort()
	switch {
	case res.err == nil:
		delete(p.refused, hp)
		delete(r.failed, legKey{res.place, res.kind})
		p.errs = slices.DeleteFunc(p.errs, func(e result) bool { return e.kind == res.kind })
		return true
	case transport.Refused(res.err):
		for _, o := range p.runs {
			if o.leg.addr.HostPort() == hp && !o.ended {
				o.ended = true
				o.cancel(errRefusedTwice)
			}
		}
	}
	return false
}

// nextEnd is when endRefused next dials a refused address of p again; ok
// is false when it has none to dial.
func (p *place) nextEnd() (end time.Time, ok bool) {
	if p.dropped {
		return time.Time{}, false
	}
	for hp, rf := range p.refused {
		if !rf.checked && p.runningAt(hp) {
			if e := rf.at.Add(transport.DeadPortGrace); !ok || e.Before(end) {
				end, ok = e, true
			}
		}
	}
	return end, ok
}

// errRefusedTwice is the cause endRefused ends a dial with.
var errRefusedTwice = errors.New("nothing is listening there: the host refused connections to the same port twice, " +
	"a second apart")

// endedErr is the error of a dial to at that endRefused ended: nothing
// listening, as the refusals beside it said.
func endedErr(at addr.Addr, err error) error {
	var nl *transport.NothingListeningError
	if errors.As(err, &nl) {
		return err // its own check found the port closed too
	}
	if !errors.Is(err, errRefusedTwice) {
		err = fmt.Errorf("%w (%w)", err, errRefusedTwice)
	}
	return &transport.NothingListeningError{Addr: at.HostPort(), Err: err}
}

// drop takes place i out of the race: a different device answered there.
func (r *race) drop(i int) {
	p := r.places[i]
	p.dropped = true
	p.cancel()
}

// dropAt takes the address hostport of place i out of the race: a
// different device answered there. The place's addresses at other ports of
// its host go on (a device known by its TCP address, and another device on
// the default port of the same host); a place left with none is dropped.
func (r *race) dropAt(i int, hostport string) {
	p := r.places[i]
	if p.gone == nil {
		p.gone = map[string]bool{}
	}
	p.gone[hostport] = true
	p.errs = slices.DeleteFunc(p.errs, func(res result) bool {
		a, _ := p.addr(res.kind)
		return a.HostPort() == hostport
	})
	for _, b := range p.buckets {
		for _, l := range b {
			if !p.gone[l.addr.HostPort()] {
				return
			}
		}
	}
	r.drop(i)
}

// settle makes place i the winner: nothing more starts elsewhere, and the
// other places' dials are cancelled.
func (r *race) settle(i int) {
	r.won = i
	for j, p := range r.places {
		if j != i && !p.dropped {
			r.drop(j)
		}
	}
}

// errs are the failures at the best place that failed and was not
// dropped (the first of them in the order places were given): what a user
// is told about is the address they would try first. Each names its
// transport when the race had more than one kind.
func (r *race) errs() []error {
	kinds := map[transport.Kind]bool{}
	for _, p := range r.places {
		for _, b := range p.buckets {
			for _, l := range b {
				kinds[l.entry.Kind] = true
			}
		}
	}
	for _, p := range r.places {
		if p.dropped || len(p.errs) == 0 {
			continue
		}
		var out []error
		for _, res := range p.errs {
			if len(kinds) > 1 {
				out = append(out, tagged(res.kind, res.err))
			} else {
				out = append(out, res.err)
			}
		}
		return out
	}
	return nil
}

// wait returns the result of kind's dial at the winning place, starting
// its buckets until it runs; results that arrive meanwhile lose.
func (r *race) wait(ctx context.Context, kind transport.Kind) (transport.Conn, error) {
	if r.won < 0 {
		return nil, errors.New("no place won the race")
	}
	p := r.places[r.won]
	for !r.started(p, kind) && p.started < len(p.buckets) {
		r.startBucket(p, r.clock.Now())
	}
	if !r.started(p, kind) {
		return nil, fmt.Errorf("%s is not in the race", kind)
	}
	if err := r.failed[legKey{r.won, kind}]; err != nil {
		return nil, err
	}
	for {
		res, ok := r.next(ctx)
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: its dial was taken already", kind)
		case res.place < 0: // ctx ended
			return nil, res.err
		case res.place == r.won && res.kind == kind:
			return res.conn, res.err
		case res.conn != nil:
			res.conn.Close(nil)
		}
	}
}

// waitAnswered is wait, with one more dial where kind's was refused: the
// place has answered the other kind since, so the peer listens there now.
// A receiver that was starting as the race began (a restart, which is how
// a send resumes) refuses the TCP dial at once, while QUIC's dial resends
// its first packet until it is answered; without this the transfer went on
// over QUIC where auto picks TCP (a clean local link: half the CPU).
func (r *race) waitAnswered(ctx context.Context, kind transport.Kind) (transport.Conn, error) {
	c, err := r.wait(ctx, kind)
	if err == nil || !transport.Refused(err) || r.won < 0 {
		return c, err
	}
	for _, b := range r.places[r.won].buckets {
		for _, l := range b {
			if l.entry.Kind == kind {
				if c, again := r.dial(ctx, l); again == nil {
					return c, nil
				}
				return nil, err // refused still: say what the first dial met
			}
		}
	}
	return nil, err
}

func (r *race) started(p *place, kind transport.Kind) bool {
	for _, b := range p.buckets[:p.started] {
		for _, l := range b {
			if l.entry.Kind == kind {
				return true
			}
		}
	}
	return false
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

// legs groups addrs into places, best first: the addresses of one host
// are one place (one address per kind); a kind that is not in the table,
// or is not only (when only is set), is left out.
func legs(table []Entry, addrs []addr.Addr, only transport.Kind) []leg {
	var out []leg
	var hosts []string // place index -> host
	seen := map[addr.Addr]bool{}
	for _, a := range addrs {
		e, ok := Find(table, a.Kind)
		if !ok || only != "" && a.Kind != only || a.HostPort() == "" || seen[a] {
			continue
		}
		seen[a] = true
		i := -1
		for j, h := range hosts {
			if h == a.Host() && !slices.ContainsFunc(out, func(l leg) bool { return l.place == j && l.entry.Kind == a.Kind }) {
				i = j // that host, which has no address of this kind yet
				break
			}
		}
		if i < 0 {
			i = len(hosts)
			hosts = append(hosts, a.Host())
		}
		out = append(out, leg{place: i, entry: e, addr: a})
	}
	slices.SortStableFunc(out, func(a, b leg) int { return a.place - b.place })
	return out
}

// First dials every address at once, every kind of the table it names
// with no head start, and returns the first session that connects; the
// others are closed. Probes use it.
func First(ctx context.Context, table []Entry, addrs []addr.Addr, tlsConf func(hostport string) *tls.Config) (transport.Conn, error) {
	ls := legs(table, addrs, "")
	r := newRace(ctx, ls, 0, 0, nil, func(ctx context.Context, l leg) (transport.Conn, error) {
		hp := l.addr.HostPort()
		return l.entry.Dial(ctx, hp, tlsConf(hp))
	})
	defer r.close()
	for {
		res, ok := r.next(ctx)
		switch {
		case !ok:
			return nil, joinErrs(r.errs())
		case res.place < 0:
			return nil, res.err
		case res.err == nil:
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
