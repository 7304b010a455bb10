package auto

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/internal/clock"
)

// Request says whom to dial and how.
type Request struct {
	Table []Entry
	// Kind asks for one transport; empty means auto: race them and pick
	// the one that suits the path.
	Kind transport.Kind
	// Addrs are where the peer may be, best first. The addresses of one
	// host are one place: its kinds race as the table's priorities say.
	// Kinds the table lacks are left out.
	Addrs []addr.Addr
	// Stagger is the head start each place gets over the next (a dead
	// address whose host does not refuse the port costs a QUIC dial its
	// whole handshake timeout); zero dials every place at once.
	Stagger time.Duration
	// TLS returns the client configuration for a "host:port".
	TLS func(hostport string) *tls.Config
	// Refused, when set, returns the error that proved a different device
	// at hostport (the TLS check's own; QUIC reports a failed handshake
	// with its message only), nil when there was none.
	Refused func(hostport string) error
	Config  transport.Config
}

// Dialled is the session a Dial opened.
type Dialled struct {
	Conn transport.Conn
	// Why says why this transport carries the session.
	Why string
	// At is the address the session reached, of its transport's kind.
	At addr.Addr
}

func (r Request) dial(ctx context.Context, l leg) (transport.Conn, error) {
	hp := l.addr.HostPort()
	return l.entry.Dial(ctx, hp, r.TLS(hp))
}

// wrongDevice reports whether err proves that a different device answered.
func (r Request) wrongDevice(res result, l addr.Addr) error {
	var mm *identity.MismatchError
	var kc *identity.KeyChangedError
	if errors.As(res.err, &mm) || errors.As(res.err, &kc) {
		return res.err
	}
	if r.Refused != nil {
		return r.Refused(l.HostPort())
	}
	return nil
}

// Dial opens a session as req asks and says why it chose its transport:
// one race over (place x kind), the first session that connects decides
// the place, and at that place auto picks the transport for the path. A
// place where a different device answered is dropped and the others go
// on; when every place was such a one, Dial returns that device's error.
func Dial(ctx context.Context, req Request) (Dialled, error) {
	cfg := req.Config.WithDefaults()
	if req.Kind != "" {
		if _, ok := Find(req.Table, req.Kind); !ok {
			return Dialled{}, fmt.Errorf("%s is not available in this build", req.Kind)
		}
	}
	ls := legs(req.Table, req.Addrs, req.Kind)
	if len(ls) == 0 {
		if req.Kind != "" {
			return Dialled{}, fmt.Errorf("the peer has no %s address", req.Kind)
		}
		return Dialled{}, errors.New("the peer has no address to dial")
	}
	r := newRace(ctx, ls, cfg.HeadStart, req.Stagger, cfg.Clock, req.dial)
	keep := false // a switching session keeps the TCP dial going
	defer func() {
		if !keep {
			r.close()
		}
	}()
	var wrong error
	for {
		res, ok := r.next(ctx)
		switch {
		case !ok:
			if errs := r.errs(); len(errs) > 0 || wrong == nil {
				return Dialled{}, joinErrs(errs)
			}
			return Dialled{}, wrong
		case res.place < 0: // ctx ended
			return Dialled{}, res.err
		case res.err != nil:
			at, _ := r.places[res.place].addr(res.kind)
			if err := req.wrongDevice(res, at); err != nil {
				// The wrong device answered there: do not try harder at
				// that address.
				r.dropAt(res.place, at.HostPort())
				if wrong == nil {
					wrong = err
				}
			}
			continue
		}
		r.settle(res.place)
		p := r.places[res.place]
		c, why := choose(ctx, req, cfg, r, p, res, &keep)
		at, _ := p.addr(c.Transport())
		return Dialled{Conn: c, Why: why, At: at}, nil
	}
}

// choose picks the transport at the place that won with res.
func choose(ctx context.Context, req Request, cfg transport.Config, r *race, p *place, res result, keep *bool) (transport.Conn, string) {
	switch {
	case req.Kind != "":
		return res.conn, "requested with --transport " + string(req.Kind)
	case !p.has(transport.TCP):
		return res.conn, "TCP is not available"
	case !p.has(transport.QUIC):
		return res.conn, "the peer has no QUIC address"
	case res.kind == transport.TCP && !tcpBBR(req.Table) &&
		pathRTT(res.conn.Metrics()) >= cfg.CleanRTT:
		// TCP won, but cannot run BBR, and the path is no clean local
		// link: QUIC spreads better over random loss (quicker loss
		// recovery), and on a long lossy path its handshake may simply
		// have lost a packet. It gets a little longer.
		return preferQUIC(ctx, cfg, r, res.conn)
	case res.kind != transport.QUIC:
		// First secure connection wins; the race closes the loser.
		return res.conn, fmt.Sprintf("%s connected first (QUIC did not answer within %v)", res.kind.Label(), cfg.HeadStart)
	}
	// QUIC won. pick may still want TCP: the dial under way since the
	// head start is the one to wait for (it may have survived a lost
	// SYN already), not a new one.
	q := res.conn
	rtt := transport.Ms(pathRTT(q.Metrics()))
	if !tcpBBR(req.Table) && rtt >= transport.Ms(cfg.CleanRTT) {
		if rtt < transport.Ms(cfg.SwitchRTT) {
			// QUIC's one handshake sample includes both ends' user-space
			// crypto and scheduling: on a busy machine a 2 ms path read 7-19
			// ms. TCP's handshake RTT is the kernel's, which that does not
			// inflate; its dial costs a few round trips of a path this short.
			if c, why, ok := checkClean(ctx, cfg, r, q, rtt); ok {
				return c, why
			}
		}
		// Loss-based TCP has nothing QUIC lacks off a clean local link,
		// and QUIC's loss recovery is quicker: no need to wait for TCP.
		return q, fmt.Sprintf("RTT %.1f ms and TCP cannot use BBR on this device: QUIC carries the batch, "+
			"over more connections if the path shows random loss", rtt)
	}
	if !cfg.NoAutoSwitch && rtt >= transport.Ms(cfg.SwitchRTT) {
		if sc, ok := newSwitchConn(q, r, cfg); ok {
			*keep = true
			return sc, fmt.Sprintf("RTT %.1f ms: QUIC answered first and starts at once; "+
				"TCP takes the rest of the batch if it connects with BBR and QUIC sees random loss", rtt)
		}
	}
	return pick(ctx, cfg, q, func(ctx context.Context) (transport.Conn, error) { return r.waitAnswered(ctx, transport.TCP) })
}

// pathRTT is the round trip a session measured for its path: the minimum,
// where it has one (TCP's is the kernel's, untouched by user-space
// delays), else the smoothed one.
func pathRTT(m transport.Metrics) time.Duration {
	ms := m.SmoothedRTTms
	if m.MinRTTms > 0 && m.MinRTTms < ms {
		ms = m.MinRTTms
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// checkClean waits up to three of QUIC's round trips, plus checkSlack, for
// the TCP dial where TCP cannot run BBR and QUIC's handshake put the path
// at rtt ms, from CleanRTT to SwitchRTT: if TCP's own RTT says the path is
// a clean local link after all, TCP takes the batch (ok); otherwise TCP is
// closed and QUIC keeps it (not ok). A TCP that answers sooner costs no
// more than its answer.
func checkClean(ctx context.Context, cfg transport.Config, r *race, q transport.Conn, rtt float64) (transport.Conn, string, bool) {
	wait := 3*time.Duration(rtt*float64(time.Millisecond)) + checkSlack
	tctx, cancel := timeoutOn(ctx, cfg.Clock, wait)
	defer cancel()
	t, err := r.waitAnswered(tctx, transport.TCP)
	if err != nil || t == nil {
		return nil, "", false
	}
	if trtt := pathRTT(t.Metrics()); trtt >= cfg.CleanRTT {
		t.Close(nil)
		return nil, "", false
	}
	q.Close(nil)
	return t, fmt.Sprintf("clean low-latency path (RTT %.2f ms by TCP's handshake; QUIC's read %.1f ms): "+
		"TCP moves more bytes per second here, over more connections if the path shows random loss",
		transport.Ms(pathRTT(t.Metrics())), rtt), true
}

// timeoutOn is context.WithTimeout on clk (nil: the system clock), the
// clock the race's head start follows too: a test drives a 50 ms window
// such as checkSlack's on a fake clock, where a busy host's scheduling
// cannot move it.
func timeoutOn(ctx context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := clock.Or(clk).AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return ctx, func() { t.Stop(); cancel(context.Canceled) }
}

// checkSlack is what checkClean allows on top of three round trips for
// TCP's dial: two TLS handshakes' user-space work on a busy machine (in the
// lab, under a load average of 13 on 2 cores, one run in three of a 2 ms
// path kept QUIC after waiting three of QUIC's round trips, 25 ms, while
// TCP's handshakes read 2.7-3.6 ms in the others).
const checkSlack = 50 * time.Millisecond

// preferQUIC waits a little longer for QUIC's dial after TCP won the race
// with a loss-based congestion control: as long as QUIC's head start plus
// four of TCP's round trips. QUIC takes the batch if it connects; TCP does
// otherwise (UDP blocked costs that wait).
func preferQUIC(ctx context.Context, cfg transport.Config, r *race, t transport.Conn) (transport.Conn, string) {
	rtt := transport.Ms(pathRTT(t.Metrics()))
	wait := cfg.HeadStart + 4*time.Duration(rtt*float64(time.Millisecond))
	qctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	start := time.Now()
	q, err := r.wait(qctx, transport.QUIC)
	if err != nil || q == nil {
		return t, fmt.Sprintf("TCP connected first and QUIC did not answer within %v more (RTT %.1f ms); "+
			"TCP cannot use BBR on this device: it carries the batch, over more connections if the path shows random loss",
			wait.Round(time.Millisecond), rtt)
	}
	t.Close(nil)
	return q, fmt.Sprintf("RTT %.1f ms and TCP cannot use BBR on this device: QUIC, which answered %v after TCP, carries the batch, "+
		"over more connections if the path shows random loss", rtt, time.Since(start).Round(time.Millisecond))
}

// tcpBBR reports whether TCP's connections will run BBR here.
func tcpBBR(table []Entry) bool {
	e, ok := Find(table, transport.TCP)
	return ok && e.BBR != nil && e.BBR()
}

// pick decides between the QUIC session we have and TCP, following what
// ferry-bench measured (docs/transport-choice.md):
//   - on a clean local link (RTT under Config.CleanRTT) kernel TCP moves more
//     bytes per second than quic-go (segmentation offload, no user-space pacing);
//   - on a long or lossy path TCP with BBR beats QUIC by a wide margin,
//     because quic-go's congestion control is Reno-style and fixed;
//   - only with a loss-based TCP (Cubic, Reno) on such a path does QUIC's
//     per-stream loss isolation make it the better choice.
func pick(ctx context.Context, cfg transport.Config, q transport.Conn, tcp func(context.Context) (transport.Conn, error)) (transport.Conn, string) {
	m := q.Metrics()
	rtt := pathRTT(m)
	tctx, cancel := context.WithTimeoutCause(ctx, cfg.UpgradeWait+4*rtt, errors.New("no TCP connection in time"))
	defer cancel()
	t, err := tcp(tctx)
	if err != nil {
		return q, fmt.Sprintf("TCP did not connect (%v); QUIC answered with RTT %.2f ms", shortErr(err), m.SmoothedRTTms)
	}
	tm := t.Metrics()
	switch {
	case min(rtt, pathRTT(tm)) < cfg.CleanRTT:
		q.Close(nil)
		return t, fmt.Sprintf("clean low-latency path (RTT %.2f ms): TCP moves more bytes per second here", m.SmoothedRTTms)
	case tm.CongestionControl == "bbr":
		q.Close(nil)
		return t, fmt.Sprintf("RTT %.1f ms: TCP with BBR copes with latency and loss better than QUIC's Reno-style control", m.SmoothedRTTms)
	default:
		t.Close(nil)
		cc := tm.CongestionControl
		if cc == "" {
			cc = "a loss-based congestion control"
		}
		return q, fmt.Sprintf("RTT %.1f ms and TCP uses %s: QUIC isolates loss per stream", m.SmoothedRTTms, cc)
	}
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}
