package auto

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// Request says whom to dial and how.
type Request struct {
	Table []Entry
	// Kind asks for one transport; empty means auto: race them and pick
	// the one that suits the path.
	Kind transport.Kind
	// Addr is the peer's address for a transport ("" when it has none).
	Addr func(transport.Kind) string
	// TLS returns the client configuration for an address.
	TLS    func(addr string) *tls.Config
	Config transport.Config
}

func (r Request) dial(ctx context.Context, e Entry) (transport.Conn, error) {
	addr := r.Addr(e.Kind)
	return e.Dial(ctx, addr, r.TLS(addr))
}

// Dial opens a session as req asks and says why it chose its transport.
func Dial(ctx context.Context, req Request) (transport.Conn, string, error) {
	cfg := req.Config.WithDefaults()
	one := func(kind transport.Kind, why string) (transport.Conn, string, error) {
		e, ok := Find(req.Table, kind)
		if !ok {
			return nil, "", fmt.Errorf("%s is not available in this build", kind)
		}
		if req.Addr(kind) == "" {
			return nil, "", fmt.Errorf("the peer has no %s address", kind)
		}
		c, err := req.dial(ctx, e)
		if err != nil {
			return nil, "", err
		}
		return c, why, nil
	}
	if req.Kind != "" {
		return one(req.Kind, "requested with --transport "+string(req.Kind))
	}
	_, haveTCP := Find(req.Table, transport.TCP)
	if !haveTCP || req.Addr(transport.TCP) == "" {
		return one(transport.QUIC, "TCP is not available")
	}
	if req.Addr(transport.QUIC) == "" {
		return one(transport.TCP, "the peer has no QUIC address")
	}
	var entries []Entry
	for _, e := range req.Table {
		if req.Addr(e.Kind) != "" {
			entries = append(entries, e)
		}
	}
	r := newRace(ctx, entries, cfg.HeadStart, cfg.Clock, req.dial)
	keep := false // a switching session keeps the TCP dial going
	defer func() {
		if !keep {
			r.close()
		}
	}()
	var errs []error
	for {
		res, ok := r.next(ctx)
		switch {
		case !ok:
			return nil, "", joinErrs(errs)
		case res.kind == "": // ctx ended
			return nil, "", res.err
		case res.err != nil:
			var mm *identity.MismatchError
			var kc *identity.KeyChangedError
			if errors.As(res.err, &mm) || errors.As(res.err, &kc) {
				return nil, "", res.err // the wrong device answered: do not try harder
			}
			errs = append(errs, tagged(res.kind, res.err))
			continue
		case res.kind != transport.QUIC && res.kind == transport.TCP && !tcpBBR(req.Table) &&
			res.conn.Metrics().SmoothedRTTms >= transport.Ms(cfg.CleanRTT):
			// TCP won, but cannot run BBR, and the path is no clean local
			// link: QUIC spreads better over random loss (quicker loss
			// recovery), and on a long lossy path its handshake may simply
			// have lost a packet. It gets a little longer.
			return preferQUIC(ctx, cfg, r, res.conn)
		case res.kind != transport.QUIC:
			// First secure connection wins; the race closes the loser.
			return res.conn, fmt.Sprintf("%s connected first (QUIC did not answer within %v)", kindName(res.kind), cfg.HeadStart), nil
		}
		// QUIC won. pick may still want TCP: the dial under way since the
		// head start is the one to wait for (it may have survived a lost
		// SYN already), not a new one.
		q := res.conn
		tcp := func(ctx context.Context) (transport.Conn, error) { return r.wait(ctx, transport.TCP) }
		rtt := q.Metrics().SmoothedRTTms
		if !tcpBBR(req.Table) && (rtt >= transport.Ms(cfg.CleanRTT) || !tcpFasterOnCleanPaths) {
			// Loss-based TCP has nothing QUIC lacks off a clean local link,
			// and QUIC's loss recovery is quicker: no need to wait for TCP.
			return q, fmt.Sprintf("RTT %.1f ms and TCP cannot use BBR on this device: QUIC carries the batch, "+
				"over more connections if the path shows random loss", rtt), nil
		}
		if !cfg.NoAutoSwitch {
			if rtt >= transport.Ms(cfg.SwitchRTT) {
				if sc, ok := newSwitchConn(q, r, cfg); ok {
					keep = true
					return sc, fmt.Sprintf("RTT %.1f ms: QUIC answered first and starts at once; "+
						"TCP takes the rest of the batch if it connects with BBR and QUIC sees random loss", rtt), nil
				}
			}
		}
		c, why := pick(ctx, cfg, q, tcp)
		return c, why, nil
	}
}

// preferQUIC waits a little longer for QUIC's dial after TCP won the race
// with a loss-based congestion control: as long as QUIC's head start plus
// four of TCP's round trips. QUIC takes the batch if it connects; TCP does
// otherwise (UDP blocked costs that wait).
func preferQUIC(ctx context.Context, cfg transport.Config, r *race, t transport.Conn) (transport.Conn, string, error) {
	rtt := t.Metrics().SmoothedRTTms
	wait := cfg.HeadStart + 4*time.Duration(rtt*float64(time.Millisecond))
	qctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	start := time.Now()
	q, err := r.wait(qctx, transport.QUIC)
	if err != nil || q == nil {
		return t, fmt.Sprintf("TCP connected first and QUIC did not answer within %v more (RTT %.1f ms); "+
			"TCP cannot use BBR on this device: it carries the batch, over more connections if the path shows random loss",
			wait.Round(time.Millisecond), rtt), nil
	}
	t.Close(nil)
	return q, fmt.Sprintf("RTT %.1f ms and TCP cannot use BBR on this device: QUIC, which answered %v after TCP, carries the batch, "+
		"over more connections if the path shows random loss", rtt, time.Since(start).Round(time.Millisecond)), nil
}

// tcpBBR reports whether TCP's connections will run BBR here.
func tcpBBR(table []Entry) bool {
	e, ok := Find(table, transport.TCP)
	return ok && e.BBR != nil && e.BBR()
}

func kindName(k transport.Kind) string {
	switch k {
	case transport.TCP:
		return "TCP"
	case transport.QUIC:
		return "QUIC"
	}
	return string(k)
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
	rtt := time.Duration(m.SmoothedRTTms * float64(time.Millisecond))
	tctx, cancel := context.WithTimeoutCause(ctx, cfg.UpgradeWait+4*rtt, errors.New("no TCP connection in time"))
	defer cancel()
	t, err := tcp(tctx)
	if err != nil {
		return q, fmt.Sprintf("TCP did not connect (%v); QUIC answered with RTT %.2f ms", shortErr(err), m.SmoothedRTTms)
	}
	tm := t.Metrics()
	switch {
	case rtt < cfg.CleanRTT && tcpFasterOnCleanPaths:
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
