package core

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// grant is what one queued take got.
type grant struct {
	src     string
	release func()
	refused bool
}

// queueTake starts a take for src and waits until it is queued (or done).
func queueTake(t *testing.T, pp *promptPlaces, src string, got chan<- grant) {
	t.Helper()
	before := pp.queued()
	done := make(chan struct{})
	go func() {
		r, refused := pp.take(t.Context(), src, nil)
		close(done)
		got <- grant{src, r, refused != nil}
	}()
	testutil.WaitFor(t, "the queue", func() bool {
		select {
		case <-done:
			return true
		default:
			return pp.queued() > before
		}
	})
}

// Issue #27 (3): when a prompt's place frees, the queued offer of the
// address that got a place least lately takes it: a real sender that
// queues behind a running flood gets the next place, not the place after
// every queued flood offer; and nobody's prompt is taken away meanwhile.
func TestPromptPlacesRoundRobin(t *testing.T) {
	pp := newPromptPlaces(1, 2)
	first, refused := pp.take(t.Context(), "a", nil)
	if refused != nil {
		t.Fatal(refused)
	}
	got := make(chan grant, 64)
	const sources = 8
	for i := range 2 * sources {
		queueTake(t, pp, fmt.Sprintf("flood%d", i%sources), got)
	}
	first()
	// The user answers the flood's prompts one by one: each address in turn.
	var shown grant
	seen := map[string]bool{}
	for range sources {
		shown = <-got
		if shown.refused || seen[shown.src] {
			t.Fatalf("prompt %+v: every flood address should get one before any gets a second", shown)
		}
		seen[shown.src] = true
		if len(seen) < sources {
			shown.release()
		}
	}
	queueTake(t, pp, "real", got)
	if pp.shown() != 1 {
		t.Fatalf("%d prompts shown, want 1 (the real offer waits, it takes nothing)", pp.shown())
	}
	shown.release()
	if next := <-got; next.src != "real" || next.refused {
		t.Fatalf("the place after the real sender queued went to %+v, want the real sender", next)
	} else {
		next.release()
	}
	for range sources {
		if g := <-got; !g.refused {
			g.release()
		}
	}
	if pp.shown() != 0 || pp.queued() != 0 || len(pp.held) != 0 || len(pp.lastGrant) != 0 {
		t.Errorf("left: %d shown, %d queued, %d addresses held, %d remembered", pp.shown(), pp.queued(), len(pp.held), len(pp.lastGrant))
	}
}

// A flood that fills the queue from many addresses loses its own oldest
// queued offer to a newcomer from another address (refused as busy),
// never a prompt on screen; an address shows MaxPromptsPerSource at most.
func TestPromptQueueShared(t *testing.T) {
	pp := newPromptPlaces(2, 2)
	var releases []func()
	for _, src := range []string{"shown", "shown"} {
		r, refused := pp.take(t.Context(), src, nil)
		if refused != nil {
			t.Fatal(refused)
		}
		releases = append(releases, r)
	}
	if _, refused := pp.take(t.Context(), "shown", nil); refused == nil {
		t.Fatal("an address got a third prompt")
	}
	got := make(chan grant, 64)
	for i := range MaxQueuedPrompts {
		queueTake(t, pp, fmt.Sprintf("flood%d", i/MaxQueuedPromptsPerSource), got)
	}
	go func() { // it queues in the place of another, so the queue does not grow
		r, refused := pp.take(t.Context(), "real", nil)
		got <- grant{"real", r, refused != nil}
	}()
	if lost := <-got; !lost.refused || lost.src != "flood0" {
		t.Fatalf("the newcomer displaced %+v, want flood0's oldest queued offer", lost)
	}
	testutil.WaitFor(t, "the queue", func() bool { return pp.queued() == MaxQueuedPrompts })
	if pp.shown() != 2 {
		t.Fatalf("%d prompts shown, want 2", pp.shown())
	}
	for _, r := range releases {
		r()
	}
	for range MaxQueuedPrompts {
		if g := <-got; !g.refused {
			g.release()
		}
	}
}

// An offer that waits for a place says so, once, with how many offers wait
// for the user before it (the prompts shown and the offers queued before
// it), so that its sender can be told; one that gets a place at once says
// nothing.
func TestPromptQueueSaysHowManyAreAhead(t *testing.T) {
	pp := newPromptPlaces(2, 4)
	var said []int
	queued := func(ahead int) { said = append(said, ahead) }
	for range 2 {
		if _, refused := pp.take(t.Context(), "a", queued); refused != nil {
			t.Fatal(refused)
		}
	}
	if len(said) != 0 {
		t.Fatalf("offers given a place at once said they were queued: %v", said)
	}
	aheads := make(chan int, 2)
	for i := range 2 {
		before := pp.queued()
		go pp.take(t.Context(), fmt.Sprint("q", i), func(ahead int) { aheads <- ahead })
		if got, want := <-aheads, 2+i; got != want {
			t.Fatalf("queued offer %d: %d ahead, want %d", i, got, want)
		}
		testutil.WaitFor(t, "the queue", func() bool { return pp.queued() > before })
	}
}

// A queued offer was told its place once, as it queued, and never again:
// its sender kept reading "behind 12" while the offers before it were
// answered or withdrawn. Now each move up is told, once, and nothing once
// it has a place; a place that grows (a newcomer the queue puts first) is
// not told, so that what is told only ever falls.
func TestPromptQueueSaysWhenItMovesUp(t *testing.T) {
	pp := newPromptPlaces(1, 2)
	shown, refused := pp.take(t.Context(), "shown", nil)
	if refused != nil {
		t.Fatal(refused)
	}
	type waiter struct {
		said    chan int
		granted chan func()
		cancel  func()
	}
	queue := func(src string) *waiter {
		t.Helper()
		w := &waiter{said: make(chan int, 64), granted: make(chan func(), 1)}
		ctx, cancel := context.WithCancel(t.Context())
		w.cancel = cancel
		before := pp.queued()
		go func() {
			r, refused := pp.take(ctx, src, func(ahead int) { w.said <- ahead })
			if refused == nil {
				w.granted <- r
			}
			close(w.said)
		}()
		testutil.WaitFor(t, "the queue", func() bool { return pp.queued() > before })
		return w
	}
	next := func(w *waiter, want int) {
		t.Helper()
		select {
		case got := <-w.said:
			if got != want {
				t.Fatalf("told %d ahead, want %d", got, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("not told it moved up to %d ahead", want)
		}
	}
	silent := func(w *waiter) {
		t.Helper()
		select {
		case got, ok := <-w.said:
			if ok {
				t.Fatalf("told %d ahead, want nothing", got)
			}
		default:
		}
	}
	var ws []*waiter
	for i := range 12 {
		w := queue(fmt.Sprint("q", i))
		next(w, 1+i)
		ws = append(ws, w)
	}
	last := ws[11]
	ws[5].cancel() // its sender went away
	next(last, 11)
	for i := range 5 {
		silent(ws[i])
	}
	next(ws[6], 6)
	shown() // the user answered: q0 is shown
	release := <-ws[0].granted
	if _, more := <-ws[0].said; more {
		t.Fatal("an offer given its place was told where it queued")
	}
	next(last, 10)
	next(ws[1], 1)
	release()
	next(last, 9)
	for _, w := range ws[2:] {
		w.cancel()
	}
	(<-ws[1].granted)()
	for _, w := range ws[2:] {
		for range w.said {
		}
		select {
		case r := <-w.granted: // given the place before it saw its end
			r()
		default:
		}
	}

	// A place that grows is not told: an offer from the address on screen
	// comes after a newcomer's, which the queue puts first.
	shown, refused = pp.take(t.Context(), "shown", nil)
	if refused != nil {
		t.Fatal(refused)
	}
	same := queue("shown")
	next(same, 1)
	fresh := queue("fresh")
	next(fresh, 1)
	silent(same)
	shown()
	(<-fresh.granted)()
	(<-same.granted)()
	if _, more := <-same.said; more {
		t.Fatal("an offer whose place only grew, then was given, was told so")
	}
}
