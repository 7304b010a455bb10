package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/internal/clock"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// fakeOutboxHost is an engine's sending transfer as the outbox sees it.
type fakeOutboxHost struct {
	resumed, paused chan struct{}
	moved           chan struct{} // Moved: nil, never

	mu       sync.Mutex // guards the fields below
	states   []State
	retrying []Ending
	stop     context.CancelCauseFunc
	err      error
	result   *Result
}

func newFakeOutboxHost() *fakeOutboxHost {
	return &fakeOutboxHost{resumed: make(chan struct{}), paused: make(chan struct{}, 1)}
}

func (h *fakeOutboxHost) Connecting()   { h.State(StateConnecting) }
func (h *fakeOutboxHost) State(s State) { h.mu.Lock(); h.states = append(h.states, s); h.mu.Unlock() }
func (h *fakeOutboxHost) Retrying(e Ending) {
	h.mu.Lock()
	h.retrying = append(h.retrying, e)
	h.mu.Unlock()
	h.State(StateRetrying)
}
func (h *fakeOutboxHost) Attempting(stop context.CancelCauseFunc) {
	h.mu.Lock()
	h.stop = stop
	h.mu.Unlock()
}
func (h *fakeOutboxHost) Resumed() <-chan struct{}              { return h.resumed }
func (h *fakeOutboxHost) Paused() <-chan struct{}               { return h.paused }
func (h *fakeOutboxHost) PeerName() string                      { return "Bob" }
func (h *fakeOutboxHost) Moved(context.Context) <-chan struct{} { return h.moved }
func (h *fakeOutboxHost) Log() *slog.Logger                     { return slog.New(slog.DiscardHandler) }
func (h *fakeOutboxHost) Finish(err error, r Result) {
	h.mu.Lock()
	h.err, h.result = err, &r
	h.mu.Unlock()
}

// script is a protocol whose attempts end as listed, each having sent
// its bytes; an attempt past the list blocks until its context ends.
type script struct {
	mu    sync.Mutex // guards n
	n     int
	steps []step
}

type step struct {
	err  error
	sent int64
	out  AttemptOutcome
}

func (s *script) next() Attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.n > len(s.steps) {
		return &fakeAttempt{block: true}
	}
	return &fakeAttempt{step: s.steps[s.n-1]}
}

func (s *script) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

type fakeAttempt struct {
	step
	block bool
	ended bool
}

func (a *fakeAttempt) Run(ctx context.Context) error {
	if a.block {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	return a.err
}
func (a *fakeAttempt) End(error) { a.ended = true }
func (a *fakeAttempt) Outcome() AttemptOutcome {
	out := a.out
	out.Sent = a.sent
	if out == (AttemptOutcome{Sent: a.sent}) {
		out.Accepted = -1
	}
	return out
}

var lost = fmt.Errorf("read: %w", io.ErrUnexpectedEOF)

// runOutbox runs an outbox of files over s on a fake clock, moving the
// clock a minute over every back-off (one Advance is one back-off: the
// attempt it wakes reads the clock at the minute's end), and returns the
// host once it finished.
func runOutbox(t *testing.T, s *script, retryFor time.Duration) (*fakeOutboxHost, []time.Duration) {
	t.Helper()
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newFakeOutboxHost()
	o := NewOutbox(h, OutboxConfig{RetryFor: retryFor, Clock: clk})
	o.Files, o.Bytes, o.Text = 2, 300, "hi"
	o.NewAttempt = s.next
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.Run(t.Context())
	}()
	var waits []time.Duration
	for {
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			select {
			case <-done:
			case <-ctx.Done():
			}
			cancel()
		}()
		err := clk.WaitTimers(ctx, 1)
		cancel()
		if err != nil {
			break
		}
		before := clk.Now()
		clk.Advance(time.Minute)
		waits = append(waits, clk.Now().Sub(before))
	}
	<-done
	return h, waits
}

// Lost connections are retried with back-off; the bytes of every attempt
// count, the counts are the last decided attempt's.
func TestOutboxRetriesLostConnections(t *testing.T) {
	s := &script{steps: []step{
		{err: lost, sent: 100, out: AttemptOutcome{Accepted: 2, Total: 300}},
		{err: lost},
		{err: nil, sent: 200, out: AttemptOutcome{Accepted: 2, Verified: 2, Total: 300, Reason: "TCP"}},
	}}
	// The fake clock moves a minute a back-off: a budget of a minute
	// would leave the third attempt no time to connect.
	h, waits := runOutbox(t, s, 5*time.Minute)
	if s.attempts() != 3 || len(waits) != 2 {
		t.Fatalf("%d attempts, %d back-offs", s.attempts(), len(waits))
	}
	r := h.result
	if r.State != StateDone || r.Bytes != 300 || r.Files != 2 || r.Verified != 2 || r.TotalBytes != 300 || r.Text != "hi" || r.Reason != "TCP" {
		t.Errorf("result %+v", r)
	}
	if len(h.retrying) != 2 || h.retrying[0].Code != CodeConnectionLost || h.retrying[0].Text != "The connection to Bob was lost." {
		t.Errorf("retrying %+v", h.retrying)
	}
}

// A device seen elsewhere during the back-off (OutboxHost.Moved) is tried
// there at once: the next attempt is made with the back-off's timer still
// set (the fake clock never moves).
func TestOutboxTriesAtOnceWhereTheDeviceMoved(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newFakeOutboxHost()
	h.moved = make(chan struct{})
	s := &script{steps: []step{{err: lost}, {err: nil, sent: 300, out: AttemptOutcome{Accepted: 2, Verified: 2, Total: 300}}}}
	o := NewOutbox(h, OutboxConfig{RetryFor: time.Minute, Clock: clk})
	o.Files, o.Bytes = 2, 300
	o.NewAttempt = s.next
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.Run(t.Context())
	}()
	if err := clk.WaitTimers(t.Context(), 1); err != nil { // the back-off after the first attempt
		t.Fatal(err)
	}
	close(h.moved)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the device moved, and after %d attempts the outbox still waits out its back-off", s.attempts())
	}
	if s.attempts() != 2 || h.result.State != StateDone {
		t.Errorf("%d attempts, result %+v", s.attempts(), h.result)
	}
}

// A decision, a verdict or a broken rule ends the send at once.
func TestOutboxDoesNotRetryAnswers(t *testing.T) {
	for _, err := range []error{
		&errcode.RemoteError{Code: errcode.CodeDeclined},
		&errcode.RemoteError{Code: errcode.CodeNoSpace, Reason: "3 GB needed"},
		fmt.Errorf("%w: bad frame", errcode.ErrProtocol),
		ErrNothingToSend, ErrTextUnsupported, ErrCancelledByUser,
	} {
		s := &script{steps: []step{{err: err}}}
		h, waits := runOutbox(t, s, time.Minute)
		if s.attempts() != 1 || len(waits) != 0 || h.result.State == StateDone || !errors.Is(h.err, err) {
			t.Errorf("%v: %d attempts, result %+v", err, s.attempts(), h.result)
		}
		if h.result.Files != 2 || h.result.TotalBytes != 300 {
			t.Errorf("%v: never decided, the result says %d files of %d bytes, not what was offered", err, h.result.Files, h.result.TotalBytes)
		}
	}
}

// A name that does not resolve at the first attempt ends the send at once
// (a typo); once a device was reached, its name gone for a while is an
// outage like another, and tried again.
func TestOutboxHostNotFound(t *testing.T) {
	nx := fmt.Errorf("could not connect: %w", &HostNotFoundError{Host: "nosuchhost.invalid"})
	s := &script{steps: []step{{err: nx}}}
	h, waits := runOutbox(t, s, time.Minute)
	if s.attempts() != 1 || len(waits) != 0 || h.result.State != StateFailed ||
		h.result.Err != "Could not connect: there is no host named nosuchhost.invalid (check the name)." {
		t.Errorf("first attempt: %d attempts, result %+v", s.attempts(), h.result)
	}
	s = &script{steps: []step{{err: lost, sent: 100, out: AttemptOutcome{Accepted: 2, Total: 300}}, {err: nx}, {err: nil, sent: 200, out: AttemptOutcome{Accepted: 2, Verified: 2, Total: 300}}}}
	h, _ = runOutbox(t, s, 5*time.Minute) // a minute a back-off, as above
	if s.attempts() != 3 || h.result.State != StateDone {
		t.Errorf("later attempt: %d attempts, result %+v", s.attempts(), h.result)
	}
}

// RetryFor bounds one outage; progress starts a new one.
func TestOutboxGivesUp(t *testing.T) {
	steps := make([]step, 20)
	for i := range steps {
		steps[i] = step{err: lost}
	}
	s := &script{steps: steps}
	h, _ := runOutbox(t, s, 90*time.Second) // the fake clock moves a minute a back-off
	// Attempts at 0, 1 and 2 minutes: the third is past the budget, and
	// the outage took 2 minutes (it said the budget's 1m30s).
	if r := h.result; s.attempts() != 3 || r.State != StateFailed || !strings.Contains(r.Detail, "gave up after 3 attempts in 2m0s") || r.Code != CodeConnectionLost {
		t.Errorf("%d attempts, result %+v", s.attempts(), r)
	}
	s = &script{steps: []step{{err: lost}}}
	h, _ = runOutbox(t, s, -1)
	if s.attempts() != 1 || strings.Contains(h.result.Detail, "gave up") {
		t.Errorf("no retries: %d attempts, result %+v", s.attempts(), h.result)
	}
}

// A peer closing Ferry is retried, and its word stays the account of the
// outage when the next attempts cannot connect. While it is retried, the
// code says so (going_away: its sender's row waits for that Ferry to be
// opened again, where connection_lost read "Reconnecting to Bob…"); its
// end, when the Ferry is not opened in time, is connection_lost.
func TestOutboxGoingAway(t *testing.T) {
	refused := errors.New("connection refused")
	s := &script{steps: []step{{err: &errcode.RemoteError{Code: errcode.CodeGoingAway}}, {err: refused}, {err: refused}, {err: refused}}}
	h, _ := runOutbox(t, s, 90*time.Second)
	if r := h.result; s.attempts() != 3 || !errors.Is(h.err, errcode.ErrGoingAway) || r.Err != "Bob went away: Ferry was closed there." || r.Code != CodeConnectionLost {
		t.Errorf("%d attempts; result %+v (%v)", s.attempts(), r, h.err)
	}
	if len(h.retrying) != 2 {
		t.Fatalf("retrying %+v, want 2", h.retrying)
	}
	for _, e := range h.retrying {
		if e.Code != string(errcode.CodeGoingAway) || e.Text != "Bob went away: Ferry was closed there." {
			t.Errorf("retrying %+v, want going_away", e)
		}
	}
}

// A pause ends the attempt and waits for Resume; the next attempt follows.
func TestOutboxPause(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newFakeOutboxHost()
	o := NewOutbox(h, OutboxConfig{RetryFor: time.Minute, Clock: clk})
	s := &script{steps: []step{{err: ErrPaused}, {err: nil, out: AttemptOutcome{Accepted: 1, Verified: 1}}}}
	o.NewAttempt = s.next
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.Run(t.Context())
	}()
	h.resumed <- struct{}{} // taken only once paused
	<-done
	want := []State{StateConnecting, StatePaused, StateConnecting}
	if fmt.Sprint(h.states) != fmt.Sprint(want) || h.result.State != StateDone {
		t.Errorf("states %v, result %+v", h.states, h.result)
	}
}

// Pause stops a running attempt through the host's stop function.
func TestOutboxPauseStopsTheAttempt(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newFakeOutboxHost()
	o := NewOutbox(h, OutboxConfig{RetryFor: time.Minute, Clock: clk})
	o.NewAttempt = (&script{}).next // every attempt blocks
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.Run(ctx)
	}()
	var stop context.CancelCauseFunc
	testutil.WaitFor(t, "an attempt", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		stop = h.stop
		return stop != nil
	})
	stop(ErrPaused)
	testutil.WaitFor(t, "the pause", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.states) == 2 && h.states[1] == StatePaused
	})
	cancel()
	<-done
	if r := h.result; r.State != StateCancelled {
		t.Errorf("result %+v", r)
	}
}

// What the receiver kept from an earlier session is what it held when the
// first attempt it decided on began; later attempts find what the earlier
// ones sent, which is not "from before".
func TestOutboxKeptIsWhatWasThereBefore(t *testing.T) {
	s := &script{steps: []step{
		{err: lost},
		{err: lost, sent: 100, out: AttemptOutcome{Accepted: 2, Total: 300, Held: 50}},
		{err: nil, sent: 150, out: AttemptOutcome{Accepted: 2, Verified: 2, Total: 300, Held: 150}},
	}}
	h, _ := runOutbox(t, s, time.Minute)
	if r := h.result; r.State != StateDone || r.Kept != 50 || r.Bytes != 250 {
		t.Errorf("kept %d, sent %d (%s), want 50 kept and 250 sent", r.Kept, r.Bytes, r.State)
	}
}

// deadlineAttempt is an attempt that fails as the connection was lost,
// or, begun with no time left to connect (ConnectDeadline passed), as
// engine's sender does then.
type deadlineAttempt struct{ fakeAttempt }

var errTimeUp = errors.New("no connection before the time for reconnecting ran out")

func (a *deadlineAttempt) Run(ctx context.Context) error {
	if at, ok := ConnectDeadline(ctx); ok && !time.Now().Before(at) {
		return errTimeUp
	}
	return lost
}

// An outage whose budget the next back-off would outlast ends at once,
// with the reason of the attempt that just failed: the attempt after the
// wait began with no time left to connect and failed saying only that
// (NAT lab: a receiver killed beyond the LAN, --retry-for 40s: "Gave up
// after 8 attempts in 57s: no connection before the time for reconnecting
// ran out", 10 s after the last attempt that said why). Back-offs of
// 0.5, 1, 2 and 4 s against a budget of 5 s: attempts at 0, 0.5, 1.5
// and 3.5 s, and none at 7.5.
func TestOutboxGivesUpBeforeAnAttemptWithNoTimeToConnect(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	start := clk.Now()
	h := newFakeOutboxHost()
	o := NewOutbox(h, OutboxConfig{RetryFor: 5 * time.Second, Clock: clk})
	o.Files, o.Bytes = 1, 100
	var began []time.Duration
	o.NewAttempt = func() Attempt {
		began = append(began, clk.Now().Sub(start))
		return &deadlineAttempt{}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.Run(t.Context())
	}()
	for {
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			select {
			case <-done:
			case <-ctx.Done():
			}
			cancel()
		}()
		err := clk.WaitTimers(ctx, 1)
		cancel()
		if err != nil {
			break
		}
		clk.Advance(500 * time.Millisecond) // the back-offs are multiples of it
	}
	<-done
	if r := h.result; r.State != StateFailed || strings.Contains(r.Detail, errTimeUp.Error()) || !strings.Contains(r.Detail, "gave up after 4 attempts in 4s") {
		t.Errorf("result %+v after attempts at %v; want given up after the fourth, with its reason", r, began)
	}
	if len(began) != 4 {
		t.Errorf("attempts at %v; want 4, none begun with no time to connect", began)
	}
}
