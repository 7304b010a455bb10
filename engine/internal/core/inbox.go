package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/manifeststore"
	"github.com/ferrydrop/ferry/engine/internal/resume"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/internal/clock"
	"github.com/ferrydrop/ferry/internal/safetext"
)

// An Inbox is one offer from a peer, whatever protocol carries it. It owns
// what every receiving protocol shares: the limits on what a peer may offer,
// names that cannot be stored (refused one by one), the receiving policy,
// trust, the space check, the prompt, the destination folder, progress, each
// file's outcome and the transfer's end. A protocol session (the Ferry wire
// session in engine/receive.go, LocalSend's in engine/localsend.go) reads the
// offer off its own wire, hands it to Offer, asks Decide, moves the bytes
// into Dest (package store) its own way, and reports each file with Resolved
// and the end with Finish. The engine's transfer behind it is its Host.
type Inbox struct {
	host Host
	cfg  InboxConfig
	peer peer.ID
	// ticket is the offer's standing with the engine's admission: what it
	// may hold until it is decided, and its place among the prompts (issue #14).
	ticket *Ticket

	// Files is the offer's file list (nil until Offer): read through the
	// interface, it may be held on disk beyond a bound (manifeststore).
	Files      FileList
	Text       string // the offer's text item, "" when none
	Refused    []NameRefusal
	refusedIdx map[int]bool
	Accepted   []int // after Decide: the files accepted, in offer order
	// Continues, set before Decide, is the folder of an accepted transfer
	// that this offer continues (the same delivery from the same device,
	// in a new session): Decide takes it there without asking the user
	// again, unless the accept policy now refuses the device.
	Continues string
	// acceptedBytes is the size of the accepted files (Decide).
	acceptedBytes int64
	Dest          *store.Dest
	DestDir       string
	// EmptyFolders is how many empty folders the offer makes, which the
	// space check counts: a block and an entry each (a peer's million empty
	// folders are gigabytes of blocks).
	EmptyFolders int64
	// refused is the offer as Decide refused it unasked, which Finish
	// shows (Host.Unasked) before the result; nil when it was not.
	refused *Prompt
	// Held, when set, returns the disk that an earlier attempt at this
	// offer holds in dir (resume: its saved files and partials, of the
	// files accepted reports), which this attempt reuses or gives back, so
	// the space check does not ask for it again.
	Held       func(dir string, accepted func(idx int) bool) int64
	registered bool
	// Offered: an offer arrived (a probe sends none). Offer sets it; a
	// session that reads an offer in parts sets it at the first.
	Offered bool
	started bool // the offer was accepted and the session counted (see Begin)
	// Bytes counts the payload bytes received, for progress and the result.
	Bytes atomic.Int64
	// Kept counts the bytes of Bytes that were on this device before the
	// session began (resume), for the result.
	Kept atomic.Int64
	// Folders counts the offer's empty folders made here, for the result.
	Folders atomic.Int64

	mu        sync.Mutex // guards the fields below
	resolvedN int
	verified  int
}

// Host is the engine's side of one incoming transfer, as its inbox sees it.
type Host interface {
	// Name is this device's name, as refusals say it.
	Name() string
	// Peer is the other device as the transfer's events show it.
	Peer() PeerInfo
	// Policy is who may send without a prompt, and the download folder.
	Policy() (policy AcceptPolicy, autoTrusted bool, dir string)
	// Named gives the transfer its ID and its delivery's, from the offer.
	Named(id, delivery string)
	// Register makes the transfer known (events, Decide, Cancel). A later
	// session of the same transfer takes over its ID.
	Register() error
	// Queued says that the offer waits for a place among the prompts
	// (Options.MaxPrompts are on screen), with how many offers wait for
	// the user before it, and again, lower, each time it moves up; Ask
	// follows once it has a place. It is called from the session's
	// goroutine, in order, and must not block.
	Queued(ahead int)
	// Ask shows the offer to the user (an offer event) and returns the
	// channel their answer comes on; done says that it is no longer asked.
	Ask(p *Prompt) (answer <-chan Decision, done func())
	// Unasked shows an offer decided without asking, in an offer event
	// that asks nothing, so that rows and history name it: accepted (s
	// StateActive: the accept policy, a transfer accepted before), or
	// refused by this device's checks (s the state its result ends in,
	// which follows at once: a folder that cannot be written, files too
	// large for it, no room, a policy of trusted devices only).
	Unasked(p *Prompt, s State)
	// AlwaysAccept applies a decision's AlwaysAccept to the peer.
	AlwaysAccept()
	// File reports the outcome of file idx (its index in the offer);
	// State the transfer's new state.
	File(idx int, fr *FileResult)
	State(State)
	// Began and Ended count the accepted sessions of the engine; large says
	// the session held a large offer (its memory goes back at once).
	Began()
	Ended(large bool)
	// WatchProgress publishes progress until ctx ends.
	WatchProgress(ctx context.Context, bytes func() int64, total int64, files func() int, totalFiles int)
	// Finish reports the transfer's result.
	Finish(Result)
	// Log is the engine's logger.
	Log() *slog.Logger
}

// InboxConfig is what the engine's options say about receiving.
type InboxConfig struct {
	ManifestBudget int64         // see ManifestCost; engine.Options.ManifestBudget
	PromptTimeout  time.Duration // how long a prompt waits for an answer
	SyncFiles      bool          // fsync each file before its final name
	BufferedIO     bool          // write through the page cache
	Clock          clock.Clock   // runs the prompt's timer
	// FileLimit is the largest file the file system of a folder holds
	// (a FAT stick's 4 GiB); nil: store.MaxFileSize.
	FileLimit func(dir string) store.FileLimit
	// Writable says whether files can be made in a folder (a read-only
	// mount, a folder this user may not write in); nil: store.Writable.
	Writable func(dir string) error
}

// Prompt is an offer as the receiving user is asked about it.
type Prompt struct {
	Count      int
	Files      []FileInfo // the first MaxPromptFiles and every refused one
	Folders    []FolderInfo
	TotalBytes int64
	// DiskBytes is the disk the offer takes here: its files in whole blocks,
	// the folders their paths make and its empty folders (store.Room),
	// which FreeBytes must hold.
	DiskBytes int64
	Dest      string
	FreeBytes int64 // -1 when unknown
	Expires   time.Time
	Text      string
}

// OfferedFile is one file of an incoming offer, as any protocol describes it.
type OfferedFile struct {
	Path string // relative, slash-separated, as the peer sent it
	Size int64
	// Holes is how many of its bytes the sender says are holes, in whole
	// chunks (wire.FileEntry.Holes; 0 from LocalSend and older Ferrys): a
	// destination that keeps holes needs room for the rest only (holeRule).
	Holes int64
}

// holeRule says what an offered file takes on its destination: its data
// alone (Size-Holes) where the sender says it holds holes and the folder's
// file system keeps them (store.KeepsHoles, asked once per folder and only
// for an offer with holes), else its whole size. The receiver takes no more
// data for the file than that (the Ferry receiver's landChunk).
type holeRule struct {
	dir          string
	asked, keeps bool
}

func (h *holeRule) disk(dir string, f OfferedFile) int64 {
	if f.Holes <= 0 || f.Holes > f.Size {
		return f.Size
	}
	if !h.asked || h.dir != dir {
		h.dir, h.asked, h.keeps = dir, true, store.KeepsHoles(dir)
	}
	if !h.keeps {
		return f.Size
	}
	return f.Size - f.Holes
}

// FileList is an offer's file list as the inbox reads it: by index, or
// all in order. The Ferry receiver's spills to disk beyond a bound
// (manifeststore.Store, issue 30); a list held whole in memory is a Files.
// Get and Each fail only when a list kept on disk cannot be read back.
type FileList = manifeststore.List[OfferedFile]

// Files is a FileList held in memory (LocalSend's offers, the outbox's
// own list, tests).
type Files []OfferedFile

func (fs Files) Len() int                       { return len(fs) }
func (fs Files) Get(i int) (OfferedFile, error) { return fs[i], nil }

func (fs Files) Each(f func(i int, f OfferedFile) error) error {
	for i, x := range fs {
		if err := f(i, x); err != nil {
			return err
		}
	}
	return nil
}

// sameNameOf is an offered file's name as the bound on copies of one name
// compares them (store.SameNameKey).
func sameNameOf(f OfferedFile) string { return store.SameNameKey(f.Path) }

// count is the number of offered files (none before Offer).
func (in *Inbox) count() int {
	if in.Files == nil {
		return 0
	}
	return in.Files.Len()
}

// file is offered file i; a list on disk that cannot be read back gives a
// file named after its place, so that a report still says which one.
func (in *Inbox) file(i int) OfferedFile {
	f, err := in.Files.Get(i)
	if err != nil {
		in.host.Log().Warn("offered file list", "file", i, "err", err)
		return OfferedFile{Path: fmt.Sprintf("file %d", i)}
	}
	return f
}

// NameRefusal is one offered file the inbox refused by itself, and why.
type NameRefusal struct {
	Idx    int
	Code   errcode.Code
	Reason string
}

// What a peer can make a receiver hold is bounded (issue #14): the file
// lists of offers take at most Options.ManifestBudget of memory per address
// (issue 30: memory, not a number of files, bounds them; a list the
// receiver keeps on disk beyond a bound is charged to a budget of disk
// apart), and at most MaxRefusals files can be refused by name.
const (
	// DefaultManifestBudget is Options.ManifestBudget's default. A Ferry
	// offer of the protocol's million files takes about 40 MB of it
	// (ManifestFileCost per file and the part of its list kept in memory).
	DefaultManifestBudget = 128 << 20
	// ManifestFileCost is what stays in the receiver's memory per offered
	// file however its list is kept: the session's status byte, the index
	// of an accepted file (8 bytes), the duplicate check's hash and index
	// (16 bytes while the offer is checked), the decision's index (4) and
	// the spilled list's index (one 8-byte offset per 64 files). The names
	// are charged apart: those in memory as held, those on disk to the
	// disk budget. Measured: docs/benchmarks/trees.md (10^6 files). The
	// per-file state of a file being received is bounded apart
	// (maxLiveFiles).
	ManifestFileCost = 32
	// HeldFileCost is what a file costs in memory when its protocol holds
	// the whole list as decoded (LocalSend's offers: the request's JSON
	// entry, its session's table and the inbox's copy), as the Ferry
	// receiver's list cost before it spilled (measured then: 1 KiB).
	HeldFileCost = 1024
	// MaxRefusals and MaxRefusalLen bound the files refused by name and
	// each one's reason; MaxTextLen an offer's text item. They are Ferry's
	// wire limits too (engine checks that they agree).
	MaxRefusals   = 1000
	MaxRefusalLen = 256
	MaxTextLen    = 64 << 10
	// MaxPromptFiles bounds the files an offer event lists: a prompt shows
	// a summary of a large offer (its folders), not a million lines.
	MaxPromptFiles = 1000
	// BigManifest is the offer size from which the end of a session
	// returns freed memory to the system at once.
	BigManifest = 10_000
)

// NewInbox starts the receiving side of an exchange with peer, reporting
// to host; tk is its standing with the admission (nil: none).
func NewInbox(host Host, peer peer.ID, tk *Ticket, cfg InboxConfig) *Inbox {
	return &Inbox{host: host, cfg: cfg, peer: peer, ticket: tk}
}

// ManifestCost is what a file list of files files costs the receiver's
// memory, mem being what its list keeps in memory (its names and entries
// up to a bound; see ManifestFileCost).
func ManifestCost(files int, mem int64) int64 { return int64(files)*ManifestFileCost + mem }

// HeldCost is what a file list held whole in memory costs, with names bytes
// of names (see HeldFileCost).
func HeldCost(files int, names int64) int64 { return int64(files)*HeldFileCost + names }

// IsRefused says whether offered file i was refused by name.
func (in *Inbox) IsRefused(i int) bool { return in.refusedIdx[i] }

// Ticket is the offer's standing with the admission (nil: none).
func (in *Inbox) Ticket() *Ticket { return in.ticket }

// CheckCost refuses an offer whose file list takes more memory (cost, as
// ManifestCost or HeldCost says) than this device holds for one address,
// as soon as that is known.
func (in *Inbox) CheckCost(cost int64) error {
	if cost > in.cfg.ManifestBudget {
		return in.TooLarge()
	}
	return nil
}

// Offer takes the offer's delivery ID (see Transfer.Delivery), its files
// and its text item ("" when none). Every session of one delivery (a
// reconnect, a Retry) has the same transfer ID, so a resumed delivery is
// the same transfer; another delivery of the same files is another
// transfer, even where it resumes the same partial data. Names that cannot
// be stored are refused one by one; an offer over the limits, or with
// neither a file left nor a text, is refused whole.
func (in *Inbox) Offer(delivery string, files FileList, text string) error {
	in.Offered = true
	if files == nil {
		files = Files(nil)
	}
	if err := CheckDelivery(delivery); err != nil {
		return err
	}
	// Derived from the peer: no peer can take the ID of another's transfer.
	in.host.Named("r-"+resume.Key(in.peer.String(), delivery), delivery)
	if err := in.CheckCost(ManifestCost(files.Len(), 0)); err != nil {
		return err
	}
	if err := CheckText(in.host.Name(), text); err != nil {
		return err
	}
	if files.Len() == 0 && text == "" {
		return fmt.Errorf("%w: the offer holds neither a file nor a text", errcode.ErrProtocol)
	}
	in.Text = text
	in.Files = files
	tooMany := &RefusedError{Code: errcode.CodeBadName, Reason: fmt.Sprintf("over %d of the offered names cannot be stored on %s", MaxRefusals, in.host.Name())}
	// The names are read once, in order, from wherever the list is kept
	// (the caller bounded their bytes as they arrived): each is checked,
	// and hashed for the duplicates below.
	hashes := manifeststore.NewNameHashes(files.Len())
	err := files.Each(func(i int, f OfferedFile) error {
		hashes.Add(i, store.SameNameKey(f.Path))
		// A name we cannot store safely refuses that file, not the offer.
		var ne *store.NameError
		if err := store.ValidateReceived(f.Path); errors.As(err, &ne) {
			in.Refuse(i, errcode.CodeBadName, ne.Reason)
		} else if err != nil {
			in.Refuse(i, errcode.CodeBadName, "the name cannot be stored")
		}
		if len(in.Refused) > MaxRefusals {
			return tooMany
		}
		return nil
	})
	if err != nil {
		return err
	}
	// A name the offer has more than once is received each time, as a name
	// taken here is: the later ones get a number (their partials are
	// created exclusively, a final name never overwrites), as names that
	// differ only in case do on a case-insensitive file system. LocalSend
	// apps send two "report.pdf" picked from two folders so. Beyond
	// MaxSameName of one name the rest are refused: each copy tries the
	// numbers before it, so a peer's million copies would cost 10^12 tries.
	// Names count as one where they may be saved as one (store.SameNameKey:
	// "A.txt" and "a.TXT" on a file system that ignores case, a Mac's
	// decomposed "café.txt" and a composed one), or a million spellings of
	// a name would cost as much. Found with a hash per name, not a set of
	// the names.
	dups, err := manifeststore.CopiesBeyond(hashes, files, sameNameOf, MaxSameName)
	if err != nil {
		return err
	}
	for _, i := range dups {
		if !in.refusedIdx[i] {
			in.Refuse(i, errcode.CodeBadName, fmt.Sprintf("the offer names this file more than %d times", MaxSameName))
		}
	}
	slices.SortFunc(in.Refused, func(a, b NameRefusal) int { return cmp.Compare(a.Idx, b.Idx) })
	if len(in.Refused) > MaxRefusals {
		return tooMany
	}
	if len(in.Refused) > 0 && len(in.Refused) == files.Len() && text == "" {
		r := in.Refused[0]
		more := ""
		switch n := len(in.Refused) - 1; {
		case n == 1:
			more = " (so is the 1 other name)"
		case n > 1:
			more = fmt.Sprintf(" (so are the %d other names)", n)
		}
		// The sender reads it within errcode.MaxReason bytes: the name
		// gives way, so that why it was refused arrives whole (a path of
		// 200 bytes left nothing of it).
		why := ": " + r.Reason + more
		room := errcode.MaxReason - len(errcode.ErrBadName.Error()) - len(": ") - len(why)
		name := safetext.Elide(safetext.Name(in.file(r.Idx).Path), max(room, minRefusedName))
		return fmt.Errorf("%w: %s%s", errcode.ErrBadName, name, why)
	}
	return nil
}

// TooLargeFor is how many offered files not refused yet are over the
// largest file dir's file system holds, which Decide will refuse there
// (refuseTooLarge): an earlier session of the offer accepted all the rest.
func (in *Inbox) TooLargeFor(dir string) int {
	limit := in.fileLimit(dir)
	n := 0
	if limit.Max == 0 {
		return 0
	}
	_ = in.Files.Each(func(i int, f OfferedFile) error {
		if !in.refusedIdx[i] && limit.Refuses(f.Size) {
			n++
		}
		return nil
	})
	return n
}

// fileLimit is the largest file dir's file system holds (InboxConfig.FileLimit).
func (in *Inbox) fileLimit(dir string) store.FileLimit {
	if in.cfg.FileLimit != nil {
		return in.cfg.FileLimit(dir)
	}
	return store.MaxFileSize(dir)
}

// refuseTooLarge refuses each offered file over the largest file dir's
// file system holds (FileLimit: a FAT stick's 4 GiB), with why, before
// anyone is asked: written, it failed once its bytes had crossed. When it
// refuses the offer whole (every file refused, and no text, or over
// MaxRefusals), it returns that verdict and true.
func (in *Inbox) refuseTooLarge(dir string) (Verdict, bool) {
	limit := in.fileLimit(dir)
	if limit.Max == 0 {
		return Verdict{}, false
	}
	first, over := -1, 0
	err := in.Files.Each(func(i int, f OfferedFile) error {
		if !in.refusedIdx[i] && limit.Refuses(f.Size) {
			in.Refuse(i, errcode.CodeNoSpace, limit.Reason(f.Size))
			over++
			if first < 0 {
				first = i
			}
		}
		return nil
	})
	if first < 0 && err == nil {
		return Verdict{}, false
	}
	slices.SortFunc(in.Refused, func(a, b NameRefusal) int { return cmp.Compare(a.Idx, b.Idx) })
	switch {
	case err != nil:
		return Verdict{Decision: Decision{Reason: "its file list could not be read"}, Code: errcode.CodeIO}, true
	case len(in.Refused) > MaxRefusals:
		// Too many to refuse one by one: refused whole, in the words of
		// the limit (overFileLimit reads them), not of a want of space
		// that freeing some would mend.
		beyond := fmt.Sprintf("over the %d one offer may leave out", MaxRefusals)
		if n := len(in.Refused) - over; n > 0 {
			beyond = fmt.Sprintf("with %d names it cannot store, over the %d one offer may leave out", n, MaxRefusals)
		}
		why := fmt.Sprintf("%d of the offered files (%s): %s", over, beyond, limit.Words())
		if len(in.Refused) < in.Files.Len() {
			why += "; send the others without them"
		}
		return Verdict{Decision: Decision{Reason: why}, Code: errcode.CodeNoSpace}, true
	case len(in.Refused) == in.Files.Len() && in.Text == "":
		f := in.file(first)
		why := ": " + limit.Reason(f.Size)
		room := errcode.MaxReason - len(errcode.ErrNoSpace.Error()) - len(": ") - len(why)
		name := safetext.Elide(safetext.Name(f.Path), max(room, minRefusedName))
		return Verdict{Decision: Decision{Reason: name + why}, Code: errcode.CodeNoSpace}, true
	}
	return Verdict{}, false
}

// refuseUnwritable refuses the offer whole, before anyone is asked, when
// files cannot be made in dir (InboxConfig.Writable: a folder mounted
// read-only, or one this user may not write in since it was chosen):
// accepted, every file failed once its bytes had crossed ("none of the 2
// files could be saved; the first: permission denied"). The sender reads
// that its files could not be saved (verify_failed, which no sender tries
// again), without the folder; this device's user reads which folder.
func (in *Inbox) refuseUnwritable(dir string) (Verdict, bool) {
	n := in.Files.Len() - len(in.Refused)
	if n <= 0 && in.EmptyFolders == 0 {
		return Verdict{}, false // a text alone, or nothing left to save
	}
	check := store.Writable
	if in.cfg.Writable != nil {
		check = in.cfg.Writable
	}
	err := check(dir)
	if err == nil {
		return Verdict{}, false
	}
	n = max(n, 1)
	why := err.Error() // "the download folder cannot be written (read-only file system)"
	here := strings.Replace(why, "the download folder", "the download folder "+dir, 1)
	return Verdict{Decision: Decision{Reason: (&NotSavedError{Failed: n, Files: n, Cause: why, Every: true}).Error()},
		Code: errcode.CodeVerifyFailed, Local: &NotSavedError{Failed: n, Files: n, Cause: here, Here: true, Every: true}}, true
}

// minRefusedName is the least of a refused name an offer's refusal shows,
// however long why it was refused is.
const minRefusedName = 40

// MaxDeliveryID bounds a delivery ID from a peer (Ferry's are 24 hex digits).
const MaxDeliveryID = 64

// CheckDelivery checks a delivery ID from a peer: 1 to MaxDeliveryID
// letters, digits, '-' or '_', so it can be shown, logged and stored as is.
func CheckDelivery(id string) error {
	if id == "" || len(id) > MaxDeliveryID {
		return fmt.Errorf("%w: a delivery ID of %d bytes (1 to %d expected)", errcode.ErrProtocol, len(id), MaxDeliveryID)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return fmt.Errorf("%w: the delivery ID has a byte 0x%02x (letters, digits, '-' and '_' expected)", errcode.ErrProtocol, c)
		}
	}
	return nil
}

// TooLarge refuses an offer whose file list takes more memory than this
// device holds for one address.
func (in *Inbox) TooLarge() error {
	return &RefusedError{Code: errcode.CodeTooLarge, Reason: fmt.Sprintf(
		"%s takes file lists of at most %s in one transfer (in its memory), and this one is larger (send the folder in parts or as an archive)",
		in.host.Name(), HumanBytes(in.cfg.ManifestBudget))}
}

// HumanBytes writes n as a user reads it: "4 KB", "16 MB", "1.5 GB".
func HumanBytes(n int64) string {
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

// CheckText bounds an offer's text item, whichever protocol carried it;
// name is this device's.
func CheckText(name, text string) error {
	if len(text) > MaxTextLen {
		return &RefusedError{Code: errcode.CodeTooLarge, Reason: fmt.Sprintf(
			"%s takes at most %d KB of text in one offer, and this text has %d bytes (send it as a file)", name, MaxTextLen>>10, len(text))}
	}
	if !utf8.ValidString(text) {
		return fmt.Errorf("%w: the offered text is not valid UTF-8", errcode.ErrProtocol)
	}
	return nil
}

// Refuse records that offered file idx will not be accepted, whatever the
// user decides: the rest of the offer goes on.
func (in *Inbox) Refuse(idx int, code errcode.Code, reason string) {
	if len(reason) > MaxRefusalLen {
		reason = reason[:MaxRefusalLen]
		for !utf8.ValidString(reason) {
			reason = reason[:len(reason)-1]
		}
	}
	if in.refusedIdx == nil {
		in.refusedIdx = map[int]bool{}
	}
	in.refusedIdx[idx] = true
	in.Refused = append(in.Refused, NameRefusal{Idx: idx, Code: code, Reason: reason})
}

// Register makes the transfer known (events, Decide, Cancel). A later
// session of the same transfer takes over its ID.
func (in *Inbox) Register() error {
	if err := in.host.Register(); err != nil {
		return err
	}
	in.registered = true
	return nil
}

// Verdict is the answer to an offer, with the code of a refusal.
type Verdict struct {
	Decision
	Code errcode.Code
	// Local, when set, is the refusal in this device's words where they
	// say more than the peer's (Reason): the folder, which the peer is
	// not told. It matches Code's sentinel.
	Local error
}

// Err is a refusal this side decided (policy, prompt, space): the
// receiver's own end, not the peer's.
func (v Verdict) Err() error {
	if v.Local != nil {
		return v.Local
	}
	return &RefusedError{Code: v.Code, Reason: v.Reason}
}

// Refusal is the verdict that refuses an offer with one of the admission's errors.
func Refusal(err *errcode.RemoteError) Verdict {
	return Verdict{Decision: Decision{Reason: err.Reason}, Code: err.Code}
}

// RefusedError is an offer this side refused (a limit, the policy, the
// prompt, the space check), with the code and the words the sender is told.
// It matches the code's sentinel (errors.Is).
type RefusedError struct {
	Code   errcode.Code
	Reason string
}

func (e *RefusedError) Error() string {
	if e.Reason == "" {
		return CodeSentinel(e.Code).Error()
	}
	return CodeSentinel(e.Code).Error() + ": " + e.Reason
}

func (e *RefusedError) Unwrap() error { return CodeSentinel(e.Code) }

// MaxSameName is how many files of one name an offer may have: each is
// received, the later ones numbered ("report (1).pdf").
const MaxSameName = 16

// Decide applies the accept policy, asking the user when it says so; on
// acceptance it opens the destination and fills in.Accepted.
func (in *Inbox) Decide(ctx context.Context) (Verdict, error) {
	policy, autoTrusted, dir := in.host.Policy()
	trusted := in.host.Peer().Trusted
	if in.Continues != "" {
		dir = in.Continues // where what arrived so far is
	}
	if v, refused := in.refuseUnwritable(dir); refused {
		return in.refuseUnasked(v, dir, -1, 0), nil
	}
	if v, refused := in.refuseTooLarge(dir); refused {
		return in.refuseUnasked(v, dir, -1, 0), nil
	}
	var total int64
	var holes holeRule
	room := in.room()
	if err := in.Files.Each(func(i int, f OfferedFile) error {
		if !in.refusedIdx[i] {
			total += f.Size
			room.FileAt(f.Path, holes.disk(dir, f))
		}
		return nil
	}); err != nil {
		return Verdict{}, err
	}
	free, _ := store.FreeSpace(dir)
	// An offer that cannot fit is refused before anyone is asked, with the
	// figures: a "yes" could not be kept.
	offered := func(i int) bool { return !in.refusedIdx[i] }
	want := in.needs(dir, room, offered)
	if err := NoRoom(dir, want); err != nil {
		return in.refuseUnasked(noSpace(err), dir, free, want.Disk), nil
	}

	var d Verdict
	asked := false
	switch {
	case policy == AcceptAll, policy == AcceptTrusted && trusted, policy == AcceptAsk && autoTrusted && trusted:
		d.Accept = true
	case policy == AcceptTrusted:
		return in.refuseUnasked(Verdict{Decision: Decision{Reason: "this device only accepts files from trusted devices"}, Code: errcode.CodeUntrusted}, dir, free, want.Disk), nil
	case in.Continues != "":
		d.Accept, d.Dest = true, in.Continues // accepted before, by the user
	default:
		var err error
		asked = true
		d, err = in.ask(ctx, dir, total, want.Disk, free)
		if err != nil {
			return d, err
		}
	}
	if !d.Accept {
		return d, nil
	}
	if d.Dest != "" && d.Dest != dir {
		// This offer goes where the user chose (Decide checked the folder),
		// maybe a stick that holds smaller files.
		dir = d.Dest
		if v, refused := in.refuseUnwritable(dir); refused {
			return v, nil
		}
		if v, refused := in.refuseTooLarge(dir); refused {
			return v, nil
		}
	}
	// Narrow to the accepted files, then check space for exactly those.
	n := in.Files.Len()
	need := total
	chosen := offered
	if d.Files != nil {
		room = in.room()
	} else if holes.asked && holes.dir != dir {
		// Another folder, maybe on another file system: its holes count.
		room = in.room()
		if err := in.Files.Each(func(i int, f OfferedFile) error {
			if !in.refusedIdx[i] {
				room.FileAt(f.Path, holes.disk(dir, f))
			}
			return nil
		}); err != nil {
			return d, err
		}
	}
	var accepted []int
	if d.Files == nil {
		accepted = make([]int, 0, n-len(in.Refused))
		for i := range n {
			if !in.refusedIdx[i] {
				accepted = append(accepted, i)
			}
		}
	} else {
		accepted = make([]int, 0, len(d.Files))
		need = 0
		picked := make([]bool, n)
		chosen = func(i int) bool { return picked[i] }
		for _, i := range d.Files {
			if i < 0 || i >= n {
				return d, fmt.Errorf("decision names file %d of %d", i, n)
			}
			if !in.refusedIdx[i] {
				accepted = append(accepted, i)
				picked[i] = true
				f, err := in.Files.Get(i)
				if err != nil {
					return d, err
				}
				need += f.Size
				room.FileAt(f.Path, holes.disk(dir, f))
			}
		}
	}
	if len(in.Refused) > 0 {
		d.Files = accepted // "all" no longer means every offered file
	}
	if err := NoRoom(dir, in.needs(dir, room, chosen)); err != nil {
		return noSpace(err), nil
	}
	dest, err := store.Open(dir)
	if err != nil {
		// Refused in words, on both sides: the folder chosen was replaced
		// by a file or made unreadable since (it was "Read or write error:
		// download folder: store: open "/x": mkdir /x: not a directory").
		return Verdict{Decision: Decision{Reason: in.host.Name() + " cannot save files: " + unusableFolder(dir, err)}, Code: errcode.CodeIO}, nil
	}
	dest.SyncOnFinalize = in.cfg.SyncFiles
	dest.SetBufferedIO(in.cfg.BufferedIO)
	in.Dest, in.DestDir, in.Accepted, in.acceptedBytes = dest, dir, accepted, need
	if d.AlwaysAccept {
		in.host.AlwaysAccept()
	}
	if !asked {
		p := &Prompt{TotalBytes: need, DiskBytes: want.Disk, Dest: dir, FreeBytes: free, Text: in.Text}
		if free < 0 {
			p.FreeBytes = -1
		}
		p.Count, p.Files, p.Folders = in.summary()
		in.host.Unasked(p, StateActive)
	}
	return d, nil
}

// refuseUnasked keeps the offer that v refuses before anyone is asked,
// as its prompt would have shown it, for Finish to show before the result:
// the row and history then name what was refused ("a.txt · 5 MB"), where
// they read "1 file". Its size is the whole offer's (what was refused),
// refused names and all; free is -1 and disk 0 where they were not
// measured yet.
func (in *Inbox) refuseUnasked(v Verdict, dir string, free, disk int64) Verdict {
	p := &Prompt{TotalBytes: in.offeredBytes(), DiskBytes: disk, Dest: dir, FreeBytes: max(free, -1), Text: in.Text}
	p.Count, p.Files, p.Folders = in.summary()
	in.refused = p
	return v
}

// offeredBytes is the size of every offered file.
func (in *Inbox) offeredBytes() int64 {
	var n int64
	if in.Files != nil {
		in.Files.Each(func(_ int, f OfferedFile) error {
			n += f.Size
			return nil
		})
	}
	return n
}

// ask asks the user (Host.Ask) and waits for the answer, the prompt
// timeout, or the end.
func (in *Inbox) ask(ctx context.Context, dir string, total, disk, free int64) (Verdict, error) {
	place, refused := in.ticket.Prompt(ctx, in.host.Queued)
	if refused != nil && ctx.Err() != nil {
		// It waited for a place until the session ended (the sender went
		// away, this device closes): that ends it as it ends an offer on
		// screen, not as a busy refusal, which its sender does not try
		// again and this device's history would keep.
		return Verdict{}, context.Cause(ctx)
	}
	if refused != nil {
		return Refusal(refused), nil
	}
	defer place.Release()
	p := &Prompt{TotalBytes: total, DiskBytes: disk, Dest: dir, FreeBytes: free, Expires: in.cfg.Clock.Now().Add(in.cfg.PromptTimeout), Text: in.Text}
	if free < 0 {
		p.FreeBytes = -1
	}
	p.Count, p.Files, p.Folders = in.summary()
	answer, asked := in.host.Ask(p)
	defer asked()
	timer, expired := in.cfg.Clock.NewTimer(in.cfg.PromptTimeout)
	defer timer.Stop()
	select {
	case d := <-answer:
		if !d.Accept && d.Expired {
			return Verdict{Decision: d, Code: errcode.CodeExpired}, nil
		}
		if !d.Accept {
			in.ticket.Declined()
		}
		return Verdict{Decision: d, Code: errcode.CodeDeclined}, nil
	case <-expired:
		return Verdict{Decision: Decision{Reason: fmt.Sprintf("not answered in %v", in.cfg.PromptTimeout.Round(time.Second))},
			Code: errcode.CodeExpired}, nil
	case <-ctx.Done():
		return Verdict{}, context.Cause(ctx)
	}
}

// summary describes the offer for a prompt: its file count, the first
// MaxPromptFiles files and every refused one, and its top-level folders.
func (in *Inbox) summary() (count int, files []FileInfo, folders []FolderInfo) {
	refused := make(map[int]string, len(in.Refused))
	for _, r := range in.Refused {
		refused[r.Idx] = r.Reason
	}
	count, files, folders, err := Summarize(in.Files, refused)
	if err != nil {
		in.host.Log().Warn("offered file list", "err", err) // the prompt shows what was read
	}
	return count, files, folders
}

// Summarize describes files for an offer event, in one pass over them:
// their count, the first MaxPromptFiles and every one in refused (index ->
// why), and their top-level folders with counts and sizes.
func Summarize(all FileList, refused map[int]string) (count int, files []FileInfo, folders []FolderInfo, err error) {
	byName := map[string]int{}
	err = all.Each(func(i int, f OfferedFile) error {
		if why, no := refused[i]; i < MaxPromptFiles || no {
			files = append(files, FileInfo{Index: i, Path: f.Path, Size: f.Size, Refused: why})
		}
		top, _, nested := strings.Cut(f.Path, "/")
		if !nested {
			return nil
		}
		k, ok := byName[top]
		if !ok {
			k = len(folders)
			byName[top] = k
			folders = append(folders, FolderInfo{Path: top})
		}
		folders[k].Files++
		folders[k].Bytes += f.Size
		return nil
	})
	return all.Len(), files, folders, err
}

// unusableFolder says why the download folder dir cannot be opened (err,
// from store.Open): "its download folder /x is a file, not a folder".
func unusableFolder(dir string, err error) string {
	if fi, serr := os.Stat(dir); serr == nil && !fi.IsDir() {
		return "its download folder " + dir + " is a file, not a folder"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return "its download folder " + dir + " cannot be used (" + errno.Error() + ")"
	}
	return "its download folder " + dir + " cannot be used"
}

// noSpace is the refusal of an offer that does not fit: the figures, for
// both sides ("104.9 MB needed, 67.1 MB free"); the sender's words name
// this device, and the folder stays here (the peer need not learn where
// downloads go).
func noSpace(err error) Verdict {
	var se *store.SpaceError
	reason := ""
	if errors.As(err, &se) {
		reason = se.Figures()
	}
	return Verdict{Decision: Decision{Reason: reason}, Code: errcode.CodeNoSpace}
}

// NoRoom returns the *store.SpaceError when dir cannot hold room. A file
// system whose free space cannot be measured accepts blind: writing then
// fails per file with a clear error, which loses nothing.
func NoRoom(dir string, room store.Room) error {
	var se *store.SpaceError
	if err := store.CheckRoom(dir, room); errors.As(err, &se) {
		return se
	}
	return nil
}

// needs is room less what an earlier attempt at the offer holds in dir
// (Held) of the files accepted reports.
func (in *Inbox) needs(dir string, room store.Room, accepted func(int) bool) store.Room {
	if in.Held != nil {
		room.Disk = max(room.Disk-in.Held(dir, accepted), 0)
	}
	return room
}

// room is what the offer takes besides its files: its empty folders.
func (in *Inbox) room() store.Room {
	var r store.Room
	r.Folders(in.EmptyFolders)
	return r
}

// Begin marks the accepted offer as running: the refused files are
// reported, the state turns active, and the session counts toward the
// engine's receiving sessions until Finish.
func (in *Inbox) Begin() {
	in.started = true
	in.host.Began()
	for _, r := range in.Refused {
		f := in.file(r.Idx)
		in.host.File(r.Idx, &FileResult{Path: f.Path, Size: f.Size, Err: RefusalSentence(r.Code, r.Reason)})
	}
	in.host.State(StateActive)
}

// AcceptedBytes is the size of the accepted files.
func (in *Inbox) AcceptedBytes() int64 { return in.acceptedBytes }

// WatchProgress publishes the inbox's progress until ctx ends.
func (in *Inbox) WatchProgress(ctx context.Context) {
	in.host.WatchProgress(ctx, in.Bytes.Load, in.AcceptedBytes(), in.ResolvedCount, len(in.Accepted))
}

// ResolvedCount is how many files are resolved (saved, or failed).
func (in *Inbox) ResolvedCount() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.resolvedN
}

// Resolved reports one file's outcome (saved as savedAs, or failed for
// reason) and returns how many are resolved now.
func (in *Inbox) Resolved(idx int, ok bool, savedAs, root, reason string) int {
	return in.resolved(idx, ok, false, savedAs, root, reason)
}

// ResolvedKept reports a file verified and not saved again: the file
// already under its name (savedAs) holds its bytes, and was kept.
func (in *Inbox) ResolvedKept(idx int, savedAs, root string) int {
	return in.resolved(idx, true, true, savedAs, root, "")
}

func (in *Inbox) resolved(idx int, ok, kept bool, savedAs, root, reason string) int {
	f := in.file(idx)
	fr := &FileResult{Path: f.Path, Size: f.Size, Verified: ok, Err: reason, Root: root, Kept: kept}
	if ok && savedAs != f.Path {
		fr.SavedAs = savedAs
	}
	in.host.File(idx, fr)
	in.mu.Lock()
	defer in.mu.Unlock()
	in.resolvedN++
	if ok {
		in.verified++
	}
	return in.resolvedN
}

// Counts are the files resolved and verified so far.
func (in *Inbox) Counts() (resolved, verified int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.resolvedN, in.verified
}

// Finish ends the inbox: it releases the session's hold on the engine and
// reports the result, in honest words (see EndOf). resumable says whether
// partial data was kept for a later session. A peer that hung up before
// offering anything (a Probe, say) leaves no trace; a malformed offer is
// reported; a session that a newer one of the same transfer took over says
// nothing (the newer one speaks for the transfer).
func (in *Inbox) Finish(err error, resumable bool, r Result) {
	if in.started {
		in.host.Ended(in.count() >= BigManifest)
	}
	if in.Dest != nil {
		in.Dest.Close()
	}
	if errors.Is(err, ErrSuperseded) {
		return
	}
	if !in.registered {
		if !in.Offered && !errors.Is(err, errcode.ErrProtocol) && !errors.Is(err, errcode.ErrBadName) && !errors.Is(err, errcode.ErrTooLarge) {
			in.host.Log().Debug("connection ended before an offer", "peer", in.host.Peer().Addr, "err", err)
			return
		}
		if in.host.Register() != nil {
			return
		}
	}
	EndOf(err, in.host.Peer().Name, resumable).Apply(&r)
	r.Refused = len(in.Refused)
	r.Destination = in.DestDir
	r.Bytes, r.Kept = in.Bytes.Load(), in.Kept.Load()
	r.Folders = int(in.Folders.Load())
	_, r.Verified = in.Counts()
	r.Files, r.TotalBytes = len(in.Accepted), in.AcceptedBytes()
	if in.started {
		r.Text = in.Text // accepted with the offer, whatever became of the files
	} else {
		// Never accepted: say what was offered.
		r.Files, r.TotalBytes = in.count(), in.offeredBytes()
	}
	if in.refused != nil {
		in.host.Unasked(in.refused, r.State)
	}
	in.host.Finish(r)
}
