package engine

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"path"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/engine/weblink"
)

// Browser links (package weblink) as the engine's: a device with nothing but
// a browser downloads what a share link serves, or sends files through a
// receive link's page. The API the app and the CLI use:
//
//   - ShareLink(ctx, paths, opts) and ReceiveLink(opts) open a link and return
//     its LinkInfo (ID, URLs for the QR code, expiry, PIN);
//   - Links() lists the open links, Link(id) one of them;
//   - EventLink events carry a LinkInfo snapshot whenever something happens
//     on a link (a device opened it, a download or upload started, moved,
//     ended; the link ended, the last event of that ID, with Ended set):
//     its Activities are the live list of who downloads or uploads what,
//     with progress;
//   - StopLink(id) ends a link at once.
//
// Every file a browser sends through a receive link is also a receiving
// transfer of its own (BrowserInbox: no prompt, the download folder, the
// space check, safe names, progress, the result for history, "a browser at
// 192.168.1.23"), which Cancel ends.
//
// The link server is a row of the receiver table ("links"), added at the
// first link: Start opens it, StopReceiving ends the receive links (share
// links go on: they send), StopReceivingNow and Close end every link (links
// end when Ferry quits). A share link opened while receiving is off opens
// the server as a withdrawn row: shares only, until Start.

// EventLink: a browser link opened, changed or ended (Event.Link); it
// belongs to no transfer.
const EventLink EventKind = "link"

// DefaultLinkPort is the link server's port unless Options.LinkListen says
// otherwise (or Listen asks for any port): one port, so that a firewall rule
// made once keeps working; any free port when it is taken.
const DefaultLinkPort = 47880

// LinkOptions configure a browser link. The zero value is a link for an
// hour, with no PIN.
type LinkOptions struct {
	// Expire is how long the link stays open; zero means 1 hour. It also
	// ends with StopLink and when the engine closes.
	Expire time.Duration
	// PIN, when set, is asked in the page first. It protects a link that
	// leaked (a photo of the QR code), not against someone who reads the
	// network's traffic: the link is plain HTTP.
	PIN string
	// Once ends a share link when the first device has every file.
	Once bool
}

// LinkInfo describes a browser link as the app shows it.
type LinkInfo struct {
	// ID names the link for StopLink and in events (it is the link's token,
	// so it is as secret as the URL).
	ID string `json:"id"`
	// Kind is "share" (files go to the browser) or "receive".
	Kind string `json:"kind"`
	// URLs are the link's addresses, one per address of this device a
	// browser on the network may reach (IPv4 first): show the first as the
	// link and the QR code.
	URLs    []string  `json:"urls"`
	Expires time.Time `json:"expires"`
	PIN     bool      `json:"pin,omitempty"`
	// Files are a share link's files (the first 1000) and TotalBytes their
	// size in all; FileCount counts them all. Files never change: events
	// after a link's first leave them out (ShareLink, Links and Link have
	// them).
	Files      []FileInfo `json:"files,omitempty"`
	FileCount  int        `json:"file_count,omitempty"`
	TotalBytes int64      `json:"total_bytes,omitempty"`
	// Skipped is what a share's folders hold that it does not serve
	// (symbolic links, devices, folders that could not be read); nil when
	// nothing.
	Skipped *SkippedInfo `json:"skipped,omitempty"`
	// Devices are the addresses of the browsers that opened the link.
	Devices []string `json:"devices,omitempty"`
	// Activities are the downloads or uploads: every running one and the
	// latest finished ones (up to maxLinkActivities in all), oldest first.
	Activities []LinkActivity `json:"activities,omitempty"`
	// WrongPINs are the wrong PINs typed at the link; PINLocked: it took as
	// many as it takes, and no one can open it any more. TurnedAway counts
	// the devices it turned away, having as many as it takes. Worth telling
	// its owner: a link that leaked or is being guessed is to be stopped.
	WrongPINs  int  `json:"wrong_pins,omitempty"`
	PINLocked  bool `json:"pin_locked,omitempty"`
	TurnedAway int  `json:"turned_away,omitempty"`
	// Ended: the link ended; Err says why, as a sentence.
	Ended bool   `json:"ended,omitempty"`
	Err   string `json:"error,omitempty"`
}

// LinkActivity is one download (share link) or upload (receive link).
type LinkActivity struct {
	ID     int64  `json:"id"`
	Device string `json:"device"` // the browser's address
	Upload bool   `json:"upload,omitempty"`
	// Folder: an upload that is an empty folder of a folder the page sent
	// (Size 0), made here, not a file.
	Folder bool `json:"folder,omitempty"`
	// Name is the file's name (show it with safetext.Name); Zip: every file
	// as one zip.
	Name string `json:"name"`
	Zip  bool   `json:"zip,omitempty"`
	// Size is the bytes in all (-1 when not known ahead); Bytes have moved so far.
	Size    int64     `json:"size"`
	Bytes   int64     `json:"bytes"`
	Started time.Time `json:"started"`
	Done    bool      `json:"done,omitempty"`
	// SavedAs is an upload's name on disk when it differs from Name.
	SavedAs string `json:"saved_as,omitempty"`
	// LeftOut names what a zip left out, each with why: shared files
	// deleted or moved since (the zip holds a NOT INCLUDED.txt saying so).
	// They are paths of this device's: show them with safetext.Name.
	LeftOut []string `json:"left_out,omitempty"`
	// Err says why it did not finish, when Done.
	Err string `json:"error,omitempty"`
}

// maxLinkActivities bounds the activities a LinkInfo carries.
const maxLinkActivities = 50

// errReceivingOff refuses a receive link while receiving is turned off.
var errReceivingOff = errors.New("receiving is turned off: turn it on to receive through a link")

// ErrNoLink means no open link has the ID given.
var ErrNoLink = errors.New("no such link: it ended or never existed")

// ShareLink opens a share link for paths (files and folders; a folder with
// every regular file below it). Listing a big tree takes a while:
// cancelling ctx stops it and opens no link.
func (e *Engine) ShareLink(ctx context.Context, paths []string, opts LinkOptions) (LinkInfo, error) {
	row, err := e.linkServer(false)
	if err != nil {
		return LinkInfo{}, err
	}
	srv := row.server()
	if srv == nil {
		return LinkInfo{}, errReceivingOff
	}
	l, err := srv.Share(ctx, paths, weblink.ShareOptions{Once: opts.Once, LinkOptions: linkOptions(opts)})
	if err != nil {
		return LinkInfo{}, fmt.Errorf("share link: %w", err)
	}
	return row.follow(srv, l, nil, opts.PIN), nil
}

// ReceiveLink opens a receive link: its page sends files into the download
// folder, each one a receiving transfer with no prompt. Receiving must be
// on (Start).
func (e *Engine) ReceiveLink(opts LinkOptions) (LinkInfo, error) {
	if opts.Once {
		return LinkInfo{}, errors.New("receive link: once is for share links")
	}
	row, err := e.linkServer(true)
	if err != nil {
		return LinkInfo{}, err
	}
	srv := row.server()
	if srv == nil {
		return LinkInfo{}, errReceivingOff
	}
	// A folder that cannot be written is said now, to the user who opens
	// the link, not to the first person who sends through it.
	if err := e.unwritable(e.DownloadDir()); err != nil {
		return LinkInfo{}, fmt.Errorf("receive link: %w", err)
	}
	in := e.BrowserInbox()
	l, err := srv.Receive(in, weblink.ReceiveOptions{LinkOptions: linkOptions(opts)})
	if err != nil {
		in.Close()
		return LinkInfo{}, fmt.Errorf("receive link: %w", err)
	}
	in.Attach(l)
	return row.follow(srv, l, in, opts.PIN), nil
}

func linkOptions(o LinkOptions) weblink.LinkOptions {
	return weblink.LinkOptions{Expire: o.Expire, PIN: o.PIN}
}

// Links lists the open links, oldest first.
func (e *Engine) Links() []LinkInfo {
	row := e.linkRowIfAny()
	if row == nil {
		return nil
	}
	row.mu.Lock()
	links := slices.Clone(row.order)
	row.mu.Unlock()
	out := make([]LinkInfo, 0, len(links))
	for _, lr := range links {
		out = append(out, lr.info())
	}
	return out
}

// Link describes one open link.
func (e *Engine) Link(id string) (LinkInfo, bool) {
	lr := e.findLink(id)
	if lr == nil {
		return LinkInfo{}, false
	}
	return lr.info(), true
}

// StopLink ends a link at once: downloads and uploads in flight are cut,
// unfinished uploads discarded, and from then on the link answers "ended".
// It returns once nothing of the link runs any more.
func (e *Engine) StopLink(id string) error {
	lr := e.findLink(id)
	if lr == nil {
		return ErrNoLink
	}
	lr.l.Stop()
	return nil
}

func (e *Engine) findLink(id string) *linkRec {
	row := e.linkRowIfAny()
	if row == nil {
		return nil
	}
	row.mu.Lock()
	defer row.mu.Unlock()
	return row.links[id]
}

// linkRowIfAny is the link row, nil before the first link. It takes e.mu
// only (the row is set under it too), so that LocalSend's Info may ask.
func (e *Engine) linkRowIfAny() *linkRow {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.receivers.links
}

// linkServer returns the link row with its server open: it adds the row
// to the receiver table at the first link, and opens it when receiving is
// off (as a withdrawn row: share links only) unless receive asks for
// receiving.
func (e *Engine) linkServer(receive bool) (*linkRow, error) {
	e.listenMu.Lock()
	defer e.listenMu.Unlock()
	e.mu.Lock()
	closed, receiving := e.closed, e.receiving
	e.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if receive && !receiving {
		return nil, errReceivingOff
	}
	rt := &e.receivers
	row := rt.links
	if row == nil {
		row = e.addLinkRow()
	}
	if row.server() != nil {
		return row, nil
	}
	if receiving {
		st, err := openRow(row)
		e.mu.Lock()
		i := slices.IndexFunc(e.listenStatus, func(s ListenerStatus) bool { return s.Transport == st.Transport })
		if i >= 0 {
			e.listenStatus[i] = st
		} else {
			e.listenStatus = append(e.listenStatus, st)
		}
		e.mu.Unlock()
		if err != nil {
			e.reportListener(st)
			return nil, fmt.Errorf("link server: %w", err)
		}
		rt.open = append(rt.open, row)
		e.serveRow(rt.ctx, row)
		return row, nil
	}
	// Receiving is off: open the server for shares, as a withdrawn row
	// (Start takes it up, Close closes it).
	if err := row.Listen(); err != nil {
		return nil, fmt.Errorf("link server: %w", err)
	}
	row.Withdraw()
	rt.draining = append(rt.draining, row)
	return row, nil
}

// addLinkRow adds the link row to the receiver table. Called from New, or
// with listenMu held.
func (e *Engine) addLinkRow() *linkRow {
	row := &linkRow{e: e, links: map[string]*linkRec{}}
	e.mu.Lock()
	e.receivers.links = row
	e.mu.Unlock()
	e.receivers.rows = append(e.receivers.rows, row)
	return row
}

// linkRow is the receiver table's row of browser links: one weblink.Server
// holding every link.
type linkRow struct {
	e *Engine

	mu        sync.Mutex // guards the fields below
	srv       *weblink.Server
	links     map[string]*linkRec // open links by ID
	order     []*linkRec          // open links, oldest first
	withdrawn bool
	// following are the goroutines that follow each link's events.
	following sync.WaitGroup
}

// linkRec is one open link and what the engine keeps of it.
type linkRec struct {
	row  *linkRow
	srv  *weblink.Server
	l    *weblink.Link
	in   *BrowserInbox // receive links
	pin  string
	urls []string
	// files (the first core.MaxPromptFiles), fileCount and totalBytes are a
	// share's table, fixed when it opened.
	files      []FileInfo
	fileCount  int
	totalBytes int64
	why        error // set before the engine ends the link itself (withdraw)
	// over: the link's last event came (weblink.EventEnded), after what it
	// lets finish past its end (an expired receive link's uploads going,
	// a --once share's downloads in flight). Its snapshots say Ended from
	// then only: ferry-cli, which returns at Ended and closes the engine,
	// cut those when the first snapshot after the end said so.
	over atomic.Bool
}

func (r *linkRow) Name() string { return "links" }

func (r *linkRow) server() *weblink.Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.srv
}

// listenAddr is Options.LinkListen, or the host of Listen with
// DefaultLinkPort (any port when Listen asks for any); fallback says to
// take any free port when that one is taken (the default port, or
// Options.ListenAnyIfTaken).
func (r *linkRow) listenAddr() (addr string, fallback bool) {
	if a := r.e.opts.LinkListen; a != "" {
		return a, r.e.opts.ListenAnyIfTaken && !isAnyPort(a)
	}
	l := r.e.listenAddr()
	host, _, _ := net.SplitHostPort(l)
	if isAnyPort(l) {
		return net.JoinHostPort(host, "0"), false
	}
	return net.JoinHostPort(host, fmt.Sprint(DefaultLinkPort)), true
}

// Listen opens the link server (no link yet).
func (r *linkRow) Listen() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil {
		return nil
	}
	addr, fallback := r.listenAddr()
	opts := weblink.Options{DeviceName: r.e.Name(), Logger: r.e.log}
	s, err := weblink.Listen(addr, opts)
	if err != nil && fallback {
		host, _, _ := net.SplitHostPort(addr)
		s, err = weblink.Listen(net.JoinHostPort(host, "0"), opts)
	}
	if err != nil {
		return err
	}
	r.srv, r.withdrawn = s, false
	return nil
}

// Serve waits until ctx ends, or the server fails (its error).
func (r *linkRow) Serve(ctx context.Context) error {
	s := r.server()
	if s == nil {
		return errors.New("the link server is closed")
	}
	select {
	case <-ctx.Done():
		return nil
	case <-s.Done():
		if err := s.Err(); err != nil {
			return err
		}
		return errors.New("the link server stopped")
	}
}

func (r *linkRow) Addr() net.Addr {
	s := r.server()
	if s == nil {
		return nil
	}
	return s.Addr()
}

// Withdraw ends the receive links (receiving was turned off); share links
// go on, and with them the server.
func (r *linkRow) Withdraw() {
	r.e.mu.Lock()
	closing := r.e.closed
	r.e.mu.Unlock()
	if closing {
		return // Close follows, and ends every link
	}
	r.mu.Lock()
	r.withdrawn = true
	var stop []*linkRec
	for _, lr := range r.order {
		if lr.l.Kind() == weblink.KindReceive {
			lr.why = errors.New("receiving was turned off")
			stop = append(stop, lr)
		}
	}
	r.mu.Unlock()
	for _, lr := range stop {
		lr.l.Stop()
	}
}

// Resume takes receive links again, while the server is open.
func (r *linkRow) Resume() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv == nil {
		return false
	}
	r.withdrawn = false
	return true
}

// Close ends every link and closes the server.
func (r *linkRow) Close() error {
	r.mu.Lock()
	s := r.srv
	r.srv = nil
	r.mu.Unlock()
	if s == nil {
		return nil
	}
	err := s.Close() // every link ends: their followers publish it and return
	r.following.Wait()
	return err
}

// follow registers an open link and publishes what happens on it until it
// ends.
func (r *linkRow) follow(s *weblink.Server, l *weblink.Link, in *BrowserInbox, pin string) LinkInfo {
	lr := &linkRec{row: r, srv: s, l: l, in: in, pin: pin, urls: s.URLs(l, s.Hosts())}
	names, sizes := l.Files() // a share's table never changes
	lr.fileCount = len(names)
	for i, n := range names {
		lr.totalBytes += sizes[i]
		if i < core.MaxPromptFiles {
			lr.files = append(lr.files, FileInfo{Index: i, Path: n, Size: sizes[i]})
		}
	}
	id := linkID(l)
	r.mu.Lock()
	r.links[id] = lr
	r.order = append(r.order, lr)
	r.following.Add(1)
	withdrawn := r.withdrawn && l.Kind() == weblink.KindReceive
	if withdrawn {
		lr.why = errors.New("receiving was turned off")
	}
	r.mu.Unlock()
	if withdrawn { // receiving was turned off while the link was made
		l.Stop()
	}
	info := lr.info()
	r.e.publishLink(info)
	go func() {
		defer r.following.Done()
		for ev := range l.Events() {
			if ev.Kind == weblink.EventEnded {
				break
			}
			r.e.publishLink(lr.eventInfo())
		}
		for range l.Events() { // closed after EventEnded
		}
		lr.over.Store(true)
		if in != nil {
			in.Close()
		}
		r.mu.Lock()
		delete(r.links, id)
		r.order = slices.DeleteFunc(r.order, func(x *linkRec) bool { return x == lr })
		r.mu.Unlock()
		r.e.publishLink(lr.eventInfo())
	}()
	return info
}

// linkID is a link's ID: its token.
func linkID(l *weblink.Link) string {
	p := l.Path() // "/l/<token>/"
	return p[len("/l/") : len(p)-1]
}

func (e *Engine) publishLink(info LinkInfo) {
	e.bus.Publish(Event{Kind: EventLink, Time: e.now(), Link: &info})
}

// eventInfo is a snapshot for an event after the first: without the
// share's file list, which never changes (the first event, ShareLink, Links
// and Link have it).
func (lr *linkRec) eventInfo() LinkInfo { return lr.snapshot(false) }

// info is a snapshot of the link.
func (lr *linkRec) info() LinkInfo { return lr.snapshot(true) }

func (lr *linkRec) snapshot(withFiles bool) LinkInfo {
	l := lr.l
	info := LinkInfo{ID: linkID(l), Kind: "share", URLs: lr.urls, Expires: l.Expires(), PIN: l.HasPIN(),
		FileCount: lr.fileCount, TotalBytes: lr.totalBytes}
	if l.Kind() == weblink.KindReceive {
		info.Kind = "receive"
	}
	if withFiles {
		info.Files = slices.Clone(lr.files)
	}
	if lo := l.LeftOut(); lo.Symlinks+lo.Other+lo.Unreadable > 0 {
		info.Skipped = &SkippedInfo{Symlinks: lo.Symlinks, Other: lo.Other, Unreadable: lo.Unreadable, Examples: lo.Examples}
	}
	for _, d := range l.Devices() {
		info.Devices = append(info.Devices, d.String())
	}
	info.WrongPINs, info.PINLocked, info.TurnedAway = l.Guards()
	acts := l.Activities()
	// Every running one, then the latest finished ones, in their order.
	keep := make([]bool, len(acts))
	room := maxLinkActivities
	for i, a := range acts {
		if !a.Done && room > 0 {
			keep[i] = true
			room--
		}
	}
	for i := len(acts) - 1; i >= 0 && room > 0; i-- {
		if acts[i].Done {
			keep[i] = true
			room--
		}
	}
	for i, a := range acts {
		if !keep[i] {
			continue
		}
		la := LinkActivity{ID: a.ID, Device: a.Device.String(), Upload: a.Upload, Folder: a.Folder, Name: a.Name, Zip: a.Zip,
			Size: a.Size, Bytes: a.Bytes, Started: a.Started, Done: a.Done, SavedAs: a.SavedAs, LeftOut: a.LeftOut}
		la.Err = activityErr(a.Err)
		info.Activities = append(info.Activities, la)
	}
	if err := l.Err(); err != nil && lr.over.Load() {
		info.Ended = true
		lr.row.mu.Lock()
		why := lr.why
		lr.row.mu.Unlock()
		info.Err = linkEnd(err, why)
	}
	return info
}

// activityErr is why a download or upload did not finish, as a sentence
// ("" when it did); the link's end says so in its own words ("The link was
// stopped.", not "Weblink: the link was stopped.").
func activityErr(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, weblink.ErrStopped), errors.Is(err, weblink.ErrExpired),
		errors.Is(err, weblink.ErrOnce), errors.Is(err, weblink.ErrClosed):
		return linkEnd(err, nil)
	}
	return core.Sentence(err)
}

// linkEnd says why a link ended, as a sentence.
func linkEnd(err, why error) string {
	switch {
	case why != nil:
		return "The link ended: " + why.Error() + "."
	case errors.Is(err, weblink.ErrExpired):
		return "The link expired."
	case errors.Is(err, weblink.ErrOnce):
		return "The link ended after its download."
	case errors.Is(err, weblink.ErrClosed):
		return "The link ended: Ferry was closed."
	}
	return "The link was stopped."
}

// localSendShared is the share LocalSend's download API serves (its
// prepare-download and download routes, and download: true in the
// announcements): the newest open share link, nil when none.
func (e *Engine) localSendShared() localsend.Shared {
	row := e.linkRowIfAny()
	if row == nil {
		return nil
	}
	row.mu.Lock()
	defer row.mu.Unlock()
	for i := len(row.order) - 1; i >= 0; i-- {
		if lr := row.order[i]; lr.l.Kind() == weblink.KindShare && lr.l.Err() == nil {
			return lr
		}
	}
	return nil
}

// SharedCount is how many files the share link serves.
func (lr *linkRec) SharedCount() int { return lr.l.FileCount() }

// SharedFile is file i of the share link for LocalSend: its ID is its
// place in the link's table.
func (lr *linkRec) SharedFile(i int) localsend.File {
	name, size, _ := lr.l.File(i)
	return sharedFile(i, name, size)
}

// SharedLookup is the file whose ID is id: its place in the table, in
// decimal, as SharedFile writes it (no sign, no leading zero).
func (lr *linkRec) SharedLookup(id string) (localsend.File, bool) {
	i, err := strconv.Atoi(id)
	if err != nil || strconv.Itoa(i) != id {
		return localsend.File{}, false
	}
	name, size, ok := lr.l.File(i)
	if !ok {
		return localsend.File{}, false
	}
	return sharedFile(i, name, size), true
}

// sharedFile is a share link's file i as LocalSend lists it.
func sharedFile(i int, name string, size int64) localsend.File {
	typ := mime.TypeByExtension(path.Ext(name))
	if typ == "" {
		typ = "application/octet-stream"
	}
	return localsend.File{ID: strconv.Itoa(i), FileName: name, Size: size, FileType: typ}
}

// SharedPIN is the link's PIN: LocalSend's prepare-download asks for it.
func (lr *linkRec) SharedPIN() string { return lr.pin }

// ServeShared serves a file as the link's page does (its progress is an
// activity of the link, Once counts it).
func (lr *linkRec) ServeShared(w http.ResponseWriter, r *http.Request, id string) {
	i, err := strconv.Atoi(id)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	lr.l.ServeFile(w, r, i)
}
