package engine

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// pairEvents collects the sender's EventPair of transfer id until its
// result.
func pairEvents(t *testing.T, events <-chan Event, id string) []PairInfo {
	t.Helper()
	var got []PairInfo
	timeout := time.After(time.Minute)
	for {
		select {
		case ev := <-events:
			if ev.TransferID != id {
				continue
			}
			switch ev.Kind {
			case EventPair:
				got = append(got, *ev.Pair)
			case EventResult:
				return got
			}
		case <-timeout:
			t.Fatal("the send did not end")
		}
	}
}

// TestCodeShownOnlyWhenTheReceiverAsked: the sender's code is offered for
// comparison only when the receiver showed it to its user. A receiver that
// accepts without asking ("accept all") says it showed nothing
// (CodeShownNo), and ConfirmPair refuses to trust through that code; an
// older receiver, whose hello does not list FeatureCodeShown, cannot say
// (CodeShownUnknown) and the code can still be confirmed. Before, the
// sender's row asked "Check that B shows the same code" with a Codes match
// button that trusted B, for a code B never showed.
func TestCodeShownOnlyWhenTheReceiverAsked(t *testing.T) {
	for _, c := range []struct {
		name    string
		accept  AcceptPolicy
		older   bool
		want    CodeShown
		confirm error
	}{
		{"asks", AcceptAsk, false, CodeShownYes, nil},
		{"accepts all", AcceptAll, false, CodeShownNo, ErrCodeNotShown},
		{"older Ferry", AcceptAll, true, CodeShownUnknown, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			recv := testEngine(t, Options{Accept: c.accept})
			if c.older {
				recv.features = slices.DeleteFunc(slices.Clone(features), func(f string) bool { return f == wire.FeatureCodeShown || f == wire.FeaturePrompt })
			}
			if err := recv.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			rx, unsub := recv.Subscribe(256)
			defer unsub()
			go func() {
				for ev := range rx {
					if ev.Kind == EventOffer && ev.Direction == Receiving && ev.State == StateWaiting {
						recv.Decide(ev.TransferID, Decision{Accept: true})
					}
				}
			}()
			send := testEngine(t, Options{})
			tx, unsub2 := send.Subscribe(256)
			defer unsub2()
			src := filepath.Join(t.TempDir(), "a.txt")
			writeFile(t, src, 100)
			tr, err := send.Send(t.Context(), target(recv), []string{src}, SendOptions{Transport: "tcp"})
			if err != nil {
				t.Fatal(err)
			}
			got := pairEvents(t, tx, tr.ID())
			first := CodeShownWaiting // the receiver's client never says it shows the offer
			if c.older {
				first = CodeShownPending
			}
			if len(got) != 2 || got[0].Shown != first || got[1].Shown != c.want || got[0].Code != got[1].Code {
				t.Fatalf("sender's pair events %+v, want the code %q, then %q", got, first, c.want)
			}
			if r := tr.Result(); r.State != StateDone {
				t.Fatalf("%s %q", r.State, r.Err)
			}
			if err := send.ConfirmPair(tr.ID(), true); !errors.Is(err, c.confirm) {
				t.Fatalf("ConfirmPair: %v, want %v", err, c.confirm)
			}
			if trusted := trusts(send, recv.ID()); trusted != (c.confirm == nil) {
				t.Fatalf("receiver trusted: %v", trusted)
			}
		})
	}
}

// TestContinuedSessionCodeIsNotShown is the walkthrough's case: the
// receiver's user accepted the first session, whose code the prompt
// showed; the delivery's next session (a Retry, a resume) is accepted
// without asking, so its new code is on no screen there, and the sender
// may not trust through it.
func TestContinuedSessionCodeIsNotShown(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{ProgressInterval: 2 * time.Millisecond})
	rx, unsub := recv.Subscribe(4096)
	defer unsub()
	var prompts atomic.Int32
	go func() {
		for ev := range rx {
			if ev.Kind == EventOffer && ev.Direction == Receiving && ev.State == StateWaiting {
				prompts.Add(1)
				recv.Decide(ev.TransferID, Decision{Accept: true})
			}
		}
	}()
	const size = 64 << 20
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, size)
	tx, unsub2 := send.Subscribe(4096)
	defer unsub2()
	tr, err := send.Send(context.Background(), target(recv), []string{big}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	var first []PairInfo
	for ev := range tx {
		if ev.TransferID != tr.ID() {
			continue
		}
		if ev.Kind == EventPair {
			first = append(first, *ev.Pair)
		}
		if ev.Kind == EventProgress && ev.Progress.Bytes > size/4 {
			if err := send.Pause(tr.ID()); err != nil {
				t.Fatal(err)
			}
			break
		}
		if ev.Kind == EventResult {
			t.Fatal("finished before it could be paused")
		}
	}
	if len(first) != 2 || first[1].Shown != CodeShownYes {
		t.Fatalf("first session's pair events %+v, want the code shown", first)
	}
	for ev := range tx {
		if ev.TransferID == tr.ID() && ev.Kind == EventState && ev.State == StatePaused {
			break
		}
	}
	testutil.WaitFor(t, "the receiver to keep the paused transfer", func() bool { return len(recv.Partials()) == 1 })
	if err := send.Resume(tr.ID()); err != nil {
		t.Fatal(err)
	}
	second := pairEvents(t, tx, tr.ID())
	if len(second) != 2 || second[1].Shown != CodeShownNo || second[1].Code == first[1].Code {
		t.Fatalf("second session's pair events %+v (first %+v, %d prompts), want a new code not shown", second, first, prompts.Load())
	}
	if r := tr.Result(); r.State != StateDone {
		t.Fatalf("%s %q", r.State, r.Err)
	}
	if err := send.ConfirmPair(tr.ID(), true); !errors.Is(err, ErrCodeNotShown) {
		t.Fatalf("ConfirmPair of the code the receiver did not show: %v", err)
	}
	if trusts(send, recv.ID()) {
		t.Fatal("the receiver was trusted through a code it never showed")
	}
}

// TestQueuedThenDeclinedOfferSaysNoCodeShown: the engine marks a session's
// code shown as it publishes the offer (untrustedCode), before any client
// drew it. A client with an offer on screen keeps the next in a queue (the
// app's prompts, ferry-cli's one question at a time) and may decline it,
// or let it expire, without ever showing it. Its sender must not read
// "shown" from that: only an accepting decision carries the word, and the
// offer on screen, accepted, still says it was shown.
func TestQueuedThenDeclinedOfferSaysNoCodeShown(t *testing.T) {
	recv, rx, src := askingReceiver(t, 0)
	// offer sends from a device of its own, and returns its offer as the
	// receiver's client gets it.
	offer := func() (*Transfer, <-chan Event, Event) {
		t.Helper()
		send := testEngine(t, Options{})
		tx, unsub := send.Subscribe(256)
		t.Cleanup(unsub)
		tr, err := send.Send(t.Context(), target(recv), []string{src}, SendOptions{Transport: "tcp"})
		if err != nil {
			t.Fatal(err)
		}
		for timeout := time.After(time.Minute); ; {
			select {
			case ev := <-rx:
				if ev.Kind == EventOffer && ev.Direction == Receiving && ev.State == StateWaiting {
					if ev.Offer.PairCode == "" {
						t.Fatal("the offer of a sender not trusted carries no code")
					}
					return tr, tx, ev
				}
			case <-timeout:
				t.Fatal("no offer")
			}
		}
	}
	shownTr, shownTx, shown := offer() // on screen
	for _, d := range []Decision{
		{Reason: "declined"},
		{Expired: true, Reason: "the offer was not answered in time"},
	} {
		tr, tx, queued := offer() // behind it, never shown
		if err := recv.Decide(queued.TransferID, d); err != nil {
			t.Fatal(err)
		}
		got := pairEvents(t, tx, tr.ID())
		if len(got) != 1 || got[0].Shown != CodeShownWaiting {
			t.Fatalf("the sender of an offer declined unseen (%q): pair events %+v, want only the code waiting", d.Reason, got)
		}
		if r := tr.Result(); r.State == StateDone {
			t.Fatalf("%s %q", r.State, r.Err)
		}
	}
	if err := recv.Decide(shown.TransferID, Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	if got := pairEvents(t, shownTx, shownTr.ID()); len(got) != 2 || got[1].Shown != CodeShownYes {
		t.Fatalf("the sender of the offer on screen: pair events %+v, want the code shown", got)
	}
}

// nextPair waits for the sender's next EventPair of transfer id.
func nextPair(t *testing.T, events <-chan Event, id string) PairInfo {
	t.Helper()
	for timeout := time.After(time.Minute); ; {
		select {
		case ev := <-events:
			if ev.TransferID == id && ev.Kind == EventPair {
				return *ev.Pair
			}
			if ev.TransferID == id && ev.Kind == EventResult {
				t.Fatalf("the send ended (%s %q) before its next code event", ev.Result.State, ev.Result.Err)
			}
		case <-timeout:
			t.Fatal("no code event")
		}
	}
}

// askingReceiver starts a receiver that asks about every offer, showing
// maxPrompts prompts at once (Options.MaxPrompts: 0 is its default),
// subscribed to its events, and writes a small file to send it.
func askingReceiver(t *testing.T, maxPrompts int) (recv *Engine, rx <-chan Event, src string) {
	t.Helper()
	recv = startReceiver(t, Options{Accept: AcceptAsk, MaxPrompts: maxPrompts})
	rx, unsub := recv.Subscribe(256)
	t.Cleanup(unsub)
	src = filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, src, 100)
	return recv, rx, src
}

// sendWaiting starts a sender of src to recv, subscribed to its events,
// and reads its first code event, which must say that it waits for the
// receiver to show the offer.
func sendWaiting(t *testing.T, recv *Engine, src string) (*Engine, *Transfer, <-chan Event) {
	t.Helper()
	e := testEngine(t, Options{})
	tx, unsub := e.Subscribe(256)
	t.Cleanup(unsub)
	tr, err := e.Send(t.Context(), target(recv), []string{src}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	if p := nextPair(t, tx, tr.ID()); p.Shown != CodeShownWaiting {
		t.Fatalf("the sender's first code event %+v, want it waiting", p)
	}
	return e, tr, tx
}

// TestQueuedOfferIsComparedOnlyOnceShown: the receiver's client shows one
// prompt at a time (the app's prompts, ferry-cli's one question at a time),
// so an offer queued behind another device's has its code on no screen
// there. Its sender said "compare the codes" all the same, with Codes match
// on the row, while the receiver's user could not see the code. Now the
// receiver says where the offer stands (OfferOnScreen, wire.Prompt): the
// sender's code waits (CodeShownWaiting), is queued (CodeShownQueued)
// behind the offer on screen, and is to be compared
// (CodeShownPending) once the receiver's client shows it.
func TestQueuedOfferIsComparedOnlyOnceShown(t *testing.T) {
	recv, rx, src := askingReceiver(t, 0)
	// offer sends from a device of its own and returns its offer as the
	// receiver's client gets it, which shows it or queues it.
	offer := func(shown bool) (*Engine, *Transfer, <-chan Event, string) {
		t.Helper()
		send, tr, tx := sendWaiting(t, recv, src)
		id := nextWaitingOffer(t, rx)
		if err := recv.OfferOnScreen(id, shown); err != nil {
			t.Fatal(err)
		}
		return send, tr, tx, id
	}
	_, firstTr, firstTx, first := offer(true)
	if p := nextPair(t, firstTx, firstTr.ID()); p.Shown != CodeShownPending {
		t.Fatalf("the sender of the offer on screen: %+v, want its code to be compared", p)
	}
	send, tr, tx, queued := offer(false)
	if p := nextPair(t, tx, tr.ID()); p.Shown != CodeShownQueued {
		t.Fatalf("the sender of the queued offer: %+v, want it queued", p)
	}
	if err := recv.Decide(first, Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	if err := recv.OfferOnScreen(queued, true); err != nil { // its turn
		t.Fatal(err)
	}
	if p := nextPair(t, tx, tr.ID()); p.Shown != CodeShownPending {
		t.Fatalf("the queued offer, shown: %+v, want its code to be compared", p)
	}
	if err := recv.Decide(queued, Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	if p := nextPair(t, tx, tr.ID()); p.Shown != CodeShownYes {
		t.Fatalf("the queued offer, accepted: %+v, want the code shown", p)
	}
	<-tr.Done()
	if r := tr.Result(); r.State != StateDone {
		t.Fatalf("%s %q", r.State, r.Err)
	}
	if err := send.ConfirmPair(tr.ID(), true); err != nil {
		t.Fatal(err)
	}
}

// TestOfferOnScreenWithAnOlderPeer: the prompt's word is optional both
// ways. An older sender (no wire.FeaturePrompt) is told nothing, and asks
// to compare as before; an older receiver says nothing, and its sender
// asks to compare while it decides, as before.
func TestOfferOnScreenWithAnOlderPeer(t *testing.T) {
	older := slices.DeleteFunc(slices.Clone(features), func(f string) bool { return f == wire.FeaturePrompt })
	for _, c := range []struct {
		name          string
		olderReceiver bool
		olderSender   bool
	}{
		{"older sender", false, true},
		{"older receiver", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			recv := testEngine(t, Options{Accept: AcceptAsk})
			if c.olderReceiver {
				recv.features = older
			}
			if err := recv.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			rx, unsub := recv.Subscribe(256)
			defer unsub()
			go func() {
				for ev := range rx {
					if ev.Kind == EventOffer && ev.Direction == Receiving && ev.State == StateWaiting {
						recv.OfferOnScreen(ev.TransferID, false) // queued, then accepted from its notification
						recv.Decide(ev.TransferID, Decision{Accept: true})
					}
				}
			}()
			send := testEngine(t, Options{})
			if c.olderSender {
				send.features = older
			}
			tx, unsub2 := send.Subscribe(256)
			defer unsub2()
			src := filepath.Join(t.TempDir(), "a.txt")
			writeFile(t, src, 100)
			tr, err := send.Send(t.Context(), target(recv), []string{src}, SendOptions{Transport: "tcp"})
			if err != nil {
				t.Fatal(err)
			}
			got := pairEvents(t, tx, tr.ID())
			if len(got) != 2 || got[0].Shown != CodeShownPending || got[1].Shown != CodeShownYes {
				t.Fatalf("sender's pair events %+v, want the code pending, then shown", got)
			}
			if r := tr.Result(); r.State != StateDone {
				t.Fatalf("%s %q", r.State, r.Err)
			}
		})
	}
}

// TestShownCodesWithoutAPrompt: a receiver whose client shows every code
// as it is announced (ferry-cli receive --pair, Options.ShowsCodes) shows
// it even when it accepts without asking (accept all). Its sender, told
// that the code is shown, asks its user to compare it, and may trust
// through it; it could only by answering before the decision came, which
// said the code was not shown.
func TestShownCodesWithoutAPrompt(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAll, ShowsCodes: true})
	send := testEngine(t, Options{})
	tx, unsub := send.Subscribe(256)
	defer unsub()
	src := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, src, 100)
	tr, err := send.Send(t.Context(), target(recv), []string{src}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	got := pairEvents(t, tx, tr.ID())
	var shown []CodeShown
	for _, p := range got {
		shown = append(shown, p.Shown)
	}
	if want := []CodeShown{CodeShownWaiting, CodeShownPending, CodeShownYes}; !slices.Equal(shown, want) {
		t.Fatalf("sender's pair events %q, want %q", shown, want)
	}
	<-tr.Done()
	if err := send.ConfirmPair(tr.ID(), true); err != nil {
		t.Fatal(err)
	}
	if !trusts(send, recv.ID()) {
		t.Fatal("the receiver is not trusted")
	}
}

// TestCodeIsConfirmedOnlyOnceShown: the app's row and ferry-cli send --pair
// ask to compare a code only once the receiver says its screen shows it,
// but ConfirmPair took a match before then (through the API, a client
// that answers at once) and trusted the receiver through a code nobody
// there could have seen. It is refused while the receiver's client has
// not shown the offer, and while it keeps it queued, and taken once shown.
func TestCodeIsConfirmedOnlyOnceShown(t *testing.T) {
	recv, rx, src := askingReceiver(t, 0)
	send, tr, tx := sendWaiting(t, recv, src)
	if err := send.ConfirmPair(tr.ID(), true); !errors.Is(err, ErrCodeNotShownYet) {
		t.Fatalf("ConfirmPair before the receiver's screen showed the offer: %v, want %v", err, ErrCodeNotShownYet)
	}
	offer := nextWaitingOffer(t, rx)
	if err := recv.OfferOnScreen(offer, false); err != nil {
		t.Fatal(err)
	}
	if p := nextPair(t, tx, tr.ID()); p.Shown != CodeShownQueued {
		t.Fatalf("the queued offer: %+v, want it queued", p)
	}
	if err := send.ConfirmPair(tr.ID(), true); !errors.Is(err, ErrCodeNotShownYet) {
		t.Fatalf("ConfirmPair while the receiver keeps the offer queued: %v, want %v", err, ErrCodeNotShownYet)
	}
	if trusts(send, recv.ID()) {
		t.Fatal("the receiver was trusted through a code its screen did not show")
	}
	if err := recv.OfferOnScreen(offer, true); err != nil {
		t.Fatal(err)
	}
	if p := nextPair(t, tx, tr.ID()); p.Shown != CodeShownPending {
		t.Fatalf("the offer, shown: %+v, want its code to be compared", p)
	}
	if err := send.ConfirmPair(tr.ID(), true); err != nil {
		t.Fatalf("ConfirmPair once shown: %v", err)
	}
	if err := recv.Decide(offer, Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if r := tr.Result(); r.State != StateDone {
		t.Fatalf("%s %q", r.State, r.Err)
	}
	if !trusts(send, recv.ID()) {
		t.Fatal("the receiver is not trusted")
	}
}

// TestOfferQueuedByTheReceiverSaysSo: a receiver shows at most
// Options.MaxPrompts offers at once (8) and queues the next ones itself,
// before its client hears of them (no EventOffer), so the client cannot
// say where they stand: their senders' rows said "Waiting for Alice to
// show your offer…" for as long as the queue held them. The receiver now
// tells them (wire.Prompt with Ahead): queued, behind so many offers; once
// its turn comes, its client says it is shown.
func TestOfferQueuedByTheReceiverSaysSo(t *testing.T) {
	recv, rx, src := askingReceiver(t, 1)
	nextOffer := func() string { t.Helper(); return nextWaitingOffer(t, rx) }
	send := func() (*Engine, *Transfer, <-chan Event) { t.Helper(); return sendWaiting(t, recv, src) }
	_, firstTr, _ := send()
	first := nextOffer()
	if err := recv.OfferOnScreen(first, true); err != nil {
		t.Fatal(err)
	}
	second, tr, tx := send()
	if p := nextPair(t, tx, tr.ID()); p.Shown != CodeShownQueued || p.Ahead != 1 {
		t.Fatalf("the offer the receiver queued itself: %+v, want it queued behind 1", p)
	}
	if shown, queued := recv.admit.Prompts(); shown != 1 || queued != 1 {
		t.Fatalf("the receiver shows %d prompts and queues %d offers, want 1 and 1", shown, queued)
	}
	if err := second.ConfirmPair(tr.ID(), true); !errors.Is(err, ErrCodeNotShownYet) {
		t.Fatalf("ConfirmPair of the queued offer's code: %v", err)
	}
	if err := recv.Decide(first, Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	<-firstTr.Done()
	queued := nextOffer() // its turn: the client hears of it, and shows it
	if err := recv.OfferOnScreen(queued, true); err != nil {
		t.Fatal(err)
	}
	if p := nextPair(t, tx, tr.ID()); p.Shown != CodeShownPending || p.Ahead != 0 {
		t.Fatalf("the queued offer, shown: %+v, want its code to be compared", p)
	}
	if err := recv.Decide(queued, Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	if r := tr.Result(); r.State != StateDone {
		t.Fatalf("%s %q", r.State, r.Err)
	}
}

// TestQueuedOfferHearsItsPlaceMove: an offer the receiver queues itself
// (MaxPrompts are shown) was told its place once, as it queued ("behind 3
// other offers"), and never again: its sender's row and ferry-cli kept
// saying it was behind 3 while the offers before it were answered or
// withdrawn, until its prompt was shown. Each move of its place is told
// now, once: behind 3, 2 (one before it was withdrawn by its sender),
// then 1 (the prompt shown was answered, the next took its place).
func TestQueuedOfferHearsItsPlaceMove(t *testing.T) {
	recv, rx, src := askingReceiver(t, 1)
	nextOffer := func() string { t.Helper(); return nextWaitingOffer(t, rx) }
	type sending struct {
		e  *Engine
		tr *Transfer
		tx <-chan Event
	}
	send := func(ahead int) sending {
		t.Helper()
		e, tr, tx := sendWaiting(t, recv, src)
		if ahead > 0 {
			if p := nextPair(t, tx, tr.ID()); p.Shown != CodeShownQueued || p.Ahead != ahead {
				t.Fatalf("queued: %+v, want it behind %d", p, ahead)
			}
		}
		return sending{e, tr, tx}
	}
	first := send(0)
	shown := nextOffer()
	if err := recv.OfferOnScreen(shown, true); err != nil {
		t.Fatal(err)
	}
	second, withdrawn, last := send(1), send(2), send(3)
	if err := withdrawn.e.Cancel(withdrawn.tr.ID()); err != nil {
		t.Fatal(err)
	}
	<-withdrawn.tr.Done()
	if p := nextPair(t, last.tx, last.tr.ID()); p.Shown != CodeShownQueued || p.Ahead != 2 {
		t.Fatalf("an offer before it withdrawn: %+v, want it behind 2", p)
	}
	if err := recv.Decide(shown, Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	<-first.tr.Done()
	if p := nextPair(t, last.tx, last.tr.ID()); p.Shown != CodeShownQueued || p.Ahead != 1 {
		t.Fatalf("the prompt shown answered: %+v, want it behind 1", p)
	}
	if shown, queued := recv.admit.Prompts(); shown != 1 || queued != 1 {
		t.Fatalf("the receiver shows %d prompts and queues %d offers, want 1 and 1", shown, queued)
	}
	next := nextOffer() // the second's turn
	if err := recv.Decide(next, Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	<-second.tr.Done()
	if err := recv.OfferOnScreen(nextOffer(), true); err != nil {
		t.Fatal(err)
	}
	if p := nextPair(t, last.tx, last.tr.ID()); p.Shown != CodeShownPending {
		t.Fatalf("its turn: %+v, want its code to be compared", p)
	}
}

// A sender of a build before wire.FeaturePromptMoves is told its offer's
// place in the receiver's queue once, as it queues, not as it moves up:
// such a build counts every Prompt about an offer and ended the session at
// the ninth (a queue moving up eight times). A sender that takes the moves
// is told each.
func TestOlderSenderIsToldItsPlaceOnce(t *testing.T) {
	for _, moves := range []bool{false, true} {
		tr := &Transfer{onScreen: make(chan screenWord, 1)}
		tr.moves.Store(moves)
		e := testEngine(t, Options{})
		client, unsub := e.Subscribe(16)
		h := inboxHost{e: e, t: tr}
		h.Queued(3)
		if w := <-tr.onScreen; w.ahead != 3 {
			t.Fatalf("queued: told %+v, want behind 3", w)
		}
		h.Queued(2)
		h.Queued(1)
		select {
		case w := <-tr.onScreen:
			if !moves || w.ahead != 1 {
				t.Errorf("sender taking moves %v: told %+v after its place", moves, w)
			}
		default:
			if moves {
				t.Error("a sender taking moves was not told it moved up")
			}
		}
		// Its client is told once that it waits (TestQueuedOfferIsToldToTheClient).
		unsub()
		queued := 0
		for ev := range client {
			if ev.Kind == EventQueued {
				queued++
			}
		}
		if queued != 1 {
			t.Errorf("sender taking moves %v: the client was told %d times that the offer waits, want once", moves, queued)
		}
	}
}

// nextWaitingOffer waits up to a minute for the next offer a receiver's
// client is asked to answer (an offer event, waiting) and returns its ID.
func nextWaitingOffer(t *testing.T, rx <-chan Event) string {
	t.Helper()
	for timeout := time.After(time.Minute); ; {
		select {
		case ev := <-rx:
			if ev.Kind == EventOffer && ev.Direction == Receiving && ev.State == StateWaiting {
				return ev.TransferID
			}
		case <-timeout:
			t.Fatal("no offer")
		}
	}
}
