package core

import (
	"context"
	"slices"
	"sync"

	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/internal/fair"
)

// Offers waiting for the user's answer (prompts) are never taken away from
// the address that raised them by a newcomer from another address (issue
// #27: a flood of prompts from 8 addresses evicted the real sender's,
// which was the oldest). A prompt is shown while fewer than
// Options.MaxPrompts are, and its address shows fewer than
// MaxPromptsPerSource (each device one: admission.prompting); otherwise
// the offer queues for a place. When one frees, the queued offer whose
// address shows the fewest prompts gets it, then the address that got a
// place least lately: a real sender gets the next place the user's answer
// frees, however many offers a flood queued before it. The queue
// itself is shared fairly by address (package fair), so a flood from many
// addresses cannot fill it against a newcomer either: it loses its own
// oldest queued offer (refused as busy), never a prompt on screen.
const (
	MaxQueuedPrompts          = 32
	MaxQueuedPromptsPerSource = 4
)

// promptPlaces hands out the places of prompts. It is safe for concurrent use.
type promptPlaces struct {
	total, perSource int
	queue            *fair.Slots // offers waiting for a place

	mu        sync.Mutex // guards the fields below
	held      map[string]int
	n         int               // places held in all
	waiters   []*placeWaiter    // oldest first
	lastGrant map[string]uint64 // when each address with a prompt or a queued offer last got a place
	seq       uint64
}

// placeWaiter is one queued offer.
type placeWaiter struct {
	src   string
	ready chan struct{} // closed when it got a place
	gone  chan struct{} // closed when a newcomer took its place in the queue
	// moved carries its place each time it moves up (the offers before
	// it, fewer than told before); the last one counts.
	moved     chan int
	told      int  // guarded by promptPlaces.mu: the place last told
	granted   bool // guarded by promptPlaces.mu
	displaced bool // guarded by promptPlaces.mu: a newcomer took its place in the queue
}

func newPromptPlaces(total, perSource int) *promptPlaces {
	return &promptPlaces{total: max(total, 1), perSource: perSource, held: map[string]int{}, lastGrant: map[string]uint64{},
		queue: fair.New(fair.Limits{Total: MaxQueuedPrompts, PerSource: MaxQueuedPromptsPerSource, Floor: 1})}
}

// take waits for a place for an offer from src, until ctx ends. It refuses
// the offer when src shows as many prompts as it may, or when its place in
// the queue went to a newcomer. queued, when not nil, is told if the offer
// waits in the queue, with how many offers wait for the user before it
// (the prompts shown and the offers queued that get a place before it),
// then again each time fewer do (an offer before it answered, withdrawn or
// displaced), never after its place is given: its sender can be told that
// its offer is not on screen, and where it stands. A place that grows (a
// newcomer the queue puts first, see grantLocked) is not told, so the
// calls are bounded by the first place told. release gives the place back.
func (pp *promptPlaces) take(ctx context.Context, src string, queued func(ahead int)) (release func(), refused *errcode.RemoteError) {
	release = func() { pp.release(src) }
	pp.mu.Lock()
	if pp.held[src] >= pp.perSource {
		pp.mu.Unlock()
		return nil, ErrReceiverBusy
	}
	if pp.n < pp.total && len(pp.waiters) == 0 {
		pp.held[src]++
		pp.n++
		pp.seq++
		pp.lastGrant[src] = pp.seq
		pp.mu.Unlock()
		return release, nil
	}
	pp.mu.Unlock()
	w := &placeWaiter{src: src, ready: make(chan struct{}), gone: make(chan struct{}), moved: make(chan int, 1)}
	slot := pp.queue.Take(src, func() {
		pp.mu.Lock()
		defer pp.mu.Unlock()
		w.displaced = true
		if !w.granted && pp.dropLocked(w) {
			close(w.gone)
		}
	})
	if slot == nil {
		return nil, ErrReceiverBusy
	}
	defer slot.Release()
	pp.mu.Lock()
	if w.displaced { // before it even joined the queue
		pp.mu.Unlock()
		return nil, ErrReceiverBusy
	}
	pp.waiters = append(pp.waiters, w)
	pp.grantLocked()
	waits := !w.granted
	if waits {
		w.told = pp.aheadLocked(w)
	}
	ahead := w.told
	pp.mu.Unlock()
	if !waits {
		return release, nil
	}
	if queued == nil {
		queued = func(int) {}
	}
	queued(ahead)
	for {
		select {
		case <-w.ready:
			return release, nil
		case ahead := <-w.moved:
			select {
			case <-w.ready: // given its place meanwhile: nothing more to tell
				return release, nil
			default:
				queued(ahead)
			}
		case <-w.gone:
			return nil, ErrReceiverBusy
		case <-ctx.Done():
			pp.mu.Lock()
			granted := w.granted
			pp.dropLocked(w)
			pp.mu.Unlock()
			if granted {
				pp.release(src)
			}
			return nil, ErrReceiverBusy
		}
	}
}

// aheadLocked is how many offers wait for the user before w: the prompts
// shown, and the queued offers grantLocked would give a place first (as
// it stands now).
func (pp *promptPlaces) aheadLocked(w *placeWaiter) int {
	ahead, older := pp.n, true
	for _, o := range pp.waiters {
		if o == w {
			older = false
			continue
		}
		if pp.before(o, w) || older && !pp.before(w, o) {
			ahead++
		}
	}
	return ahead
}

// before reports whether grantLocked gives queued offer a its place before
// b, whichever of them came first: a's address shows fewer prompts, or got
// a place less lately.
func (pp *promptPlaces) before(a, b *placeWaiter) bool {
	ha, hb := pp.held[a.src], pp.held[b.src]
	return ha < hb || ha == hb && pp.lastGrant[a.src] < pp.lastGrant[b.src]
}

// movedLocked tells each queued offer whose place moved up, once (see take).
func (pp *promptPlaces) movedLocked() {
	for _, w := range pp.waiters {
		if w.granted || w.displaced {
			continue
		}
		ahead := pp.aheadLocked(w)
		if ahead >= w.told {
			continue
		}
		w.told = ahead
		select { // the last place counts: one not yet told goes
		case <-w.moved:
		default:
		}
		w.moved <- ahead // its one reader takes from it outside the lock
	}
}

// release gives back a place of src and hands it on.
func (pp *promptPlaces) release(src string) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.held[src]--
	pp.n--
	pp.grantLocked()
	pp.forgetLocked(src)
	pp.movedLocked()
}

// grantLocked gives free places to queued offers: the one whose address
// shows the fewest prompts first, then the address that got a place least
// lately (one that never did first), the oldest among equals.
func (pp *promptPlaces) grantLocked() {
	for pp.n < pp.total {
		best := -1
		var bestHeld int
		var bestLast uint64
		for i, w := range pp.waiters {
			h, last := pp.held[w.src], pp.lastGrant[w.src]
			if h < pp.perSource && (best < 0 || h < bestHeld || h == bestHeld && last < bestLast) {
				best, bestHeld, bestLast = i, h, last
			}
		}
		if best < 0 {
			return
		}
		w := pp.waiters[best]
		pp.waiters = slices.Delete(pp.waiters, best, best+1)
		w.granted = true
		pp.held[w.src]++
		pp.n++
		pp.seq++
		pp.lastGrant[w.src] = pp.seq
		close(w.ready)
	}
}

// forgetLocked drops what is remembered of src once it shows no prompt
// and queues no offer, so that many addresses cannot grow the map.
func (pp *promptPlaces) forgetLocked(src string) {
	if pp.held[src] > 0 || slices.ContainsFunc(pp.waiters, func(w *placeWaiter) bool { return w.src == src }) {
		return
	}
	delete(pp.held, src)
	delete(pp.lastGrant, src)
}

// dropLocked takes w out of the queue; false if it was not in it.
func (pp *promptPlaces) dropLocked(w *placeWaiter) bool {
	i := slices.Index(pp.waiters, w)
	if i < 0 {
		return false
	}
	pp.waiters = slices.Delete(pp.waiters, i, i+1)
	pp.forgetLocked(w.src)
	pp.movedLocked()
	return true
}

// shown is the number of prompts shown now (tests).
func (pp *promptPlaces) shown() int {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.n
}

// queued is the number of offers waiting for a place (tests).
func (pp *promptPlaces) queued() int {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return len(pp.waiters)
}
