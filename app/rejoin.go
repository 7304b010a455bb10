package app

import (
	"sync"
	"time"

	"github.com/ferrydrop/ferry/ui"
	"github.com/ferrydrop/ferry/ui/transfer"
)

// rejoin sends the rest of a send whose receiver went away, once, when
// discovery sees that device again (issue 26: "Bob's laptop went away.
// Ferry will send the rest when it is back."). It is driven by the events
// the app already gets: a transfer's result marks the send as waiting for
// its device (by ID), the device's next appearance retries it as Retry does
// (the same delivery goes on), and the user's Cancel or Retry drops the
// wait. It arms no timer and polls nothing. The zero value is ready.
type rejoin struct {
	mu      sync.Mutex          // guards the fields below
	waiting map[string][]string // device ID -> sends waiting for it
	device  map[string]string   // waiting send -> its device ID
	done    map[string]bool     // sends already rejoined once
	order   []string            // done's sends, oldest first
}

// maxRejoined bounds the sends rejoin remembers as rejoined once: the
// engine's table keeps about as many transfers (Engine.register), and a
// send it forgot cannot be retried, so done needs no more; it grew by one
// for every send that waited for its device, for as long as the app ran.
const maxRejoined = 1000

// mark sets Rejoin on a send's failed result when it would be rejoined:
// an outgoing Ferry send (not a pairing) to a known device, not rejoined
// before. Whether it failed because the device went away is the transfer
// model's call: it keeps Rejoin only then (ended reads its verdict).
func (r *rejoin) mark(ev *ui.TransferEvent) {
	if ev.Kind != ui.TransferResult || ev.Result == nil || ev.Direction != ui.Outgoing ||
		ev.Pairing || ev.Peer.ID == "" || ev.Result.State != ui.StateFailed {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.Result.Rejoin = !r.done[ev.ID]
}

// ended records the model's verdict d on the result ev that mark saw: the
// send waits for its device when d keeps Rejoin. It reports whether the
// send began to wait: its device must then be taken off discovery's table
// (Discovery.Unreached), so that hearing it again is a PeerAppeared.
func (r *rejoin) ended(ev ui.TransferEvent, d *transfer.Delivery) bool {
	if ev.Result == nil || !ev.Result.Rejoin || d == nil || !d.Rejoin {
		return false
	}
	return r.wait(d.ID, ev.Peer.ID)
}

// wait makes send id wait for the device with deviceID: its next
// appearance retries the send (back). A send waiting already, or rejoined
// once already, is left as it is. It reports whether the send began to
// wait.
func (r *rejoin) wait(id, deviceID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting == nil {
		r.waiting, r.device, r.done = map[string][]string{}, map[string]string{}, map[string]bool{}
	}
	if _, ok := r.device[id]; ok || r.done[id] {
		return false
	}
	r.device[id] = deviceID
	r.waiting[deviceID] = append(r.waiting[deviceID], id)
	return true
}

// back is discovery seeing the device with deviceID (again): each send
// waiting for it is retried with retry, once.
func (r *rejoin) back(deviceID string, retry func(id string) error) {
	r.mu.Lock()
	ids := r.waiting[deviceID]
	delete(r.waiting, deviceID)
	for _, id := range ids {
		delete(r.device, id)
		if !r.done[id] {
			r.done[id] = true
			r.order = append(r.order, id)
		}
	}
	for len(r.order) > maxRejoined {
		delete(r.done, r.order[0])
		r.order = r.order[1:]
	}
	r.mu.Unlock()
	for _, id := range ids {
		// A failure to start is reported by retry itself (a failed row);
		// the send is not waited for again.
		_ = retry(id)
	}
}

// drop stops waiting for send id (the user cancelled or retried it) and
// reports whether it was waiting.
func (r *rejoin) drop(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	dev, ok := r.device[id]
	if !ok {
		return false
	}
	delete(r.device, id)
	rest := r.waiting[dev][:0:0]
	for _, w := range r.waiting[dev] {
		if w != id {
			rest = append(rest, w)
		}
	}
	if len(rest) == 0 {
		delete(r.waiting, dev)
	} else {
		r.waiting[dev] = rest
	}
	return true
}

// gaveUp records in History that the user cancelled send id while it
// waited for its device: nothing runs, so no engine result will say so.
// A send kept from an earlier run of the app (kept; zero for any other)
// may have no entry to change: that run was closed before one was
// written, so the entry is made from what was kept, as a cancelled
// send's result would make it.
func (b *backend) gaveUp(id string, kept unfinishedSend) error {
	why := func(peer string) string { return "Cancelled by you while Ferry waited for " + peer + " to come back." }
	for _, e := range b.history.list() {
		if e.ID == id {
			e.State, e.Code, e.ByPeer, e.Finished = ui.StateCancelled, ui.CodeCancelled, false, time.Now()
			e.Err = why(e.PeerName)
			return b.history.add(e)
		}
	}
	if kept.Delivery != id {
		return nil
	}
	peer := b.keptPeer(kept)
	ev := ui.TransferEvent{Kind: ui.TransferResult, ID: id, Delivery: id, Direction: ui.Outgoing, Peer: peer, Time: time.Now(),
		Result: &ui.Result{State: ui.StateCancelled, Code: ui.CodeCancelled, Err: why(peer.Name), Text: kept.Text}}
	e := historyEntry(ev, intent{cancelled: true, sent: kept.Paths}, nil)
	e.HasText = kept.Text != ""
	return b.history.add(e)
}
