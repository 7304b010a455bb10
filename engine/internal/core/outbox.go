package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/internal/clock"
)

// An Outbox is one send to one device, whatever protocol carries it: the
// attempts with back-off, pause and resume, totals across attempts (and
// across Retry, which continues the same transfer), and the end in honest
// words. Each attempt is one connection's worth of a protocol's work (the
// Ferry wire session in engine/send.go, LocalSend's in
// engine/localsend_send.go); the outbox decides whether to try again. The
// engine's transfer behind it is its OutboxHost.
type Outbox struct {
	host OutboxHost
	cfg  OutboxConfig
	// Files and Bytes are what is offered: the count and size of the files.
	Files int
	Bytes int64
	Text  string // the offer's text item, "" when none
	// NewAttempt starts the protocol's next attempt.
	NewAttempt func() Attempt
	// Prior holds the totals of the sessions this transfer had before a Retry.
	Prior Result
}

// OutboxConfig is what the engine's options say about sending.
type OutboxConfig struct {
	RetryFor time.Duration // engine.Options.RetryFor
	Clock    clock.Clock   // runs the back-off
}

// OutboxHost is the engine's side of one sending transfer, as its outbox sees it.
type OutboxHost interface {
	// Connecting publishes the transfer's first state.
	Connecting()
	// State changes the transfer's state (and publishes a change).
	State(State)
	// Retrying says that an attempt was interrupted and another follows.
	Retrying(Ending)
	// Attempting names how the attempt now running is stopped (Pause).
	Attempting(stop context.CancelCauseFunc)
	// Resumed delivers Resume; Paused delivers Pause between attempts.
	Resumed() <-chan struct{}
	Paused() <-chan struct{}
	// Moved, while the back-off before the next attempt runs (until ctx
	// ends), is closed once the device was seen where the last attempt
	// did not dial it (the next attempt is made at once); nil when
	// nothing follows the device.
	Moved(ctx context.Context) <-chan struct{}
	// PeerName is the other device's name, as far as it is known yet.
	PeerName() string
	// Finish reports the transfer's result; err is what ended it.
	Finish(err error, r Result)
	// Log is the engine's logger.
	Log() *slog.Logger
}

// NewOutbox starts the sending side of a transfer, reporting to host.
func NewOutbox(host OutboxHost, cfg OutboxConfig) *Outbox { return &Outbox{host: host, cfg: cfg} }

// Attempt is one try at delivering the files over one connection.
type Attempt interface {
	// Run does the work until the receiver's verdict, an error or ctx's end.
	Run(ctx context.Context) error
	// End releases what Run held (tells the peer why, when err is set).
	End(err error)
	// Outcome reports what the attempt achieved, after End.
	Outcome() AttemptOutcome
}

// AttemptOutcome is what one attempt achieved.
type AttemptOutcome struct {
	Sent, Resent int64 // payload bytes written (first time; again)
	// Packed: of those, the bytes written compressed; PackedTo: what they
	// took on the wire.
	Packed, PackedTo int64
	Held             int64  // bytes of the accepted files the receiver held at the start (resume)
	Accepted         int    // files the receiver accepted (-1: it did not decide)
	Refused          int    // files it refused by name
	Verified         int    // files it verified
	Total            int64  // bytes of the accepted files
	Reason           string // why this transport carries it
	// Folders: empty folders the receiver made (it answered that all went
	// well); FoldersLeftOut: empty folders it does not take.
	Folders, FoldersLeftOut int
}

// Run makes attempts until one ends the transfer: it succeeds, fails in a
// way a retry would not mend, is cancelled, or the back-off's budget for
// one outage (RetryFor) runs out. A pause waits for Resume; an attempt that
// made progress starts the budget and the back-off afresh.
func (o *Outbox) Run(ctx context.Context) {
	o.host.Connecting()
	bo := newBackoff(o.cfg.RetryFor)
	tt := totals{sent: o.Prior.Bytes, resent: o.Prior.Resent, last: AttemptOutcome{Accepted: -1},
		kept: o.Prior.Kept, keptSet: o.Prior.Bytes > 0 || o.Prior.Kept > 0} // a session that moved nothing left nothing to tell apart
	var away error // the peer said it was closing Ferry, in this outage
	for n := 1; ; n++ {
		if bo.first.IsZero() {
			bo.began = o.cfg.Clock.Now() // this attempt may open an outage: its time counts in "gave up ... in"
		}
		out, err := o.attempt(o.bounded(ctx, bo))
		tt.add(out)
		if out.Sent > 0 {
			away = nil
		}
		if errors.Is(err, errcode.ErrGoingAway) {
			away = err
		} else if away != nil && Retryable(err) && !errors.As(err, new(*errcode.RemoteError)) {
			// Since it said it was closing, the device has only been out of
			// reach: its own word is the better account of the outage.
			err = away
		}
		if err == nil || ctx.Err() != nil || (!Retryable(err) && !errors.Is(err, ErrPaused)) ||
			(n == 1 && errors.As(err, new(*HostNotFoundError))) {
			if err != nil && n > 1 && !errors.Is(err, ErrCancelledByUser) && Retryable(err) {
				err = fmt.Errorf("gave up after %s: %w", attempts(n), err)
			}
			o.finish(err, tt)
			return
		}
		if errors.Is(err, ErrPaused) {
			if o.pause(ctx) {
				bo.reset()
				o.host.State(StateConnecting)
			}
			continue // after a cancel, the next attempt ends at once and reports it
		}
		if out.Sent > 0 {
			// The attempt reconnected and made progress: RetryFor bounds each
			// outage, not the whole transfer, and back-off starts small again.
			bo.reset()
		}
		if now := o.cfg.Clock.Now(); bo.exhausted(now) {
			if bo.retryFor >= 0 { // negative: the first failure is the end, nothing was given up
				// The time the outage took, from its first attempt: not the
				// budget, which the attempt under way when it ran out
				// overruns ("in 5s" said of 11 s).
				err = fmt.Errorf("gave up after %s in %v: %w", attempts(n), now.Sub(bo.began).Round(time.Second), err)
			}
			o.finish(err, tt)
			return
		}
		wait := bo.wait(err)
		if now := o.cfg.Clock.Now(); bo.retryFor >= 0 && !now.Add(wait).Before(bo.first.Add(bo.retryFor)) {
			// The next attempt would begin with no time left to connect
			// (ConnectDeadline passed: it fails at once, saying only "no
			// connection before the time for reconnecting ran out"): the
			// outage ends now, with this attempt's reason.
			err = fmt.Errorf("gave up after %s in %v: %w", attempts(n), now.Sub(bo.began).Round(time.Second), err)
			o.finish(err, tt)
			return
		}
		if o.sleep(ctx, err, wait) {
			bo.first = time.Time{} // paused meanwhile: a new outage starts after the resume
		}
	}
}

// connectDeadlineKey is the context key of ConnectDeadline.
type connectDeadlineKey struct{}

// ConnectDeadline is when an attempt made in an outage must have
// connected: the outage's budget (RetryFor) runs out then. An attempt's
// connect phase (dialling, the relay's call) ends there; a session that
// connected is not cut by it. False: no bound (the first attempt, or
// retries that never end).
func ConnectDeadline(ctx context.Context) (time.Time, bool) {
	d, ok := ctx.Value(connectDeadlineKey{}).(time.Time)
	return d, ok
}

// bounded is ctx carrying the connect deadline of the next attempt, in
// the wall clock's time (context deadlines are), while an outage runs.
func (o *Outbox) bounded(ctx context.Context, bo *backoff) context.Context {
	if bo.first.IsZero() || bo.retryFor < 0 {
		return ctx
	}
	left := bo.first.Add(bo.retryFor).Sub(o.cfg.Clock.Now())
	return context.WithValue(ctx, connectDeadlineKey{}, time.Now().Add(max(left, 0)))
}

// attempt runs one attempt to its end and says why it ended.
func (o *Outbox) attempt(ctx context.Context) (AttemptOutcome, error) {
	actx, stopAttempt := context.WithCancelCause(ctx)
	o.host.Attempting(stopAttempt)
	a := o.NewAttempt()
	err := a.Run(actx)
	if cause := context.Cause(actx); cause != nil && !errors.Is(err, ErrSessionDone) &&
		(err == nil || errors.Is(cause, ErrCancelledByUser) || errors.Is(cause, ErrPaused) || errors.Is(cause, ErrPathGone)) {
		err = cause
	}
	stopAttempt(nil)
	if errors.Is(err, ErrSessionDone) {
		err = nil
	}
	a.End(err)
	return a.Outcome(), Dropped(err, o.host.PeerName())
}

// pause waits, paused, for Resume (true) or the end of ctx (false).
func (o *Outbox) pause(ctx context.Context) bool {
	o.host.State(StatePaused)
	select {
	case <-o.host.Resumed():
		return true
	case <-ctx.Done():
		return false
	}
}

// sleep reports the interruption err and waits out the back-off, or less
// when the device shows up elsewhere (OutboxHost.Moved); a Pause meanwhile
// waits for Resume instead (paused is then true).
func (o *Outbox) sleep(ctx context.Context, err error, wait time.Duration) (paused bool) {
	o.host.Log().Info("transfer interrupted; retrying", "err", err, "in", wait)
	end := EndOf(err, o.host.PeerName(), false)
	if errors.Is(err, errcode.ErrGoingAway) {
		// Its Ferry was closed (it said so), where connection_lost is a
		// device out of reach: its user may open it again, and the
		// sender's line says it waits for that, not that it reconnects.
		end.Code = string(errcode.CodeGoingAway)
	}
	o.host.Retrying(end)
	timer, fired := o.cfg.Clock.NewTimer(wait)
	defer timer.Stop()
	mctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	select {
	case <-fired:
	case <-o.host.Moved(mctx):
		o.host.Log().Info("device seen at another address; retrying now")
	case <-ctx.Done():
	case <-o.host.Paused():
		o.pause(ctx)
		return true
	}
	return false
}

// Back-off between attempts: from firstBackoff, doubling up to maxBackoff.
const (
	firstBackoff = 500 * time.Millisecond
	maxBackoff   = 10 * time.Second
)

// backoff is the wait before the next attempt and the budget of one outage.
type backoff struct {
	retryFor time.Duration // Options.RetryFor (negative: no retry)
	first    time.Time     // the outage's first failure; zero when none
	began    time.Time     // when the outage's first attempt began
	next     time.Duration
}

func newBackoff(retryFor time.Duration) *backoff {
	if retryFor == 0 {
		retryFor = 2 * time.Minute
	}
	return &backoff{retryFor: retryFor, next: firstBackoff}
}

// reset starts a new outage with the shortest wait.
func (b *backoff) reset() { b.first, b.next = time.Time{}, firstBackoff }

// exhausted notes a failure at now and reports whether the outage has
// outlasted its budget.
func (b *backoff) exhausted(now time.Time) bool {
	if b.first.IsZero() {
		b.first = now
	}
	return now.Sub(b.first) > b.retryFor || b.retryFor < 0
}

// wait is how long to wait after the failure err (no wait when the network
// moved under a TCP session: reconnect on the new path at once), and
// doubles the next wait.
func (b *backoff) wait(err error) time.Duration {
	w := b.next
	if errors.Is(err, ErrPathGone) {
		w = 0
	}
	b.next = min(2*b.next, maxBackoff)
	return w
}

// totals adds up the attempts of a transfer: bytes over all of them, counts
// from the last one the receiver decided on.
type totals struct {
	sent, resent     int64
	packed, packedTo int64
	last             AttemptOutcome
	// kept is what the receiver held before the transfer sent anything:
	// at the first attempt it decided on (later attempts find what the
	// earlier ones sent), or as the session before a Retry found it.
	kept    int64
	keptSet bool
}

func (tt *totals) add(out AttemptOutcome) {
	tt.sent += out.Sent
	tt.resent += out.Resent
	tt.packed += out.Packed
	tt.packedTo += out.PackedTo
	if out.Accepted >= 0 {
		tt.last = out
		if !tt.keptSet {
			tt.kept, tt.keptSet = out.Held, true
		}
	}
}

// finish reports the end of the transfer: totals over every attempt (and
// the sessions before a Retry), counts from the last attempt the receiver
// decided on.
func (o *Outbox) finish(err error, tt totals) {
	last := tt.last
	r := Result{Bytes: tt.sent, Resent: tt.resent, Kept: tt.kept, Reason: last.Reason, Packed: tt.packed, PackedTo: tt.packedTo}
	EndOf(err, o.host.PeerName(), false).Apply(&r)
	if last.Accepted >= 0 {
		r.Files, r.Refused, r.Verified, r.TotalBytes = last.Accepted, last.Refused, last.Verified, last.Total
		r.Folders, r.FoldersLeftOut = last.Folders, last.FoldersLeftOut
		r.Text = o.Text
	} else {
		// The receiver never decided: say what was offered.
		r.Files, r.TotalBytes = o.Files, o.Bytes
	}
	var mm *identity.MismatchError
	if errors.As(err, &mm) {
		r.PresentedID = mm.Presented.String()
	}
	o.host.Finish(err, r)
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// Retryable reports whether an attempt may succeed if tried again: lost
// connections are; a decision, a verdict or a broken rule is not.
func Retryable(err error) bool {
	var mm *identity.MismatchError
	var kc *identity.KeyChangedError
	var re *errcode.RemoteError
	var le *transport.LocalError // our own socket: trying again will not help
	switch {
	case errors.Is(err, ErrCancelledByUser), errors.Is(err, context.Canceled), errors.Is(err, ErrClosed),
		errors.Is(err, ErrNothingToSend), errors.Is(err, ErrTextUnsupported), errors.Is(err, ErrUnreadable), errors.Is(err, ErrReceiverStalled), errors.As(err, &mm), errors.As(err, &kc), errors.As(err, &le):
		return false
	case errors.As(err, &re):
		// Ferry closing there (going_away) is the device going away, as a
		// lost connection is: it may be back in a moment (an app restarted,
		// a laptop woken), so the send carries on when it is.
		return re.Code == errcode.CodeIO || re.Code == errcode.CodeGoingAway || re.Code == errcode.CodeTimeout && re.Reason == ""
	case errors.Is(err, errcode.ErrProtocol), errors.Is(err, errcode.ErrVersion), errors.Is(err, errcode.ErrBadName),
		errors.Is(err, errcode.ErrVerifyFailed), errors.Is(err, errcode.ErrDeclined), errors.Is(err, errcode.ErrNoSpace):
		return false
	}
	return true
}
