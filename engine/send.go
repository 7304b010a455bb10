package engine

import (
	"bufio"
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/pack"
	"github.com/ferrydrop/ferry/engine/internal/resume"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/directio"
	"github.com/ferrydrop/ferry/internal/fileio"
)

// Default parallel data streams per transport. On loopback a single QUIC
// stream is already CPU-bound, so more streams buy loss isolation, not speed;
// ferry-bench measures the trade-off.
const (
	defaultQUICStreams = 4
	defaultTCPStreams  = 4
	// maxSendStreams bounds the data streams a session grows to (a TCP
	// session of transport.MaxSpreadFlows connections, one stream each; a
	// QUIC session of 16 connections asks for 19: its first four streams
	// and one on each other connection), and SendOptions.Streams. The
	// peer's hello bounds them further (sessionStreams).
	maxSendStreams = transport.MaxSpreadFlows
	// sendReserve are the data streams a session may open beyond those it
	// grew to: the ones a switch to TCP starts, one for re-sends
	// (serveRetries), and one to spare, as before the hello said its bound.
	sendReserve = defaultTCPStreams + 2
)

// A receiver that does not say what it takes gets what every Ferry sent
// before it said: 26 streams to grow to, 31 in all.
const _ = uint(wire.LegacyDataStreams - sendReserve - 26)
const _ = uint(26 - (wire.LegacyDataStreams - sendReserve))

// sessionStreams is how many data streams a session grows to when the
// receiver's hello said it takes: what leaves room for sendReserve,
// at most maxSendStreams.
func sessionStreams(takes int) int {
	return max(min(takes-sendReserve, maxSendStreams), 1)
}

// Send offers paths (files and folders) to the device at to. Files are read
// and checked before it returns; the transfer itself runs in the background
// and reports through events and the returned handle.
func (e *Engine) Send(ctx context.Context, to Target, paths []string, opts SendOptions) (*Transfer, error) {
	return e.SendItems(ctx, to, Items{Paths: paths}, opts)
}

// Items is what one transfer offers: files and folders, a text item, or both.
type Items struct {
	// Paths are files and folders: a file is offered under its base name,
	// a folder keeps its structure under its own name.
	Paths []string
	// Text is a message, a link or what was on the clipboard: UTF-8, at most
	// MaxTextBytes. The receiver's prompt shows it and nothing of it is
	// written to disk there; a receiver whose Ferry predates text offers
	// refuses it (ErrTextUnsupported).
	Text string
}

// MaxTextBytes bounds the text item of one offer.
const MaxTextBytes = wire.MaxTextLen

// SendItems offers items to the device at to; see Send. Several recipients
// are several SendItems: each transfer has its own progress, result and
// resume.
func (e *Engine) SendItems(ctx context.Context, to Target, items Items, opts SendOptions) (*Transfer, error) {
	return e.send(ctx, "", Result{}, to, items, opts)
}

// Continue sends items to the device at to as delivery, a send this device
// offered before and did not see finish (in an earlier run of the process:
// the app keeps its unfinished sends across a restart). The receiver that
// accepted it takes it as the same delivery: it is not asked again, and
// only what it lacks travels. A delivery this engine knows goes on as
// Retry's. Files changed since make another offer, which the receiver
// asks about; files gone fail as Send's do.
func (e *Engine) Continue(ctx context.Context, delivery string, to Target, items Items, opts SendOptions) (*Transfer, error) {
	if !deliveryID(delivery) {
		return nil, fmt.Errorf("continue %q: not a delivery ID", delivery)
	}
	if _, err := e.transfer(delivery); err == nil {
		return e.Retry(ctx, delivery)
	}
	return e.send(ctx, delivery, Result{}, to, items, opts)
}

// deliveryID reports whether id has the form of a sending transfer's
// delivery ID (newTransferID; what resume keeps of one): 16 to 64
// lowercase hex digits.
func deliveryID(id string) bool {
	if len(id) < 16 || len(id) > 64 || id != strings.ToLower(id) {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// CheckText says what is wrong with a text item, before it is offered: over
// MaxTextBytes, or not UTF-8.
func CheckText(text string) error {
	if len(text) > MaxTextBytes {
		return fmt.Errorf("the text is %d bytes, over the %d KB a text item can carry: send it as a file", len(text), MaxTextBytes>>10)
	}
	if !utf8.ValidString(text) {
		return errors.New("the text is not valid UTF-8: send it as a file")
	}
	return nil
}

// send starts the sending transfer id, which is its delivery ID; prior
// holds the totals of its earlier sessions (Retry continues a delivery
// under its ID). An empty id is a new send's: it takes the delivery that
// a send of the same files to the same device left unheard (keptDelivery),
// else a new one.
func (e *Engine) send(ctx context.Context, id string, prior Result, to Target, items Items, opts SendOptions) (*Transfer, error) {
	paths := items.Paths
	if _, err := parseTransport(opts.Transport); err != nil {
		return nil, err
	}
	if err := CheckText(items.Text); err != nil {
		return nil, err
	}
	if len(to.Addrs) == 0 {
		return nil, errors.New("no address to send to")
	}
	want, err := to.want()
	if err != nil {
		return nil, err
	}
	var m manifest
	var skipped SkippedInfo
	if len(paths) > 0 || items.Text == "" {
		var err error
		if m, skipped, err = buildManifestSkipping(paths); err != nil {
			return nil, err
		}
	}
	files := m.files
	var held *resume.HeldDelivery
	// Until it is registered, no other send takes the same kept delivery.
	e.holding.Lock()
	defer e.holding.Unlock()
	if len(files) > 0 {
		key := deliveryKey(files, m.folders, batchChunkSize(files, e.opts.ChunkSize), items.Text, to, want)
		if id == "" {
			id = cmp.Or(e.keptDelivery(key), newTransferID())
		}
		held = e.resume.HoldDelivery(key, id) // before the offer goes out
	}
	if id == "" {
		id = newTransferID()
	}
	t := &Transfer{id: id, delivery: id, dir: Sending, held: held, done: make(chan struct{}), started: e.now(), state: StateConnecting,
		resume: make(chan struct{}), pauseNow: make(chan struct{}, 1), paths: append([]string(nil), paths...), text: items.Text,
		target: to, opts: opts}
	tctx, cancel := context.WithCancelCause(e.ctx)
	t.cancel = cancel
	if err := e.register(t); err != nil {
		cancel(nil)
		held.Release()
		return nil, err
	}
	e.ageLeafCaches()
	o := e.newOutbox(t, files, items.Text, prior)
	readMode := fileio.Auto
	if e.opts.BufferedIO {
		readMode = fileio.Buffered
	}
	o.NewAttempt = func() core.Attempt {
		return &sender{e: e, t: t, files: files, empties: m.folders, text: items.Text, chunkSize: batchChunkSize(files, e.opts.ChunkSize), io: readMode, to: to, want: want, opts: opts}
	}
	info := offerInfo(files, items.Text)
	if skipped.Count() > 0 {
		info.Skipped = &skipped
	}
	info.Renamed = m.renamed
	e.publish(t, Event{Kind: EventOffer, State: StateConnecting, Offer: info})
	stopLink := context.AfterFunc(ctx, func() { cancel(errCancelledByUser) })
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer stopLink()
		defer cancel(nil)
		defer held.Release()
		o.Run(tctx)
	}()
	return t, nil
}

// deliveryKey names the delivery of files (with their empty folders and
// text, cut in chunks of chunkSize: the offer's manifest) to the device
// want, or without one (trust on first use) to the addresses of to.
func deliveryKey(files []localFile, folders []string, chunkSize int, text string, to Target, want identity.DeviceID) string {
	dest := want.String()
	if want.IsZero() {
		hps := make([]string, len(to.Addrs))
		for i, a := range to.Addrs {
			hps[i] = a.String()
		}
		dest = "at " + strings.Join(hps, " ")
	}
	return resume.DeliveryKey(manifestID(files, folders, chunkSize, text), dest)
}

// keptDelivery is the delivery a send of the same files to the same device
// offered and did not hear the end of (its process killed as the receiver
// finished, or it failed): the same send run again continues it, so that a
// receiver that saved the files already counts them as saved
// (deliveredBefore) rather than saving them again as "name (1)". "" when
// there is none, or when it is a transfer this engine knows (running, or
// ended here with its Retry): a second send of the files then is a
// delivery of its own, as is one held by a send in another process
// (resume.Dir.Delivery).
func (e *Engine) keptDelivery(key string) string {
	id := e.resume.Delivery(key)
	if id == "" {
		return ""
	}
	if _, err := e.transfer(id); err == nil {
		return ""
	}
	return id
}

// Chunks are what parallel streams share out. A session on a lossy path may
// grow to 16 flows and about 20 streams (transport/spread); a batch of a few
// chunks would leave most of them idle, and wait at its end for the last
// chunk on the slowest one. So a batch under smallBatch bytes is cut into
// about batchChunks chunks, of at least minBatchChunk; larger batches, where
// chunks are plenty, keep Options.ChunkSize (bigger reads and writes).
const (
	smallBatch    = 64 << 20
	batchChunks   = 256
	minBatchChunk = 64 << 10
)

// batchChunkSize is the chunk size for files: limit (Options.ChunkSize), or
// for a small batch less, in halvings down to minBatchChunk (staying
// aligned for direct reads). It depends on the files only, so every attempt
// of a transfer cuts them alike (resume).
func batchChunkSize(files []localFile, limit int) int {
	var total int64
	for _, f := range files {
		total += f.Size
	}
	size := limit
	if total >= smallBatch {
		return size
	}
	for size/2 >= minBatchChunk && size%(2*directio.Align) == 0 && total < int64(batchChunks)*int64(size) {
		size /= 2
	}
	return size
}

// sender is one attempt of the Ferry wire protocol's sending side: it
// dials, offers, and moves chunk frames over parallel data streams until
// the receiver's verdict. The outbox around it retries, pauses and reports.
type sender struct {
	e         *Engine
	t         *Transfer
	to        Target
	want      identity.DeviceID // the device that must answer (zero: trust on first use)
	opts      SendOptions
	files     []localFile
	empties   []string // the empty folders among them (manifest.folders)
	text      string   // the offer's text item
	chunkSize int
	io        fileio.Mode // how chunks are read (Options.BufferedIO)
	conn      Conn
	ctl       *control
	// maxStreams bounds the data streams the first transport grows to:
	// what the receiver's hello says it takes (sessionStreams).
	maxStreams int
	reason     string // why this transport was chosen
	decided    bool   // the receiver answered the offer
	accepted   []int  // indexes of accepted files, in sending order
	refused    int    // files the receiver refused by name
	sent       atomic.Int64
	skipped    atomic.Int64 // resume: bytes the receiver already had
	held       int64        // resume: bytes of the accepted files the receiver held at the start
	resent     atomic.Int64
	haves      map[uint32]*wire.Have
	// peerSame: the receiver may send leaves of the files it holds under
	// their names (its hello lists FeatureSame); same holds them, by file,
	// for the files its decision named (same.go), guarded by mu; sameBytes
	// counts the bytes of the chunks not sent because it holds them.
	peerSame   bool
	same       map[int]*sameHeld
	sameBytes  atomic.Int64
	peerUnsent bool // the receiver takes FileUnsent (its hello)
	// gate decides when chunks travel compressed, for a receiver that
	// takes them (its hello lists wire.FeaturePacked) and an engine that
	// may send them (Options.Compression); nil: never. packed counts the
	// chunks' bytes sent compressed, packedTo what they took on the wire.
	gate             *pack.Gate
	packed, packedTo atomic.Int64
	// peerZeros: the receiver takes a root frame that names the file's
	// chunks of zeros, which are then not sent (its hello lists
	// FeatureZeroChunks); zeros are those runs of each file that has
	// any, found as the offer is written (entries) and read-only after
	// it; zeroed counts their bytes once each file's root went out with
	// them (progress: the receiver counts them then too).
	peerZeros bool
	zeros     map[int][]wire.ZeroRun
	zeroed    atomic.Int64
	// zerosFirst: the receiver also takes a zeros frame before each such
	// file's data (FeatureZerosFirst), so their bytes count when that goes
	// out, not at the root.
	zerosFirst bool
	// peerFolders: the receiver takes empty folders (its hello), so they
	// are offered; delivered: it said every file arrived (and the folders
	// were made).
	peerFolders bool
	delivered   atomic.Bool
	unsent      map[int]string // files given up (giveUp): their line here, guarded by mu
	unsentWhy   string         // why the first of them was given up (unreadableError.clause), guarded by mu
	verified    atomic.Int64
	resolved    atomic.Int64
	// peerPrompt: the receiver says where the offer stands on its screen
	// (wire.Prompt, its hello); prompts counts what it said
	// (maxPromptMessages), but for its place in the receiver's queue
	// moving up: lowest is the lowest place said yet.
	peerPrompt bool
	prompts    int
	lowest     int

	retries  chan wire.NeedChunk // chunks the receiver asked for again
	asked    map[[2]uint32]int   // (file, chunk) -> times asked again; read by readControl only
	manifest string
	cache    *resume.LeafCache // leaves of earlier attempts, so resume need not re-read held chunks

	// sched shares the chunks out among the data streams (schedule.go).
	sched *scheduler
	// folders holds open the folders the workers open small files in, for
	// the length of transfer.
	folders *fileio.Folders

	// sending says, per offered file, whether it is accepted and not yet
	// resolved; written by accept and readControl, read under mu.
	sending []fileSending

	mu sync.Mutex // guards the fields below
	// leaves holds the Merkle tree of each file in flight: made when its
	// first chunk is sent, dropped once the receiver resolved the file, so
	// a tree of 10^6 files costs 10^6 trees only one by one (issue 30: made
	// up front they were 179 MB of a sender's 334 MB live heap).
	leaves map[int]*fileLeaves
}

// fileSending is where an offered file stands for the sender.
type fileSending uint8

const (
	fileNotSent  fileSending = iota // refused, or not accepted
	fileSendable                    // accepted, its result not in yet
	fileSettled                     // the receiver resolved it
	fileUnsent                      // unreadable here: given up (FileUnsent), its result not in yet
)

// unreadableError is a file to send that could not be read here: that
// file's failure (FileUnsent, where the receiver takes it), not the
// session's.
type unreadableError struct {
	fi   int
	path string // where it is on this device
	err  error
}

func (u *unreadableError) Unwrap() error        { return u.err }
func (u *unreadableError) Is(target error) bool { return target == core.ErrUnreadable }

func (u *unreadableError) Error() string {
	if errors.Is(u.err, errChanged) {
		return u.path + ": " + errChanged.Error() + " (send it again once it is written)"
	}
	return "cannot read " + u.path + ": " + u.why()
}

// sentence is the file's line on this device when it is given up.
func (u *unreadableError) sentence() string {
	if errors.Is(u.err, errChanged) {
		return "Not sent: " + errChanged.Error() + ", so what arrived would be no one version of it (send it again once it is written)."
	}
	return "Not sent: " + u.clause() + "."
}

// clause says why the file was given up, for the transfer's summary.
func (u *unreadableError) clause() string {
	if errors.Is(u.err, errChanged) {
		return errChanged.Error() + " (send it again once it is written)"
	}
	return "it could not be read on this device (" + u.why() + ")"
}

// errChanged: a file of several chunks was written to while it was read,
// so its chunks may come from different versions of it (a torn copy that
// would verify, since the receiver checks what was read).
var errChanged = errors.New("it changed while it was being sent")

// unchanged checks, before file fi's root goes out, that the file is as
// it was offered (size and modification time): a file of several chunks
// written to meanwhile would arrive torn. One stat per such file.
func (tx *sender) unchanged(fi int) error {
	lf := &tx.files[fi]
	st, err := os.Stat(lf.src())
	if err != nil {
		return tx.unreadable(fi, err)
	}
	if st.Size() != lf.Size || lf.MTime != 0 && st.ModTime().UnixNano() != lf.MTime {
		return tx.unreadable(fi, errChanged)
	}
	return nil
}

// why is the cause without the file's path (a PathError's own words): what
// the receiver is told, which need not learn where the file is here.
func (u *unreadableError) why() string { return pathCause(u.err) }

// unreadable marks err, met opening or reading file fi, as that file's.
func (tx *sender) unreadable(fi int, err error) error {
	return &unreadableError{fi: fi, path: tx.files[fi].src(), err: err}
}

// giveUp takes a file that cannot be read here out of the send, when the
// receiver takes FileUnsent: its chunks are no longer handed out, its
// root is never sent, and the receiver is told, so the other files go on.
// It returns the error that ends the session otherwise (an older receiver,
// or one this could not be told).
func (tx *sender) giveUp(err error) error {
	var ue *unreadableError
	if !errors.As(err, &ue) || !tx.peerUnsent {
		return err
	}
	tx.mu.Lock()
	first := tx.sending[ue.fi] == fileSendable
	if first {
		tx.sending[ue.fi] = fileUnsent
		delete(tx.leaves, ue.fi)
		if tx.unsent == nil {
			tx.unsent = map[int]string{}
		}
		tx.unsent[ue.fi] = ue.sentence()
		if tx.unsentWhy == "" {
			tx.unsentWhy = ue.clause()
		}
	}
	tx.mu.Unlock()
	if !first {
		return nil // given up already (another stream met it too), or resolved meanwhile
	}
	tx.sched.drop(ue.fi)
	tx.e.log.Info("file not sent: it cannot be read", "file", ue.path, "err", ue.err)
	why := ue.why()
	if len(why) > wire.MaxRefusalLen {
		why = why[:wire.MaxRefusalLen]
	}
	why = strings.ToValidUTF8(why, "")
	return tx.ctl.send(&wire.FileUnsent{File: uint32(ue.fi), Code: wire.CodeIO, Reason: why})
}

type fileLeaves struct {
	tree *merkle.Tree
	// zeros is the bytes of the file's chunks of zeros, which are not sent
	// (sender.zeros), until its root or its zeros frame went out with them
	// (then 0).
	zeros int64
	// zerosSent: its zeros frame went out (sendZeros).
	zerosSent bool
	// same marks the chunks not sent because the receiver holds them
	// (sameAs), named in the file's same frames before its root; nil for
	// none.
	same []byte
}

func (tx *sender) Run(ctx context.Context) error {
	kind, _ := parseTransport(tx.opts.Transport)
	// A target that follows its device is looked up again on every attempt.
	dctx := ctx
	if at, ok := core.ConnectDeadline(ctx); ok {
		// In an outage: connecting ends with its budget (--retry-for),
		// not an attempt's dial later; a session that connects in time
		// is not cut (dials leave their connection to outlive ctx).
		var cancel context.CancelFunc
		dctx, cancel = context.WithDeadline(ctx, at)
		defer cancel()
	}
	d, err := tx.e.dialTarget(dctx, tx.to, tx.want, kind, tx.t.takePathLost(), tx.t.setTried)
	if err != nil {
		if dctx.Err() != nil && ctx.Err() == nil {
			return &wordedError{err: err, text: "no connection before the time for reconnecting ran out"}
		}
		return err
	}
	tx.t.markConnected(tx.e.now())
	err = tx.session(ctx, d.Conn, d.Why, d.At.HostPort(), tx.opts)
	if err != nil && !tx.want.IsZero() {
		err = sessionEndError(err, tx.e.deviceNamed(tx.want))
	}
	return err
}

// end tells the receiver why the attempt ended (if it did not finish) and
// closes the connection and the leaf cache.
func (tx *sender) End(err error) {
	if tx.conn != nil {
		closeWith(tx.conn, tx.ctl, err)
	}
	tx.cache.Close(err == nil)
}

func (tx *sender) Outcome() core.AttemptOutcome {
	out := core.AttemptOutcome{Sent: tx.sent.Load(), Resent: tx.resent.Load(), Held: tx.held + tx.sameBytes.Load(), Accepted: -1, Reason: tx.reason,
		Packed: tx.packed.Load(), PackedTo: tx.packedTo.Load()}
	if tx.decided {
		out.Accepted, out.Refused, out.Verified = len(tx.accepted), tx.refused, int(tx.verified.Load())
		for _, i := range tx.accepted {
			out.Total += tx.files[i].Size
		}
		switch {
		case !tx.peerFolders:
			out.FoldersLeftOut = len(tx.empties)
		case tx.delivered.Load():
			out.Folders = len(tx.empties)
		}
	}
	return out
}

// heldBytes is what the receiver said it holds of file i (its Have).
func (tx *sender) heldBytes(i int) int64 {
	h := tx.haves[uint32(i)]
	switch {
	case h == nil:
		return 0
	case h.Done:
		return tx.files[i].Size
	}
	var n int64
	for c := range tx.chunks(i) {
		if c/8 < len(h.Chunks) && h.Chunks[c/8]&(1<<(c%8)) != 0 {
			n += int64(merkle.ChunkLen(tx.files[i].Size, tx.chunkSize, c))
		}
	}
	return n
}

// session runs the sending side of the protocol over an established connection.
func (tx *sender) session(ctx context.Context, conn Conn, reason, addr string, opts SendOptions) error {
	e, t := tx.e, tx.t
	tx.conn, tx.reason = conn, reason
	t.mu.Lock()
	t.conn = conn
	stopAttempt := t.stopAttempt
	t.mu.Unlock()
	defer e.watchPath(ctx, t, conn, stopAttempt)() // connection migration (migrate.go)
	e.publish(t, Event{Kind: EventTransport, Transport: transportInfo(conn, reason)})
	stopEarly := context.AfterFunc(ctx, func() { closeWith(conn, nil, context.Cause(ctx)) })
	defer stopEarly()

	s, err := conn.OpenStream(ctx)
	if err != nil {
		return fmt.Errorf("open control stream: %w", err)
	}
	if _, err := s.Write([]byte{wire.KindControl}); err != nil {
		return fmt.Errorf("control stream: %w", err)
	}
	ctl := newControl(s)
	tx.ctl = ctl
	if stopEarly() { // from now on a cancel also tells the peer why, on the control stream
		stop := context.AfterFunc(ctx, func() { closeWith(conn, ctl, context.Cause(ctx)) })
		defer stop()
	}
	pd := newPairDialer()
	if err := tx.ctl.send(pd.hello(e, conn.PeerID().Peer())); err != nil {
		return err
	}
	h, err := expect[*wire.Hello](tx.ctl.recvTimeout(handshakeTimeout))
	if err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	if err := checkHello(h, conn); err != nil {
		return err
	}
	tx.maxStreams = sessionStreams(h.SessionDataStreams())
	if sl, ok := conn.(transport.StreamLimiter); ok {
		sl.LimitStreams(tx.maxStreams)
	}
	if tx.text != "" && !slices.Contains(h.Features, wire.FeatureText) {
		return ErrTextUnsupported
	}
	tx.peerUnsent = slices.Contains(h.Features, wire.FeatureUnsent)
	tx.peerFolders = slices.Contains(h.Features, wire.FeatureFolders)
	tx.peerZeros = slices.Contains(h.Features, wire.FeatureZeroChunks) && e.speaks(wire.FeatureZeroChunks)
	tx.zerosFirst = tx.peerZeros && slices.Contains(h.Features, wire.FeatureZerosFirst) && e.speaks(wire.FeatureZerosFirst)
	tx.peerPrompt = slices.Contains(h.Features, wire.FeaturePrompt) && e.speaks(wire.FeaturePrompt)
	tx.peerSame = slices.Contains(h.Features, wire.FeatureSame) && e.speaks(wire.FeatureSame)
	if slices.Contains(h.Features, wire.FeaturePacked) && e.speaks(wire.FeaturePacked) && e.packsTo(conn.RemoteAddr()) {
		tx.gate = pack.NewGate(e.packMode, time.Now())
	}
	done, err := pd.finish(e, tx.ctl, h, conn.PeerID(), false)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.peer = e.peerInfo(conn.PeerID().Peer(), h.Name, conn.RemoteAddr())
	t.mu.Unlock()
	e.setPair(t, done, conn.PeerID().Peer(), h.Name, addr, false)
	shown := CodeShownPending
	if tx.peerPrompt {
		// Its screen does not show the offer, nor the code, until it says.
		shown = CodeShownWaiting
	}
	e.announcePair(t, shown)
	if err := e.trust.Seen(conn.PeerID().Peer(), h.Name, addr); err != nil {
		e.log.Warn("trust store", "err", err)
	}

	d, err := tx.offerAndDecision()
	if err != nil {
		return codeRejected(err)
	}
	if !d.Accept {
		e.heard(t)
		code := d.Code
		if code == "" {
			code = wire.CodeDeclined
		}
		return &wire.RemoteError{Code: code, Reason: d.Reason}
	}
	e.receiverShowed(t, slices.Contains(h.Features, wire.FeatureCodeShown), d.CodeShown)
	if err := tx.accept(d); err != nil {
		return err
	}
	if d.Checked > 0 {
		e.addChecked(t, time.Duration(d.Checked)*time.Millisecond)
	}
	tx.decided = true
	e.setState(t, StateActive)
	return codeRejected(tx.transfer(ctx, opts))
}

// codeRejected reads a refusal as untrusted that came as the end of the
// session, not as the receiver's decision on the offer (which is how its
// trust policy refuses), as what it is: its user said the verification
// codes differ (closeCode). Not its policy, which the words must not claim.
func codeRejected(err error) error {
	var re *wire.RemoteError
	if errors.As(err, &re) && re.Code == wire.CodeUntrusted && !errors.Is(err, errPeerRejectedCode) {
		return fmt.Errorf("%w (%w)", errPeerRejectedCode, err)
	}
	return err
}

// offerAnswer is the receiver's decision on the offer, or why none came.
type offerAnswer struct {
	d   *wire.Decision
	err error
}

// offerAndDecision sends the offer and reads the receiver's decision. The
// decision is read while the manifest is still being written: a receiver
// may refuse the offer part-way (a limit of its own), and its reason, not
// the broken write that may follow, is the end of the send.
func (tx *sender) offerAndDecision() (*wire.Decision, error) {
	answered := make(chan offerAnswer, 1)
	go func() {
		d, err := tx.readDecision()
		answered <- offerAnswer{d, err}
	}()
	if err := tx.offer(answered); err != nil {
		// Whatever the receiver said before the write broke explains it.
		t := time.NewTimer(refusalWait)
		defer t.Stop()
		select {
		case a := <-answered:
			if a.err == nil && !a.d.Accept {
				return a.d, nil
			}
			var re *wire.RemoteError
			if errors.As(a.err, &re) {
				return nil, a.err
			}
		case <-t.C:
		}
		return nil, err
	}
	tx.e.setState(tx.t, StateWaiting)
	a := <-answered
	return a.d, a.err
}

// refusalWait is how long a sender whose offer could not be written waits
// for the receiver's reason.
const refusalWait = 2 * time.Second

// errAnswered stops writing an offer the receiver answered already.
var errAnswered = fmt.Errorf("%w: the receiver answered before the whole offer was sent", wire.ErrProtocol)

// answeredEarly is why an offer stopped being written when what reads the
// receiver's answer ended first: errAnswered after an answer, else why no
// answer came. A receiver killed while a long offer was written (its
// connection reset, seen first by the read) is then a lost connection, which
// the send retries, not a broken rule that ended the send for good.
func answeredEarly(a offerAnswer) error {
	if a.err != nil {
		return a.err
	}
	return errAnswered
}

// offer sends the offer and its manifest in bounded parts, until the
// receiver answers (a refusal part-way), which it leaves in answered.
func (tx *sender) offer(answered chan offerAnswer) error {
	var total int64
	for _, f := range tx.files {
		total += f.Size
	}
	var folders []string
	if tx.peerFolders {
		folders = tx.empties
	}
	if len(tx.files) > 0 {
		// Without files there is nothing to resume: no manifest, and each
		// text is a transfer of its own on the receiver.
		tx.manifest = manifestID(tx.files, folders, tx.chunkSize, tx.text)
		if old := begunBefore(tx.e.resume, tx.manifest, tx.files, folders, tx.chunkSize, tx.text); old != "" {
			tx.manifest = old
		}
	}
	if err := tx.ctl.send(&wire.Offer{Transfer: tx.t.id, ChunkSize: tx.chunkSize, Files: len(tx.files), TotalBytes: total,
		Manifest: tx.manifest, Text: tx.text, Folders: len(folders)}); err != nil {
		return err
	}
	const part = 2048 // files per manifest message
	for start := 0; start < len(tx.files); {
		end := min(start+part, len(tx.files))
		// Long paths: shrink the part until it fits the message limit.
		for {
			size := 0
			for _, f := range tx.files[start:end] {
				size += len(f.Path) + 96
			}
			if size < wire.MaxMessage/2 || end-start == 1 {
				break
			}
			end = start + (end-start)/2
		}
		entries := tx.entries(start, tx.files[start:end])
		select {
		case a := <-answered:
			answered <- a // for offerAndDecision
			return answeredEarly(a)
		default:
		}
		if err := tx.ctl.send(&wire.OfferFiles{Start: start, Files: entries}); err != nil {
			return err
		}
		start = end
	}
	for start := 0; start < len(folders); {
		end, size := start, 0
		for end < len(folders) && end-start < wire.MaxFilesPerPart && (end == start || size+len(folders[end])+8 < wire.MaxMessage/2) {
			size += len(folders[end]) + 8
			end++
		}
		select {
		case a := <-answered:
			answered <- a
			return answeredEarly(a)
		default:
		}
		if err := tx.ctl.send(&wire.OfferFolders{Start: start, Paths: folders[start:end]}); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// entries are files' entries as offered, files[0] being file start: a file
// that may hold holes (localFile.holey) says how many of its bytes lie in
// chunks of holes (fileio.HoleBytes), so that a receiver that keeps holes
// counts its data alone in its space check (wire.FileEntry.Holes). An older
// receiver ignores the field. To a receiver that takes them (peerZeros),
// those chunks are not sent at all: their runs (zeroRuns) go in the file's
// root frame. A file that cannot be opened here says none: reading it fails
// later, as it would have.
func (tx *sender) entries(start int, files []localFile) []wire.FileEntry {
	entries := make([]wire.FileEntry, 0, len(files))
	for i := range files {
		e := files[i].FileEntry
		if files[i].holey {
			if f, err := os.Open(files[i].src()); err == nil {
				e.Holes = fileio.HoleBytes(f, e.Size, tx.chunkSize)
				if e.Holes > 0 && tx.peerZeros {
					if runs := zeroRuns(f, e.Size, tx.chunkSize); len(runs) > 0 {
						if tx.zeros == nil {
							tx.zeros = map[int][]wire.ZeroRun{}
						}
						tx.zeros[start+i] = runs
					}
				}
				f.Close()
			}
		}
		entries = append(entries, e)
	}
	return entries
}

// zeroRuns are the runs of chunks of f (size bytes, in chunks of
// chunkSize) that hold no data (fileio.HoleChunks), as many as a root frame
// carries (the chunks beyond are sent as data), and never every chunk: a
// file's root frame follows a chunk sent, so one of all holes sends its
// last chunk. A file of one chunk has none.
func zeroRuns(f *os.File, size int64, chunkSize int) []wire.ZeroRun {
	n := merkle.Chunks(size, chunkSize)
	if n <= 1 || n > math.MaxUint32 {
		return nil
	}
	holes := fileio.HoleChunks(f, size, chunkSize, wire.ZeroRunsFit(chunkSize))
	runs := make([]wire.ZeroRun, 0, len(holes))
	claimed := 0
	for _, h := range holes {
		runs = append(runs, wire.ZeroRun{Start: uint32(h.Start), Count: uint32(h.Count)})
		claimed += int(h.Count)
	}
	if claimed == n { // one run, of every chunk
		if last := &runs[len(runs)-1]; last.Count > 1 {
			last.Count--
		} else {
			runs = runs[:len(runs)-1]
		}
	}
	return runs
}

// zeroRunAt is the end of the run of zeros of file fi that holds chunk ci,
// else ci: the next chunk of it to send from ci (scheduler.skip).
func (tx *sender) zeroRunAt(fi, ci int) int {
	runs := tx.zeros[fi]
	i, _ := slices.BinarySearchFunc(runs, ci, func(r wire.ZeroRun, c int) int {
		switch {
		case int(r.Start)+int(r.Count) <= c:
			return -1
		case int(r.Start) > c:
			return 1
		}
		return 0
	})
	if i < len(runs) && int(runs[i].Start) <= ci && ci < int(runs[i].Start)+int(runs[i].Count) {
		return int(runs[i].Start) + int(runs[i].Count)
	}
	return ci
}

// decisionWait bounds how long a sender waits for the receiver's answer: far
// longer than any prompt stays open (2 minutes by default), short enough that
// a receiver that never answers cannot hold a sender for ever.
const decisionWait = 15 * time.Minute

// readDecision reads what the receiver already has (resume) and its decision.
// The receiver's user may take as long as their prompt allows.
func (tx *sender) readDecision() (*wire.Decision, error) {
	tx.haves = map[uint32]*wire.Have{}
	tx.prompts, tx.lowest = 0, wire.MaxPromptAhead+1
	deadline := time.Now().Add(decisionWait)
	for {
		m, err := tx.ctl.recvTimeout(max(time.Until(deadline), time.Millisecond))
		var re *wire.RemoteError
		if errors.As(err, &re) {
			return nil, err // the receiver's reason says it all (QUIC's close carries it)
		}
		if err != nil {
			return nil, fmt.Errorf("waiting for the receiver: %w", unexpectedEOF(err))
		}
		switch m := m.(type) {
		case *wire.Have:
			if int(m.File) >= len(tx.files) || tx.haves[m.File] != nil {
				return nil, fmt.Errorf("%w: resume data for file %d", wire.ErrProtocol, m.File)
			}
			n := merkle.Chunks(tx.files[m.File].Size, tx.chunkSize)
			if !m.Done && len(m.Chunks) != (n+7)/8 {
				return nil, fmt.Errorf("%w: resume bitmap of %d bytes for %d chunks", wire.ErrProtocol, len(m.Chunks), n)
			}
			tx.haves[m.File] = m
		case *wire.Decision:
			return m, nil
		case *wire.Prompt:
			if !tx.peerPrompt {
				return nil, fmt.Errorf("%w: expected a decision, got %v from a receiver that did not say it sends them", wire.ErrProtocol, m.Type())
			}
			// A place in the receiver's queue lower than any said before
			// is its queue moving (wire.MaxPromptAhead of them at most):
			// the rest is bounded.
			if moved := m.Ahead > 0 && m.Ahead < tx.lowest; moved {
				tx.lowest = m.Ahead
			} else if tx.prompts++; tx.prompts > maxPromptMessages {
				return nil, fmt.Errorf("%w: %d prompt messages about one offer, at most %d besides its place moving up the receiver's queue",
					wire.ErrProtocol, tx.prompts, maxPromptMessages)
			}
			tx.e.receiverPrompt(tx.t, m.Shown, m.Ahead)
		case *wire.Cancel:
			return nil, &wire.RemoteError{Code: m.Code, Reason: m.Reason}
		default:
			return nil, fmt.Errorf("%w: expected a decision, got %v", wire.ErrProtocol, m.Type())
		}
	}
}

func (tx *sender) accept(d *wire.Decision) error {
	refused := make(map[uint32]bool, len(d.Refused))
	for _, r := range d.Refused {
		if int(r.File) >= len(tx.files) || refused[r.File] {
			return fmt.Errorf("%w: the receiver refused file %d of %d", wire.ErrProtocol, r.File, len(tx.files))
		}
		refused[r.File] = true
	}
	if d.Files == nil {
		for i := range tx.files {
			if !refused[uint32(i)] {
				tx.accepted = append(tx.accepted, i)
			}
		}
	} else {
		seen := map[uint32]bool{}
		for _, i := range d.Files {
			if int(i) >= len(tx.files) || seen[i] || refused[i] {
				return fmt.Errorf("%w: the receiver accepted file %d of %d", wire.ErrProtocol, i, len(tx.files))
			}
			seen[i] = true
			tx.accepted = append(tx.accepted, int(i))
		}
	}
	tx.refused = len(d.Refused)
	for _, r := range d.Refused {
		lf := tx.files[r.File]
		tx.e.publishFile(tx.t, int(r.File), &FileResult{Path: lf.Path, Size: lf.Size, Err: core.RefusalSentence(r.Code, r.Reason)})
	}
	tx.cache = tx.e.resume.LeafCache(tx.manifest, len(tx.haves) > 0)
	tx.leaves = make(map[int]*fileLeaves)
	tx.sending = make([]fileSending, len(tx.files))
	for _, i := range tx.accepted {
		tx.sending[i] = fileSendable
		if h := tx.haves[uint32(i)]; h != nil && h.Done {
			tx.skipped.Add(tx.files[i].Size)
		}
		tx.held += tx.heldBytes(i)
	}
	if err := tx.acceptSame(d); err != nil {
		return err
	}
	tx.retries = make(chan wire.NeedChunk, 64)
	tx.sched = newScheduler(tx.accepted, func(fi int) int {
		if h := tx.haves[uint32(fi)]; h != nil && h.Done {
			return 0
		}
		return tx.chunks(fi)
	}, func(fi, ci int) int { return merkle.ChunkLen(tx.files[fi].Size, tx.chunkSize, ci) })
	if len(tx.zeros) > 0 {
		tx.sched.skip = tx.zeroRunAt
	}
	return nil
}

// chunks is how many chunks file fi has.
func (tx *sender) chunks(fi int) int { return merkle.Chunks(tx.files[fi].Size, tx.chunkSize) }

// leavesOf returns file fi's tree, made on first use; nil once the receiver resolved the file (a straggler's
// copy of a chunk then only goes out). Call with tx.mu held.
func (tx *sender) leavesOf(fi int) *fileLeaves {
	if fl := tx.leaves[fi]; fl != nil {
		return fl
	}
	if tx.sending[fi] != fileSendable {
		return nil
	}
	fl := &fileLeaves{tree: merkle.NewTree(tx.chunks(fi))}
	// Its chunks of zeros are not read: their leaves are those of zeros, as
	// the receiver takes them (zeroRuns).
	for _, r := range tx.zeros[fi] {
		for c := int(r.Start); c < int(r.Start)+int(r.Count); c++ {
			n := merkle.ChunkLen(tx.files[fi].Size, tx.chunkSize, c)
			fl.tree.Set(c, merkle.ZeroLeaf(n))
			fl.zeros += int64(n)
		}
	}
	tx.leaves[fi] = fl
	return fl
}

// transfer moves the accepted files over parallel data streams and waits for
// the receiver's verdict. Its steps run side by side in one errgroup: the
// progress reports, the control stream, the first transport's workers, the
// session's growth over more flows (spreader), the move to another
// transport (switcher), SenderDone once every chunk went out, and re-sends.
func (tx *sender) transfer(ctx context.Context, opts SendOptions) error {
	if sw, ok := tx.conn.(switcher); ok {
		tx.sched.window = sw.InFlightWindow()
	}
	streams := tx.streamCount(opts)
	tx.folders = fileio.NewFolders()
	defer tx.folders.Close() // after g.Wait: no worker opens a file any more
	g, gctx := errgroup.WithContext(ctx)
	b := &batch{tx: tx, g: g, ctx: gctx, first: newCrew(), doneWriting: make(chan struct{})}
	g.Go(func() error {
		tx.watchProgress(gctx)
		return nil
	})
	var ctlErr error // what the control stream said last (read after Wait)
	g.Go(func() error { ctlErr = tx.readControl(gctx); return ctlErr })
	for range streams {
		b.startFirst(false)
	}
	g.Go(b.markDoneWhenTaken)
	if sp, ok := tx.conn.(spreader); ok {
		g.Go(func() error { return b.grow(sp, streams) })
	}
	if sw, ok := tx.conn.(switcher); ok {
		g.Go(func() error { return b.switchOver(sw) })
	}
	g.Go(b.announceDone)
	g.Go(func() error { return tx.serveRetries(gctx) })
	// A step of ours that failed ends the group, but the control stream's
	// read waits for the peer, which may never hear of it (a worker that
	// failed before its stream carried a byte, as on a file it could not
	// read: the send then hung until the stall timeout, 30 s). After a
	// moment for the peer's own account of the end, it stops waiting.
	waited := make(chan struct{})
	stopWaiting := context.AfterFunc(gctx, func() {
		if ctx.Err() != nil || errors.Is(context.Cause(gctx), errSessionDone) {
			return // a cancel says why itself; a success has nothing to wait for
		}
		t := time.NewTimer(peerAccountWait)
		defer t.Stop()
		select {
		case <-waited:
		case <-t.C:
			tx.ctl.s.Abort()
		}
	})
	err := g.Wait()
	close(waited)
	stopWaiting()
	if errors.Is(err, errSessionDone) {
		return nil
	}
	// Over TCP the peer's streams reset before its cancel is read on the
	// control stream: its account of the end (closing Ferry, cancelling)
	// wins over the reset it caused.
	var re *wire.RemoteError
	// A file this device could not read is the cause, whatever the peer
	// made of the reset that followed.
	if err != nil && ctx.Err() == nil && errors.As(ctlErr, &re) && !errors.As(err, &re) && !errors.Is(err, core.ErrUnreadable) {
		// Ours may be the cause of theirs (a stream we failed to open, and
		// the resets that followed): keep it where a developer looks.
		tx.e.log.Debug("the receiver's account of the end replaces ours", "transfer", tx.t.id, "ours", err, "theirs", ctlErr)
		err = ctlErr
	}
	return err
}

// peerAccountWait is how long a batch that failed here waits for the
// receiver's account of the end on the control stream.
const peerAccountWait = time.Second

// streamCount is how many data streams the first transport starts with:
// SendOptions.Streams, else what a spreading session advises, else the
// transport's default.
func (tx *sender) streamCount(opts SendOptions) int {
	streams := min(opts.Streams, tx.streamBound())
	if sp, ok := tx.conn.(spreader); ok && streams <= 0 {
		streams = sp.DataStreams()
	}
	if streams <= 0 {
		streams = defaultQUICStreams
		if tx.conn.Transport() == transport.TCP {
			streams = defaultTCPStreams
		}
	}
	return streams
}

// streamBound is how many data streams the first transport may have:
// tx.maxStreams, or what a receiver that says nothing takes, when no hello
// set it (tests that start a batch by hand).
func (tx *sender) streamBound() int {
	if tx.maxStreams > 0 {
		return tx.maxStreams
	}
	return sessionStreams(wire.LegacyDataStreams)
}

// watchProgress publishes the batch's progress (bytes sent or already held
// by the receiver, files settled; the rate of those sent) until ctx ends.
func (tx *sender) watchProgress(ctx context.Context) {
	var total int64
	for _, i := range tx.accepted {
		total += tx.files[i].Size
	}
	tx.e.watchProgressMoved(ctx, tx.t, func() int64 { return tx.sent.Load() + tx.skipped.Load() + tx.zeroed.Load() }, tx.sent.Load, total,
		func() int { return int(tx.resolved.Load()) }, len(tx.accepted))
}

// batch is one transfer's data-moving goroutines and what they share.
type batch struct {
	tx    *sender
	g     *errgroup.Group
	ctx   context.Context
	first *crew // the workers of the first transport
	next  int   // the next first-transport worker's ID
	// doneWriting closes once every chunk went out once: then SenderDone.
	doneWriting chan struct{}
	doneOnce    sync.Once
}

// startFirst starts one more worker on the first transport (late: the
// session grew, so its stream may still be joining); false once the crew
// ended, as no chunk is left to take. Called by one goroutine at a time.
func (b *batch) startFirst(late bool) bool {
	if !b.first.join() {
		return false
	}
	id := b.next
	b.next++
	b.g.Go(func() error {
		defer b.first.leave()
		return b.tx.worker(b.ctx, 0, id, late)
	})
	return true
}

func (b *batch) markDone() { b.doneOnce.Do(func() { close(b.doneWriting) }) }

// markDoneWhenTaken marks the writing done once the first transport's
// workers finished, or the endgame took every chunk; after a switch the
// switch marks it.
func (b *batch) markDoneWhenTaken() error {
	select {
	case <-b.first.done:
	case <-b.tx.sched.takenAll:
	case <-b.ctx.Done():
		return nil
	}
	if b.tx.sched.generation() == 0 {
		b.markDone()
	}
	return nil
}

// grow adds streams when the path showed random loss: more streams, over
// more flows, carry more (transport/spread). They take chunks like the
// others, and the endgame begins.
func (b *batch) grow(sp spreader, open int) error {
	tx := b.tx
	for {
		select {
		case adv, ok := <-sp.StreamsAdvised():
			if !ok {
				return nil
			}
			if tx.sched.generation() != 0 {
				return nil // the data moved to another transport
			}
			tx.sched.startEndgame()
			info := transportInfo(tx.conn, adv.Reason)
			info.Flows = adv.Flows
			tx.e.publish(tx.t, Event{Kind: EventTransport, Transport: info})
			for ; open < min(adv.Streams, tx.streamBound()); open++ {
				if !b.startFirst(true) {
					return nil
				}
			}
		case <-b.ctx.Done():
			return nil
		}
	}
}

// switchOver follows auto when it moves the data to TCP mid-batch: the
// workers on QUIC stop taking chunks, the chunks that may still be in
// flight there are sent again over TCP (the receiver drops whichever copy
// lands second), and new workers carry on over TCP.
func (b *batch) switchOver(sw switcher) error {
	tx := b.tx
	select {
	case <-sw.SwitchAdvised():
	case <-b.ctx.Done():
		return nil
	}
	if tx.allResolved() {
		return nil
	}
	tx.reason = sw.Switch()
	tx.sched.moveInFlight()
	tx.e.publish(tx.t, Event{Kind: EventTransport, Transport: transportInfo(tx.conn, tx.reason)})
	var next sync.WaitGroup
	for w := range defaultTCPStreams {
		next.Add(1)
		b.g.Go(func() error {
			defer next.Done()
			return tx.worker(b.ctx, 1, maxSendStreams+w, false)
		})
	}
	next.Wait()
	b.markDone() // the first workers may still crawl: what they hold went again
	return nil
}

// announceDone tells the receiver once every chunk went out; what is left
// is its verdict.
func (b *batch) announceDone() error {
	select {
	case <-b.doneWriting:
	case <-b.ctx.Done():
		return nil
	}
	if err := b.tx.ctl.send(&wire.SenderDone{}); err != nil {
		return err
	}
	b.tx.e.setState(b.tx.t, StateVerifying)
	return nil
}

func (tx *sender) allResolved() bool { return int(tx.resolved.Load()) == len(tx.accepted) }

// worker owns one data stream and sends chunks until none are left, or
// until the data moved to another transport (the scheduler's generation is
// no longer gen).
//
// A worker takes its first chunk before it opens its stream, so a small
// batch opens no stream it does not need; a worker added when the session
// grew (late) opens its stream first, as its connection may still be
// joining: a chunk taken meanwhile would wait for the join.
func (tx *sender) worker(ctx context.Context, gen int64, id int, late bool) error {
	_, track := tx.conn.(switcher)
	ws := &workerState{gen: gen, id: id, track: track && gen == 0}
	var (
		s                 Stream
		err               error
		fi, ci            int
		moved, ok, opened bool
	)
	if late {
		// A stream added for growth holds no chunk yet: one the peer did not
		// take (a listener sheds handshakes beyond what it admits of one
		// address) costs that flow, not the transfer. If the session itself
		// broke, the control stream and the other workers say so.
		if s, err = tx.conn.OpenStream(ctx); err != nil {
			tx.e.log.Debug("an added data stream did not open", "transfer", tx.t.id, "err", err)
			return nil
		}
		opened = true
	}
	if fi, ci, moved, ok = tx.sched.take(ws); !ok {
		if opened { // a data stream that ends at once
			if _, err := s.Write([]byte{wire.KindData}); err != nil {
				s.Abort()
				return nil
			}
			return s.Close()
		}
		return nil
	}
	if !opened {
		if s, err = tx.conn.OpenStream(ctx); err != nil {
			return nilIfDone(ctx, fmt.Errorf("open data stream: %w", err))
		}
	}
	// A write stuck on a slow path must not outlive the transfer.
	defer context.AfterFunc(ctx, s.Abort)()
	var ps *packStream // packing.go
	var out io.Writer = s
	if tx.gate != nil {
		ps = tx.newPackStream()
		out = blockedWriter{w: s, ps: ps}
	}
	w := bufio.NewWriterSize(out, 256<<10)
	if err := w.WriteByte(wire.KindData); err != nil {
		return nilIfDone(ctx, err)
	}
	buf := frameBuffer(tx.chunkSize)
	hasher := merkle.NewHasher()
	// A file smaller than direct I/O's smallest read (directio.Min: all but
	// a few files of a real tree) is read through the page cache in any
	// mode, in one pread, so it is opened without an os.File
	// (fileio.OpenSmall): for a regular file Go's poller only costs system
	// calls that fail or undo each other, about a tenth of a sender's CPU on
	// a tree of small files; it is opened in its folder, which the batch
	// holds open (fileio.Folders), so its whole path is not looked up again
	// file by file. A larger file is opened and read as it always
	// was, an os.File and a fileio.Reader: workload A twice measured slower
	// when that path changed, without a cause found
	// (docs/benchmarks/trees.md).
	var cur *os.File
	var rd *fileio.Reader
	var small *fileio.Small
	var src io.ReaderAt
	curIdx := -1
	closeCur := func() {
		if cur != nil {
			rd.Close()
			cur.Close()
			cur = nil
		}
		if small != nil {
			small.Close()
			small = nil
		}
	}
	defer closeCur()
	for ; ok; fi, ci, moved, ok = tx.sched.take(ws) {
		if fi != curIdx {
			closeCur()
			lf := &tx.files[fi]
			if lf.Size < directio.Min {
				if small, err = tx.folders.OpenSmall(lf.root.dir, lf.local()); err != nil {
					small = nil
					if err := tx.giveUp(tx.unreadable(fi, err)); err != nil {
						return err
					}
					curIdx = -1 // src is closed: whatever comes next is opened
					continue
				}
				src = small
			} else {
				if cur, err = os.Open(lf.src()); err != nil {
					cur = nil
					if err := tx.giveUp(tx.unreadable(fi, err)); err != nil {
						return err
					}
					curIdx = -1 // src is closed: whatever comes next is opened
					continue
				}
				rd = fileio.NewReader(cur, tx.io)
				src = rd
			}
			curIdx = fi
		}
		mode := sendFresh
		if moved {
			mode = sendMoved
		}
		if err := tx.waitSame(ctx, fi, ci, w); err != nil {
			return nilIfDone(ctx, err)
		}
		if err := tx.sendChunk(w, src, fi, ci, buf, hasher, mode, ps); err != nil {
			if err = tx.giveUp(err); err != nil {
				return nilIfDone(ctx, err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		return nilIfDone(ctx, err)
	}
	return s.Close()
}

// frameBuffer holds one data frame: a header, then a chunk that starts
// directio.Align-aligned, so whole chunks can be direct reads.
func frameBuffer(chunkSize int) []byte {
	return directio.Buffer(directio.Align + chunkSize)[directio.Align-wire.DataHeaderLen:]
}

// How sendChunk sends: a chunk's first time, again because the receiver
// asked (its root went already), or again after a switch of transport (the
// first copy may be stuck on the old one, and its root with it).
type sendMode int

const (
	sendFresh sendMode = iota
	sendResend
	sendMoved
)

// sendChunk reads chunk ci of file fi, hashes it, writes the frame, and
// announces the file's root once all its chunks were read. With ps (a
// receiver that takes packed chunks, packing.go) the chunk travels packed
// while its session's gate says so, and tells the gate what it took.
func (tx *sender) sendChunk(w *bufio.Writer, f io.ReaderAt, fi, ci int, buf []byte, hasher *merkle.Hasher, mode sendMode, ps *packStream) error {
	var start time.Time
	var blocked time.Duration
	if ps != nil {
		start, blocked = time.Now(), ps.blocked
	}
	resend := mode == sendResend
	if !resend && tx.zerosFirst && len(tx.zeros[fi]) > 0 {
		if err := tx.sendZeros(w, fi, buf); err != nil {
			return err
		}
	}
	lf := tx.files[fi]
	n := merkle.ChunkLen(lf.Size, tx.chunkSize, ci)
	data := buf[wire.DataHeaderLen : wire.DataHeaderLen+n]
	// Resume: a chunk the receiver holds is not sent; the root still needs
	// its leaf, which the sender's leaf cache usually has (else: read and hash).
	var have []byte
	if h := tx.haves[uint32(fi)]; h != nil {
		have = h.Chunks
	}
	held := !resend && have != nil && ci/8 < len(have) && have[ci/8]&(1<<(ci%8)) != 0
	leaf, cached := tx.cache.Leaf(fi, ci)
	if !held || !cached {
		if _, err := f.ReadAt(data, int64(ci)*int64(tx.chunkSize)); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
			if errors.Is(err, io.EOF) {
				err = errors.New("it became shorter while it was being sent")
			}
			return tx.unreadable(fi, err)
		}
		leaf = hasher.Leaf(data)
		if tx.chunks(fi) > 1 {
			tx.cache.Add(fi, ci, leaf)
		}
	}
	same := !held && !resend && tx.sameAs(fi, ci, leaf)
	if !held && !same {
		var packed []byte
		var packTime time.Duration
		ok := false
		if ps != nil && ps.worth(fi, ci) {
			packed, packTime, ok = ps.pack(fi, ci, data)
		}
		if ok {
			wire.DataHeader{File: uint32(fi), Chunk: uint32(ci), Length: uint32(len(packed)), Packed: true, Leaf: leaf}.Put(buf)
			if _, err := w.Write(buf[:wire.DataHeaderLen]); err != nil {
				return err
			}
			if _, err := w.Write(packed); err != nil {
				return err
			}
			tx.packed.Add(int64(n))
			tx.packedTo.Add(int64(len(packed)))
		} else {
			wire.DataHeader{File: uint32(fi), Chunk: uint32(ci), Length: uint32(n), Leaf: leaf}.Put(buf)
			if _, err := w.Write(buf[:wire.DataHeaderLen+n]); err != nil {
				return err
			}
		}
		if ps != nil {
			now := time.Now()
			onWire := wire.DataHeaderLen + n
			if ok {
				onWire = wire.DataHeaderLen + len(packed)
			}
			ps.gate.Sent(now, pack.Sample{Bytes: n, Wire: onWire, Busy: now.Sub(start), Blocked: ps.blocked - blocked, Packed: ok, PackTime: packTime})
		}
	}
	switch {
	case resend:
		tx.resent.Add(int64(n))
		return w.Flush()
	case mode == sendMoved:
		tx.resent.Add(int64(n))
	case held:
		tx.skipped.Add(int64(n))
	case same:
		// Counted once per chunk, when it is marked (markSame).
	default:
		tx.sent.Add(int64(n))
	}
	// The root is read under the lock too: in the endgame another stream
	// may set a leaf of the same file (its straggler's copy) meanwhile.
	tx.mu.Lock()
	fl := tx.leavesOf(fi)
	if fl == nil {
		tx.mu.Unlock()
		return nil // resolved meanwhile: its root went out with its last chunk
	}
	tree := fl.tree
	tree.Set(ci, leaf)
	if same && fl.markSame(ci, tx.chunks(fi)) {
		tx.skipped.Add(int64(n))
		tx.sameBytes.Add(int64(n))
	}
	complete := tree.Missing() == 0
	var root merkle.Hash
	var zeroed int64
	var sameRuns []wire.ZeroRun
	if complete {
		root, _ = tree.Root()
		zeroed, fl.zeros = fl.zeros, 0
		sameRuns = bitmapRuns(fl.same, tx.chunks(fi))
	}
	tx.mu.Unlock()
	if complete && tx.chunks(fi) > 1 {
		if err := tx.unchanged(fi); err != nil {
			return err
		}
	}
	if complete && len(sameRuns) > 0 {
		if err := tx.sendSameRuns(w, fi, sameRuns, buf); err != nil {
			return err
		}
	}
	if complete {
		// To a receiver that takes them, the runs of chunks of zeros that
		// were not sent follow the root (peerZeros).
		runs := tx.zeros[fi]
		wire.DataHeader{File: uint32(fi), Chunk: wire.RootChunk, Length: uint32(len(runs) * wire.ZeroRunLen), Leaf: root}.Put(buf)
		if _, err := w.Write(buf[:wire.DataHeaderLen]); err != nil || len(runs) == 0 {
			return err
		}
		_, err := w.Write(wire.AppendZeroRuns(buf[:0], runs))
		tx.zeroed.Add(zeroed)
		return err
	}
	return nil
}

// sendZeros writes file fi's zeros frame (wire.ZerosChunk: the runs of its
// chunks of zeros, which are not sent) before its first chunk, once, so the
// receiver counts them from the start of the file, as this sender's
// progress does, where both counted them only at its root frame (which
// names them again: a receiver takes them from whichever comes first).
func (tx *sender) sendZeros(w *bufio.Writer, fi int, buf []byte) error {
	tx.mu.Lock()
	fl := tx.leavesOf(fi)
	if fl == nil || fl.zerosSent {
		tx.mu.Unlock()
		return nil
	}
	fl.zerosSent = true
	zeroed := fl.zeros
	fl.zeros = 0
	tx.mu.Unlock()
	runs := tx.zeros[fi]
	wire.DataHeader{File: uint32(fi), Chunk: wire.ZerosChunk, Length: uint32(len(runs) * wire.ZeroRunLen)}.Put(buf)
	if _, err := w.Write(buf[:wire.DataHeaderLen]); err != nil {
		return err
	}
	_, err := w.Write(wire.AppendZeroRuns(buf[:0], runs))
	tx.zeroed.Add(zeroed)
	return err
}

// readControl handles the receiver's messages until its final result.
func (tx *sender) readControl(ctx context.Context) error {
	for {
		m, err := tx.ctl.recv()
		if err != nil {
			return nilIfDone(ctx, controlErr(err))
		}
		switch m := m.(type) {
		case *wire.FileResult:
			if int(m.File) >= len(tx.sending) || tx.sending[m.File] == fileNotSent {
				return fmt.Errorf("%w: result for file %d, which is not being sent", wire.ErrProtocol, m.File)
			}
			if !tx.sched.noteResolved(int(m.File)) {
				return fmt.Errorf("%w: a second result for file %d", wire.ErrProtocol, m.File)
			}
			tx.resolved.Add(1)
			lf := tx.files[m.File]
			fr := &FileResult{Path: lf.Path, Size: lf.Size, Verified: m.OK, Err: m.Reason}
			tx.mu.Lock()
			why, unsent := tx.unsent[int(m.File)]
			tx.mu.Unlock()
			if unsent {
				if m.OK {
					return fmt.Errorf("%w: file %d saved, though it was not sent", wire.ErrProtocol, m.File)
				}
				fr.Err = why // this device's words, not the receiver's
			}
			if m.OK {
				tx.verified.Add(1)
				if m.SavedAs != lf.Path {
					fr.SavedAs = m.SavedAs
				}
			}
			tx.mu.Lock()
			if fl := tx.leaves[int(m.File)]; fl != nil && m.OK {
				if root, err := fl.tree.Root(); err == nil {
					fr.Root = hex.EncodeToString(root[:])
				}
			}
			tx.sending[m.File] = fileSettled
			delete(tx.leaves, int(m.File))
			delete(tx.same, int(m.File)) // its leaves are not needed any more
			tx.mu.Unlock()
			tx.e.publishFile(tx.t, int(m.File), fr)
		case *wire.Same:
			if err := tx.heldLeaves(m); err != nil {
				return err
			}
		case *wire.NeedChunk:
			if int(m.File) >= len(tx.sending) || tx.sending[m.File] == fileNotSent || int(m.Chunk) >= tx.chunks(int(m.File)) {
				return fmt.Errorf("%w: re-request of chunk %d of file %d", wire.ErrProtocol, m.Chunk, m.File)
			}
			// A receiver gives up on a chunk after maxChunkRetries bad
			// copies; one that keeps asking is not receiving.
			if tx.asked == nil {
				tx.asked = map[[2]uint32]int{}
			}
			key := [2]uint32{m.File, m.Chunk}
			if tx.asked[key]++; tx.asked[key] > maxChunkRetries {
				return fmt.Errorf("%w: the receiver asked for chunk %d of file %d %d times", wire.ErrProtocol, m.Chunk, m.File, tx.asked[key])
			}
			select {
			case tx.retries <- *m:
			case <-ctx.Done():
				return nil
			}
		case *wire.Result:
			tx.mu.Lock()
			unsent, why := len(tx.unsent), tx.unsentWhy
			tx.mu.Unlock()
			if !m.OK && unsent > 0 && len(tx.accepted)-int(tx.verified.Load()) == unsent {
				// Every file that did not arrive is one this device could not read.
				return &core.NotSentError{Unsent: unsent, Files: len(tx.accepted), Here: true, Why: why}
			}
			if !m.OK {
				code := m.Code
				if code == "" {
					code = wire.CodeVerifyFailed
				}
				return &wire.RemoteError{Code: code, Reason: m.Reason}
			}
			// Success is believed file by file: every accepted file needs
			// its own verified result first.
			if n := int(tx.verified.Load()); n != len(tx.accepted) || m.Verified != n || m.Files != n {
				return fmt.Errorf("%w: the receiver reported success, but verified %d of %d files", wire.ErrProtocol, n, len(tx.accepted))
			}
			tx.delivered.Store(true)
			tx.e.heard(tx.t)
			return errSessionDone
		case *wire.Cancel:
			return &wire.RemoteError{Code: m.Code, Reason: m.Reason}
		default:
			return fmt.Errorf("%w: unexpected %v message", wire.ErrProtocol, m.Type())
		}
	}
}

// serveRetries re-sends chunks the receiver could not verify, on a stream of
// their own opened on first need (the workers' streams may be closed by then).
func (tx *sender) serveRetries(ctx context.Context) error {
	var w *bufio.Writer
	var s Stream
	buf := frameBuffer(tx.chunkSize)
	hasher := merkle.NewHasher()
	for {
		var r wire.NeedChunk
		select {
		case r = <-tx.retries:
		case <-ctx.Done():
			if s != nil {
				s.Close()
			}
			return nil
		}
		if w == nil {
			var err error
			if s, err = tx.conn.OpenStream(ctx); err != nil {
				return nilIfDone(ctx, err)
			}
			w = bufio.NewWriter(s)
			if err := w.WriteByte(wire.KindData); err != nil {
				return nilIfDone(ctx, err)
			}
		}
		f, err := os.Open(tx.files[r.File].src())
		if err != nil {
			if err := tx.giveUp(tx.unreadable(int(r.File), err)); err != nil {
				return err
			}
			continue
		}
		err = tx.sendChunk(w, f, int(r.File), int(r.Chunk), buf, hasher, sendResend, nil)
		f.Close()
		if err != nil {
			if err = tx.giveUp(err); err != nil {
				return nilIfDone(ctx, err)
			}
		}
	}
}

// heard forgets t's delivery as its sender heard the receiver's last word
// on it: every file saved, or the offer refused. The same files sent again
// are then a new delivery.
func (e *Engine) heard(t *Transfer) {
	if e.hearing != nil {
		e.hearing(t)
	}
	t.held.Heard()
}
