package engine

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/wire"
)

// On a path that is not a clean local link, auto does not wait for TCP: the
// transfer starts at once on QUIC, which answered first, while the TCP dial
// Happy Eyeballs started goes on. The lab (docs/benchmarks/lab-analysis.md)
// says why:
//
//   - small batches on long paths are round-trip bound, and QUIC needs fewer
//     round trips (no TCP handshake per connection, a larger first window);
//   - on a clean long path quic-go's Reno fills the pipe better than four BBR
//     connections, which overflow a shallow bottleneck queue;
//   - but with random loss quic-go's Reno collapses (20 ms / 2 %: 31 s where
//     TCP with BBR needs 2.2 s).
//
// So once TCP is connected with BBR it is attached to the QUIC session (its
// first stream carries wire.KindAttach and the session token; the receiver
// answers one status byte), and the rest of the batch moves to TCP as soon
// as QUIC has lost packets in two round trips while its RTT showed no
// queue: loss that congestion did not cause, and that recurs. A loss with a
// standing queue (QUIC's own slow start filling the bottleneck) is no
// reason to move. Verified files stay verified: chunks
// in flight on QUIC finish there, new chunks go to TCP.

// autoTCPWait bounds how long auto keeps the TCP dial going beside QUIC.
var autoTCPWait = 10 * time.Second

// lossSample is how often the loss watcher reads QUIC's statistics.
const lossSample = 10 * time.Millisecond

// lossRTTSlack is the scheduling noise allowed on top of the minimum RTT
// when telling random loss, in nanoseconds (2 ms; tests on a loaded machine
// widen it while transfers of earlier tests may still read it).
var lossRTTSlack atomic.Int64

func init() { lossRTTSlack.Store(int64(2 * time.Millisecond)) }

// randomLoss tells a loss that congestion did not cause: the RTT measured
// when it was detected shows no queue (within a quarter of the minimum RTT
// plus lossRTTSlack).
func randomLoss(latest, minRTT time.Duration) bool {
	return latest <= minRTT+minRTT/4+time.Duration(lossRTTSlack.Load())
}

// switcher is a Conn whose data may move to another transport mid-batch.
type switcher interface {
	// SwitchAdvised is closed when the data should move to the other transport.
	SwitchAdvised() <-chan struct{}
	// Switch makes new streams open on the other transport and says why;
	// the sender calls it once, after SwitchAdvised, if data is left to send.
	Switch() string
}

// autoConn is the dialer's connection for auto on a path that is not a
// clean local link: a QUIC session that may hand its data to TCP.
type autoConn struct {
	*quicSession
	dialTCP  func(context.Context) (Conn, error)
	stopDial context.CancelFunc // ends the Happy Eyeballs race's context

	advised  chan struct{}
	switched atomic.Bool

	mu     sync.Mutex
	tcp    Conn
	attach Stream // the TCP session's first stream, kept open while attached
	reason string
}

func newAutoConn(q *quicSession, dialTCP func(context.Context) (Conn, error), stopDial context.CancelFunc) *autoConn {
	a := &autoConn{quicSession: q, dialTCP: dialTCP, stopDial: stopDial, advised: make(chan struct{})}
	go a.run()
	return a
}

func (a *autoConn) run() {
	defer a.stopDial()
	loss := make(chan string, 1)
	go a.watchLoss(loss)
	ctx, cancel := context.WithTimeout(a.ctx, autoTCPWait)
	t, err := a.dialTCP(ctx)
	cancel()
	if err != nil {
		return // QUIC carries the whole batch
	}
	if cc := t.Metrics().CongestionControl; cc != "bbr" {
		t.Close(0, "quic chosen")
		return
	}
	// The receiver knows the session once it answered on the control stream.
	select {
	case <-a.answered:
	case <-a.ctx.Done():
		t.Close(0, "session ended")
		return
	}
	st, err := attachTCP(a.ctx, t, a.token)
	if err != nil {
		t.Close(0, "attach failed")
		return
	}
	a.mu.Lock()
	if a.ctx.Err() != nil {
		a.mu.Unlock()
		t.Close(0, "session ended")
		return
	}
	a.tcp, a.attach = t, st
	a.mu.Unlock()
	select {
	case why := <-loss:
		a.mu.Lock()
		a.reason = why
		a.mu.Unlock()
		close(a.advised)
	case <-a.ctx.Done():
	}
}

// watchLoss reports random loss once QUIC has seen it in two round trips
// at least one RTT apart: one burst is not a pattern (in the lab, a clean
// 120 ms path showed one early loss with no queue in every run, which moved
// transfers that QUIC carries best), while random loss keeps recurring.
func (a *autoConn) watchLoss(out chan<- string) {
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
		st := a.primary.c.ConnectionStats()
		if st.PacketsLost <= lost {
			continue
		}
		lost = st.PacketsLost
		if !randomLoss(st.LatestRTT, st.MinRTT) {
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
			"the rest of the batch moves to TCP", ms(st.LatestRTT), ms(st.MinRTT))
		return
	}
}

// attachTCP asks the receiver to add a TCP session to the QUIC session with
// this token, on the TCP session's first stream.
func attachTCP(ctx context.Context, t Conn, token [tcpTokenLen]byte) (Stream, error) {
	st, err := t.OpenStream(ctx)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, st.Abort)
	defer stop()
	watch := time.AfterFunc(handshakeTimeout, st.Abort)
	defer watch.Stop()
	hdr := append([]byte{wire.KindAttach}, token[:]...)
	if _, err := st.Write(hdr); err != nil {
		st.Abort()
		return nil, err
	}
	var status [1]byte
	if _, err := io.ReadFull(st, status[:]); err != nil {
		st.Abort()
		return nil, err
	}
	if err := tcpStatusErr(status[0]); err != nil {
		st.Abort()
		return nil, err
	}
	return st, nil
}

func (a *autoConn) SwitchAdvised() <-chan struct{} { return a.advised }

func (a *autoConn) Switch() string {
	a.switched.Store(true)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reason
}

func (a *autoConn) isSwitched() bool { return a.switched.Load() }

// OpenStream opens the control stream on QUIC, and data streams on TCP once switched.
func (a *autoConn) OpenStream(ctx context.Context) (Stream, error) {
	if a.isSwitched() {
		a.mu.Lock()
		t := a.tcp
		a.mu.Unlock()
		return t.OpenStream(ctx)
	}
	return a.quicSession.OpenStream(ctx)
}

func (a *autoConn) Transport() string {
	if a.isSwitched() {
		return "tcp"
	}
	return "quic"
}

// Metrics are those of the transport carrying the data.
func (a *autoConn) Metrics() Metrics {
	if a.isSwitched() {
		a.mu.Lock()
		t := a.tcp
		a.mu.Unlock()
		return t.Metrics()
	}
	return a.quicSession.Metrics()
}

func (a *autoConn) Close(code uint64, reason string) error {
	err := a.quicSession.Close(code, reason)
	a.mu.Lock()
	t := a.tcp
	a.mu.Unlock()
	if t != nil {
		t.Close(code, reason)
	}
	return err
}

// attach serves an incoming TCP session whose first stream is KindAttach:
// it joins the running QUIC session with that token, which then owns it.
func (e *Engine) attach(c Conn, s Stream) bool {
	var token [tcpTokenLen]byte
	if _, err := io.ReadFull(s, token[:]); err != nil {
		return false
	}
	status := byte(errcode.StatusOf(errcode.ErrUnknownSession))
	if c.Transport() == "tcp" {
		if q := e.quicSession(token); q != nil {
			status = q.attach(c)
		}
	}
	if _, err := s.Write([]byte{status}); err != nil || status != byte(errcode.StatusOK) {
		if status != byte(errcode.StatusOK) {
			e.log.Info("attach refused", "peer", c.RemoteAddr(), "err", tcpStatusErr(status))
		}
		return false
	}
	return true
}

// quicSession finds a running QUIC session on this engine's listeners.
func (e *Engine) quicSession(token [tcpTokenLen]byte) *quicSession {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, l := range e.listeners {
		if ql, ok := l.(*quicListener); ok {
			if s := ql.session(token); s != nil {
				return s
			}
		}
	}
	return nil
}
