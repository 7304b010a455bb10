package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/resume"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/safetext"
)

// An inbox is one offer from a peer, whatever protocol carries it. It owns
// what every receiving protocol shares: the limits on what a peer may offer,
// names that cannot be stored (refused one by one), the receiving policy,
// trust, the space check, the prompt, the destination folder, progress, each
// file's outcome and the transfer's end. A protocol session (the Ferry wire
// session in receive.go; another protocol later, beside it) reads the offer
// off its own wire, hands it to offer, asks decide, moves the bytes into
// in.dest (package store) its own way, and reports each file with resolved
// and the end with finish.
type inbox struct {
	e    *Engine
	t    *Transfer
	peer peer.ID
	// ticket is the offer's standing with the engine's admission: what it
	// may hold until it is decided, and its place among the prompts (issue #14).
	ticket *core.Ticket

	files      []offeredFile
	text       string // the offer's text item, "" when none
	refused    []nameRefusal
	refusedIdx map[int]bool
	accepted   []int // after decide: the files accepted, in offer order
	dest       *store.Dest
	destDir    string
	registered bool
	offered    bool // an offer arrived (a probe sends none)
	started    bool // the offer was accepted and the session counted (see begin)
	bytes      atomic.Int64

	mu        sync.Mutex // guards the fields below
	resolvedN int
	verified  int
}

// offeredFile is one file of an incoming offer, as any protocol describes it.
type offeredFile struct {
	Path string // relative, slash-separated, as the peer sent it
	Size int64
}

// nameRefusal is one offered file the inbox refused by itself, and why.
type nameRefusal struct {
	idx    int
	code   wire.Code
	reason string
}

// What a peer can make a receiver hold is bounded (issue #14): chunk
// buffers come from one budget for all sessions (bufpool), each session
// holding at most its quota; the file lists of offers take at most
// Options.ManifestBudget per address (issue 30: memory, not a number of
// files, bounds them), and at most maxRefusals files can be refused by name.
const (
	receiveBufferBudget = 128 << 20 // chunk buffers of all receiving sessions together
	receiveBufferIdle   = 16 << 20  // released buffers kept for the next chunks
	sessionBufferQuota  = 32 << 20  // chunk buffers of one session
	// defaultManifestBudget is Options.ManifestBudget's default: an offer
	// of about 125,000 files (workload D, 105,252 files, takes 114 MB).
	defaultManifestBudget = 128 << 20
	// manifestFileCost is what the receiver's peak memory grows by per
	// offered file, as measured (a million empty files: 978 MiB RSS when
	// the offer was accepted; docs/benchmarks/trees.md): the entry as read
	// and as the inbox keeps it, the name check's map, the decoder's
	// garbage, the resume snapshot listing every file, and the collector's
	// headroom. The per-file state of a file being received is bounded
	// apart (maxLiveFiles).
	manifestFileCost = 1024
	maxRefusals      = wire.MaxRefusals
	maxRefusalLen    = wire.MaxRefusalLen
	// maxPromptFiles bounds the files an offer event lists: a prompt shows
	// a summary of a large offer (its folders), not a million lines.
	maxPromptFiles = 1000
	// bigManifest is the offer size from which the end of a session
	// returns freed memory to the system at once.
	bigManifest = 10_000
)

// newInbox starts the receiving side of an exchange with a peer whose
// identity (and name, as it gave it) is known; conn, when the protocol has
// one, provides the metrics.
func (e *Engine) newInbox(peer peer.ID, name, addr string, conn Conn, tk *core.Ticket) *inbox {
	t := &Transfer{
		id: newTransferID(), dir: Receiving, done: make(chan struct{}), started: e.now(),
		peer: e.peerInfo(peer, name, addr), conn: conn, state: StateWaiting,
		decisions: make(chan Decision, 1),
	}
	return &inbox{e: e, t: t, peer: peer, ticket: tk}
}

// manifestCost is what a file list of files files and names bytes of names
// costs the receiver (see manifestFileCost).
func manifestCost(files int, names int64) int64 { return int64(files)*manifestFileCost + names }

// checkCost refuses an offer whose file list takes more memory than this
// device holds for one address, as soon as that is known.
func (in *inbox) checkCost(files int, names int64) error {
	if manifestCost(files, names) > in.e.opts.ManifestBudget {
		return in.tooLarge()
	}
	return nil
}

// offer takes the offer's delivery ID (see Transfer.Delivery), its files
// and its text item ("" when none). Every session of one delivery (a
// reconnect, a Retry) has the same transfer ID, so a resumed delivery is
// the same transfer; another delivery of the same files is another
// transfer, even where it resumes the same partial data. Names that cannot
// be stored are refused one by one; an offer over the limits, or with
// neither a file left nor a text, is refused whole.
func (in *inbox) offer(delivery string, files []offeredFile, text string) error {
	in.offered = true
	if err := checkDelivery(delivery); err != nil {
		return err
	}
	in.t.mu.Lock()
	// Derived from the peer: no peer can take the ID of another's transfer.
	in.t.id, in.t.delivery = "r-"+resume.Key(in.peer.String(), delivery), delivery
	in.t.mu.Unlock()
	if err := in.checkCost(len(files), 0); err != nil {
		return err
	}
	if err := checkText(in.e.Name(), text); err != nil {
		return err
	}
	if len(files) == 0 && text == "" {
		return fmt.Errorf("%w: the offer holds neither a file nor a text", wire.ErrProtocol)
	}
	in.text = text
	var pathBytes int64
	seen := make(map[string]bool, len(files))
	for i, f := range files {
		if pathBytes += int64(len(f.Path)); manifestCost(len(files), pathBytes) > in.e.opts.ManifestBudget {
			return in.tooLarge()
		}
		// A name we cannot store safely refuses that file, not the offer.
		var ne *store.NameError
		if err := store.ValidateReceived(f.Path); errors.As(err, &ne) {
			in.refuse(i, wire.CodeBadName, ne.Reason)
			continue
		} else if err != nil {
			in.refuse(i, wire.CodeBadName, "the name cannot be stored")
			continue
		}
		// Names differing only in case are both received: on a
		// case-insensitive file system the second gets a number (its
		// partial is created exclusively, its final name never
		// overwrites). The very same name twice is refused.
		if seen[f.Path] {
			in.refuse(i, wire.CodeBadName, "the offer names this file twice")
			continue
		}
		seen[f.Path] = true
	}
	in.files = files
	if len(in.refused) > maxRefusals {
		return &refusedError{code: wire.CodeBadName, reason: fmt.Sprintf("over %d of the offered names cannot be stored on %s", maxRefusals, in.e.Name())}
	}
	if len(in.refused) > 0 && len(in.refused) == len(files) && text == "" {
		r := in.refused[0]
		return fmt.Errorf("%w: %s: %s", wire.ErrBadName, safetext.Name(files[r.idx].Path), r.reason)
	}
	return nil
}

// maxDeliveryID bounds a delivery ID from a peer (Ferry's are 24 hex digits).
const maxDeliveryID = 64

// checkDelivery checks a delivery ID from a peer: 1 to maxDeliveryID
// letters, digits, '-' or '_', so it can be shown, logged and stored as is.
func checkDelivery(id string) error {
	if id == "" || len(id) > maxDeliveryID {
		return fmt.Errorf("%w: a delivery ID of %d bytes (1 to %d expected)", wire.ErrProtocol, len(id), maxDeliveryID)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return fmt.Errorf("%w: the delivery ID has a byte 0x%02x (letters, digits, '-' and '_' expected)", wire.ErrProtocol, c)
		}
	}
	return nil
}

// tooLarge refuses an offer whose file list takes more memory than this
// device holds for one address.
func (in *inbox) tooLarge() error {
	return &refusedError{code: wire.CodeTooLarge, reason: fmt.Sprintf(
		"%s takes file lists of at most %s in one transfer (%d bytes per file and its name), and this one is larger (send the folder in parts or as an archive)",
		in.e.Name(), humanBytes(in.e.opts.ManifestBudget), manifestFileCost)}
}

// humanBytes writes n as a user reads it: "4 KB", "16 MB", "1.5 GB".
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<30)), ".0") + " GB"
	case n >= 1<<20:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<20)), ".0") + " MB"
	case n >= 1<<10:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<10)), ".0") + " KB"
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkText bounds an offer's text item, whichever protocol carried it;
// name is this device's.
func checkText(name, text string) error {
	if len(text) > wire.MaxTextLen {
		return &refusedError{code: wire.CodeTooLarge, reason: fmt.Sprintf(
			"%s takes at most %d KB of text in one offer, and this text has %d bytes (send it as a file)", name, wire.MaxTextLen>>10, len(text))}
	}
	if !utf8.ValidString(text) {
		return fmt.Errorf("%w: the offered text is not valid UTF-8", wire.ErrProtocol)
	}
	return nil
}

// refuse records that offered file idx will not be accepted, whatever the
// user decides: the rest of the offer goes on.
func (in *inbox) refuse(idx int, code wire.Code, reason string) {
	if len(reason) > maxRefusalLen {
		reason = reason[:maxRefusalLen]
		for !utf8.ValidString(reason) {
			reason = reason[:len(reason)-1]
		}
	}
	if in.refusedIdx == nil {
		in.refusedIdx = map[int]bool{}
	}
	in.refusedIdx[idx] = true
	in.refused = append(in.refused, nameRefusal{idx: idx, code: code, reason: reason})
}

// register makes the transfer known (events, Decide, Cancel). A later
// session of the same transfer takes over its ID.
func (in *inbox) register() error {
	if err := in.e.register(in.t); err != nil {
		return err
	}
	in.registered = true
	return nil
}

// decision is the answer to an offer, with the wire code of a refusal.
type decision struct {
	Decision
	code wire.Code
}

// errDecided is a refusal this side decided (policy, prompt, space): the
// receiver's own end, not the peer's.
func errDecided(d decision) error { return &refusedError{code: d.code, reason: d.Reason} }

// refusedError is an offer this side refused (a limit, the policy, the
// prompt, the space check), with the code and the words the sender is told.
// It matches the code's sentinel (errors.Is).
type refusedError struct {
	code   wire.Code
	reason string
}

func (e *refusedError) Error() string {
	if e.reason == "" {
		return core.CodeSentinel(e.code).Error()
	}
	return core.CodeSentinel(e.code).Error() + ": " + e.reason
}

func (e *refusedError) Unwrap() error { return core.CodeSentinel(e.code) }

// decide applies the accept policy, asking the user when it says so; on
// acceptance it opens the destination and fills in.accepted.
func (in *inbox) decide(ctx context.Context) (decision, error) {
	e := in.e
	e.mu.Lock()
	policy, autoTrusted, dir := e.accept, e.autoTrusted, e.downloadDir
	e.mu.Unlock()
	trusted := in.t.peer.Trusted
	var total int64
	for i, f := range in.files {
		if !in.refusedIdx[i] {
			total += f.Size
		}
	}
	free, _ := store.FreeSpace(dir)
	// An offer that cannot fit is refused before anyone is asked, with the
	// figures: a "yes" could not be kept.
	if err := noSpace(dir, total); err != nil {
		return decision{Decision: Decision{Reason: core.Sentence(err)}, code: wire.CodeNoSpace}, nil
	}

	var d decision
	switch {
	case policy == AcceptAll, policy == AcceptTrusted && trusted, policy == AcceptAsk && autoTrusted && trusted:
		d.Accept = true
	case policy == AcceptTrusted:
		return decision{Decision: Decision{Reason: "this device only accepts files from trusted devices"}, code: wire.CodeUntrusted}, nil
	default:
		var err error
		d, err = in.ask(ctx, dir, total, free)
		if err != nil {
			return d, err
		}
	}
	if !d.Accept {
		return d, nil
	}
	if d.Dest != "" {
		// This offer goes where the user chose (Decide checked the folder).
		dir = d.Dest
	}
	// Narrow to the accepted files, then check space for exactly those.
	accepted := make([]int, 0, len(in.files))
	if d.Files == nil {
		for i := range in.files {
			if !in.refusedIdx[i] {
				accepted = append(accepted, i)
			}
		}
	} else {
		for _, i := range d.Files {
			if i < 0 || i >= len(in.files) {
				return d, fmt.Errorf("decision names file %d of %d", i, len(in.files))
			}
			if !in.refusedIdx[i] {
				accepted = append(accepted, i)
			}
		}
	}
	if len(in.refused) > 0 {
		d.Files = accepted // "all" no longer means every offered file
	}
	var need int64
	for _, i := range accepted {
		need += in.files[i].Size
	}
	if err := noSpace(dir, need); err != nil {
		return decision{Decision: Decision{Reason: core.Sentence(err)}, code: wire.CodeNoSpace}, nil
	}
	dest, err := store.Open(dir)
	if err != nil {
		return decision{Decision: Decision{Reason: "cannot open the download folder"}, code: wire.CodeIO}, fmt.Errorf("download folder: %w", err)
	}
	dest.SyncOnFinalize = e.opts.SyncFiles
	dest.SetBufferedIO(e.opts.BufferedIO)
	in.dest, in.destDir, in.accepted = dest, dir, accepted
	if d.AlwaysAccept {
		e.alwaysAccept(in.t, in.peer)
	}
	return d, nil
}

// ask raises an EventOffer and waits for Decide, the prompt timeout, or the end.
func (in *inbox) ask(ctx context.Context, dir string, total, free int64) (decision, error) {
	e := in.e
	place, refused := in.ticket.Prompt(ctx)
	if refused != nil {
		return refusal(refused), nil
	}
	defer place.Release()
	in.t.asking.Store(true)
	defer in.t.asking.Store(false)
	info := &OfferInfo{TotalBytes: total, Dest: dir, FreeBytes: free, Expires: e.now().Add(e.opts.PromptTimeout),
		PairCode: e.untrustedCode(in.t)}
	if free < 0 {
		info.FreeBytes = -1
	}
	info.Count, info.Files, info.Folders = in.summary()
	info.Text = in.text
	e.publish(in.t, Event{Kind: EventOffer, State: StateWaiting, Offer: info})
	timer, expired := e.opts.Clock.NewTimer(e.opts.PromptTimeout)
	defer timer.Stop()
	select {
	case d := <-in.t.decisions:
		if !d.Accept && d.Expired {
			return decision{Decision: d, code: wire.CodeExpired}, nil
		}
		if !d.Accept {
			in.ticket.Declined()
		}
		return decision{Decision: d, code: wire.CodeDeclined}, nil
	case <-expired:
		return decision{Decision: Decision{Reason: fmt.Sprintf("not answered in %v", e.opts.PromptTimeout.Round(time.Second))},
			code: wire.CodeExpired}, nil
	case <-ctx.Done():
		return decision{}, context.Cause(ctx)
	}
}

// summary describes the offer for a prompt: its file count, the first
// maxPromptFiles files and every refused one, and its top-level folders.
func (in *inbox) summary() (count int, files []FileInfo, folders []FolderInfo) {
	refused := make(map[int]string, len(in.refused))
	for _, r := range in.refused {
		refused[r.idx] = r.reason
	}
	return summarize(in.files, refused)
}

// summarize describes files for an offer event: their count, the first
// maxPromptFiles and every one in refused (index -> why), and their
// top-level folders with counts and sizes.
func summarize(all []offeredFile, refused map[int]string) (count int, files []FileInfo, folders []FolderInfo) {
	byName := map[string]int{}
	for i, f := range all {
		if why, no := refused[i]; i < maxPromptFiles || no {
			files = append(files, FileInfo{Index: i, Path: f.Path, Size: f.Size, Refused: why})
		}
		top, _, nested := strings.Cut(f.Path, "/")
		if !nested {
			continue
		}
		k, ok := byName[top]
		if !ok {
			k = len(folders)
			byName[top] = k
			folders = append(folders, FolderInfo{Path: top})
		}
		folders[k].Files++
		folders[k].Bytes += f.Size
	}
	return len(all), files, folders
}

// noSpace returns the *store.SpaceError when dir cannot hold need bytes. A
// file system whose free space cannot be measured accepts blind: writing
// then fails per file with a clear error, which loses nothing.
func noSpace(dir string, need int64) error {
	var se *store.SpaceError
	if err := store.CheckSpace(dir, need); errors.As(err, &se) {
		return se
	}
	return nil
}

// begin marks the accepted offer as running: the refused files are
// reported, the state turns active, and the session counts toward the
// engine's receiving sessions until finish.
func (in *inbox) begin() {
	in.started = true
	in.e.mu.Lock()
	in.e.acceptedSessions++
	in.e.mu.Unlock()
	for _, r := range in.refused {
		f := in.files[r.idx]
		in.e.publish(in.t, Event{Kind: EventFile, File: &FileResult{Path: f.Path, Size: f.Size, Err: core.RefusalSentence(r.code, r.reason)}})
	}
	in.e.setState(in.t, StateActive)
}

// acceptedBytes is the size of the accepted files.
func (in *inbox) acceptedBytes() int64 {
	var n int64
	for _, i := range in.accepted {
		n += in.files[i].Size
	}
	return n
}

// watchProgress publishes the inbox's progress until ctx ends.
func (in *inbox) watchProgress(ctx context.Context) {
	in.e.watchProgress(ctx, in.t, in.bytes.Load, in.acceptedBytes(), func() int {
		in.mu.Lock()
		defer in.mu.Unlock()
		return in.resolvedN
	}, len(in.accepted))
}

// resolved reports one file's outcome (saved as savedAs, or failed for
// reason) and returns how many are resolved now.
func (in *inbox) resolved(idx int, ok bool, savedAs, root, reason string) int {
	f := in.files[idx]
	fr := &FileResult{Path: f.Path, Size: f.Size, Verified: ok, Err: reason, Root: root}
	if ok && savedAs != f.Path {
		fr.SavedAs = savedAs
	}
	in.e.publish(in.t, Event{Kind: EventFile, File: fr})
	in.mu.Lock()
	defer in.mu.Unlock()
	in.resolvedN++
	if ok {
		in.verified++
	}
	return in.resolvedN
}

// counts are the files resolved and verified so far.
func (in *inbox) counts() (resolved, verified int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.resolvedN, in.verified
}

// finish ends the inbox: it releases the session's hold on the engine and
// reports the result, in honest words (see endOf). resumable says whether
// partial data was kept for a later session. A peer that hung up before
// offering anything (a Probe, say) leaves no trace; a malformed offer is
// reported; a session that a newer one of the same transfer took over says
// nothing (the newer one speaks for the transfer).
func (in *inbox) finish(err error, resumable bool, r Result) {
	e := in.e
	if in.started {
		e.mu.Lock()
		e.acceptedSessions--
		last := e.acceptedSessions == 0
		e.mu.Unlock()
		if last {
			// The chunk buffers kept go back to the system, and so does the
			// memory of a large manifest (the runtime would return it only
			// minutes later): a receiver left running goes back to its idle size.
			e.bufs.Trim()
			if len(in.files) >= bigManifest {
				debug.FreeOSMemory()
			}
		}
	}
	if in.dest != nil {
		in.dest.Close()
	}
	if errors.Is(err, errSuperseded) {
		return
	}
	if !in.registered {
		if !in.offered && !errors.Is(err, wire.ErrProtocol) && !errors.Is(err, wire.ErrBadName) && !errors.Is(err, wire.ErrTooLarge) {
			e.log.Debug("connection ended before an offer", "peer", in.t.peer.Addr, "err", err)
			return
		}
		if e.register(in.t) != nil {
			return
		}
	}
	core.EndOf(err, in.t.peer.Name, resumable).Apply(&r)
	r.Refused = len(in.refused)
	r.Destination = in.destDir
	r.Bytes = in.bytes.Load()
	_, r.Verified = in.counts()
	r.Files, r.TotalBytes = len(in.accepted), in.acceptedBytes()
	if in.started {
		r.Text = in.text // accepted with the offer, whatever became of the files
	} else {
		// Never accepted: say what was offered.
		r.Files = len(in.files)
		for _, f := range in.files {
			r.TotalBytes += f.Size
		}
	}
	e.finish(in.t, r)
}
