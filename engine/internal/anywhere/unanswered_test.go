package anywhere_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/anywhere"
	"github.com/ferrydrop/ferry/engine/internal/rendezvous"
	"github.com/ferrydrop/ferry/engine/relay"
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
	r, err := relay.Start(relay.Config{Listen: "127.0.0.1:0", AllowLoopbackPeers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	relayAddr := r.Addr().String()
	a, b := ident(t), ident(t)
	var s rendezvous.Secret
	s[0] = 11
	now := time.Now()
	clock := func() time.Time { return now }
	mb := anywhere.NewMailbox(relayAddr, "")
	defer mb.Close()
	ctx := t.Context()
	// present puts a presence of run instance at the time of the clock,
	// as a receiver does, with no receiver behind it to answer.
	present := func(instance string) {
		t.Helper()
		name := anywhere.PresenceName(s, b.ID, now)
		blob, err := anywhere.Seal(s, name, anywhere.Message{Kind: anywhere.KindPresence, From: b.ID.String(), To: a.ID.String(), At: now.Unix(), Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		if err := mb.Put(ctx, name, blob); err != nil {
			t.Fatal(err)
		}
	}
	// calls takes the calls put for the device since the last look.
	calls := func() int {
		t.Helper()
		got, err := mb.Take(ctx, anywhere.CallNames(s, b.ID, now))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, blobs := range got {
			n += len(blobs)
		}
		return n
	}
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
	now = now.Add(30 * time.Second) // the run puts its presence again: it lives
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
