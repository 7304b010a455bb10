package engine

import (
	"context"
	"log/slog"
	"runtime/debug"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/peer"
)

// Chunk buffers come from one budget for all receiving sessions (bufpool),
// each session holding at most its quota (issue #14).
const (
	receiveBufferBudget = 128 << 20 // chunk buffers of all receiving sessions together
	receiveBufferIdle   = 16 << 20  // released buffers kept for the next chunks
	sessionBufferQuota  = 32 << 20  // chunk buffers of one session
)

// inbox is one offer from a peer (a core.Inbox, which owns what every
// receiving protocol shares) and the engine's transfer it reports to.
type inbox struct {
	*core.Inbox
	e *Engine
	t *Transfer
}

// newInbox starts the receiving side of an exchange with a peer whose
// identity (and name, as it gave it) is known; conn, when the protocol has
// one, provides the metrics.
func (e *Engine) newInbox(id peer.ID, name, addr string, conn Conn, tk *core.Ticket) *inbox {
	t := &Transfer{
		id: newTransferID(), dir: Receiving, done: make(chan struct{}), started: e.now(),
		peer: e.peerInfo(id, name, addr), conn: conn, state: StateWaiting,
		decisions: make(chan Decision, 1),
	}
	cfg := core.InboxConfig{ManifestBudget: e.opts.ManifestBudget, PromptTimeout: e.opts.PromptTimeout,
		SyncFiles: e.opts.SyncFiles, BufferedIO: e.opts.BufferedIO, Clock: e.opts.Clock, FileLimit: e.fileLimit,
		Writable: e.writable}
	return &inbox{Inbox: core.NewInbox(inboxHost{e: e, t: t, id: id}, id, tk, cfg), e: e, t: t}
}

// inboxHost is the engine as the core.Host of one receiving transfer.
type inboxHost struct {
	e  *Engine
	t  *Transfer
	id peer.ID
}

func (h inboxHost) Name() string { return h.e.Name() }

func (h inboxHost) Peer() PeerInfo {
	h.t.mu.Lock()
	defer h.t.mu.Unlock()
	return h.t.peer
}

func (h inboxHost) Policy() (AcceptPolicy, bool, string) {
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	return h.e.accept, h.e.autoTrusted, h.e.downloadDir
}

func (h inboxHost) Named(id, delivery string) {
	h.t.mu.Lock()
	h.t.id, h.t.delivery = id, delivery
	h.t.mu.Unlock()
}

func (h inboxHost) Register() error { return h.e.register(h.t) }

// Queued tells the sender, if it reads it, that the offer waits for a
// place among the prompts, behind ahead offers, as it queues and as it
// moves up: no EventOffer is raised until it has one, so the client cannot
// say where it stands. A sender that does not take the moves
// (wire.FeaturePromptMoves) is told its place once. The client is told
// once, as it queues (EventQueued): an offer it will be asked about,
// whether or not a code of its sender's was announced (a trusted sender's
// is not), which the prompt on screen counts among those waiting.
func (h inboxHost) Queued(ahead int) {
	first := !h.t.queued.Swap(true)
	if first {
		h.e.publish(h.t, Event{Kind: EventQueued, State: StateWaiting})
	}
	if !first && !h.t.moves.Load() {
		return
	}
	h.t.tellScreen(screenWord{ahead: max(ahead, 1)})
}

// Ask raises an EventOffer; Decide answers it.
func (h inboxHost) Ask(p *core.Prompt) (<-chan Decision, func()) {
	h.t.asking.Store(true)
	h.t.mu.Lock()
	h.t.markAsked(h.e.now())
	h.t.mu.Unlock()
	info := &OfferInfo{Count: p.Count, Files: p.Files, Folders: p.Folders, TotalBytes: p.TotalBytes, DiskBytes: p.DiskBytes, Dest: p.Dest,
		FreeBytes: p.FreeBytes, Expires: p.Expires, Text: p.Text, PairCode: h.e.untrustedCode(h.t)}
	h.e.publish(h.t, Event{Kind: EventOffer, State: StateWaiting, Offer: info})
	return h.t.decisions, func() { h.t.asking.Store(false) }
}

// Unasked raises an EventOffer that asks nothing: in StateActive, as a
// browser's set does, the names of what arrives unasked; in the state of
// the result that follows, the names of what this device refused unasked.
func (h inboxHost) Unasked(p *core.Prompt, s State) {
	info := &OfferInfo{Count: p.Count, Files: p.Files, Folders: p.Folders, TotalBytes: p.TotalBytes, DiskBytes: p.DiskBytes, Dest: p.Dest,
		FreeBytes: p.FreeBytes, Text: p.Text}
	h.e.publish(h.t, Event{Kind: EventOffer, State: s, Offer: info})
}

func (h inboxHost) AlwaysAccept()                { h.e.alwaysAccept(h.t, h.id) }
func (h inboxHost) File(idx int, fr *FileResult) { h.e.publishFile(h.t, idx, fr) }
func (h inboxHost) State(s State)                { h.e.setState(h.t, s) }
func (h inboxHost) Finish(r Result)              { h.e.finish(h.t, r) }
func (h inboxHost) Log() *slog.Logger            { return h.e.log }

func (h inboxHost) Began() {
	h.e.mu.Lock()
	h.e.acceptedSessions++
	h.e.mu.Unlock()
}

func (h inboxHost) Ended(large bool) {
	e := h.e
	e.mu.Lock()
	e.acceptedSessions--
	last := e.acceptedSessions == 0
	e.mu.Unlock()
	if last {
		// The chunk buffers kept go back to the system, and so does the
		// memory of a large manifest (the runtime would return it only
		// minutes later): a receiver left running goes back to its idle size.
		e.bufs.Trim()
		if large {
			debug.FreeOSMemory()
		}
	}
}

func (h inboxHost) WatchProgress(ctx context.Context, bytes func() int64, total int64, files func() int, totalFiles int) {
	h.e.watchProgress(ctx, h.t, bytes, total, files, totalFiles)
}

var _ core.Host = inboxHost{}
