package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/weblink"
)

// BrowserInbox receives the files of a receive link (package weblink)
// through this engine: each file a browser sends is a receiving transfer
// with its events (state, progress, the file, the result, so the app's rows
// and history show it, "from a browser at 192.168.1.23"), the download
// folder, the space check and the safe names of any other transfer. There
// is no prompt: the user showed the link on purpose, and Stop on the link
// ends it. Cancel on one of its transfers cancels that upload.
//
// Use it as the Inbox of Server.Receive, then Attach the link.
type BrowserInbox struct {
	e *Engine

	mu    sync.Mutex // guards the fields below
	link  *weblink.Link
	dest  *store.Dest
	files map[string]*browserFile // by upload ID
}

// browserFile is one file of a browser, as a transfer of the engine.
type browserFile struct {
	t       *Transfer
	bytes   atomic.Int64
	stop    context.CancelFunc // ends the progress watch
	watched chan struct{}      // closed when the progress watch returned
}

// BrowserInbox returns an inbox for one receive link.
func (e *Engine) BrowserInbox() *BrowserInbox {
	return &BrowserInbox{e: e, files: map[string]*browserFile{}}
}

// Attach tells the inbox which link it serves (for Cancel).
func (b *BrowserInbox) Attach(l *weblink.Link) {
	b.mu.Lock()
	b.link = l
	b.mu.Unlock()
}

// Close releases the download folder once the link ended.
func (b *BrowserInbox) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dest == nil {
		return nil
	}
	err := b.dest.Close()
	b.dest = nil
	return err
}

// Arrive checks the name and the space and starts the file's transfer.
func (b *BrowserInbox) Arrive(a weblink.Arrival) (*store.Dest, error) {
	e := b.e
	if err := store.ValidateHere(a.Name); err != nil {
		return nil, err
	}
	e.mu.Lock()
	dir := e.downloadDir
	e.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	var room store.Room
	room.File(a.Size)
	for _, f := range b.files {
		room.File(f.t.Result().TotalBytes) // files arriving still hold their space
	}
	if err := core.NoRoom(dir, room); err != nil {
		return nil, errors.New(core.Sentence(err))
	}
	if b.dest == nil || b.dest.Dir() != dir {
		d, err := store.Open(dir)
		if err != nil {
			return nil, fmt.Errorf("the download folder cannot be opened")
		}
		d.SyncOnFinalize = e.opts.SyncFiles
		d.SetBufferedIO(e.opts.BufferedIO)
		if b.dest != nil {
			b.dest.Close()
		}
		b.dest = d
	}
	addr := a.From.String()
	t := &Transfer{
		id: newTransferID(), dir: Receiving, done: make(chan struct{}), started: e.now(),
		peer: PeerInfo{Name: "a browser at " + addr, Addr: addr}, state: StateActive,
		decisions: make(chan Decision, 1),
		result:    Result{TotalBytes: a.Size, Files: 1, Destination: dir},
	}
	t.delivery = t.id // each upload is a delivery of its own
	id := a.ID
	t.cancel = func(error) {
		b.mu.Lock()
		l := b.link
		b.mu.Unlock()
		if l != nil {
			l.CancelUpload(id)
		}
	}
	if err := e.register(t); err != nil {
		return nil, err
	}
	f := &browserFile{t: t, watched: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	f.stop = stop
	b.files[id] = f
	// What arrives, as any receiving transfer's offer says it (the name, the
	// size, where it goes), so rows and history name the file; active, not
	// waiting: nobody is asked.
	offer := &OfferInfo{Count: 1, Files: []FileInfo{{Path: a.Name, Size: a.Size}}, TotalBytes: a.Size, Dest: dir, FreeBytes: -1}
	if free, err := store.FreeSpace(dir); err == nil {
		offer.FreeBytes = free
	}
	e.publish(t, Event{Kind: EventOffer, State: StateActive, Offer: offer})
	e.publish(t, Event{Kind: EventState, State: StateActive})
	go func() {
		defer close(f.watched)
		e.watchProgress(ctx, t, f.bytes.Load, a.Size, func() int { return 0 }, 1)
	}()
	return b.dest, nil
}

// Progress counts the file's bytes for its progress events.
func (b *BrowserInbox) Progress(a weblink.Arrival, n int64) {
	b.mu.Lock()
	f := b.files[a.ID]
	b.mu.Unlock()
	if f != nil {
		f.bytes.Store(n)
	}
}

// Landed ends the file's transfer: done when saved, failed (with why) else.
func (b *BrowserInbox) Landed(a weblink.Arrival, savedAs string, err error) {
	b.mu.Lock()
	f := b.files[a.ID]
	delete(b.files, a.ID)
	b.mu.Unlock()
	if f == nil {
		return
	}
	f.stop()
	<-f.watched // no tick after the last progress below
	e := b.e
	fr := &FileResult{Path: a.Name, Size: a.Size, Verified: err == nil && savedAs != ""}
	if savedAs != a.Name {
		fr.SavedAs = savedAs
	}
	r := f.t.Result()
	r.Bytes = f.bytes.Load()
	if fr.Verified {
		r.Bytes = a.Size
		r.State, r.Verified = StateDone, 1
	} else {
		r.State, r.Code = StateFailed, string(errcode.CodeCancelled)
		r.Err = "The browser's upload did not finish"
		if err != nil {
			r.Err = fmt.Sprintf("The browser's upload did not finish: %v", err)
			r.Detail = err.Error()
			fr.Err = err.Error()
		}
	}
	// The last bytes, which a progress tick may not have seen (a small
	// file lands between two).
	e.publish(f.t, Event{Kind: EventProgress, Progress: &Progress{Bytes: r.Bytes, TotalBytes: a.Size, Files: r.Verified, TotalFiles: 1}})
	e.publish(f.t, Event{Kind: EventFile, File: fr})
	e.finish(f.t, r)
}

var _ weblink.ProgressInbox = (*BrowserInbox)(nil)
