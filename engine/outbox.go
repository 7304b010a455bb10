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

func (o *outbox) run(ctx context.Context) {
	e, t := o.e, o.t
	e.publish(t, Event{Kind: EventState, State: StateConnecting})
	retryFor := e.opts.RetryFor
	if retryFor == 0 {
		retryFor = 2 * time.Minute
	}
	sent, resent := o.prior.Bytes, o.prior.Resent
	last := attemptOutcome{accepted: -1}
	var firstFailure time.Time
	backoff := 500 * time.Millisecond
	for n := 1; ; n++ {
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
		out := a.outcome()
		sent += out.sent
		resent += out.resent
		if out.accepted >= 0 {
			last = out
		}
		if err == nil || ctx.Err() != nil || (!retryable(err) && !errors.Is(err, errPaused)) {
			if err != nil && n > 1 && !errors.Is(err, errCancelledByUser) && retryable(err) {
				err = fmt.Errorf("gave up after %s: %w", attempts(n), err)
			}
			o.finish(err, last, sent, resent)
			return
		}
		if errors.Is(err, errPaused) {
			e.setState(t, StatePaused)
			select {
			case <-t.resume:
				firstFailure, backoff = time.Time{}, 500*time.Millisecond
				e.setState(t, StateConnecting)
				continue
			case <-ctx.Done():
				continue // the next attempt ends at once and reports the cancel
			}
		}
		if out.sent > 0 {
			// The attempt reconnected and made progress: RetryFor bounds each
			// outage, not the whole transfer, and back-off starts small again.
			firstFailure, backoff = time.Time{}, 500*time.Millisecond
		}
		if firstFailure.IsZero() {
			firstFailure = e.now()
		}
		if e.now().Sub(firstFailure) > retryFor || retryFor < 0 {
			if retryFor >= 0 { // negative: the first failure is the end, nothing was given up
				err = fmt.Errorf("gave up after %s in %v: %w", attempts(n), retryFor, err)
			}
			o.finish(err, last, sent, resent)
			return
		}
		e.log.Info("transfer interrupted; retrying", "transfer", t.id, "err", err, "in", backoff)
		end := endOf(err, t.peerName(), false)
		e.publish(t, Event{Kind: EventState, State: StateRetrying, Result: &Result{State: StateRetrying, Err: end.text, Code: end.code, Detail: end.detail}})
		t.mu.Lock()
		t.state = StateRetrying
		t.mu.Unlock()
		wait := backoff
		if errors.Is(err, errPathGone) {
			wait = 0 // the network moved under a TCP session: reconnect on the new path at once
		}
		timer, fired := e.opts.Clock.NewTimer(wait)
		select {
		case <-fired:
		case <-ctx.Done():
		case <-t.pauseNow:
			timer.Stop()
			e.setState(t, StatePaused)
			select {
			case <-t.resume:
			case <-ctx.Done():
			}
			firstFailure = time.Time{}
		}
		backoff = min(2*backoff, 10*time.Second)
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
		return re.Code == wire.CodeIO || re.Code == wire.CodeTimeout && re.Reason == ""
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
