package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/wire"
)

// An outbox is one send to one device, whatever protocol carries it: the
// local files (the manifest), the attempts with back-off, pause and resume,
// totals across attempts (and across Retry, which continues the same
// transfer), and the end in honest words. Each attempt is one connection's
// worth of a protocol's work (the Ferry wire session in send.go; another
// protocol later, beside it); the outbox decides whether to try again.
type outbox struct {
	e     *Engine
	t     *Transfer
	files []localFile
	text  string // the offer's text item, "" when none
	// newAttempt starts the protocol's next attempt.
	newAttempt func() attempt
	// prior holds the totals of the sessions this transfer had before a Retry.
	prior Result
}

// attempt is one try at delivering the files over one connection.
type attempt interface {
	// run does the work until the receiver's verdict, an error or ctx's end.
	run(ctx context.Context) error
	// end releases what run held (tells the peer why, when err is set).
	end(err error)
	// outcome reports what the attempt achieved, after end.
	outcome() attemptOutcome
}

// attemptOutcome is what one attempt achieved.
type attemptOutcome struct {
	sent, resent int64  // payload bytes written (first time; again)
	accepted     int    // files the receiver accepted (-1: it did not decide)
	refused      int    // files it refused by name
	verified     int    // files it verified
	total        int64  // bytes of the accepted files
	reason       string // why this transport carries it
}

// errPaused ends the current attempt of a paused transfer; the receiver
// learns that the sender paused (wire.ErrPaused), not that it failed.
var errPaused = fmt.Errorf("%w by the sender", wire.ErrPaused)

// run makes attempts until one ends the transfer: it succeeds, fails in a
// way a retry would not mend, is cancelled, or the back-off's budget for
// one outage (RetryFor) runs out. A pause waits for Resume; an attempt that
// made progress starts the budget and the back-off afresh.
func (o *outbox) run(ctx context.Context) {
	e, t := o.e, o.t
	e.publish(t, Event{Kind: EventState, State: StateConnecting})
	bo := newBackoff(e.opts.RetryFor)
	tt := totals{sent: o.prior.Bytes, resent: o.prior.Resent, last: attemptOutcome{accepted: -1}}
	var away error // the peer said it was closing Ferry, in this outage
	for n := 1; ; n++ {
		out, err := o.attempt(ctx)
		tt.add(out)
		if out.sent > 0 {
			away = nil
		}
		if errors.Is(err, wire.ErrGoingAway) {
			away = err
		} else if away != nil && retryable(err) && !errors.As(err, new(*wire.RemoteError)) {
			// Since it said it was closing, the device has only been out of
			// reach: its own word is the better account of the outage.
			err = away
		}
		if err == nil || ctx.Err() != nil || (!retryable(err) && !errors.Is(err, errPaused)) {
			if err != nil && n > 1 && !errors.Is(err, errCancelledByUser) && retryable(err) {
				err = fmt.Errorf("gave up after %s: %w", attempts(n), err)
			}
			o.finish(err, tt.last, tt.sent, tt.resent)
			return
		}
		if errors.Is(err, errPaused) {
			if o.pause(ctx) {
				bo.reset()
				e.setState(t, StateConnecting)
			}
			continue // after a cancel, the next attempt ends at once and reports it
		}
		if out.sent > 0 {
			// The attempt reconnected and made progress: RetryFor bounds each
			// outage, not the whole transfer, and back-off starts small again.
			bo.reset()
		}
		if bo.exhausted(e.now()) {
			if bo.retryFor >= 0 { // negative: the first failure is the end, nothing was given up
				err = fmt.Errorf("gave up after %s in %v: %w", attempts(n), bo.retryFor, err)
			}
			o.finish(err, tt.last, tt.sent, tt.resent)
			return
		}
		if o.sleep(ctx, err, bo.wait(err)) {
			bo.first = time.Time{} // paused meanwhile: a new outage starts after the resume
		}
	}
}

// attempt runs one attempt to its end and says why it ended.
func (o *outbox) attempt(ctx context.Context) (attemptOutcome, error) {
	t := o.t
	actx, stopAttempt := context.WithCancelCause(ctx)
	t.mu.Lock()
	t.stopAttempt = stopAttempt
	t.mu.Unlock()
	a := o.newAttempt()
	err := a.run(actx)
	if cause := context.Cause(actx); cause != nil && !errors.Is(err, errSessionDone) &&
		(err == nil || errors.Is(cause, errCancelledByUser) || errors.Is(cause, errPaused) || errors.Is(cause, errPathGone)) {
		err = cause
	}
	stopAttempt(nil)
	if errors.Is(err, errSessionDone) {
		err = nil
	}
	a.end(err)
	return a.outcome(), err
}

// pause waits, paused, for Resume (true) or the end of ctx (false).
func (o *outbox) pause(ctx context.Context) bool {
	o.e.setState(o.t, StatePaused)
	select {
	case <-o.t.resume:
		return true
	case <-ctx.Done():
		return false
	}
}

// sleep reports the interruption err and waits out the back-off; a Pause
// meanwhile waits for Resume instead (paused is then true).
func (o *outbox) sleep(ctx context.Context, err error, wait time.Duration) (paused bool) {
	e, t := o.e, o.t
	e.log.Info("transfer interrupted; retrying", "transfer", t.id, "err", err, "in", wait)
	end := endOf(err, t.peerName(), false)
	e.publish(t, Event{Kind: EventState, State: StateRetrying, Result: &Result{State: StateRetrying, Err: end.text, Code: end.code, Detail: end.detail}})
	t.mu.Lock()
	t.state = StateRetrying
	t.mu.Unlock()
	timer, fired := e.opts.Clock.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-fired:
	case <-ctx.Done():
	case <-t.pauseNow:
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
	if errors.Is(err, errPathGone) {
		w = 0
	}
	b.next = min(2*b.next, maxBackoff)
	return w
}

// totals adds up the attempts of a transfer: bytes over all of them, counts
// from the last one the receiver decided on.
type totals struct {
	sent, resent int64
	last         attemptOutcome
}

func (tt *totals) add(out attemptOutcome) {
	tt.sent += out.sent
	tt.resent += out.resent
	if out.accepted >= 0 {
		tt.last = out
	}
}

// finish reports the end of the transfer: totals over every attempt (and
// the sessions before a Retry), counts from the last attempt the receiver
// decided on.
func (o *outbox) finish(err error, last attemptOutcome, sent, resent int64) {
	r := Result{Bytes: sent, Resent: resent, Reason: last.reason}
	endOf(err, o.t.peerName(), false).apply(&r)
	if last.accepted >= 0 {
		r.Files, r.Refused, r.Verified, r.TotalBytes = last.accepted, last.refused, last.verified, last.total
		r.Text = o.text
	} else {
		// The receiver never decided: say what was offered.
		r.Files = len(o.files)
		for _, f := range o.files {
			r.TotalBytes += f.Size
		}
	}
	var mm *identity.MismatchError
	if errors.As(err, &mm) {
		r.PresentedID = mm.Presented.String()
	}
	o.e.warnKeyChange(o.t, err)
	o.e.finish(o.t, r)
}

// summary describes what the outbox offers, for its EventOffer.
func (o *outbox) summary() *OfferInfo {
	all := make([]offeredFile, len(o.files))
	info := &OfferInfo{FreeBytes: -1, Text: o.text}
	for i, f := range o.files {
		all[i] = offeredFile{Path: f.Path, Size: f.Size}
		info.TotalBytes += f.Size
	}
	info.Count, info.Files, info.Folders = summarize(all, nil)
	return info
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// retryable reports whether an attempt may succeed if tried again: lost
// connections are; a decision, a verdict or a broken rule is not.
func retryable(err error) bool {
	var mm *identity.MismatchError
	var kc *identity.KeyChangedError
	var re *wire.RemoteError
	var le *LocalError // our own socket: trying again will not help
	switch {
	case errors.Is(err, errCancelledByUser), errors.Is(err, context.Canceled), errors.Is(err, ErrClosed),
		errors.Is(err, ErrNothingToSend), errors.Is(err, ErrTextUnsupported), errors.As(err, &mm), errors.As(err, &kc), errors.As(err, &le):
		return false
	case errors.As(err, &re):
		// Ferry closing there (going_away) is the device going away, as a
		// lost connection is: it may be back in a moment (an app restarted,
		// a laptop woken), so the send carries on when it is.
		return re.Code == wire.CodeIO || re.Code == wire.CodeGoingAway || re.Code == wire.CodeTimeout && re.Reason == ""
	case errors.Is(err, wire.ErrProtocol), errors.Is(err, wire.ErrVersion), errors.Is(err, wire.ErrBadName),
		errors.Is(err, wire.ErrVerifyFailed), errors.Is(err, wire.ErrDeclined), errors.Is(err, wire.ErrNoSpace):
		return false
	}
	return true
}

// Pause stops a sending transfer after the chunks in flight; the receiver
// keeps what arrived. Resume continues it where it stopped.
func (e *Engine) Pause(id string) error {
	t, err := e.transfer(id)
	if err != nil {
		return err
	}
	if t.dir != Sending {
		return fmt.Errorf("transfer %s: only the sending side can pause; cancel here and the sender can resume later", id)
	}
	t.mu.Lock()
	stop, final := t.stopAttempt, t.state.Final()
	t.mu.Unlock()
	if final {
		return fmt.Errorf("transfer %s has already ended", id)
	}
	select {
	case t.pauseNow <- struct{}{}:
	default:
	}
	if stop != nil {
		stop(errPaused)
	}
	return nil
}

// Resume continues a paused sending transfer.
func (e *Engine) Resume(id string) error {
	t, err := e.transfer(id)
	if err != nil {
		return err
	}
	select {
	case t.resume <- struct{}{}:
		return nil
	default:
		return fmt.Errorf("transfer %s is not paused", id)
	}
}
