package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/engine/wire"
)

// control is the control stream of a session: messages are written whole
// from any goroutine and read by one.
type control struct {
	s       Stream
	r       *bufio.Reader
	msgs    *wire.Reader // reads r; one goroutine at a time
	mu      sync.Mutex   // guards the fields below
	w       *bufio.Writer
	pending bool  // a lazy flush is scheduled
	err     error // a lazy flush failed
}

// lazyFlushDelay batches high-volume messages (one FileResult per received
// file): thousands of small files cost a handful of stream writes, not one
// wake-up of the transport each.
const lazyFlushDelay = 2 * time.Millisecond

func newControl(s Stream) *control {
	r := bufio.NewReaderSize(s, 64<<10)
	return &control{s: s, r: r, msgs: wire.NewReader(r), w: bufio.NewWriterSize(s, 64<<10)}
}

// send writes m and flushes it (and anything batched before it) at once.
func (c *control) send(m wire.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	if err := wire.WriteMessage(c.w, m); err != nil {
		return err
	}
	return c.w.Flush()
}

// sendLazy writes m and flushes it within lazyFlushDelay, together with
// whatever else is sent meanwhile. Order with send is kept.
func (c *control) sendLazy(m wire.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	if err := wire.WriteMessage(c.w, m); err != nil {
		return err
	}
	if !c.pending {
		c.pending = true
		time.AfterFunc(lazyFlushDelay, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.pending = false
			if c.err == nil {
				c.err = c.w.Flush()
			}
		})
	}
	return nil
}

func (c *control) recv() (wire.Message, error) { return c.msgs.ReadMessage() }

// recvTimeout reads one message, aborting the stream if none arrives in d.
func (c *control) recvTimeout(d time.Duration) (wire.Message, error) {
	t := time.AfterFunc(d, c.s.Abort)
	defer t.Stop()
	m, err := c.recv()
	if err != nil && !t.Stop() {
		return nil, fmt.Errorf("no answer within %v: %w", d, wire.ErrTimeout)
	}
	return m, err
}

// expect reads one message of type T.
func expect[T wire.Message](m wire.Message, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	if c, ok := m.(*wire.Cancel); ok {
		return zero, &wire.RemoteError{Code: c.Code, Reason: c.Reason}
	}
	t, ok := m.(T)
	if !ok {
		return zero, fmt.Errorf("%w: expected %v, got %v", wire.ErrProtocol, zero.Type(), m.Type())
	}
	return t, nil
}

// features are the optional capabilities this build's hello lists.
var features = []string{wire.FeatureResume, wire.FeatureText, wire.FeatureUnsent, wire.FeatureFolders, wire.FeatureCodeShown, wire.FeatureZeroChunks, wire.FeaturePrompt, wire.FeatureZerosFirst, wire.FeaturePromptMoves, wire.FeatureSame, wire.FeaturePacked}

// speaks reports whether this engine's hello lists feature f: one it
// reads from a peer only when it said so.
func (e *Engine) speaks(f string) bool {
	if e.features != nil {
		return slices.Contains(e.features, f) // a test that plays an older build
	}
	return slices.Contains(features, f)
}

func (e *Engine) hello() *wire.Hello {
	f := features
	if e.features != nil {
		f = e.features // a test that plays an older build
	}
	return &wire.Hello{Version: wire.Version, Name: e.Name(), ID: e.ID(), OS: runtime.GOOS, Features: f, DataStreams: maxDataStreams}
}

// checkHello makes sure the hello names the identity TLS proved.
func checkHello(h *wire.Hello, c Conn) error {
	if h.Version != wire.Version {
		return fmt.Errorf("%w: the peer speaks version %d, we speak %d", wire.ErrVersion, h.Version, wire.Version)
	}
	if h.ID != c.PeerID().String() {
		return fmt.Errorf("%w: hello names device %s but TLS proved %s", wire.ErrProtocol, h.ID, c.PeerID())
	}
	return nil
}

// closeReason is the error a connection is closed with because of err: err
// with the code that tells the peer why (closeCode); each transport maps it
// through the one table (package errcode), so that the peer learns why even
// when queued stream data is dropped (QUIC discards it). nil for nil.
func closeReason(err error) error {
	if err == nil {
		return nil
	}
	return errcode.WithCode(closeCode(err), err)
}

// closeCode is the wire code that tells the peer why we end a session.
// Ferry closing here (Engine.Close, or the context of a send ending: the
// app or the CLI quitting) is the device going away, not a failure of
// the peer's files.
func closeCode(err error) wire.Code {
	if errors.Is(err, errPairMismatch) {
		return wire.CodeUntrusted
	}
	if errors.Is(err, errCancelledByUser) {
		return wire.CodeCancelled
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, ErrClosed) {
		return wire.CodeGoingAway
	}
	return wire.CodeOf(err)
}

// closeWith ends a connection because of err. Before closing it tells the
// peer why on the control stream, because TCP has no close reason of its own
// (QUIC carries closeReason in CONNECTION_CLOSE as well).
func closeWith(c Conn, ctl *control, err error) {
	var re *wire.RemoteError
	if errors.As(err, &re) || errors.As(err, new(*core.NotSentError)) {
		// The peer ended it and knows why (its verdict, which a send that
		// gave up unreadable files takes as the end); echoing its reason
		// back would only race with its own account of the end.
		c.Close(nil)
		return
	}
	if err != nil && ctl != nil {
		sent := make(chan struct{})
		go func() {
			ctl.send(&wire.Cancel{Code: closeCode(err), Reason: errcode.Reason(err)})
			close(sent)
		}()
		t := time.NewTimer(300 * time.Millisecond)
		select {
		case <-sent:
		case <-t.C:
		}
		t.Stop()
	}
	c.Close(closeReason(err))
}

// peerInfo builds what events say about a peer.
func (e *Engine) peerInfo(id peer.ID, name, addr string) PeerInfo {
	p, known := e.trust.Get(id)
	return PeerInfo{Name: name, ID: id.String(), Trusted: known && p.AlwaysAccept, Addr: addr}
}

// watchProgress publishes coalesced progress (every Options.ProgressInterval)
// and metrics (every fourth time) until ctx ends.
func (e *Engine) watchProgress(ctx context.Context, t *Transfer, bytes func() int64, total int64, files func() int, totalFiles int) {
	e.watchProgressMoved(ctx, t, bytes, bytes, total, files, totalFiles)
}

// watchStalled says that a receiving transfer is interrupted once nothing
// of it moved (moved: its bytes and files) for idle, and that it is active
// again when something does: a LocalSend sender whose app was put away in
// the middle of a file, a browser's page closed or asleep. The transfer
// goes on meanwhile (Cancel ends it): LocalSend's upload continues if the
// app comes back, or fails when its connection ends (the app closed, or
// its device gone, which TCP's keep-alive finds); a browser's set goes on
// when its page sends again. Such transfers used to say "Receiving" at
// 0 B/s, however long that was.
func (e *Engine) watchStalled(ctx context.Context, t *Transfer, idle time.Duration, moved func() int64) {
	tick, ticks := e.opts.Clock.NewTicker(min(idle/4, 5*time.Second))
	defer tick.Stop()
	last, lastAt, stalled := moved(), e.now(), false
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticks:
			switch m := moved(); {
			case m != last:
				last, lastAt = m, now
				if stalled {
					stalled = false
					e.setState(t, StateActive)
				}
			case !stalled && now.Sub(lastAt) >= idle:
				stalled = true
				e.setState(t, StateInterrupted)
			}
		}
	}
}

// watchProgressMoved is watchProgress where the bytes in place (bytes)
// include some that never crossed the network (a resumed file's chunks the
// receiver already held): the rate and the time left come from moved, the
// bytes that did. Counting held chunks as sent said 10.5 MB/s on a
// 2.5 MB/s link right after a resume (issue 26).
func (e *Engine) watchProgressMoved(ctx context.Context, t *Transfer, bytes, moved func() int64, total int64, files func() int, totalFiles int) {
	// The start is read before the ticker exists: read after, a tick (or a
	// test's clock moved on once the ticker was there) could come at the
	// very time of the start, and the rate over no time was +Inf.
	last := moved()
	lastT := e.now()
	tick, ticks := e.opts.Clock.NewTicker(e.opts.ProgressInterval)
	defer tick.Stop()
	var rate float64
	n := 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticks:
			b, m := bytes(), moved()
			dt := now.Sub(lastT).Seconds()
			if dt <= 0 {
				continue
			}
			inst := float64(m-last) / dt
			if rate == 0 {
				rate = inst
			} else {
				rate = 0.7*rate + 0.3*inst
			}
			last, lastT = m, now
			eta := 0.0
			if rate > 0 {
				eta = float64(total-b) / rate
			}
			e.publish(t, Event{Kind: EventProgress, Progress: &Progress{
				Bytes: b, TotalBytes: total, Files: files(), TotalFiles: totalFiles, Rate: rate, ETA: eta,
			}})
			n++
			if n%4 == 0 {
				t.mu.Lock()
				c := t.conn
				t.mu.Unlock()
				if c != nil {
					m := c.Metrics()
					e.publish(t, Event{Kind: EventMetrics, Metrics: &m})
				}
			}
		}
	}
}
