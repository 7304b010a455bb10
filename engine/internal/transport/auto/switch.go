package auto

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
)

// On a path that is not a clean local link, auto does not wait for TCP: the
// transfer starts at once on QUIC, which answered first, while the TCP dial
// the race started goes on. The lab (docs/benchmarks/lab-analysis.md) says
// why:
//
//   - small batches on long paths are round-trip bound, and QUIC needs fewer
//     round trips (no TCP handshake per connection, a larger first window);
//   - on a clean long path quic-go's Reno fills the pipe better than several
//     BBR connections, which overflow a shallow bottleneck queue;
//   - but with random loss quic-go's Reno collapses where TCP with BBR does not.
//
// So once TCP is connected with BBR it attaches to the QUIC session (a join
// with FlagAttach and the QUIC session's token: the receiver's QUIC session
// takes over the TCP session's streams), and the rest of the batch moves to
// TCP at once if TCP's handshake reads the path under SwitchRTT (QUIC's
// sample was a busy host's: shortPath), else as soon as QUIC has lost
// packets in two round trips while its RTT showed no queue: loss that
// congestion did not cause, and that recurs. A
// loss with a standing queue (QUIC's own slow start filling the bottleneck)
// is no reason to move. Verified files stay verified: chunks in flight on
// QUIC finish there, new chunks go to TCP.

// lossSample is how often the loss watcher reads QUIC's path figures.
const lossSample = 10 * time.Millisecond

// randomLoss tells a loss that congestion did not cause: the RTT measured
// when it was detected shows no queue (within a quarter of the minimum RTT
// plus slack for scheduling noise).
func randomLoss(latest, minRTT, slack time.Duration) bool {
	return latest <= minRTT+minRTT/4+slack
}

// switchConn is the dialer's session for auto on a path that is not a clean
// local link: a QUIC session that may hand its data to TCP. It is a
// transport.Switcher.
type switchConn struct {
	transport.Conn // the QUIC session
	att            join.Attachable
	path           transport.PathSampler
	race           *race
	cfg            transport.Config

	quicRTT time.Duration   // the path's RTT by QUIC's handshake
	ctx     context.Context // ends with Close or with the QUIC session
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	advised chan struct{}

	switched atomic.Bool
	mu       sync.Mutex // guards the fields below
	tcp      transport.Conn
	reason   string
}

// newSwitchConn wraps q, which must be attachable and sample its path; the
// switch conn owns the race from then on.
func newSwitchConn(q transport.Conn, r *race, cfg transport.Config) (*switchConn, bool) {
	att, ok1 := q.(join.Attachable)
	path, ok2 := q.(transport.PathSampler)
	if !ok1 || !ok2 {
		return nil, false
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &switchConn{Conn: q, att: att, path: path, race: r, cfg: cfg, quicRTT: pathRTT(q.Metrics()),
		ctx: ctx, cancel: cancel, advised: make(chan struct{})}
	a.wg.Go(func() {
		select {
		case <-q.Done():
			cancel()
		case <-ctx.Done():
		}
	})
	a.wg.Go(a.run)
	return a, true
}

func (a *switchConn) run() {
	defer a.race.close()
	loss := make(chan string, 1)
	a.wg.Go(func() { a.watchLoss(loss) })
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.SwitchDialWait)
	t, err := a.race.wait(ctx, transport.TCP)
	cancel()
	if err != nil {
		return // QUIC carries the whole batch
	}
	if t.Metrics().CongestionControl != "bbr" {
		t.Close(nil)
		return
	}
	// The receiver knows the session once it answered on the control stream.
	select {
	case <-a.att.Registered():
	case <-a.ctx.Done():
		t.Close(nil)
		return
	}
	at, ok := t.(join.Attacher)
	if !ok {
		t.Close(nil)
		return
	}
	if err := at.Attach(a.ctx, a.att.Token()); err != nil {
		t.Close(nil)
		return
	}
	a.mu.Lock()
	if a.ctx.Err() != nil {
		a.mu.Unlock()
		t.Close(nil)
		return
	}
	a.tcp = t
	a.mu.Unlock()
	if why, ok := a.shortPath(t); ok {
		a.advise(why)
		return
	}
	select {
	case why := <-loss:
		a.advise(why)
	case <-a.ctx.Done():
	}
}

// advise says why the data should move to TCP, and that it should.
func (a *switchConn) advise(why string) {
	a.mu.Lock()
	a.reason = why
	a.mu.Unlock()
	close(a.advised)
}

// shortPath reports whether TCP, connected with BBR, reads the path as
// shorter than SwitchRTT: QUIC's one handshake sample, which put it at
// SwitchRTT or more, then measured a busy host's user-space crypto and
// scheduling, not the path, and auto takes what it takes on such a path
// when the sample is right: TCP with BBR (pick). TCP's handshake RTT is the
// kernel's, which that does not inflate. In the lab (TestLab/quick, load
// 15) QUIC's handshake read a clean 20 ms path as 53-81 ms in two runs of
// four, and QUIC, with no loss to move for, kept the whole batch.
func (a *switchConn) shortPath(t transport.Conn) (string, bool) {
	trtt := pathRTT(t.Metrics())
	if trtt <= 0 || trtt >= a.cfg.SwitchRTT {
		return "", false
	}
	return fmt.Sprintf("TCP's handshake reads the path at %.1f ms, under %v: QUIC's %.1f ms was the busy host's, not the path's; "+
		"TCP with BBR takes the rest of the batch", transport.Ms(trtt), a.cfg.SwitchRTT, transport.Ms(a.quicRTT)), true
}

// watchLoss reports random loss once QUIC has seen it in two round trips
// at least one RTT apart: one burst is not a pattern (in the lab, a clean
// long path showed one early loss with no queue in every run, which moved
// transfers that QUIC carries best), while random loss keeps recurring.
func (a *switchConn) watchLoss(out chan<- string) {
	tick := time.NewTicker(lossSample)
	defer tick.Stop()
	var lost uint64
	var first time.Time // when the first random-looking loss was seen
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-tick.C:
		}
		st := a.path.PathSample()
		if st.PacketsLost <= lost {
			continue
		}
		lost = st.PacketsLost
		if !randomLoss(st.LatestRTT, st.MinRTT, a.cfg.LossRTTSlack) {
			continue
		}
		now := time.Now()
		if first.IsZero() || now.Sub(first) < st.SmoothedRTT {
			if first.IsZero() {
				first = now
			}
			continue
		}
		out <- fmt.Sprintf("QUIC lost packets in separate round trips with no queue on the path (RTT %.1f ms, minimum %.1f ms): "+
			"random loss, which TCP with BBR handles far better than QUIC's Reno-style control; "+
			"the rest of the batch moves to TCP", transport.Ms(st.LatestRTT), transport.Ms(st.MinRTT))
		return
	}
}

// StreamsAdvised is the QUIC session's (transport.Spreader): before a
// switch QUIC may grow on random loss; TCP, with BBR, does not need to.
func (a *switchConn) StreamsAdvised() <-chan transport.Advice {
	if sp, ok := a.Conn.(transport.Spreader); ok {
		return sp.StreamsAdvised()
	}
	return nil
}

// DataStreams is the QUIC session's (transport.Spreader).
func (a *switchConn) DataStreams() int {
	if sp, ok := a.Conn.(transport.Spreader); ok {
		return sp.DataStreams()
	}
	return 0
}

// SwitchAdvised is closed when the data should move to TCP.
func (a *switchConn) SwitchAdvised() <-chan struct{} { return a.advised }

// Switch makes new streams open on TCP and says why.
func (a *switchConn) Switch() string {
	a.switched.Store(true)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reason
}

// InFlightWindow is the QUIC session's: what may still be unread on its streams.
func (a *switchConn) InFlightWindow() int64 {
	if w, ok := a.Conn.(interface{ InFlightWindow() int64 }); ok {
		return w.InFlightWindow()
	}
	return 1 << 62 // unknown: everything may be in flight
}

func (a *switchConn) data() transport.Conn {
	if !a.switched.Load() {
		return a.Conn
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tcp
}

// OpenStream opens the control stream on QUIC, and data streams on TCP once switched.
func (a *switchConn) OpenStream(ctx context.Context) (transport.Stream, error) {
	return a.data().OpenStream(ctx)
}

// Transport is the kind carrying the data.
func (a *switchConn) Transport() transport.Kind { return a.data().Transport() }

// Metrics are those of the transport carrying the data.
func (a *switchConn) Metrics() transport.Metrics { return a.data().Metrics() }

// Close ends the QUIC session (its reason reaches the peer first), then TCP,
// and waits for the switch's goroutines.
func (a *switchConn) Close(why error) error {
	err := a.Conn.Close(why)
	a.cancel()
	a.wg.Wait()
	a.mu.Lock()
	t := a.tcp
	a.mu.Unlock()
	if t != nil {
		t.Close(why)
	}
	return err
}
