package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/weblink"
)

// BrowserInbox receives the files of a receive link (package weblink)
// through this engine: the files a browser sends are receiving transfers
// with their events (state, progress, each file, the result, so the app's
// rows and history show them, "from a browser at 192.168.1.23"), the
// download folder, the space check and the safe names of any other
// transfer. The files a page sends together (picked or dropped at once: its
// weblink.Batch) are one transfer, as a Ferry device's files are; a file
// without one (an older page, a tus client of its own) is a transfer alone.
// There is no prompt: the user showed the link on purpose, and Stop on the
// link ends it. Cancel on one of its transfers cancels its uploads and
// refuses the rest of its files. A transfer whose page stopped sending (the
// tab closed, a phone asleep, the network gone) is interrupted, not ended:
// what arrived is kept and the page continues it when it comes back (tus
// resumes the file on the way; the page sends the rest of the set under
// the same ID), until Cancel or the link's end.
//
// Use it as the Inbox of Server.Receive, then Attach the link.
type BrowserInbox struct {
	e *Engine
	// idle is how long a transfer may go without a byte before it is
	// interrupted (the page was closed, or its device slept).
	idle time.Duration

	mu      sync.Mutex // guards the fields below and every browserDelivery's
	link    *weblink.Link
	dest    *store.Dest
	files   map[string]*browserFile     // by upload ID
	batches map[string]*browserDelivery // sets still open, by address and batch ID
	all     map[*browserDelivery]bool   // every transfer not ended
	// early are files of sets refused before their set's first file
	// arrived (their names cannot be stored): counted when it does.
	early map[string][]earlyRefusal
	// parts are the partials of the uploads on the way, by upload ID, as
	// uploads logs them (what a crash leaves is removed at the next start).
	parts   map[string][2]string // folder, partial name
	uploads *linkUploads
}

// earlyRefusal is a file of a set refused before the set began.
type earlyRefusal struct {
	name, why string
	size      int64
}

// maxBrowserSets bounds the sets a link holds open (each a transfer
// waiting for its next file).
const maxBrowserSets = 64

// browserIdle is BrowserInbox.idle by default: longer than the page's
// retries of one upload (30 s apart at most).
const browserIdle = 2 * time.Minute

// browserFile is one file of a browser on its way.
type browserFile struct {
	d      *browserDelivery
	size   int64
	folder bool // an empty folder of a folder the page sent (weblink.Arrival.Folder)
	bytes  atomic.Int64
}

// browserDelivery is one transfer of a browser's files: one file, or a set
// the page sent together.
type browserDelivery struct {
	t     *Transfer
	key   string // in BrowserInbox.batches; "" for one file alone
	files int    // as the page said (1 for one file alone): its empty folders among them
	// folders are those of files that are empty folders, as the page said
	// (weblink.Batch.Folders; 1 for an empty folder alone): counted apart,
	// as a Ferry offer's are (Result.Folders), not as files.
	folders int
	total   int64

	// Guarded by BrowserInbox.mu:
	started, landed, failed int
	// made are the empty folders made (not in landed), foldersEnded those
	// ended, made or not.
	made, foldersEnded int
	doneBytes          int64
	firstErr           string
	open               map[string]*browserFile // by upload ID
	cancelled, ended   bool
	byBrowser          bool // a file of it was cancelled in the browser
	refused            bool // every file refused before one began (refusedWhole)

	stop    context.CancelFunc // ends the progress and idle watches
	watched sync.WaitGroup     // the watches returned
}

// BrowserInbox returns an inbox for one receive link.
func (e *Engine) BrowserInbox() *BrowserInbox {
	return &BrowserInbox{e: e, idle: browserIdle, files: map[string]*browserFile{},
		batches: map[string]*browserDelivery{}, all: map[*browserDelivery]bool{}, early: map[string][]earlyRefusal{},
		parts: map[string][2]string{}, uploads: e.openLinkUploads()}
}

// Attach tells the inbox which link it serves (for Cancel).
func (b *BrowserInbox) Attach(l *weblink.Link) {
	b.mu.Lock()
	b.link = l
	b.mu.Unlock()
}

// Close ends the transfers still waiting for files (the link ended) and
// releases the download folder.
func (b *BrowserInbox) Close() error {
	b.mu.Lock()
	var waiting []*browserDelivery
	for d := range b.all {
		if !d.ended {
			d.ended = true
			waiting = append(waiting, d)
		}
	}
	clear(b.batches)
	b.mu.Unlock()
	for _, d := range waiting {
		b.end(d, "the link ended")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// The link's end removed its partials (each Landed); any it did not
	// stay in the log for the next start.
	b.uploads.close(len(b.parts) == 0)
	if b.dest == nil {
		return nil
	}
	err := b.dest.Close()
	b.dest = nil
	return err
}

// Arrive checks the name and the space and starts the file: in the
// transfer of its set, or in one of its own.
func (b *BrowserInbox) Arrive(a weblink.Arrival) (*store.Dest, error) {
	e := b.e
	if err := store.ValidateHere(a.Name); err != nil {
		return nil, err
	}
	e.mu.Lock()
	dir := e.downloadDir
	e.mu.Unlock()
	addr := a.From.String()
	b.mu.Lock()
	defer b.mu.Unlock()
	var d *browserDelivery
	key := ""
	if a.Batch.ID != "" {
		key = addr + "/" + a.Batch.ID
		d = b.batches[key]
		if d != nil && d.cancelled {
			return nil, errors.New("cancelled on the receiving device")
		}
		if d != nil && d.started >= d.files {
			d, key = nil, "" // more files than the page said: one of its own
		}
		if d == nil && len(b.batches) >= maxBrowserSets {
			key = "" // a page that opens sets without end: files alone
		}
	}
	if err := b.e.unwritable(dir); err != nil {
		// The folder turned read-only, or lost this user's permission,
		// since the link was opened: said now, not once the partial
		// cannot be made ("the file could not be saved"); the page reads
		// it without the folder (weblink's refusal).
		return nil, &phrased{core.Sentence(err), err}
	}
	if l := store.MaxFileSize(dir); l.Refuses(a.Size) {
		// A FAT stick: refused before its bytes come, and before the
		// space check (no free space would make it fit), said alike on
		// both sides (the folder is not named).
		return nil, errors.New(core.Sentence(errors.New(l.Reason(a.Size))))
	}
	var room store.Room
	room.FileAt(a.Name, a.Size) // and the folders of its path
	for _, f := range b.files {
		room.File(f.size) // files arriving still hold their space
	}
	if err := core.NoRoom(dir, room); err != nil {
		// Said here with the folder; the page gets the figures only
		// (weblink's refusal finds the *store.SpaceError).
		return nil, &phrased{core.Sentence(err), err}
	}
	if b.dest == nil || b.dest.Dir() != dir {
		dest, err := store.Open(dir)
		if err != nil {
			return nil, fmt.Errorf("the download folder cannot be opened")
		}
		dest.SyncOnFinalize = e.opts.SyncFiles
		dest.SetBufferedIO(e.opts.BufferedIO)
		if b.dest != nil {
			b.dest.Close()
		}
		b.dest = dest
	}
	var early []earlyRefusal
	if d == nil {
		var err error
		if d, err = b.start(a, key, dir); err != nil {
			return nil, err
		}
		if key != "" {
			early = b.early[key]
			delete(b.early, key)
		}
	}
	for _, r := range early {
		// Counted now that the set has its transfer; its last file is
		// this one, so the set does not end here.
		d.started++
		d.failed++
		if d.firstErr == "" {
			d.firstErr = r.why
		}
		b.e.publish(d.t, Event{Kind: EventFile, File: &FileResult{Path: r.name, Size: r.size, Err: r.why}})
	}
	f := &browserFile{d: d, size: a.Size, folder: a.Folder}
	d.started++
	d.open[a.ID] = f
	b.files[a.ID] = f
	b.wake(d)
	return b.dest, nil
}

// wake makes an interrupted transfer (watchStalled) active again at once:
// its page sends again. b.mu is held.
func (b *BrowserInbox) wake(d *browserDelivery) {
	if d.ended || d.cancelled || d.t.currentState() != StateInterrupted {
		return
	}
	b.e.setState(d.t, StateActive)
}

// start makes the transfer of a's set (key) or of a alone (key ""), and
// publishes its offer: the name, the size, where it goes, as any
// receiving transfer's offer says it, so that rows and history name it;
// active, not waiting: nobody is asked. b.mu is held.
func (b *BrowserInbox) start(a weblink.Arrival, key, dir string) (*browserDelivery, error) {
	e := b.e
	addr := a.From.String()
	d := &browserDelivery{key: key, files: 1, total: a.Size, open: map[string]*browserFile{}}
	if a.Folder {
		d.folders = 1
	}
	if key != "" {
		d.files, d.folders, d.total = a.Batch.Files, a.Batch.Folders, max(a.Batch.Bytes, a.Size)
	}
	files := d.files - d.folders
	t := &Transfer{
		id: newTransferID(), dir: Receiving, done: make(chan struct{}), started: e.now(),
		peer: PeerInfo{Name: "a browser at " + addr, Addr: addr}, state: StateActive,
		decisions: make(chan Decision, 1),
		result:    Result{TotalBytes: d.total, Files: files, Destination: dir},
	}
	t.delivery = t.id // each is a delivery of its own
	t.cancel = func(error) { b.cancel(d) }
	if err := e.register(t); err != nil {
		return nil, err
	}
	d.t = t
	offer := &OfferInfo{Count: files, TotalBytes: d.total, Dest: dir, FreeBytes: -1}
	if !a.Folder {
		offer.Files = []FileInfo{{Path: a.Shown(), Size: a.Size}}
	}
	if a.Batch.Top != "" && key != "" {
		offer.Folders = []FolderInfo{{Path: a.Batch.Top, Files: files, Bytes: d.total}}
	}
	if free, err := store.FreeSpace(dir); err == nil {
		offer.FreeBytes = free
	}
	e.publish(t, Event{Kind: EventOffer, State: StateActive, Offer: offer})
	e.publish(t, Event{Kind: EventState, State: StateActive})
	ctx, stop := context.WithCancel(context.Background())
	d.stop = stop
	d.watched.Go(func() {
		e.watchProgress(ctx, t, func() int64 { return b.bytes(d) }, d.total, func() int { return b.verified(d) }, files)
	})
	if key != "" {
		b.batches[key] = d
	}
	// Interrupted, not ended, when its page stops sending: what arrived
	// is kept and the page's next byte or file makes it active again
	// (wake); Cancel or the link's end ends it. Ending it would lose the
	// set a page continues after a reload, and a file on the way would
	// land in a transfer already over.
	d.watched.Go(func() { e.watchStalled(ctx, t, b.idle, func() int64 { return b.moved(d) }) })
	b.all[d] = true
	return d, nil
}

// bytes is what arrived of d's files: those landed and those on the way.
func (b *BrowserInbox) bytes(d *browserDelivery) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := d.doneBytes
	for _, f := range d.open {
		n += f.bytes.Load()
	}
	return n
}

func (b *BrowserInbox) verified(d *browserDelivery) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return d.landed
}

// moved is what of d arrived so far, to see it move: bytes, and files
// begun and ended.
func (b *BrowserInbox) moved(d *browserDelivery) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := d.doneBytes + int64(d.started+d.landed+d.failed)
	for _, f := range d.open {
		n += f.bytes.Load()
	}
	return n
}

// cancel is Cancel on d's transfer: its uploads on the way are cancelled,
// the rest of its files refused, and it ends.
func (b *BrowserInbox) cancel(d *browserDelivery) {
	b.mu.Lock()
	d.cancelled = true
	l := b.link
	ids := make([]string, 0, len(d.open))
	for id := range d.open {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	if l != nil {
		for _, id := range ids {
			l.CancelUpload(id) // its Landed counts it
		}
	}
	b.mu.Lock()
	if d.ended {
		b.mu.Unlock()
		return
	}
	d.ended = true
	b.mu.Unlock() // stays in batches, cancelled: the page's next files are refused
	b.end(d, "cancelled on the receiving device")
}

// Refused counts a file the link refused (its name cannot be stored, or
// Arrive refused it) in its set, which then does not wait for it; the set
// ends with it when it was its last. A file alone is the page's to say.
func (b *BrowserInbox) Refused(a weblink.Arrival, err error) {
	if a.Batch.ID == "" || err == nil {
		return
	}
	key := a.From.String() + "/" + a.Batch.ID
	why := err.Error()
	b.e.mu.Lock()
	dir := b.e.downloadDir
	b.e.mu.Unlock()
	b.mu.Lock()
	d := b.batches[key]
	if d == nil {
		if len(b.early) < maxBrowserSets && len(b.early[key]) < a.Batch.Files {
			b.early[key] = append(b.early[key], earlyRefusal{name: a.Shown(), why: why, size: a.Size})
		}
		if len(b.early[key]) < a.Batch.Files {
			b.mu.Unlock()
			return
		}
		b.refusedWhole(a, key, dir) // unlocks b.mu
		return
	}
	if d.ended || d.started >= d.files {
		b.mu.Unlock()
		return
	}
	d.started++
	d.failed++
	if a.Folder {
		d.foldersEnded++
	}
	if d.firstErr == "" {
		d.firstErr = why
	}
	last := d.landed+d.failed+d.made >= d.files
	if last {
		d.ended = true
		delete(b.batches, d.key)
	}
	b.wake(d) // the page is back (not when ended)
	b.mu.Unlock()
	b.e.publish(d.t, Event{Kind: EventFile, File: &FileResult{Path: shownPath(a), Size: a.Size, Err: why}})
	if last {
		b.end(d, "")
	}
}

// shownPath is a's name as a file's result says it: an empty folder's
// ends in "/".
func shownPath(a weblink.Arrival) string {
	if a.Folder {
		return a.Shown() + "/"
	}
	return a.Shown()
}

// refusedWhole ends a set whose every file was refused before one began:
// its transfer is made for that, so the row, the history and receive
// --link say it (nobody heard of it before). b.mu is held, and unlocked.
func (b *BrowserInbox) refusedWhole(a weblink.Arrival, key, dir string) {
	early := b.early[key]
	delete(b.early, key)
	d, err := b.start(a, key, dir)
	if err != nil {
		b.mu.Unlock()
		return
	}
	for _, r := range early {
		d.started++
		d.failed++
		if d.firstErr == "" {
			d.firstErr = r.why
		}
	}
	d.ended, d.refused = true, true
	delete(b.batches, key)
	b.mu.Unlock()
	for _, r := range early {
		b.e.publish(d.t, Event{Kind: EventFile, File: &FileResult{Path: r.name, Size: r.size, Err: r.why}})
	}
	b.end(d, "")
}

// Progress counts the file's bytes for its progress events.
func (b *BrowserInbox) Progress(a weblink.Arrival, n int64) {
	b.mu.Lock()
	if f := b.files[a.ID]; f != nil {
		f.bytes.Store(n) // before wake: the idle watch sees it moved
		b.wake(f.d)
	}
	b.mu.Unlock()
}

// Began logs where an upload's partial is (linkUploads).
func (b *BrowserInbox) Began(a weblink.Arrival, dir, partial, identity string) {
	b.mu.Lock()
	b.parts[a.ID] = [2]string{dir, partial}
	b.mu.Unlock()
	b.uploads.began(dir, partial, identity)
}

// Landed reports the file's end in its transfer, and ends the transfer
// with its last file.
func (b *BrowserInbox) Landed(a weblink.Arrival, savedAs string, err error) {
	b.mu.Lock()
	if p, ok := b.parts[a.ID]; ok {
		delete(b.parts, a.ID)
		b.uploads.ended(p[0], p[1]) // saved, or removed
	}
	f := b.files[a.ID]
	delete(b.files, a.ID)
	if f == nil {
		b.mu.Unlock()
		return
	}
	d := f.d
	delete(d.open, a.ID)
	fr := &FileResult{Path: a.Shown(), Size: a.Size, Verified: err == nil && savedAs != ""}
	if savedAs != fr.Path {
		fr.SavedAs = savedAs
	}
	if f.folder {
		// An empty folder: counted apart (Result.Folders), not a file of
		// the set; only one not made is said, as a file that failed is.
		d.foldersEnded++
		fr.Path += "/"
		if fr.SavedAs != "" {
			fr.SavedAs += "/"
		}
	}
	switch {
	case fr.Verified && f.folder:
		d.made++
		fr = nil
	case fr.Verified:
		d.landed++
		d.doneBytes += a.Size
	default:
		d.failed++
		d.byBrowser = d.byBrowser || errors.Is(err, weblink.ErrCancelledInBrowser)
		if err != nil {
			fr.Err = err.Error()
			if d.firstErr == "" {
				d.firstErr = err.Error()
			}
		}
	}
	last := !d.ended && d.landed+d.failed+d.made >= d.files
	if last {
		d.ended = true
		if b.batches[d.key] == d {
			delete(b.batches, d.key)
		}
	}
	if err == nil && savedAs != "" || errors.Is(err, weblink.ErrCancelledInBrowser) {
		b.wake(d) // the page's doing: it is back (an upload this side ended is not)
	}
	b.mu.Unlock()
	if fr != nil {
		b.e.publish(d.t, Event{Kind: EventFile, File: fr})
	}
	if last {
		b.end(d, "")
	}
}

// end stops d's watches and finishes its transfer: done when every file
// arrived whole, failed else (why says what stopped it, "" when each file
// ended). d.ended is set.
func (b *BrowserInbox) end(d *browserDelivery, why string) {
	d.stop()
	d.watched.Wait() // no tick after the last progress below
	b.mu.Lock()
	delete(b.all, d)
	landed, failed, done, firstErr := d.landed, d.failed, d.doneBytes, d.firstErr
	// Its files are what the page said less its empty folders: as many
	// as it said, or as came (an older page says none).
	files := d.files - max(d.folders, d.foldersEnded)
	made := d.made
	b.mu.Unlock()
	r := d.t.Result()
	r.Bytes, r.Verified, r.Files, r.Folders = done, landed, files, made
	if landed+made == d.files {
		r.Bytes = d.total
		r.State = StateDone
	} else {
		// Words for the row: cancelled here (Cancel, or the link stopped
		// or expired), cancelled in the page, the page gone, or files
		// that failed (the Err and Details say which and why).
		r.State = StateFailed
		b.mu.Lock()
		cancelled, byBrowser, l := d.cancelled, d.byBrowser, b.link
		b.mu.Unlock()
		linkEnded := why == "the link ended" || l != nil && l.Err() != nil
		switch {
		case cancelled || linkEnded:
			r.Code = string(errcode.CodeCancelled)
		case byBrowser:
			r.Code, r.ByPeer = string(errcode.CodeCancelled), true
		}
		if d.key == "" {
			r.Err = "The browser's upload did not finish"
			if firstErr != "" {
				r.Err = fmt.Sprintf("The browser's upload did not finish: %s", firstErr)
			}
		} else {
			r.Err = fmt.Sprintf("%d of %d files arrived from the browser", landed, files)
			switch {
			case why != "":
				r.Err += ": " + why
			case failed > 0 && firstErr != "":
				r.Err += fmt.Sprintf("; %d did not, the first: %s", failed, firstErr)
			}
		}
		r.Detail = firstErr
		if d.refused {
			// This device took none of it (its space, the names): a
			// decline, in its words, as an offer's is.
			r.State, r.Code = StateDeclined, string(errcode.CodeDeclined)
			r.Err = "Declined: " + firstErr
			if d.files > 1 {
				r.Err = fmt.Sprintf("Declined: none of the %d files could be taken; the first: %s", d.files, firstErr)
			}
		}
	}
	// The last bytes, which a progress tick may not have seen (a small
	// file lands between two).
	b.e.publish(d.t, Event{Kind: EventProgress, Progress: &Progress{Bytes: r.Bytes, TotalBytes: d.total, Files: landed, TotalFiles: files}})
	b.e.finish(d.t, r)
}

var (
	_ weblink.ProgressInbox = (*BrowserInbox)(nil)
	_ weblink.RefusingInbox = (*BrowserInbox)(nil)
)

// phrased is an error said in a sentence of its own that still unwraps to
// its cause.
type phrased struct {
	text string
	err  error
}

func (p *phrased) Error() string { return p.text }

// unwritable says why files cannot be made in the download folder dir,
// naming it ("the download folder /media/stick cannot be written
// (read-only file system)"), or nil (store.Writable; Engine.writable in
// tests). It matches store.ErrNotWritable.
func (e *Engine) unwritable(dir string) error {
	check := store.Writable
	if e.writable != nil {
		check = e.writable
	}
	err := check(dir)
	if err == nil {
		return nil
	}
	return &phrased{strings.Replace(err.Error(), "the download folder", "the download folder "+dir, 1), err}
}
func (p *phrased) Unwrap() error { return p.err }
