package engine

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/core"
)

// newOutbox is the sending side of t (a core.Outbox, which owns the
// attempts, back-off, pause and the end that every protocol shares),
// offering files and text: the engine's transfer is its host.
func (e *Engine) newOutbox(t *Transfer, files []localFile, text string, prior Result) *core.Outbox {
	o := core.NewOutbox(outboxHost{e: e, t: t}, core.OutboxConfig{RetryFor: e.opts.RetryFor, Clock: e.opts.Clock})
	o.Files, o.Text, o.Prior = len(files), text, prior
	for _, f := range files {
		o.Bytes += f.Size
	}
	return o
}

// outboxHost is the engine as the core.OutboxHost of one sending transfer.
type outboxHost struct {
	e *Engine
	t *Transfer
}

func (h outboxHost) Connecting()              { h.e.publish(h.t, Event{Kind: EventState, State: StateConnecting}) }
func (h outboxHost) State(s State)            { h.e.setState(h.t, s) }
func (h outboxHost) Resumed() <-chan struct{} { return h.t.resume }
func (h outboxHost) Paused() <-chan struct{}  { return h.t.pauseNow }
func (h outboxHost) PeerName() string         { return h.t.peerName() }
func (h outboxHost) Log() *slog.Logger        { return h.e.log.With("transfer", h.t.id) }

func (h outboxHost) Retrying(end core.Ending) {
	h.e.publish(h.t, Event{Kind: EventState, State: StateRetrying, Result: &Result{State: StateRetrying, Err: end.Text, Code: end.Code, Detail: end.Detail}})
	h.t.mu.Lock()
	h.t.state = StateRetrying
	h.t.mu.Unlock()
}

// Moved is closed once the followed device the last attempt dialled is
// seen at another address (seenElsewhere); nil for a send that follows
// no device.
func (h outboxHost) Moved(ctx context.Context) <-chan struct{} {
	h.t.mu.Lock()
	tried := h.t.tried
	h.t.mu.Unlock()
	return h.e.seenElsewhere(ctx, h.t.target.ID, tried)
}

func (h outboxHost) Attempting(stop context.CancelCauseFunc) {
	h.t.mu.Lock()
	h.t.stopAttempt = stop
	h.t.mu.Unlock()
}

func (h outboxHost) Finish(err error, r Result) {
	h.e.warnKeyChange(h.t, err)
	h.e.finish(h.t, r)
}

var _ core.OutboxHost = outboxHost{}

// offerInfo describes what a send offers, for its EventOffer.
func offerInfo(files []localFile, text string) *OfferInfo {
	info := &OfferInfo{FreeBytes: -1, Text: text}
	for _, f := range files {
		info.TotalBytes += f.Size
	}
	info.Count, info.Files, info.Folders, _ = core.Summarize(localList(files), nil) // a slice is never unreadable
	return info
}

// localList is the outbox's own list as the core reads offers (no copy of
// it: a tree of 10^6 files made one of 24 MB).
type localList []localFile

func (l localList) Len() int { return len(l) }

func (l localList) Get(i int) (core.OfferedFile, error) {
	return core.OfferedFile{Path: l[i].Path, Size: l[i].Size}, nil
}

func (l localList) Each(f func(i int, f core.OfferedFile) error) error {
	for i := range l {
		if err := f(i, core.OfferedFile{Path: l[i].Path, Size: l[i].Size}); err != nil {
			return err
		}
	}
	return nil
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

// resumeWait bounds how long Resume waits for a transfer that shows as
// paused to wait for it.
const resumeWait = time.Second

// Resume continues a paused sending transfer. A transfer shows as paused
// (its state, and the event that says so) a moment before its sender
// waits for Resume: a Resume in between waits for it, where it said
// "not paused" to a transfer that had just said it was.
func (e *Engine) Resume(id string) error {
	t, err := e.transfer(id)
	if err != nil {
		return err
	}
	t.mu.Lock()
	paused := t.state == StatePaused
	t.mu.Unlock()
	select {
	case t.resume <- struct{}{}:
		return nil
	default:
		if !paused {
			return fmt.Errorf("transfer %s is not paused", id)
		}
	}
	wait := time.NewTimer(resumeWait)
	defer wait.Stop()
	select {
	case t.resume <- struct{}{}:
		return nil
	case <-t.done:
		return fmt.Errorf("transfer %s has already ended", id)
	case <-wait.C:
		return fmt.Errorf("transfer %s is not paused", id)
	}
}
