package engine

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32" // CRC32C per chunk is a storage assertion for resume, not security: BLAKE3 leaves and roots verify.
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/manifeststore"
	"github.com/ferrydrop/ferry/engine/internal/resume"
	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/bufpool"
	"github.com/ferrydrop/ferry/internal/fileio"
	"github.com/ferrydrop/ferry/internal/safetext"
	"github.com/ferrydrop/ferry/internal/stallmeter"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxDataStreams bounds a session's data streams; the hello says it
// (wire.Hello.DataStreams), and a sender opens no more. Every Ferry before
// the hello said it took wire.LegacyDataStreams. It leaves room in a TCP
// session's 64 connections for the control stream and spares.
const maxDataStreams = 56

// A Ferry sender's data streams fit: the most it grows to, the ones a
// switch to TCP starts, and the re-sends' (sendReserve). The constants do
// not compile if they do not.
const (
	_ = uint(maxDataStreams - (maxSendStreams + sendReserve))
	_ = uint(wire.MaxDataStreams - maxDataStreams)
	_ = uint(maxDataStreams - wire.LegacyDataStreams)
)

const (
	handshakeTimeout = 10 * time.Second
	offerTimeout     = 30 * time.Second
	maxChunkRetries  = 3
	maxOpenPartials  = 256 // files with data in flight at once; a real sender has about one per stream
	lingerAfterDone  = 5 * time.Second
)

// serve runs the receiving side of one incoming connection.
func (e *Engine) serve(ctx context.Context, c Conn) {
	remote, dev := c.RemoteAddr(), RefusedDevice{ID: c.PeerID().Peer().String()}
	// A session that came by a call through a relay ends the call with it
	// (its ICE session and TURN allocation), after its own goodbye. The
	// call is the one its address names as the session begins, or, on a
	// direct path, as it ends: the caller's ICE can finish, and its QUIC
	// reach this listener, before this side's ICE finished and named the
	// call (then the call lived on its 30 s, TestCallEndsWithItsSession).
	endCall, named := e.endOfCall(remote)
	defer func() {
		if !named {
			endCall, _ = e.endOfCall(remote)
		}
		endCall()
	}()
	defer c.Close(nil)
	// A session refused, or made room for another (evicted), before its
	// offer was read leaves no transfer: it is told as EventRefused, once.
	claim := new(offerClaim)
	tk, refused := e.admit.Arrive(remote, c.PeerID().Peer(), func() {
		if claim.refuse() {
			e.refusals.refused(remote, dev, core.ErrReceiverBusy)
		}
		c.Close(closeReason(core.ErrReceiverBusy))
	})
	if refused != nil {
		e.refusals.refused(remote, dev, refused)
		c.Close(closeReason(refused))
		return
	}
	defer tk.End()
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	s, err := c.AcceptStream(hctx)
	cancel()
	if err != nil {
		return
	}
	watch := time.AfterFunc(handshakeTimeout, s.Abort)
	kind, err := wire.ReadKind(s)
	if err != nil || kind != wire.KindControl {
		watch.Stop()
		c.Close(closeReason(fmt.Errorf("%w: the first stream is not a control stream", wire.ErrProtocol)))
		return
	}
	ctl := newControl(s)
	h, err := expect[*wire.Hello](ctl.recv())
	watch.Stop()
	if err == nil {
		err = checkHello(h, c)
	}
	if err == nil {
		if refused := e.refuseEarly(tk, h, c); refused != nil {
			if claim.refuse() {
				named := dev // dev is the eviction's too
				named.Name = h.Name
				e.refusals.refused(remote, named, refused)
			}
			err = core.Refusal(refused).Err() // ours to tell the peer (closeWith sends it)
		}
	}
	var paired pairDone
	var pairOnly bool
	if err == nil {
		paired, pairOnly, err = e.answerHello(ctl, h, c)
	}
	if err != nil {
		e.log.Info("incoming connection refused", "peer", c.RemoteAddr(), "err", err)
		closeWith(c, ctl, err)
		return
	}
	peerID := c.PeerID().Peer()
	admitted(c)

	in := e.newInbox(peerID, h.Name, c.RemoteAddr(), c, tk)
	tctx, tcancel := context.WithCancelCause(ctx)
	defer tcancel(nil)
	in.t.cancel = tcancel
	e.setPair(in.t, paired, peerID, h.Name, "", pairOnly)
	if pairOnly {
		claim.read() // no offer comes: an eviction now ends a pairing, no offer refused unread
		e.servePair(tctx, c, ctl, tk, in.t)
		return
	}
	rx := &receiver{inbox: in, c: c, ctl: ctl, claim: claim, files: map[uint32]*rxFile{}, complete: make(chan struct{}), done: make(chan struct{}), ctlDone: make(chan struct{}), full: make(chan struct{}),
		stalls: stallmeter.New(0)}
	rx.trusted = sync.OnceValue(func() bool { return e.isTrusted(c.PeerID().Peer()) })
	rx.peerSame = slices.Contains(h.Features, wire.FeatureSame) && e.speaks(wire.FeatureSame)
	if slices.Contains(h.Features, wire.FeaturePrompt) && e.speaks(wire.FeaturePrompt) {
		in.t.onScreen = make(chan screenWord, 1) // before the transfer is registered
		in.t.moves.Store(slices.Contains(h.Features, wire.FeaturePromptMoves) && e.speaks(wire.FeaturePromptMoves))
	}
	defer close(rx.done)
	defer rx.closeList()
	stopWatch := e.watchPath(tctx, in.t, c, nil) // the peer's moves (migrate.go)
	err = rx.run(tctx)
	stopWatch()
	switch {
	case errors.Is(err, errSessionDone):
		err = nil
	case err == nil:
		// Every goroutine stopped without a verdict: the context ended.
		err = context.Cause(tctx)
	}
	if cause := context.Cause(tctx); errors.Is(cause, errCancelledByUser) || errors.Is(cause, errSuperseded) || errors.Is(cause, errTakenOver) {
		err = cause
	}
	if rx.delivered.Load() {
		err = nil // the sender heard that every file is saved: done
	}
	if err != nil {
		closeWith(c, ctl, err) // TCP learns why only from the cancel on the control stream
	}
	// The user here cancelling it (or turning receiving off) takes the
	// yes back: a later session of the delivery asks again.
	revoked := errors.Is(err, errCancelledByUser) || errors.Is(err, errStoppedReceiving)
	resumable := rx.cleanup(err == nil, revoked)
	stalls := rx.stalls.Stats()
	in.Finish(err, resumable, Result{Resent: rx.resent.Load(), Stalls: &stalls, Packed: rx.packed.Load(), PackedTo: rx.packedTo.Load()})
}

type rxFile struct {
	idx        uint32
	entry      wire.FileEntry
	tree       *merkle.Tree
	crcs       []uint32  // storage assertion per chunk (resume re-checks what is on disk)
	crc1       [1]uint32 // crcs' storage for a file of at most one chunk (no allocation of its own)
	part       *store.Partial
	partName   string      // the partial's name in the destination, once created (resume finds it by it)
	partID     string      // the partial's store.Partial.Identity, beside its name
	idJournal  bool        // its identity was journaled before its name (maybeFinalize)
	root       merkle.Hash // the sender's root, from its root frame (once hasRoot)
	hasRoot    bool
	unsent     bool // the sender gave it up (FileUnsent); counted in unsentN when resolved
	retries    map[uint32]int
	resolved   bool
	finalizing bool
	// create is held while the file's partial is created (openPartial),
	// outside rx.mu.
	create sync.Mutex
	// writing counts this file's chunk writes in flight (landChunk). The
	// file is finalized only when none is: a duplicate of its last chunk
	// (the endgame's) whose write began before the original landed would
	// otherwise write into a partial that Finalize closed and renamed, and
	// its error fail a file that was saved whole (seen once in CI).
	writing int
	ok      bool   // resolved and saved
	savedAs string // where it was saved
	kept    bool   // saved as the file already there, which holds its bytes (store.Partial.Kept)
	// keepSame: the sender named every chunk as one the file already
	// under its name holds (a same frame, same.go) before any landed: its
	// leaves are set, and it is kept, nothing written.
	keepSame bool
	// data counts the bytes of the chunks that were not all zeros, each
	// chunk once (charged: a bitmap), of a file the sender says holds
	// holes (entry.Holes): the space check counted Size-Holes for it, and
	// no more is taken (chargeData).
	data    int64
	charged []byte
	// zeroed counts the chunks the sender said hold only zeros and did not
	// send (the runs of its root frame, FeatureZeroChunks): their leaves
	// are those of zeros, and the root verifies that they are.
	zeroed int
	// zerosFirst: a zeros frame landed its chunks of zeros (setZeros), which
	// its root frame names again, not counted again in zeroed.
	zerosFirst bool
}

// chargeData counts chunk c, of n bytes not all zeros, against the data the
// sender's offer says f holds (Size-Holes: whole chunks, so an honest
// sender never sends more for a file it did not change, and one it changed
// fails anyway, errChanged); false once the chunks counted hold more.
// rx.mu is held.
func (f *rxFile) chargeData(c uint32, n int) bool {
	if f.charged == nil {
		f.charged = make([]byte, (f.tree.Len()+7)/8)
	}
	if f.charged[c/8]&(1<<(c%8)) == 0 {
		f.charged[c/8] |= 1 << (c % 8)
		f.data += int64(n)
	}
	return f.data <= f.entry.Size-f.entry.Holes
}

// tooMuchData is why a file whose sender sent more data than its offer
// said is not saved (chargeData), for both sides.
func tooMuchData(f *rxFile) string {
	return fmt.Sprintf("the sender offered it as %s of data, the rest holes, then sent more data than that: not saved, so it takes no more space than the offer asked for",
		core.HumanBytes(f.entry.Size-f.entry.Holes))
}

// receiver is the Ferry wire protocol's receiving session: the control
// stream, chunk frames checked against BLAKE3 leaves and roots, re-requests,
// and resume by chunk. What every receiving protocol shares (limits, policy,
// prompt, space, destination, per-file outcomes, the end) is its inbox.
type receiver struct {
	*inbox
	c   Conn
	ctl *control
	// trusted says whether the sender is a device this one trusts,
	// asked once, at the first file it names (nil: a test's receiver).
	trusted func() bool
	// claim is the session's offer read or refused unread (nil: read).
	claim *offerClaim

	offer *wire.Offer
	// list is the offer's file list, in memory up to a bound and on disk
	// beyond (offerlist.go); closed when the session ends.
	list *manifeststore.Store
	// folders are the offer's empty folders (Offer.Folders), kept as list
	// is; made once every accepted file is saved (makeFolders).
	folders *manifeststore.Store
	// firstCause is why the first file that could not be saved could not
	// (notSaved), for the transfer's end; guarded by mu.
	firstCause string
	// mismatched counts the files that failed verification; guarded by mu.
	mismatched int
	// full is closed when the disk filled under the transfer (diskFull),
	// fullCause says so; the session then ends, resumable.
	full      chan struct{}
	fullOnce  sync.Once
	fullCause string
	// stalls counts the data streams' long waits (head-of-line blocking);
	// its threshold follows the path's RTT, set when data starts.
	stalls    *stallmeter.Meter
	stallOnce sync.Once
	accepted  atomic.Bool
	quota     *bufpool.Quota // this session's share of the engine's chunk buffers
	streams   atomic.Int32   // data streams accepted
	active    atomic.Int64   // unix nanoseconds of the last data or control message (idle watchdog)
	// worked is when the session last moved on (unix nanoseconds): a
	// chunk landed, a file resolved, a file here read for the same-file
	// check; what the idle watchdog watches once the sender said it is
	// done, when a peer's messages (a duplicate chunk, its word said
	// again) no longer count.
	worked atomic.Int64
	resent atomic.Int64
	// packed counts the chunks' bytes that arrived compressed
	// (wire.FeaturePacked, packing.go), packedTo what they took on the wire.
	packed, packedTo atomic.Int64
	unsentN          atomic.Int64    // files the sender gave up (FileUnsent)
	journal          *resume.Journal // resume: one record per landed chunk
	// delivered: every accepted file was verified and the sender told so.
	// That is the session's outcome, whatever happens while it lingers.
	delivered atomic.Bool

	resumeKey string
	// peerSame: the sender takes the leaves of files here (its hello lists
	// wire.FeatureSame); same holds those this side said it holds under
	// their names (Decision.Same), by file, guarded by mu, and sameOrder
	// them in the offer's order (same.go).
	peerSame  bool
	same      map[uint32]*sameHere
	sameOrder []uint32
	haves     []*wire.Have          // resume: what we hold already, sent before the decision
	preDone   []*rxFile             // resume: files saved by an earlier attempt
	done      chan struct{}         // closed when the session has ended
	ctlDone   chan struct{}         // closed when readControl returned
	verdict   atomic.Pointer[error] // the session's own end, once decided (a decline)
	// twins keeps the offer's names of two spellings for their first once,
	// before the first partial is made or finalized (makeTwins).
	twins sync.Once
	// copies is the place of each accepted file whose path the offer names
	// more than once among its copies (store.Partial.SetCopy), by file;
	// set by makeTwins, read after it.
	copies map[uint32]int
	// creating, when set (tests only), runs as each file's partial has
	// just been created, before the file takes it (openPartial).
	creating func(*rxFile)
	// fromRecord: what this session resumes is a finished delivery's
	// record (deliveredBefore), not an unfinished state.
	fromRecord bool

	mu sync.Mutex // guards the fields below
	// files holds the state of the accepted files in flight: created when a
	// file's first frame arrives (or resume restores it), dropped once the
	// file is resolved, so a tree of a million files costs a million states
	// only one by one (issue 30). status says where every offered file is.
	files      map[uint32]*rxFile
	status     []fileStatus
	savedAs    map[uint32]string // files saved under another name than offered
	open       int
	senderDone bool
	complete   chan struct{} // closed once every file is resolved and the sender is done
	final      error         // set when complete closes: errSessionDone or why files failed
}

func (rx *receiver) run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	// Whatever ends the session closes the connection, which unblocks every reader.
	stop := context.AfterFunc(gctx, func() {
		cause := context.Cause(gctx)
		if errors.Is(cause, errSessionDone) {
			cause = nil
		}
		closeWith(rx.c, rx.ctl, cause)
	})
	defer stop()
	// Data streams are watched from the start: data that arrives before the
	// user accepted ends the transfer, and nothing is written.
	g.Go(func() error { return rx.acceptData(gctx, g) })
	g.Go(func() error {
		select {
		case <-rx.c.Done():
		case <-gctx.Done():
			return nil
		}
		// A cancel the sender sent before it closed is still to be read.
		if rx.controlSpeaksFirst(gctx) {
			return nil
		}
		select {
		case <-rx.complete:
			rx.mu.Lock()
			defer rx.mu.Unlock()
			return rx.final // the sender hung up after everything was settled
		default:
			return rx.settle(errConnectionLost)
		}
	})
	g.Go(func() error { return rx.control(gctx, g) })
	return g.Wait()
}

// control reads the offer, decides, then serves the control stream until the end.
func (rx *receiver) control(ctx context.Context, g *errgroup.Group) error {
	err := rx.takeOffer()
	rx.Ticket().Decided() // from here on, the prompt's own bounds apply
	var refused *core.RefusedError
	if errors.As(err, &refused) {
		// A limit refused the offer, perhaps part-way through its manifest:
		// the sender reads why, and keeps sending what it has until then.
		g.Go(rx.drainControl)
		return rx.refuse(ctx, err, refused.Code, refused.Reason)
	}
	if err != nil {
		return err
	}
	if err := rx.Register(); err != nil {
		return err
	}
	rx.e.announcePair(rx.t, CodeShownPending)
	if err := rx.showsCode(); err != nil {
		return err
	}
	g.Go(func() error { return rx.readControl(ctx) })
	rx.Continues = rx.acceptedBefore()
	stopTelling := rx.tellOnScreen(ctx)
	decision, err := rx.Decide(ctx)
	stopTelling() // no wire.Prompt after the decision
	if err != nil {
		return err
	}
	if decision.Accept {
		rx.e.acceptedFrom(rx.c.PeerID().Peer(), rx.t.peer.Name)
	} else {
		return rx.refuse(ctx, decision.Err(), decision.Code, decision.Reason)
	}
	rx.status = make([]fileStatus, rx.list.Len())
	for _, i := range rx.Accepted {
		rx.status[i] = fileAccepted
	}
	decided := rx.e.now()
	rx.resumeFrom(rx.DestDir)
	var checked time.Duration
	if len(rx.haves) > 0 || len(rx.preDone) > 0 {
		checked = max(rx.e.now().Sub(decided), time.Millisecond)
		rx.e.addChecked(rx.t, checked)
	}
	rx.quota = rx.e.bufs.Quota(sessionBufferQuota)
	rx.Begin()
	// The session's transport and route, as the sender's side says them
	// (LAN, through the internet, relayed): the row and Details show it.
	rx.e.publish(rx.t, Event{Kind: EventTransport, Transport: rx.e.receivedTransport(rx.c)})
	rx.touch()
	rx.accepted.Store(true)
	wd := &wire.Decision{Accept: true, Checked: uint32(min(checked.Milliseconds(), math.MaxUint32)), CodeShown: codeShown(rx.t)}
	for _, r := range rx.Refused {
		wd.Refused = append(wd.Refused, wire.Refusal{File: uint32(r.Idx), Code: r.Code, Reason: r.Reason})
	}
	wd.Same = rx.sameCandidates(ctx)
	if decision.Files != nil {
		wd.Files = make([]uint32, 0, len(decision.Files))
		for _, i := range decision.Files {
			wd.Files = append(wd.Files, uint32(i))
		}
	}
	for _, h := range rx.haves {
		if err := rx.ctl.send(h); err != nil {
			return err
		}
	}
	for _, f := range rx.preDone {
		if err := rx.ctl.send(&wire.Have{File: f.idx, Done: true}); err != nil {
			return err
		}
	}
	if err := rx.ctl.send(wd); err != nil {
		return err
	}
	for _, f := range rx.preDone {
		rx.resolve(f, true, f.savedAs, "", "")
	}
	g.Go(func() error { return rx.saveResumeLoop(ctx) })
	if len(rx.sameOrder) > 0 {
		g.Go(func() error { return rx.sendSameLeaves(ctx) })
	}
	g.Go(func() error {
		rx.WatchProgress(ctx)
		return nil
	})
	g.Go(func() error { return rx.finishWhenComplete(ctx) })
	g.Go(func() error { return rx.watchIdle(ctx) })
	if len(rx.Accepted) == 0 {
		rx.checkComplete()
	}
	return nil
}

// showsCode marks the session's code shown where the client shows every
// code as it is announced (Options.ShowsCodes), and tells the sender so
// before any decision.
func (rx *receiver) showsCode() error {
	ps := rx.t.pair.Load()
	// A sender trusted since this session's code was confirmed here (a
	// user quicker than this) was shown the code all the same: said so,
	// or the sender's user is told there is nothing to compare.
	if !rx.e.opts.ShowsCodes || ps == nil || ps.only || rx.e.isTrusted(ps.peer) && !ps.confirmed.Load() {
		return nil
	}
	ps.shown.Store(true)
	if rx.t.onScreen == nil {
		return nil
	}
	return rx.ctl.send(&wire.Prompt{Shown: true})
}

// tellOnScreen tells the sender where its offer stands on this device's
// screen (wire.Prompt), as the engine (queued for a place among the
// prompts: inboxHost.Queued) and the client (OfferOnScreen) say it, until
// stop, which returns once nothing more is sent. Only a change is sent.
func (rx *receiver) tellOnScreen(ctx context.Context) (stop func()) {
	said := rx.t.onScreen
	if said == nil || rx.e.opts.ShowsCodes {
		return func() {} // nothing to tell, or the code was said shown already (showsCode)
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		told, last := false, screenWord{}
		for {
			select {
			case w := <-said:
				if told && w == last {
					continue
				}
				told, last = true, w
				if rx.ctl.send(&wire.Prompt{Shown: w.shown, Ahead: min(w.ahead, wire.MaxPromptAhead)}) != nil {
					return // the session ends: its reader says why
				}
			case <-quit:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// readControl serves the sender's control messages from the offer on: a
// cancel while the user is still asked ends the session at once, with the
// sender's reason.
func (rx *receiver) readControl(ctx context.Context) error {
	defer close(rx.ctlDone)
	for {
		m, err := rx.ctl.recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			select {
			case <-rx.complete: // the sender hung up after the verdict: that is the normal end
				return rx.final
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				// The transport closed the stream under this read while
				// the session went on: a write on it failed, the sender
				// being gone (TCP aborts a stream whose write fails).
				// That is the connection lost, which resumes, not "use of
				// closed network connection".
				return rx.settle(errConnectionLost)
			}
			return rx.settle(controlErr(err))
		}
		rx.touch()
		switch m := m.(type) {
		case *wire.SenderDone:
			if !rx.accepted.Load() {
				return fmt.Errorf("%w: the sender said it was done before the offer was accepted", wire.ErrProtocol)
			}
			rx.mu.Lock()
			if !rx.senderDone {
				rx.senderDone = true
				rx.work() // the wait for what is left starts now
			}
			rx.mu.Unlock()
			rx.checkComplete()
		case *wire.FileUnsent:
			if !rx.accepted.Load() {
				return fmt.Errorf("%w: the sender gave up a file before the offer was accepted", wire.ErrProtocol)
			}
			if err := rx.unsent(m); err != nil {
				return err
			}
		case *wire.Cancel:
			return &wire.RemoteError{Code: m.Code, Reason: m.Reason}
		default:
			return fmt.Errorf("%w: unexpected %v message", wire.ErrProtocol, m.Type())
		}
	}
}

// unsent gives up an accepted file that its sender could not read
// (FileUnsent): its partial goes, its result says why, the others go on.
// A file that landed or failed meanwhile keeps its result; one whose root
// arrived was sent whole, so the sender cannot give it up.
func (rx *receiver) unsent(m *wire.FileUnsent) error {
	rx.mu.Lock()
	f, err := rx.fileLocked(m.File, false)
	rooted := f != nil && (f.hasRoot || f.finalizing)
	if err == nil && !rooted {
		f.unsent = true
	}
	rx.mu.Unlock()
	switch {
	case errors.Is(err, errResolved):
		return nil
	case err != nil:
		return err
	case rooted:
		return fmt.Errorf("%w: the sender gave up file %d after its root", wire.ErrProtocol, m.File)
	}
	reason := "the sending device could not read it"
	if why := safetext.Line(strings.TrimSpace(m.Reason)); why != "" {
		reason += " (" + why + ")"
	}
	rx.resolve(f, false, "", wire.CodeIO, "Not sent: "+reason+".")
	return nil
}

// settle returns the session's own verdict once it has one (a decline sent
// to the sender): whatever the connection does afterwards does not change it.
func (rx *receiver) settle(err error) error {
	if v := rx.verdict.Load(); v != nil {
		return *v
	}
	return err
}

// touch notes that the sender is alive (the idle watchdog).
func (rx *receiver) touch() { rx.active.Store(time.Now().UnixNano()) }

// work notes that the session moved on (receiver.worked).
func (rx *receiver) work() { rx.worked.Store(time.Now().UnixNano()) }

// watchIdle ends an accepted session over which nothing arrives for
// Options.SessionIdleTimeout: a peer that holds a session open without using it
// (issue #14). Once the sender said it is done, what is left is this side's
// work (chunks landing, files resolved, a file read for the same-file
// check: receiver.worked), so it ends when that did not move on for twice
// the timeout, whatever the peer still sends: a sender that said it was
// done without sending a file held the session, and its transfer showed
// "Receiving", for as long as it stayed connected.
func (rx *receiver) watchIdle(ctx context.Context) error {
	limit := rx.e.opts.SessionIdleTimeout
	tick := time.NewTicker(limit / 8)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-rx.complete:
			return nil
		case now := <-tick.C:
			rx.mu.Lock()
			done, accepted := rx.senderDone, len(rx.Accepted)
			rx.mu.Unlock()
			idle := now.Sub(time.Unix(0, rx.active.Load()))
			stuck := now.Sub(time.Unix(0, rx.worked.Load()))
			switch {
			case done && stuck > 2*limit:
				resolved, _ := rx.Counts()
				return fmt.Errorf("%w: the sender said it had sent everything, yet %d of %d files did not arrive (nothing for %v)",
					wire.ErrTimeout, accepted-resolved, accepted, stuck.Round(time.Second))
			case !done && idle > limit:
				return fmt.Errorf("%w: nothing arrived for %v after the offer was accepted", wire.ErrTimeout, idle.Round(time.Second))
			}
			if rx.Dest.Gone() {
				return rx.folderGone()
			}
		case <-rx.full:
			return rx.diskFullErr()
		}
	}
}

// folderGone ends a transfer whose download folder was deleted or moved
// away under it: nothing that arrives can be named there any more, and the
// files already in it went with it. Without it the sender went on to the
// last byte, and every file failed at its end ("rename a.partial a: no
// such file or directory"). The sender is told, and does not try again.
func (rx *receiver) folderGone() error {
	rx.mu.Lock()
	defer rx.mu.Unlock()
	n := len(rx.Accepted)
	they := "they"
	if n == 1 {
		they = "it"
	}
	return &core.NotSavedError{Failed: n, Files: n,
		Cause: "the download folder " + rx.DestDir + " was deleted or moved away while " + they + " arrived"}
}

// controlErr is an error reading the control stream, as the session
// ends with it: a message that breaks the protocol names the stream; the
// connection's own end (lost, silent, closed by the relay's word) is the
// session's, said as it is, whichever of its streams read it first (it
// read "Control stream: the connection went silent for 10s…" when the
// control stream was first, and without the name when a data stream was).
func controlErr(err error) error {
	if errors.Is(err, wire.ErrProtocol) {
		return fmt.Errorf("control stream: %w", err)
	}
	return unexpectedEOF(err)
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// takeOffer reads the offer and hands it to the inbox.
func (rx *receiver) takeOffer() error {
	if err := rx.readOffer(); err != nil {
		return err
	}
	rx.Held = rx.heldFor
	return rx.Inbox.Offer(rx.offer.Transfer, offeredList{rx.list}, rx.offer.Text)
}

// readOffer reads and checks the offer and its manifest.
func (rx *receiver) readOffer() error {
	offer, err := expect[*wire.Offer](rx.ctl.recvTimeout(offerTimeout))
	if err != nil {
		return err
	}
	if !rx.claim.read() {
		// Made room for another first, and told as refused unread.
		return core.Refusal(core.ErrReceiverBusy).Err()
	}
	rx.offer = offer
	rx.Offered = true
	entries := offer.Files + offer.Folders // each costs as much held
	if err := rx.CheckCost(core.ManifestCost(entries, 0)); err != nil {
		return err
	}
	// The manifests held at once share a budget of memory: it is taken as
	// the parts arrive, so a peer's names are refused before they pile up.
	// What the list keeps on disk is charged to the disk budget as it is
	// written (offerlist.go).
	if refused := rx.Ticket().HoldManifest(core.ManifestCost(entries, 0)); refused != nil {
		return core.Refusal(refused).Err() // ours to tell the peer
	}
	if rx.list, err = rx.e.lists.open(rx.Ticket().Source()); err != nil {
		return err
	}
	var sum, held int64
	for rx.list.Len() < offer.Files {
		part, err := expect[*wire.OfferFiles](rx.ctl.recvTimeout(offerTimeout))
		if err != nil {
			return err
		}
		if n := rx.list.Len(); part.Start != n || len(part.Files) == 0 || n+len(part.Files) > offer.Files {
			return fmt.Errorf("%w: manifest part at %d with %d files does not continue the %d received (of %d)",
				wire.ErrProtocol, part.Start, len(part.Files), n, offer.Files)
		}
		for _, f := range part.Files {
			if sum += f.Size; sum < 0 {
				return fmt.Errorf("%w: total size overflows", wire.ErrProtocol)
			}
			if err := rx.appendEntry(f); err != nil {
				return err
			}
		}
		if held, err = rx.holdNames(entries, held); err != nil {
			return err
		}
	}
	if sum != offer.TotalBytes {
		return fmt.Errorf("%w: the files add up to %d bytes, the offer says %d", wire.ErrProtocol, sum, offer.TotalBytes)
	}
	if offer.Folders > 0 {
		rx.EmptyFolders = int64(offer.Folders)
		return rx.readFolders(entries, held)
	}
	return nil
}

// holdNames charges what the offer's lists hold in memory now, of which
// held was charged before, and returns it: refused as the names arrive,
// not once they are all held.
func (rx *receiver) holdNames(entries int, held int64) (int64, error) {
	mem := rx.list.MemoryBytes()
	if rx.folders != nil {
		mem += rx.folders.MemoryBytes()
	}
	if err := rx.CheckCost(core.ManifestCost(entries, mem)); err != nil {
		return held, err
	}
	if refused := rx.Ticket().HoldManifest(mem - held); refused != nil {
		return held, core.Refusal(refused).Err()
	}
	return mem, nil
}

// refuse answers the offer with a refusal and ends the session with
// verdict once the sender hung up (or lingerAfterDone passed): the sender
// ends at once with the reason, it does not retry.
func (rx *receiver) refuse(ctx context.Context, verdict error, code wire.Code, reason string) error {
	rx.verdict.Store(&verdict)
	// Sent aside: a sender still writing its manifest may read the answer
	// only once it is done (and a hostile one never); the session's end
	// unblocks the write.
	go rx.ctl.send(&wire.Decision{Accept: false, Code: code, Reason: reason})
	// Give the decline time to arrive before the connection closes.
	rx.lingerForPeer(ctx)
	return verdict
}

// drainControl reads and drops what the sender still writes on the control
// stream after its offer was refused part-way, until the session ends: a
// connection closed with unread data is reset (TCP), and a reset would
// discard the refusal before the sender read it.
func (rx *receiver) drainControl() error {
	io.Copy(io.Discard, rx.ctl.r)
	return nil
}

func (rx *receiver) lingerForPeer(ctx context.Context) {
	t := time.NewTimer(lingerAfterDone)
	defer t.Stop()
	select {
	case <-rx.c.Done():
	case <-t.C:
	case <-ctx.Done():
	}
}

// fileStatus is where one offered file is in the session.
type fileStatus uint8

const (
	fileRefused  fileStatus = iota // not accepted
	fileAccepted                   // accepted, not resolved yet
	fileSaved                      // resolved: saved
	fileFailed                     // resolved: failed
)

// maxLiveFiles bounds the accepted files with state at once: a real sender
// has a few per stream in flight (and resume restores at most what the
// last session held open).
const maxLiveFiles = 2 * maxOpenPartials

// errResolved is the answer of file for a file already resolved: its late
// frames (a chunk sent twice, a copy after a switch of transport) are read
// and dropped.
var errResolved = errors.New("file already resolved")

func (rx *receiver) file(idx uint32) (*rxFile, error) {
	rx.mu.Lock()
	defer rx.mu.Unlock()
	return rx.fileLocked(idx, true)
}

// fileLocked returns the state of accepted file idx, creating it on first
// use (within maxLiveFiles, unless bound is false: our own resume state).
// Called with rx.mu held.
func (rx *receiver) fileLocked(idx uint32, bound bool) (*rxFile, error) {
	if f, ok := rx.files[idx]; ok {
		return f, nil
	}
	if int(idx) >= len(rx.status) {
		return nil, fmt.Errorf("%w: file %d does not exist in the offer", wire.ErrProtocol, idx)
	}
	switch rx.status[idx] {
	case fileRefused:
		return nil, fmt.Errorf("%w: data for file %d, which was not accepted", wire.ErrProtocol, idx)
	case fileSaved, fileFailed:
		return nil, errResolved
	}
	if bound && len(rx.files) >= maxLiveFiles {
		return nil, fmt.Errorf("%w: data for more than %d files in flight at once", wire.ErrProtocol, maxLiveFiles)
	}
	e, err := rx.entry(idx)
	if err != nil {
		return nil, err
	}
	n := merkle.Chunks(e.Size, rx.offer.ChunkSize)
	f := &rxFile{idx: idx, entry: e, tree: merkle.NewTree(n)}
	if n <= len(f.crc1) {
		f.crcs = f.crc1[:n]
	} else {
		f.crcs = make([]uint32, n)
	}
	rx.files[idx] = f
	return f, nil
}

// acceptData accepts data streams; each is served by its own goroutine.
func (rx *receiver) acceptData(ctx context.Context, g *errgroup.Group) error {
	for {
		s, err := rx.c.AcceptStream(ctx)
		if err != nil {
			return nil // the session is ending; the cause is reported elsewhere
		}
		if !rx.accepted.Load() {
			s.Abort()
			return fmt.Errorf("%w: the peer sent file data before the offer was accepted", wire.ErrProtocol)
		}
		if rx.streams.Add(1) > maxDataStreams {
			s.Abort()
			return fmt.Errorf("%w: more than %d data streams", wire.ErrProtocol, maxDataStreams)
		}
		g.Go(func() error { return rx.serveData(ctx, s) })
	}
}

// serveData reads chunk frames: hash, check the leaf, write at the offset.
func (rx *receiver) serveData(ctx context.Context, s Stream) error {
	kind, err := wire.ReadKind(s)
	if err != nil {
		return rx.dataEnded(ctx, err)
	}
	if kind != wire.KindData {
		return fmt.Errorf("%w: a second control stream", wire.ErrProtocol)
	}
	l := newStreamLanding(func(j landing, h *merkle.Hasher) error {
		return rx.landChunk(ctx, j.f, j.h, j.buf[:j.h.Length], j.crc, h)
	}, rx.quota.Put)
	rx.stallOnce.Do(func() {
		rx.stalls.SetThreshold(stallmeter.Threshold(time.Duration(rx.c.Metrics().MinRTTms * float64(time.Millisecond))))
	})
	err = rx.readFrames(ctx, rx.stalls.Reader(s), l.add, &l.failed)
	if lerr := l.wait(); lerr != nil {
		return lerr
	}
	return err
}

// streamLanding lands one data stream's chunks in two stages: the stream's
// reader hands each large chunk to a lander goroutine, which hashes, checks
// and writes it while the reader reads on, so a write that waits for the
// device (direct writes do) overlaps the next reads instead of stopping
// the stream. Chunks handed over and not landed yet hold at most
// landQueueBytes (and landQueue chunks): a tree's files of a few hundred
// KiB queue up behind a direct write, while the 1 MiB chunks of a large
// file are landed soon after they arrive, still in the CPU's cache. A small
// chunk (at most inlineChunk bytes, a tree's typical file) the reader lands
// itself, at once: handing it over would cost a wake-up of the lander per
// file, and queueing it behind a large chunk's write would stop the stream
// for that write. Chunks of one file may land in either order, as they do
// from two streams.
type streamLanding struct {
	land   func(j landing, h *merkle.Hasher) error // hash, check, write j
	put    func(buf []byte)                        // give j.buf back, once landed
	jobs   chan landing
	room   *semaphore.Weighted // of landQueueBytes, for the chunks handed over
	landed chan error          // the lander's first error, once jobs is closed
	failed atomic.Bool
	inline *merkle.Hasher // the reader's, for the chunks it lands itself
}

const (
	// landQueueBytes bounds the chunks of one stream handed to its lander
	// and not landed yet. With 1 MiB chunks, three (the one being landed
	// and two waiting): more made workload A slower, its chunks hashed
	// after they had left the cache (docs/benchmarks/trees.md).
	landQueueBytes = 3 << 20
	// landQueue bounds their number.
	landQueue = 16
	// inlineChunk is the largest chunk a data stream's reader lands itself.
	inlineChunk = 64 << 10
)

func newStreamLanding(land func(landing, *merkle.Hasher) error, put func([]byte)) *streamLanding {
	l := &streamLanding{land: land, put: put, jobs: make(chan landing, landQueue),
		room: semaphore.NewWeighted(landQueueBytes), landed: make(chan error, 1)}
	go func() {
		hasher := merkle.NewHasher()
		var err error
		for j := range l.jobs {
			if err == nil {
				if err = l.land(j, hasher); err != nil {
					l.failed.Store(true)
				}
			}
			l.put(j.buf)
			l.room.Release(queuedBytes(j))
		}
		l.landed <- err
	}()
	return l
}

// queuedBytes is what j holds of its stream's landQueueBytes while it
// waits for the lander: its length, or all of them for a chunk larger.
func queuedBytes(j landing) int64 { return min(int64(j.h.Length), landQueueBytes) }

// add lands j: a small chunk at once, a large one through the lander,
// once there is room for it.
func (l *streamLanding) add(j landing) error {
	if j.h.Length > inlineChunk {
		// Never fails: the lander gives every byte back, landed or not.
		_ = l.room.Acquire(context.Background(), queuedBytes(j))
		l.jobs <- j
		return nil
	}
	if l.inline == nil {
		l.inline = merkle.NewHasher()
	}
	err := l.land(j, l.inline)
	l.put(j.buf)
	if err != nil {
		l.failed.Store(true)
	}
	return err
}

// wait ends the stream's landing: it returns once the lander has landed
// (or, after an error, given back) every chunk handed to it, with its
// first error.
func (l *streamLanding) wait() error {
	close(l.jobs)
	return <-l.landed
}

// landing is one chunk read off a stream, waiting to be landed.
type landing struct {
	f   *rxFile
	h   wire.DataHeader
	buf []byte
	crc uint32 // CRC32C of buf[:h.Length], taken as it arrived (readChunk)
}

// readFrames reads a data stream's frames and hands each chunk to land,
// until the stream ends or landing failed.
func (rx *receiver) readFrames(ctx context.Context, s io.Reader, land func(landing) error, failed *atomic.Bool) error {
	var hdr [wire.DataHeaderLen]byte
	// Buffered: many small frames per read from the transport. Chunks larger
	// than the buffer are read straight into buf, except for what the buffer
	// already holds after their header, which is copied twice: a small
	// buffer keeps that share small (with 256 KiB, up to a quarter of a 1 MiB
	// chunk was).
	r := bufio.NewReaderSize(s, 64<<10)
	for !failed.Load() {
		h, err := wire.ReadDataHeader(r, hdr[:])
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return rx.dataEnded(ctx, err)
		}
		f, err := rx.file(h.File)
		if errors.Is(err, errResolved) {
			if err := rx.skipFrame(r, h); err != nil {
				return rx.dataEnded(ctx, err)
			}
			continue
		}
		if err != nil {
			return err
		}
		if h.Packed {
			if err := rx.packedFrame(h, f.entry.Size); err != nil {
				return err
			}
			n := merkle.ChunkLen(f.entry.Size, rx.offer.ChunkSize, int(h.Chunk))
			buf, err := rx.quota.Get(ctx, rx.offer.ChunkSize)
			if err != nil {
				return nilIfDone(ctx, err)
			}
			crc, err := rx.readPacked(r, h, buf[:n])
			if err != nil {
				rx.quota.Put(buf)
				if errors.Is(err, wire.ErrProtocol) {
					return err
				}
				return rx.dataEnded(ctx, unexpectedEOF(err))
			}
			rx.touch()
			rx.packed.Add(int64(n))
			rx.packedTo.Add(int64(h.Length))
			h.Length, h.Packed = uint32(n), false
			if err := land(landing{f: f, h: h, buf: buf, crc: crc}); err != nil {
				return err
			}
			continue
		}
		if h.Chunk == wire.RootChunk {
			runs, err := rx.readZeroRuns(ctx, r, h, f.tree.Len())
			if errors.Is(err, wire.ErrProtocol) {
				return err
			}
			if err != nil {
				return rx.dataEnded(ctx, err)
			}
			if err := rx.setRoot(ctx, f, h, runs); err != nil {
				return err
			}
			continue
		}
		if h.Chunk == wire.SameChunk {
			if err := rx.samePayload(h); err != nil {
				return err
			}
			runs, err := rx.readRuns(ctx, r, h, f.tree.Len())
			if errors.Is(err, wire.ErrProtocol) {
				return err
			}
			if err != nil {
				return rx.dataEnded(ctx, err)
			}
			if err := rx.setSame(ctx, f, runs); err != nil {
				return err
			}
			continue
		}
		if h.Chunk == wire.ZerosChunk {
			runs, err := rx.readZerosFrame(ctx, r, h, f.tree.Len())
			if errors.Is(err, wire.ErrProtocol) {
				return err
			}
			if err != nil {
				return rx.dataEnded(ctx, err)
			}
			if err := rx.setZeros(ctx, f, h, runs); err != nil {
				return err
			}
			continue
		}
		if int(h.Chunk) >= f.tree.Len() || int(h.Length) != merkle.ChunkLen(f.entry.Size, rx.offer.ChunkSize, int(h.Chunk)) {
			return fmt.Errorf("%w: chunk %d of %q has %d bytes; the offer implies %d", wire.ErrProtocol, h.Chunk, f.entry.Path,
				h.Length, merkle.ChunkLen(f.entry.Size, rx.offer.ChunkSize, int(h.Chunk)))
		}
		buf, err := rx.quota.Get(ctx, rx.offer.ChunkSize)
		if err != nil {
			return nilIfDone(ctx, err)
		}
		crc, err := readChunk(r, buf[:h.Length])
		if err != nil {
			rx.quota.Put(buf)
			return rx.dataEnded(ctx, unexpectedEOF(err))
		}
		rx.touch()
		if err := land(landing{f: f, h: h, buf: buf, crc: crc}); err != nil {
			return err
		}
	}
	return nil
}

// readChunk fills p from r, as io.ReadFull does, and returns the CRC32C
// of p. The CRC is taken piece by piece, each right after the transport
// copied it in and while it is still in the CPU's cache: taken over the
// whole chunk when it is landed, it read the chunk from memory once more,
// and cost about twice as much (docs/benchmarks/loopback.md, "Where the
// CPU goes").
func readChunk(r io.Reader, p []byte) (uint32, error) {
	var crc uint32
	for off := 0; off < len(p); {
		n, err := r.Read(p[off:])
		crc = crc32.Update(crc, castagnoli, p[off:off+n])
		off += n
		if off == len(p) {
			break // all there: an error with the last bytes waits for the next read
		}
		if err != nil {
			if errors.Is(err, io.EOF) && off > 0 {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
	}
	return crc, nil
}

// skipFrame reads and drops a frame of a file already resolved, after
// checking it against the offer like any other.
func (rx *receiver) skipFrame(r *bufio.Reader, h wire.DataHeader) error {
	if h.Packed {
		e, err := rx.entry(h.File)
		if err != nil {
			return err
		}
		if err := rx.packedFrame(h, e.Size); err != nil {
			return err
		}
		_, err = r.Discard(int(h.Length))
		return unexpectedEOF(err)
	}
	if h.Chunk == wire.RootChunk || h.Chunk == wire.ZerosChunk || h.Chunk == wire.SameChunk {
		check := rx.rootPayload
		switch h.Chunk {
		case wire.ZerosChunk:
			check = rx.zerosPayload
		case wire.SameChunk:
			check = rx.samePayload
		}
		if err := check(h); err != nil {
			return err
		}
		_, err := r.Discard(int(h.Length))
		return unexpectedEOF(err)
	}
	e, err := rx.entry(h.File)
	if err != nil {
		return err
	}
	size := e.Size
	if int(h.Chunk) >= merkle.Chunks(size, rx.offer.ChunkSize) || int(h.Length) != merkle.ChunkLen(size, rx.offer.ChunkSize, int(h.Chunk)) {
		return fmt.Errorf("%w: chunk %d of file %d has %d bytes; the offer implies %d", wire.ErrProtocol, h.Chunk, h.File,
			h.Length, merkle.ChunkLen(size, rx.offer.ChunkSize, int(h.Chunk)))
	}
	_, err = r.Discard(int(h.Length))
	return unexpectedEOF(err)
}

// dataEnded filters a data stream's read error: none once the session is
// ending or every file is settled (the sender may hang up, and the
// connection's streams then fail in any order).
func (rx *receiver) dataEnded(ctx context.Context, err error) error {
	select {
	case <-rx.complete:
		return nil
	default:
	}
	if ctx.Err() != nil {
		return nil
	}
	// A data stream that breaks is most often the whole connection ending
	// (TCP resets a paused or cancelled sender's streams).
	if rx.controlSpeaksFirst(ctx) {
		return nil
	}
	return err
}

// controlSpeaksFirst waits a moment for the control stream's reader when
// the connection or a stream broke: the sender's reason for ending (a
// cancel, a pause) is on the control stream, so its account of the end
// wins over a broken stream's. It reports whether the reader (or the
// session) ended meanwhile.
func (rx *receiver) controlSpeaksFirst(ctx context.Context) bool {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-rx.ctlDone:
		return true
	case <-ctx.Done():
		return true
	case <-t.C:
		return false
	}
}

func nilIfDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// rootPayload checks the length of a root frame's payload: none, or to a
// receiver that takes them (FeatureZeroChunks) runs of chunks of zeros, as
// many as fit.
func (rx *receiver) rootPayload(h wire.DataHeader) error {
	if h.Length == 0 {
		return nil
	}
	if !rx.e.speaks(wire.FeatureZeroChunks) || int(h.Length) > wire.ZeroRunsFit(rx.offer.ChunkSize)*wire.ZeroRunLen {
		return fmt.Errorf("%w: a root frame with %d bytes of payload", wire.ErrProtocol, h.Length)
	}
	return nil
}

// zerosPayload checks a zeros frame (wire.ZerosChunk): only to a receiver
// that takes them (FeatureZerosFirst), with runs, as many as fit.
func (rx *receiver) zerosPayload(h wire.DataHeader) error {
	if !rx.e.speaks(wire.FeatureZerosFirst) || !rx.e.speaks(wire.FeatureZeroChunks) {
		return fmt.Errorf("%w: a zeros frame, which this receiver does not take", wire.ErrProtocol)
	}
	if h.Length == 0 || int(h.Length) > wire.ZeroRunsFit(rx.offer.ChunkSize)*wire.ZeroRunLen {
		return fmt.Errorf("%w: a zeros frame with %d bytes of payload", wire.ErrProtocol, h.Length)
	}
	return nil
}

// readZerosFrame reads the runs of chunks of zeros a zeros frame carries,
// for a file of chunks chunks.
func (rx *receiver) readZerosFrame(ctx context.Context, r io.Reader, h wire.DataHeader, chunks int) ([]wire.ZeroRun, error) {
	if err := rx.zerosPayload(h); err != nil {
		return nil, err
	}
	return rx.readRuns(ctx, r, h, chunks)
}

// readZeroRuns reads the runs of chunks of zeros a root frame carries, for
// a file of chunks chunks (none without a payload).
func (rx *receiver) readZeroRuns(ctx context.Context, r io.Reader, h wire.DataHeader, chunks int) ([]wire.ZeroRun, error) {
	if err := rx.rootPayload(h); err != nil || h.Length == 0 {
		return nil, err
	}
	return rx.readRuns(ctx, r, h, chunks)
}

// readRuns reads and parses a frame's payload of runs (checked in length).
func (rx *receiver) readRuns(ctx context.Context, r io.Reader, h wire.DataHeader, chunks int) ([]wire.ZeroRun, error) {
	buf, err := rx.quota.Get(ctx, rx.offer.ChunkSize) // fits: ZeroRunsFit
	if err != nil {
		return nil, err
	}
	defer rx.quota.Put(buf)
	if _, err := io.ReadFull(r, buf[:h.Length]); err != nil {
		return nil, unexpectedEOF(err)
	}
	return wire.ParseZeroRuns(buf[:h.Length], chunks, rx.offer.ChunkSize)
}

// setRoot records the sender's root of a file (a root frame), and the chunks
// it said hold only zeros and did not send (runs): each counts as landed,
// with the leaf of zeros, which the root then verifies; on disk it is a hole
// of the partial, which has the file's size (Sparse). Their bytes must be
// among the holes the offer said (FileEntry.Holes), and a chunk that landed
// with data is not zeros: the file fails. Runs a zeros frame landed before
// (setZeros) are named again: they are landed already.
func (rx *receiver) setRoot(ctx context.Context, f *rxFile, h wire.DataHeader, runs []wire.ZeroRun) error {
	if h.Length != 0 && len(runs) == 0 {
		return fmt.Errorf("%w: a root frame with %d bytes of payload", wire.ErrProtocol, h.Length)
	}
	rx.mu.Lock()
	if f.hasRoot {
		same := f.root == h.Leaf
		rx.mu.Unlock()
		if same {
			// A second copy: auto moved the data to another transport while
			// the first was still in flight on the old one.
			return nil
		}
		return fmt.Errorf("%w: file %d was sent with two different roots", wire.ErrProtocol, h.File)
	}
	fresh, added, bad, err := rx.landZerosLocked(f, runs, "root frame")
	if err != nil || bad >= 0 {
		rx.mu.Unlock()
		if bad >= 0 {
			rx.zerosSent(f, bad)
		}
		return err
	}
	f.root, f.hasRoot = h.Leaf, true
	rx.mu.Unlock()
	rx.zerosLanded(f, fresh, added)
	rx.maybeFinalize(ctx, f)
	return nil
}

// setZeros lands the chunks a zeros frame (wire.ZerosChunk, before the
// file's data) says hold only zeros, as setRoot does those of a root frame:
// so they count as they are skipped, not all at once at the file's end
// (progress), and are journaled for resume, for which the partial is
// created first as a chunk of data would create it.
func (rx *receiver) setZeros(ctx context.Context, f *rxFile, h wire.DataHeader, runs []wire.ZeroRun) error {
	if ok, err := rx.openPartial(ctx, f, true); !ok {
		return err
	}
	rx.mu.Lock()
	if f.resolved {
		rx.mu.Unlock()
		return nil
	}
	fresh, added, bad, err := rx.landZerosLocked(f, runs, "zeros frame")
	f.zerosFirst = f.zerosFirst || err == nil && bad < 0 // the root frame names them again
	rx.mu.Unlock()
	if bad >= 0 {
		rx.zerosSent(f, bad)
	}
	if err != nil || bad >= 0 {
		return err
	}
	rx.zerosLanded(f, fresh, added)
	rx.maybeFinalize(ctx, f) // a zeros frame behind the root frame (another stream's)
	return nil
}

// landZerosLocked lands the chunks runs (of a frame named what) say hold
// only zeros that have not landed yet: it returns those to journal and
// their bytes. Their bytes must be among the holes the offer said; a chunk
// that landed with data is returned as bad (else -1): the caller fails the
// file (zerosSent). Called with rx.mu held.
func (rx *receiver) landZerosLocked(f *rxFile, runs []wire.ZeroRun, what string) (fresh []uint32, added int64, bad int, err error) {
	var claimed int64
	for _, r := range runs {
		for c := int(r.Start); c < int(r.Start)+int(r.Count); c++ {
			claimed += int64(merkle.ChunkLen(f.entry.Size, rx.offer.ChunkSize, c))
		}
	}
	if claimed > f.entry.Holes {
		return nil, 0, -1, fmt.Errorf("%w: file %d's %s says %d bytes of it are zeros, its offer %d bytes of holes", wire.ErrProtocol, f.idx, what, claimed, f.entry.Holes)
	}
	journal := rx.journal != nil && f.partName != "" && f.tree.Len() > 1
	for _, r := range runs {
		for c := int(r.Start); c < int(r.Start)+int(r.Count); c++ {
			n := merkle.ChunkLen(f.entry.Size, rx.offer.ChunkSize, c)
			zero := merkle.ZeroLeaf(n)
			if f.tree.Has(c) {
				if f.tree.Leaf(c) != zero {
					return nil, 0, c, nil
				}
				if !f.zerosFirst {
					f.zeroed++ // kept from an earlier attempt, or sent as zeros
				}
				continue
			}
			f.tree.Set(c, zero)
			f.crcs[c] = zeroCRC(n)
			f.zeroed++
			added += int64(n)
			if journal {
				fresh = append(fresh, uint32(c))
			}
		}
	}
	return fresh, added, -1, nil
}

// zerosLanded journals the chunks of zeros landZerosLocked landed and counts
// their bytes as received.
func (rx *receiver) zerosLanded(f *rxFile, fresh []uint32, added int64) {
	for _, c := range fresh {
		n := merkle.ChunkLen(f.entry.Size, rx.offer.ChunkSize, int(c))
		if err := rx.journal.Chunk(f.idx, c, zeroCRC(n), merkle.ZeroLeaf(n)); err != nil {
			rx.e.log.Warn("resume journal", "err", err)
			break
		}
	}
	if added > 0 {
		rx.Bytes.Add(added)
	}
}

// zerosSent fails file f, whose sender said chunk c holds only zeros after
// it sent data for it (or the other way round).
func (rx *receiver) zerosSent(f *rxFile, c int) {
	rx.e.log.Warn("data in a chunk said to be zeros", "file", f.entry.Path, "chunk", c)
	rx.resolve(f, false, "", wire.CodeVerifyFailed,
		fmt.Sprintf("the sender said chunk %d of it holds only zeros, and sent data for it: not saved", c))
}

// zeroCRCs caches the CRC32C of chunks of zeros by length (zeroCRC), as
// merkle.ZeroLeaf does their leaves, and is bounded the same way.
var zeroCRCs struct {
	mu sync.Mutex // guards m
	m  map[int]uint32
}

// zeroCRC is the CRC32C of n zero bytes: the storage assertion of a chunk
// of zeros, which a resume checks on the hole that holds it.
func zeroCRC(n int) uint32 {
	zeroCRCs.mu.Lock()
	crc, ok := zeroCRCs.m[n]
	zeroCRCs.mu.Unlock()
	if ok {
		return crc
	}
	var piece [64 << 10]byte
	for left := n; left > 0; left -= min(left, len(piece)) {
		crc = crc32.Update(crc, castagnoli, piece[:min(left, len(piece))])
	}
	zeroCRCs.mu.Lock()
	if zeroCRCs.m == nil {
		zeroCRCs.m = map[int]uint32{}
	}
	if len(zeroCRCs.m) < 64 {
		zeroCRCs.m[n] = crc
	}
	zeroCRCs.mu.Unlock()
	return crc
}

// landChunk verifies one chunk against its leaf and writes it in place.
func (rx *receiver) landChunk(ctx context.Context, f *rxFile, h wire.DataHeader, data []byte, crc uint32, hasher *merkle.Hasher) error {
	leaf := hasher.Leaf(data)
	counted := f.entry.Holes > 0 && !fileio.AllZero(data) // a chunk of zeros is a hole: no disk
	rx.mu.Lock()
	if f.resolved || f.tree.Has(int(h.Chunk)) {
		conflict := !f.resolved && f.zeroed > 0 && leaf != f.tree.Leaf(int(h.Chunk))
		rx.mu.Unlock()
		if conflict { // data in a chunk the root frame said holds zeros
			rx.zerosSent(f, int(h.Chunk))
		}
		return nil // a late duplicate (e.g. a re-request that crossed the original)
	}
	if leaf != merkle.Hash(h.Leaf) {
		f.retries = lazyMap(f.retries)
		f.retries[h.Chunk]++
		n := f.retries[h.Chunk]
		rx.mu.Unlock()
		rx.resent.Add(int64(len(data)))
		if n > maxChunkRetries {
			rx.resolve(f, false, "", wire.CodeVerifyFailed, fmt.Sprintf("chunk %d failed verification %d times", h.Chunk, n))
			return nil
		}
		return rx.ctl.send(&wire.NeedChunk{File: h.File, Chunk: h.Chunk})
	}
	if counted && !f.chargeData(h.Chunk, len(data)) {
		why := tooMuchData(f)
		if rx.firstCause == "" {
			rx.firstCause = why
		}
		rx.mu.Unlock()
		rx.e.log.Warn("more data than offered", "file", f.entry.Path, "offered", f.entry.Size-f.entry.Holes, "holes", f.entry.Holes)
		rx.resolve(f, false, "", wire.CodeProtocol, why)
		return nil
	}
	if f.part == nil {
		// The file's first chunk: create its partial outside rx.mu, so the
		// other streams land theirs meanwhile (the create is system calls).
		rx.mu.Unlock()
		if ok, err := rx.openPartial(ctx, f, true); !ok {
			return err
		}
		rx.mu.Lock()
		if f.resolved || f.tree.Has(int(h.Chunk)) {
			rx.mu.Unlock()
			return nil
		}
	}
	part := f.part
	f.writing++
	rx.mu.Unlock()

	var err error
	if len(data) > 0 {
		// Several streams may write into one partial at once: it runs side
		// by side what can (see store.Partial.WriteAt).
		_, err = part.WriteAt(data, int64(h.Chunk)*int64(rx.offer.ChunkSize))
	}
	rx.wrote(ctx, f, h, leaf, crc, len(data), err)
	return nil
}

// wrote ends a chunk's write into its file's partial (landChunk): it
// records the chunk, or the failure, and finalizes a file it completed.
// The file is finalized by the last of its writes in flight to end, never
// beside one (rxFile.writing).
func (rx *receiver) wrote(ctx context.Context, f *rxFile, h wire.DataHeader, leaf merkle.Hash, crc uint32, n int, err error) {
	rx.mu.Lock()
	f.writing--
	if err != nil {
		// The same chunk may have landed through another stream meanwhile
		// (the endgame sends a chunk in flight again): then this copy's
		// failure costs nothing.
		landed := f.tree.Has(int(h.Chunk))
		rx.mu.Unlock()
		if landed {
			rx.maybeFinalize(ctx, f)
		} else {
			rx.notSaved(f, err)
		}
		return
	}
	f.tree.Set(int(h.Chunk), leaf)
	f.crcs[h.Chunk] = crc
	rx.mu.Unlock()
	// A single-chunk file needs no chunk record: it is saved (and journaled
	// as saved) as soon as its root arrives, right behind it.
	if rx.journal != nil && f.tree.Len() > 1 {
		if err := rx.journal.Chunk(h.File, h.Chunk, crc, leaf); err != nil {
			rx.e.log.Warn("resume journal", "err", err)
		}
	}
	rx.Bytes.Add(int64(n))
	rx.work()
	rx.maybeFinalize(ctx, f)
}

func lazyMap(m map[uint32]int) map[uint32]int {
	if m == nil {
		return map[uint32]int{}
	}
	return m
}

// completeLocked reports whether f is ready to be finalized: its root
// known, every chunk landed, no write into it in flight, and not resolved
// or being finalized yet. rx.mu is held.
func (f *rxFile) completeLocked() bool {
	return !f.resolved && !f.finalizing && f.hasRoot && f.tree.Missing() == 0 && f.writing == 0
}

// maybeFinalize checks a complete file's root and gives it its final name.
func (rx *receiver) maybeFinalize(ctx context.Context, f *rxFile) {
	rx.mu.Lock()
	if !f.completeLocked() {
		rx.mu.Unlock()
		return
	}
	f.finalizing = true
	part := f.part
	rx.mu.Unlock()
	rx.twins.Do(func() { rx.makeTwins(ctx) }) // a resumed partial: before any file is named
	if f.keepSame {
		rx.keepSame(ctx, f)
		return
	}
	if part == nil {
		// An empty file's single empty chunk may be the only thing that
		// creates it; make sure something exists to rename.
		if ok, _ := rx.openPartial(ctx, f, false); !ok {
			return
		}
		rx.mu.Lock()
		part = f.part
		rx.mu.Unlock()
		if part == nil {
			return // resolved meanwhile
		}
	}

	root, _ := f.tree.Root()
	if root != f.root {
		why := "the file's BLAKE3 root does not match the sender's"
		if f.zeroed > 0 {
			why = fmt.Sprintf("the sender said %d of its chunks hold only zeros and did not send them, and the file's BLAKE3 root does not match the sender's: not saved", f.zeroed)
		}
		rx.resolve(f, false, "", wire.CodeVerifyFailed, why)
		return
	}
	part.SetMeta(entryMeta(f.entry))
	if k, ok := rx.copies[f.idx]; ok {
		part.SetCopy(k) // the offer's first copy keeps the name, whichever lands first
	}
	if rx.trusted != nil && rx.trusted() {
		// A file already under its name with these very bytes (the same
		// folder sent again) is kept, not saved twice as "name (1)". For
		// a trusted device alone: the sender hears which, so another could
		// confirm a guess of what a file here holds (docs/hostile.md).
		// Trust is asked once a transfer: the trust store's look for a
		// change is a stat of its file, which each of a tree's files paid
		// (5000 of C's system calls).
		part.SetSame(func(existing *os.File) bool { return rx.holdsFile(ctx, existing, f) })
	}
	if rx.journal != nil {
		// A file created without a name has no partial record to find it
		// by: its identity goes to the journal before it is named, so that
		// a crash between the naming and its saved record leaves it found
		// saved at the next attempt (restore), not saved again as
		// "name (1).ext".
		if id := part.NamedIdentity(); id != "" {
			if err := rx.journal.Partial(f.idx, f.entry.Size, "", id); err != nil {
				rx.e.log.Warn("resume journal", "err", err)
			} else {
				f.idJournal = true
			}
		}
	}
	saved, err := rx.Dest.Finalize(part, f.entry.Path, f.entry.Size)
	if err != nil && saved == "" {
		rx.notSaved(f, err)
		return
	}
	if err != nil {
		// Saved whole under its name; only the partial's extra name could
		// not be removed (seen under Wine, whose file system lacks the call
		// Go's os.Root uses). The file is good: say so, and keep the note.
		rx.e.log.Warn("file saved, partial left behind", "file", saved, "err", err)
	}
	rx.mu.Lock()
	f.kept = part.Kept()
	rx.mu.Unlock()
	rx.resolve(f, true, saved, "", "") // gives back the partial's place (rx.open)
}

// holdsFile reports whether existing, a file of f's size already under
// its name, holds f's bytes: each chunk read hashes to f's leaf (checked
// against the sender's root), the first that differs ending the read.
func (rx *receiver) holdsFile(ctx context.Context, existing *os.File, f *rxFile) bool {
	// Not from the session's quota: the lander that finalizes may be the
	// one whose queued chunks hold it.
	buf := make([]byte, min(int64(rx.offer.ChunkSize), f.entry.Size))
	hasher := merkle.NewHasher()
	var off int64
	for c := range f.tree.Len() {
		if ctx.Err() != nil {
			return false
		}
		rx.work() // reading here is the session moving on (watchIdle)
		chunk := buf[:merkle.ChunkLen(f.entry.Size, rx.offer.ChunkSize, c)]
		if _, err := existing.ReadAt(chunk, off); err != nil && !(errors.Is(err, io.EOF) && len(chunk) == 0) {
			return false
		}
		if hasher.Leaf(chunk) != f.tree.Leaf(c) {
			return false
		}
		off += int64(len(chunk))
	}
	return true
}

// resolve records a file's outcome, tells the sender, and publishes it.
func (rx *receiver) resolve(f *rxFile, ok bool, savedAs string, code wire.Code, reason string) {
	rx.mu.Lock()
	if f.resolved {
		rx.mu.Unlock()
		return
	}
	f.resolved = true
	rx.work()
	f.ok, f.savedAs = ok, savedAs
	kept := ok && f.kept
	if !ok && f.unsent {
		rx.unsentN.Add(1) // before checkComplete reads it, once per file
	}
	if !ok && code == wire.CodeVerifyFailed {
		rx.mismatched++
	}
	part, partName, partID := f.part, f.partName, f.partID
	f.part = nil
	if part != nil {
		rx.open--
	}
	// What is left of a resolved file is its status (and a name it was
	// saved under, when it is not the offered one).
	delete(rx.files, f.idx)
	delete(rx.same, f.idx)
	if ok {
		rx.status[f.idx] = fileSaved
		if savedAs != f.entry.Path {
			if rx.savedAs == nil {
				rx.savedAs = map[uint32]string{}
			}
			rx.savedAs[f.idx] = savedAs
		}
	} else {
		rx.status[f.idx] = fileFailed
	}
	rx.mu.Unlock()
	if part != nil && !ok {
		rx.discardFailed(f, part, partName, partID)
	}
	if ok && rx.journal != nil {
		save := rx.journal.Saved
		if f.idJournal && !kept && savedAs == f.entry.Path {
			// Found by its identity under its name if the record is
			// lost with the process (restore): it may wait for the next
			// record's write.
			save = rx.journal.SavedFound
		}
		if err := save(f.idx, savedAs); err != nil {
			rx.e.log.Warn("resume journal", "err", err)
		}
	}
	if err := rx.ctl.sendLazy(&wire.FileResult{File: f.idx, OK: ok, SavedAs: savedAs, Code: code, Reason: reason}); err != nil {
		rx.t.cancel(err)
	}
	// Counted (by inbox.resolved) only now that its FileResult is queued:
	// counted earlier, the last file's resolve could lose the race to
	// another file's checkComplete, whose final Result then overtook this
	// FileResult and the sender reported 4999 of 5000 files verified (seen
	// once in the loopback bench, workload C over TCP).
	var root string
	if ok && f.tree != nil {
		if r, err := f.tree.Root(); err == nil {
			root = hex.EncodeToString(r[:])
		}
	}
	if kept {
		rx.ResolvedKept(int(f.idx), savedAs, root)
	} else {
		rx.Resolved(int(f.idx), ok, savedAs, root, reason)
	}
	rx.checkComplete()
}

// discardFailed removes p, the partial (named name, of identity id) of f,
// a file that failed. One that cannot be removed (on Windows another
// program has it open; a read-only folder) stays listed, or with resume
// off is named in a warning (keepOrSayUnremoved, as the session's other
// partials at its end): the snapshot lists no failed file, so it stayed in
// the folder, listed nowhere and never aged out.
func (rx *receiver) discardFailed(f *rxFile, p *store.Partial, name, id string) {
	if err := rx.Dest.Discard(p); err != nil && name != "" {
		rx.keepOrSayUnremoved([]resume.File{{Index: f.idx, Path: f.entry.Path, Size: f.entry.Size, Partial: name, PartialID: id}}, []error{err})
	}
}

func (rx *receiver) checkComplete() {
	resolved, verified := rx.Counts()
	rx.mu.Lock()
	defer rx.mu.Unlock()
	if rx.senderDone && resolved == len(rx.Accepted) {
		select {
		case <-rx.complete:
		default:
			rx.final = errSessionDone
			if n := len(rx.Accepted); verified != n && int(rx.unsentN.Load()) == n-verified {
				rx.final = &core.NotSentError{Unsent: n - verified, Files: n}
			} else if verified != n {
				rx.final = rx.notSavedLocked(n, verified, true)
			}
			close(rx.complete)
		}
	}
}

// finishWhenComplete sends the result once everything is resolved, waits for
// the sender to hang up, and ends the session.
func (rx *receiver) finishWhenComplete(ctx context.Context) error {
	select {
	case <-rx.complete:
	case <-ctx.Done():
		return nil
	}
	rx.mu.Lock()
	final := rx.final
	rx.mu.Unlock()
	_, v := rx.Counts()
	n := len(rx.Accepted)
	res := &wire.Result{OK: n == v, Files: n, Verified: v}
	if n != v {
		rx.mu.Lock()
		why := rx.notSavedLocked(n, v, false)
		rx.mu.Unlock()
		res.Code, res.Reason = wire.CodeVerifyFailed, clipReason(strings.TrimPrefix(why.Error(), wire.ErrVerifyFailed.Error()+": "))
	} else {
		rx.endResume()
		if err := rx.makeFolders(ctx); err != nil {
			res.OK, res.Code, res.Reason = false, wire.CodeVerifyFailed, clipReason(err.Error())
			final = err
			rx.mu.Lock()
			rx.final = final // before the sender hears it, and hangs up
			rx.mu.Unlock()
		}
	}
	if err := rx.ctl.send(res); err != nil {
		return err // not told: cleanup saves the state again for the sender's next attempt
	}
	if res.OK {
		rx.delivered.Store(true)
	}
	rx.lingerForPeer(ctx)
	return final
}

// notSavedLocked is why v of the n accepted files were saved, not all:
// some did not match what was sent (their data or root), or could not be
// saved here (notSaved). here: for this device's user, not the sender.
func (rx *receiver) notSavedLocked(n, v int, here bool) error {
	if rx.mismatched > 0 {
		return fmt.Errorf("%w: the data of %d of %d files did not match what was sent", wire.ErrVerifyFailed, rx.mismatched, n)
	}
	return &core.NotSavedError{Failed: n - v, Files: n, Cause: rx.firstCause, Here: here}
}

// clipReason keeps a reason within what the wire carries.
func clipReason(s string) string {
	if len(s) > wire.MaxReasonLen {
		s = strings.ToValidUTF8(s[:wire.MaxReasonLen], "")
	}
	return s
}

// notSaved resolves f as a file that could not be saved here (created,
// written or named): "Not saved: permission denied." Its reason is what
// the system said, without the store's wrapping and this device's paths,
// which the sender need not learn.
func (rx *receiver) notSaved(f *rxFile, err error) {
	if full := fileio.DiskFull(err); full != "" {
		rx.diskFull(full)
		return
	}
	cause := saveCause(err)
	rx.mu.Lock()
	if rx.firstCause == "" && !f.resolved {
		rx.firstCause = cause
	}
	rx.mu.Unlock()
	rx.resolve(f, false, "", wire.CodeIO, "Not saved: "+cause+".")
}

// diskFull ends the transfer, resumable, when the disk filled under it
// (another program took the space since the space check): every file
// after would fail in turn (759 "the disk is full" lines of a tree, and
// the transfer failed, where it can resume once there is space). The file
// that met it is not resolved: what of it arrived stays in its partial.
func (rx *receiver) diskFull(cause string) {
	rx.fullOnce.Do(func() {
		rx.fullCause = cause
		close(rx.full)
	})
}

// diskFullErr is the end of a transfer that filled the disk: the files not
// saved, and that it resumes.
func (rx *receiver) diskFullErr() error {
	rx.mu.Lock()
	defer rx.mu.Unlock()
	saved := 0
	for _, s := range rx.status {
		if s == fileSaved {
			saved++
		}
	}
	n := len(rx.Accepted)
	return &core.NotSavedError{Failed: n - saved, Files: n,
		Cause: rx.fullCause + " (what arrived is kept: free some space and send again, and it resumes)"}
}

// entryMeta is what a received file keeps of the sender's (its
// modification time, whether it is executable), as the offer says it.
func entryMeta(e wire.FileEntry) store.Meta {
	m := store.Meta{Executable: e.Mode&0o111 != 0}
	if e.MTime != 0 {
		m.ModTime = time.Unix(0, e.MTime)
	}
	return m
}

// saveCause is why a file could not be saved, or a folder made, in a few
// words, without the store's wrapping: "permission denied", "control
// character U+001B not allowed".
func saveCause(err error) string {
	var ne *store.NameError
	switch {
	case errors.Is(err, store.ErrMovedOut):
		return "its folder was moved out of the download folder while it arrived"
	case errors.Is(err, store.ErrGone):
		return "the download folder was deleted or moved away while it arrived"
	case errors.Is(err, store.ErrTooManyCopies):
		return "too many files of its name are there already"
	case errors.As(err, &ne):
		return ne.Reason
	}
	if full := fileio.DiskFull(err); full != "" {
		return full // another program filled it since the space check
	}
	if fileio.TooLarge(err) {
		// Where the offer's check could not read the limit, or another
		// program's file took the name: one sentence, not "file too large".
		return fmt.Sprintf("the file is larger than the download folder's file system or this user's file size limit takes (a FAT32 drive holds files of up to %s)", store.HumanBytes(store.FATMax))
	}
	return pathCause(err)
}

// makeFolders makes the offer's empty folders (Offer.Folders) once every
// accepted file is saved: folders that hold no file, which the files alone
// would not make. They follow the folder-clash rule as files do (see
// store.Dest), so an empty folder of a folder that arrived renamed is in
// the renamed one. A *core.FoldersError says how many could not be made,
// and the first's path and cause. It stops when ctx ends (a cancel).
func (rx *receiver) makeFolders(ctx context.Context) error {
	if rx.folders == nil {
		return nil
	}
	rx.twins.Do(func() { rx.makeTwins(ctx) }) // an offer of empty folders alone
	var failed int
	var first string
	err := rx.folders.Each(func(_ int, e manifeststore.Entry) error {
		if err := ctx.Err(); err != nil {
			return err // cancelled: 10^6 folders take a while
		}
		if _, err := rx.Dest.MakeFolder(e.Path); err != nil {
			if failed++; failed == 1 {
				name := e.Path
				if len(name) > 200 {
					name = strings.ToValidUTF8(name[:200], "") + "…"
				}
				first = fmt.Sprintf("%q (%s)", name, saveCause(err))
			}
			return nil
		}
		rx.Folders.Add(1)
		return nil
	})
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if err != nil {
		return fmt.Errorf("the list of empty folders could not be read: %w", err)
	}
	if failed > 0 {
		return &core.FoldersError{Failed: failed, Folders: rx.folders.Len(), First: first}
	}
	return nil
}

// endResume drops the session's resume state before the sender hears that
// every file is saved: a new delivery of the same files that the sender
// starts on hearing it (Retry) must neither restore this one's state (and
// report the files as sent without sending them) nor take over this session
// while it lingers (and end it as interrupted). The state is kept as the
// delivery's record instead (resume.Dir.Deliver, two renames): a sender
// that does not hear the end (killed, or cut off, now) offers the same
// delivery again, and its files still here unchanged count as saved
// (deliveredBefore), where they were saved again as "name (1)".
func (rx *receiver) endResume() {
	if rx.resumeKey != "" && rx.journal != nil {
		if rx.offer.Transfer == "" {
			rx.journal.Close() // before its file goes (Windows removes no open file)
			rx.e.resume.Drop(rx.resumeKey)
		} else {
			// The record is the state as it is, its journal durable.
			if err := rx.journal.Sync(); err != nil {
				rx.e.log.Warn("resume journal", "err", err)
			}
			rx.journal.Close()
			if err := rx.e.resume.Deliver(rx.resumeKey); err != nil {
				rx.e.log.Warn("keep the delivery's record", "err", err)
			}
		}
	}
	rx.e.releaseResume(rx)
}

// cleanup ends the session's hold on the destination and reports whether
// partial data was kept for a later session. A transfer that finished drops
// its resume state; one that did not keeps its .partial files and saves
// where it got to, so the next attempt only fetches what is missing.
// Without resume state (resume off, or an offer that names no manifest)
// nothing could find the partials again: they are removed (those that
// cannot be are kept listed, or said: keepOrSayUnremoved). revoked: the
// user here took the yes back (cancelled it, turned receiving off): the
// state is kept without its delivery, so a later session of it is asked
// about again (acceptedBefore).
func (rx *receiver) cleanup(finished, revoked bool) (resumable bool) {
	rx.mu.Lock()
	type held struct {
		p *store.Partial
		f resume.File // as keepUnremoved lists it
	}
	var parts []held
	for _, f := range rx.files {
		if f.part != nil {
			parts = append(parts, held{f.part, resume.File{Index: f.idx, Path: f.entry.Path, Size: f.entry.Size, Partial: f.partName, PartialID: f.partID}})
			f.part = nil
		}
	}
	rx.mu.Unlock()
	keep := rx.journal != nil
	var left []resume.File
	var errs []error
	for _, h := range parts {
		if keep {
			h.p.Close()
			continue
		}
		if err := rx.Dest.Discard(h.p); err != nil && h.f.Partial != "" {
			left = append(left, h.f)
			errs = append(errs, err)
		}
	}
	rx.keepOrSayUnremoved(left, errs)
	if rx.journal != nil {
		rx.journal.Close()
	}
	switch {
	case rx.resumeKey == "" || rx.journal == nil:
	case finished, rx.Dest != nil && rx.Dest.Gone():
		// Gone: the partials went with the download folder; a state that
		// names them would only claim space they no longer hold.
		rx.e.resume.Drop(rx.resumeKey)
	default:
		if s := rx.snapshotResume(); s.Held() {
			if revoked {
				s.Delivery = "" // what arrived is kept; continuing it is asked about (acceptedBefore)
			}
			if err := rx.e.resume.Compact(rx.resumeKey, s); err != nil {
				rx.e.log.Warn("save resume state", "err", err)
			}
			resumable = true
		} else {
			rx.discardStale(s)
		}
	}
	rx.dropSuperseded()
	rx.e.releaseResume(rx)
	return resumable
}

// keepOrSayUnremoved sees to the partials that cleanup, or discardFailed,
// could not remove (errs[i] says why files[i] could not): with resume on
// they stay listed (keepUnremoved); with resume off, which keeps no state
// in the resume folder, nothing lists them, and each is named in a
// warning. They stayed in the folder, listed nowhere and unsaid.
func (rx *receiver) keepOrSayUnremoved(files []resume.File, errs []error) {
	if len(files) == 0 {
		return
	}
	if !rx.e.opts.DisableResume {
		rx.keepUnremoved(rx.DestDir, files, notRemoved(rx.DestDir, files[0].Partial, errs[0]))
		return
	}
	for i, f := range files {
		rx.e.log.Warn("a partial file could not be removed, and with resume off nothing lists it: remove it by hand",
			"file", filepath.Join(rx.DestDir, filepath.FromSlash(f.Partial)), "err", errs[i])
	}
}

// openPartial creates f's partial, once, and reports whether f has one
// now: false with an error the session cannot go on from (bounded, and
// maxOpenPartials files in flight), false without one when f was resolved
// instead (a create that failed resolves it as failed) or the session
// (ctx) ended while its partial was filled. It runs outside rx.mu: under
// it, the create's system calls (a folder made or opened, the
// file, its preallocation) held every stream's chunks back while they ran
// (D, 105,252 files: 16.6 s of the receiver's goroutines waiting for rx.mu
// in a 10 s transfer, most of it behind creates). f.create makes a second
// stream with a chunk of the same file wait for the first one's create.
func (rx *receiver) openPartial(ctx context.Context, f *rxFile, bounded bool) (bool, error) {
	f.create.Lock()
	defer f.create.Unlock()
	rx.mu.Lock()
	if f.part != nil || f.resolved {
		ok := f.part != nil
		rx.mu.Unlock()
		return ok, nil
	}
	if bounded && rx.open >= maxOpenPartials {
		rx.mu.Unlock()
		return false, fmt.Errorf("%w: more than %d files in flight at once", wire.ErrProtocol, maxOpenPartials)
	}
	rx.open++ // the place is taken while the file is created
	rx.mu.Unlock()

	rx.twins.Do(func() { rx.makeTwins(ctx) }) // before any file is created
	p, err := rx.createPartial(ctx, f)
	if rx.creating != nil {
		rx.creating(f)
	}
	rx.mu.Lock()
	if err != nil || f.resolved {
		rx.open--
		rx.mu.Unlock()
		switch {
		case err != nil && ctx.Err() != nil:
			// The session ended while the partial was made (its fill,
			// createPartial): the file was not refused, it did not arrive.
		case err != nil:
			rx.notSaved(f, err)
		default:
			rx.discardFailed(f, p, p.Name(), p.Identity()) // resolved (failed) while it was created
		}
		return false, nil
	}
	f.part, f.partName, f.partID = p, p.Name(), p.Identity()
	rx.mu.Unlock()
	return true, nil
}

// makeTwins keeps the offer's first spelling of each name of the accepted
// files and the empty folders that is one name where letter case is
// ignored (store.Twins): it makes each such folder ("p/A" before "p/a")
// and reserves each such file's name ("p/Read.me" before "p/READ.ME", or
// "p/x" before a folder "p/X", or "p/x" itself), so that the first keeps
// its name and the other arrives as "p/a (1)", "p/READ (1).ME" or "p/X
// (1)" whichever file lands first (the streams decide that); and it keeps
// the offer's names that read as numbered ("p/READ (1).ME" itself) from
// being another's number (store.Dest.Avoid). Run once, before the
// session's first partial is created (openPartial) or finalized
// (maybeFinalize, a resumed one), or its first empty folder made
// (makeFolders); a folder that cannot be made is left to its files.
func (rx *receiver) makeTwins(ctx context.Context) {
	empty := 0
	if rx.folders != nil {
		empty = rx.folders.Len()
	}
	if len(rx.Accepted)+empty < 2 {
		return
	}
	var twins store.Twins
	k := 0 // rx.Accepted and the list are both in the offer's order
	err := rx.list.Each(func(i int, e manifeststore.Entry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		for k < len(rx.Accepted) && rx.Accepted[k] < i {
			k++
		}
		if k < len(rx.Accepted) && rx.Accepted[k] == i {
			twins.Add(e.Path)
		}
		return nil
	})
	if err != nil {
		return
	}
	if empty > 0 {
		// Made after the files (makeFolders), as the offer lists them: a
		// folder of files keeps its name from an empty one of another case.
		err = rx.folders.Each(func(_ int, e manifeststore.Entry) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			twins.AddFolder(e.Path)
			return nil
		})
		if err != nil {
			return
		}
	}
	rx.e.keepTwins(rx.Dest, &twins)
	rx.copies = copyPlaces(&twins, rx.Accepted)
	for _, f := range rx.preDone {
		if _, ok := rx.copies[f.idx]; ok {
			rx.Dest.CopySaved(f.entry.Path, f.savedAs)
		}
	}
}

// copyPlaces is the place of each file among the copies of its path
// (store.Twins.Copies), by its index in the offer: twins took the files
// accepted (indexes in the offer, in its order) in that order.
func copyPlaces(twins *store.Twins, accepted []int) map[uint32]int {
	var places map[uint32]int
	for _, copies := range twins.Copies() {
		if places == nil {
			places = map[uint32]int{}
		}
		for k, at := range copies {
			places[uint32(accepted[at])] = k
		}
	}
	return places
}

// keepTwins keeps the offer's first spelling of each name twins found for
// it in dest: each such folder made, each such file's name reserved; and
// its names that read as numbered from numbering (Dest.Avoid).
func (e *Engine) keepTwins(dest *store.Dest, twins *store.Twins) {
	for _, dir := range twins.Firsts() {
		if _, err := dest.MakeFolder(dir); err != nil {
			e.log.Warn("make a folder before its twin of another case", "folder", dir, "err", err)
		}
	}
	for _, rel := range twins.FirstFiles() {
		if err := dest.Reserve(rel); err != nil {
			e.log.Warn("keep a file's name for it before its twin of another case", "file", rel, "err", err)
		}
	}
	for _, rel := range twins.Numbered() {
		if err := dest.Avoid(rel); err != nil {
			e.log.Warn("keep a numbered name of the offer from numbering", "path", rel, "err", err)
		}
	}
	if f := twins.NumberedBeyond(); f != nil {
		dest.AvoidAll(f)
	}
}

// createPartial creates f's partial and journals its name before any of its
// chunks. A file of one chunk, which has nothing to resume, is created
// without a name where the destination can (store.CreateWhole): fewer system
// calls for each small file, and no name to journal.
// Called by openPartial, without rx.mu.
func (rx *receiver) createPartial(ctx context.Context, f *rxFile) (*store.Partial, error) {
	create := rx.Dest.CreatePartial
	if f.tree.Len() <= 1 {
		create = rx.Dest.CreateWhole
	}
	p, err := create(f.entry.Path)
	if err != nil {
		return nil, err
	}
	// Preallocate, so the streams write into it side by side. Best effort: on
	// a full disk the writes fail and say so. A file the sender holds holes
	// in only gets its size: its chunks of zeros stay holes, and the space
	// check counted its data alone. Its chunks are then written one at a
	// time (fileio.Writer runs direct writes side by side only inside what
	// Reserve preallocated): a write into a hole allocates, which ext4 does
	// under the inode's exclusive lock anyway. Preallocating each chunk of
	// data as it comes (fallocate with KEEP_SIZE of its range) would make
	// its write an overwrite again, which may run beside the others.
	// Where the partial is filled with zeros instead (a fusefat stick, where
	// a file of gigabytes takes minutes), the session's end stops the fill
	// (a cancel waited for all of it), and the partial, which holds nothing
	// sent, is removed. It is journaled before the fill: journaled after,
	// a receiver killed during a fill left a partial nothing knew of, for
	// good; known, the next attempt finds it holds nothing and removes it
	// (restore), and a state dropped has it removed as its others are.
	if name := p.Name(); rx.journal != nil && name != "" {
		if err := rx.journal.Partial(f.idx, f.entry.Size, name, p.Identity()); err != nil {
			rx.e.log.Warn("resume journal", "err", err)
		}
	}
	what, size := "preallocate", p.Reserve
	if f.entry.Holes > 0 {
		what, size = "size a sparse file", p.Sparse
	}
	if err := size(ctx, f.entry.Size); err != nil && ctx.Err() != nil {
		if derr := rx.Dest.Discard(p); derr != nil {
			rx.e.log.Warn("remove a partial", "file", p.Name(), "err", derr)
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	} else if err != nil {
		rx.e.log.Warn(what, "file", f.entry.Path, "err", err)
	}
	return p, nil
}

// saveResumeLoop makes the journal durable at most once a second while
// chunks land (never once per chunk: that would cost throughput).
func (rx *receiver) saveResumeLoop(ctx context.Context) error {
	if rx.journal == nil {
		return nil
	}
	tick := time.NewTicker(resumeSaveEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := rx.journal.Sync(); err != nil {
				rx.e.log.Warn("resume journal", "err", err)
			}
		}
	}
}

// resumeSaveEvery is how often the resume journal is made durable.
const resumeSaveEvery = time.Second
