package anywhere_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/anywhere"
	"github.com/ferrydrop/ferry/engine/internal/rendezvous"
	"github.com/ferrydrop/ferry/engine/relay"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// A receiver killed leaves its presence at the relay (two minutes), and
// a sender's every try found it there, called, and waited for an answer
// that never came (10 s each). Once a call went unanswered, the same
// presence, not put again since, is not called again: the try ends at
// once with ErrStillUnanswered, no call put. A presence put again (its
// run alive: it puts it every 30 s) and a new run's are called.
func TestUnansweredPresenceIsNotCalledAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("gathers candidates at the relay for each call")
	}
	l := newLonePresence(t, 11)
	present, calls := l.present, l.calls
	a, b, s, relayAddr := l.a, l.b, l.s, l.relay
	clock := func() time.Time { return l.now }
	ctx := t.Context()
	var unanswered anywhere.Unanswered
	req := anywhere.DialRequest{
		Relay: relayAddr, Secret: s, Self: a.ID, Peer: b.ID, Loopback: true, Now: clock,
		Unanswered: &unanswered, AnswerWait: 300 * time.Millisecond,
		TLS: a.TLSConfig(false, func(identity.DeviceID) error { return nil }),
	}
	try := func(what string, want error, wantCalls int) {
		t.Helper()
		c, err := anywhere.Dial(ctx, req)
		if err == nil {
			c.Close(nil)
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
		if n := calls(); n != wantCalls {
			t.Errorf("%s: %d calls put, want %d", what, n, wantCalls)
		}
	}
	run := anywhere.NewInstance()
	present(run)
	try("the first call", anywhere.ErrNoAnswer, 1)
	try("the same presence again", anywhere.ErrStillUnanswered, 0)
	try("and again", anywhere.ErrStillUnanswered, 0)
	l.now = l.now.Add(30 * time.Second) // the run puts its presence again: it lives
	present(run)
	try("the presence put again", anywhere.ErrNoAnswer, 1)
	try("that one again", anywhere.ErrStillUnanswered, 0)
	present(anywhere.NewInstance()) // a new run, within the same second
	try("a new run's presence", anywhere.ErrNoAnswer, 1)
	// Without the memory every try calls.
	req.Unanswered = nil
	try("a caller that keeps none", anywhere.ErrNoAnswer, 1)
	try("a caller that keeps none, again", anywhere.ErrNoAnswer, 1)
}

// A receiver killed leaves its presence at the relay for two minutes, so
// a new sender (a new ferry-cli send: no memory of calls gone
// unanswered) found it, called, and waited 10 s for the answer. A relay
// that notes looks says how long no one looked at the call box: a device
// that has not looked for NotLookingAfter is not called (Lookup, the
// check before a send, says so too), and a caller already waiting stops
// once the box went that long without a look. A look (a receiver alive)
// and it is called again.
func TestDeviceNotLookingIsNotCalled(t *testing.T) {
	if testing.Short() {
		t.Skip("gathers candidates at the relay for each call")
	}
	l := newLonePresence(t, 12)
	l.present(anywhere.NewInstance())
	a, b, s, relayAddr := l.a, l.b, l.s, l.relay
	ctx := t.Context()
	look := l.calls // as the receiver does
	const gone = 500 * time.Millisecond
	req := anywhere.DialRequest{
		Relay: relayAddr, Secret: s, Self: a.ID, Peer: b.ID, Loopback: true,
		AnswerWait: time.Minute, NotLookingAfter: gone,
		TLS: a.TLSConfig(false, func(identity.DeviceID) error { return nil }),
	}
	look() // the receiver, then killed
	testutil.WaitFor(t, "the relay to say the device stopped looking", func() bool {
		return errors.Is(anywhere.Lookup(ctx, req), anywhere.ErrNotLooking)
	})
	var nl *anywhere.NotLookingError
	if err := anywhere.Lookup(ctx, req); !errors.As(err, &nl) || nl.For < gone || nl.Relay != relayAddr {
		t.Fatalf("the check before a send: %v", err)
	}
	c, err := anywhere.Dial(ctx, req)
	if err == nil {
		c.Close(nil)
	}
	if !errors.Is(err, anywhere.ErrNotLooking) {
		t.Errorf("a call to a device not looking: %v", err)
	}
	if n := look(); n != 0 {
		t.Errorf("%d calls put for a device not looking, want none", n)
	}
	// Looked at just now: called; its receiver killed as the call came,
	// the caller stops once the box went unlooked for NotLookingAfter,
	// not at AnswerWait (a minute).
	c, err = anywhere.Dial(ctx, req)
	if err == nil {
		c.Close(nil)
	}
	if !errors.Is(err, anywhere.ErrNotLooking) {
		t.Errorf("a call while the device stopped looking: %v, want ErrNotLooking before AnswerWait", err)
	}
	if n := look(); n != 1 {
		t.Errorf("%d calls put for a device that looked, want 1", n)
	}
}

// A receiver killed while the relay held its wait for calls (as it
// nearly always is) drops that wait: its system closes the connection,
// which the relay sees at once and says (Unwatched.Dropped). A live
// receiver drops a wait only to wait again at once, so a call box whose
// wait was dropped DroppedLookingAfter ago is not called, long before
// NotLookingAfter (a minute here); a look after it, and it is again.
func TestDroppedWaitIsNotLooking(t *testing.T) {
	l := newLonePresence(t, 13)
	l.present(anywhere.NewInstance())
	ctx := t.Context()
	req := anywhere.DialRequest{Relay: l.relay, Secret: l.s, Self: l.a.ID, Peer: l.b.ID, NotLookingAfter: time.Minute}
	box := anywhere.CallName(l.s, l.b.ID, l.now)
	wctx, kill := context.WithCancel(ctx)
	dropped := make(chan struct{})
	receiver := anywhere.NewMailbox(l.relay, "")
	defer receiver.Close()
	go func() {
		receiver.Wait(wctx, anywhere.CallNames(l.s, l.b.ID, l.now))
		close(dropped)
	}()
	testutil.WaitFor(t, "the receiver's wait held", func() bool {
		_, u, err := l.mb.GetUnwatched(ctx, []string{box})
		return err == nil && len(u) == 1 && u[0].For == 0
	})
	kill()
	<-dropped
	began := time.Now()
	testutil.WaitFor(t, "the relay to say the device stopped looking", func() bool {
		return errors.Is(anywhere.Lookup(ctx, req), anywhere.ErrNotLooking)
	})
	var nl *anywhere.NotLookingError
	if err := anywhere.Lookup(ctx, req); !errors.As(err, &nl) || nl.For < anywhere.DroppedLookingAfter || time.Since(began) >= time.Minute {
		t.Fatalf("after a dropped wait: %v", err)
	}
	l.calls() // a look: the receiver back
	if err := anywhere.Lookup(ctx, req); err != nil {
		t.Errorf("after a look: %v", err)
	}
}

// lonePresence is a relay on loopback holding b's presence for a, with no
// receiver behind it: present puts the presence at now, as b's receiver
// does, and calls takes the calls put for b since the last look (itself a
// look at b's call boxes, as the receiver's).
type lonePresence struct {
	relay string
	a, b  *identity.Identity
	s     rendezvous.Secret
	now   time.Time
	mb    *anywhere.Mailbox
	t     *testing.T
}

func newLonePresence(t *testing.T, secret byte) *lonePresence {
	t.Helper()
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	l := &lonePresence{relay: r.Addr().String(), a: ident(t), b: ident(t), now: time.Now(), t: t}
	l.s[0] = secret
	l.mb = anywhere.NewMailbox(l.relay, "")
	t.Cleanup(l.mb.Close)
	return l
}

// present puts a presence of run instance at l.now.
func (l *lonePresence) present(instance string) {
	l.t.Helper()
	name := anywhere.PresenceName(l.s, l.b.ID, l.now)
	blob, err := anywhere.Seal(l.s, name, anywhere.Message{Kind: anywhere.KindPresence, From: l.b.ID.String(), To: l.a.ID.String(), At: l.now.Unix(), Instance: instance})
	if err != nil {
		l.t.Fatal(err)
	}
	if err := l.mb.Put(l.t.Context(), name, blob); err != nil {
		l.t.Fatal(err)
	}
}

// calls takes the calls put for b since the last look, and counts them.
func (l *lonePresence) calls() int {
	l.t.Helper()
	got, err := l.mb.Take(l.t.Context(), anywhere.CallNames(l.s, l.b.ID, l.now))
	if err != nil {
		l.t.Fatal(err)
	}
	n := 0
	for _, blobs := range got {
		n += len(blobs)
	}
	return n
}
