package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"os"
	"path"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/shacache"
	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/safetext"
)

// LocalSendTarget is a LocalSend device to send to.
type LocalSendTarget struct {
	// Addr is host:port of its server.
	Addr string
	// Fingerprint is the one it announced: its certificate must have it
	// (empty: any certificate, for an address typed by the user).
	Fingerprint string
	// Scheme is "https" (default) or "http".
	Scheme string
	// Alias is its name, for the transfer's row and messages.
	Alias string
}

// LocalSendSendOptions are the choices of one LocalSend send.
type LocalSendSendOptions struct {
	// PIN is sent with the offer when set.
	PIN string
	// AskPIN is called when the receiver asks for a PIN (wrong: one was
	// given and refused); nil gives up with "a PIN is required".
	AskPIN func(ctx context.Context, wrong bool) (string, error)
	// Parallel bounds the uploads at once (0: 4).
	Parallel int
	// Dial opens connections (nil: the system's; tests dial inside a namespace).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// StallTimeout gives up an upload the receiver takes no byte of for
	// this long (0: 30 s; localsend.ClientConfig.StallTimeout).
	StallTimeout time.Duration
}

// lsSend is what a LocalSend transfer keeps across its attempts and Retry:
// where it goes and which files arrived (LocalSend has no resume, so an
// attempt re-sends only the files that did not).
type lsSend struct {
	to   LocalSendTarget
	opts LocalSendSendOptions

	mu        sync.Mutex // guards the fields below
	delivered map[int]bool
	// leftOut: files the receiver did not take (a LocalSend user can untick
	// files; Ferry's own LocalSend receiver leaves out names it cannot
	// store). The attempts after that decision do not offer them again;
	// a Retry by the user does.
	leftOut  map[int]bool
	textDone bool
}

// SendLocalSend sends files, folders and/or a text to a LocalSend device:
// an outbox like a Ferry send (attempts, Retry, results), each attempt a
// prepare-upload and the uploads of the files not delivered yet.
func (e *Engine) SendLocalSend(ctx context.Context, to LocalSendTarget, items Items, opts LocalSendSendOptions) (*Transfer, error) {
	return e.sendLocalSend(ctx, newTransferID(), Result{}, &lsSend{to: to, opts: opts, delivered: map[int]bool{}}, items)
}

func (e *Engine) sendLocalSend(ctx context.Context, id string, prior Result, ls *lsSend, items Items) (*Transfer, error) {
	if ls.to.Addr == "" {
		return nil, errors.New("no address to send to")
	}
	if err := CheckText(items.Text); err != nil {
		return nil, err
	}
	var files []localFile
	var skipped SkippedInfo
	var renamed []RenamedPath
	if len(items.Paths) > 0 || items.Text == "" {
		m, s, err := buildManifestSkipping(items.Paths)
		if err != nil {
			return nil, err
		}
		files, skipped, renamed = m.files, s, m.renamed
		// LocalSend carries files, each under its path: an empty folder
		// has no file to carry it.
		skipped.EmptyFolders, skipped.FilesOnly = len(m.folders), len(m.folders) > 0
		for _, f := range m.folders {
			skipped.note(f + "/")
		}
	}
	cert, err := e.LocalSendCert()
	if err != nil {
		return nil, err
	}
	t := &Transfer{id: id, dir: Sending, done: make(chan struct{}), started: e.now(), state: StateConnecting,
		resume: make(chan struct{}), pauseNow: make(chan struct{}, 1), paths: append([]string(nil), items.Paths...), text: items.Text, ls: ls}
	t.peer = PeerInfo{Name: ls.to.Alias, Addr: ls.to.Addr, Protocol: ProtocolLocalSend, Fingerprint: ls.to.Fingerprint}
	tctx, cancel := context.WithCancelCause(e.ctx)
	t.cancel = cancel
	if err := e.register(t); err != nil {
		cancel(nil)
		return nil, err
	}
	client := localsend.NewClient(localsend.ClientConfig{
		Info: localsend.Info{Alias: e.Name(), DeviceModel: "Ferry", DeviceType: localsend.TypeDesktop},
		Cert: cert, Parallel: ls.opts.Parallel, Dial: ls.opts.Dial, StallTimeout: ls.opts.StallTimeout,
	})
	ls.mu.Lock()
	ls.leftOut = map[int]bool{}
	ls.mu.Unlock()
	o := e.newOutbox(t, files, items.Text, prior)
	o.NewAttempt = func() core.Attempt {
		return &lsAttempt{e: e, t: t, ls: ls, client: client, files: files, text: items.Text}
	}
	info := offerInfo(files, items.Text)
	if skipped.Count() > 0 {
		info.Skipped = &skipped
	}
	info.Renamed = renamed
	e.publish(t, Event{Kind: EventOffer, State: StateConnecting, Offer: info})
	stopLink := context.AfterFunc(ctx, func() { cancel(errCancelledByUser) })
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer stopLink()
		defer cancel(nil)
		o.Run(tctx)
	}()
	return t, nil
}

// nameWait bounds the wait for a device's name (learnName) once it
// answered the offer with a refusal: it is there, and answers at once.
const nameWait = 2 * time.Second

// learnName asks a device given by its address alone (ferry-cli send
// --protocol localsend HOST:PORT) for its name, as LocalSend apps do with
// an address typed in, so that what the transfer says names it ("Declined
// by Pixel 8", not "by the other device"). A device that does not answer
// is sent to all the same: the send's own request says why it failed.
func (a *lsAttempt) learnName(ctx context.Context) {
	a.t.mu.Lock()
	known := a.t.peer.Name != ""
	a.t.mu.Unlock()
	if known {
		return
	}
	to := a.ls.to
	in, err := a.client.DeviceInfo(ctx, localsend.Target{Addr: to.Addr, Fingerprint: to.Fingerprint, Scheme: to.Scheme})
	if err != nil || in.Alias == "" {
		return
	}
	a.t.mu.Lock()
	if a.t.peer.Name == "" {
		a.t.peer.Name, a.t.peer.Model, a.t.peer.DeviceType = in.Alias, in.DeviceModel, string(in.DeviceType)
	}
	a.t.mu.Unlock()
}

// waitName waits for learnName (named closed) at most nameWait.
func waitName(named <-chan struct{}) {
	t := time.NewTimer(nameWait)
	defer t.Stop()
	select {
	case <-named:
	case <-t.C:
	}
}

// lsAttempt is one prepare-upload and its uploads.
type lsAttempt struct {
	e      *Engine
	t      *Transfer
	ls     *lsSend
	client *localsend.Client
	files  []localFile
	text   string

	sent     atomic.Int64
	done     atomic.Int64 // files delivered in this attempt
	accepted int          // -1 until the receiver decided
	total    int64
	textIn   bool // the receiver took the text among the files (counted in accepted)
}

// run sends what is not delivered yet.
func (a *lsAttempt) Run(ctx context.Context) error {
	a.accepted = -1
	ls := a.ls
	cache := a.e.hashes()
	hashing := map[string]*fileHash{} // files hashed as they go, to remember
	ls.mu.Lock()
	var ups []localsend.Upload
	for i, f := range a.files {
		if ls.delivered[i] || ls.leftOut[i] {
			continue
		}
		up := localsend.Upload{
			File: localsend.File{ID: strconv.Itoa(i), FileName: f.Path, Size: f.Size, FileType: mimeOf(f.Path)},
			Open: func() (io.ReadCloser, error) { return os.Open(f.src()) },
		}
		if f.MTime != 0 {
			// As LocalSend apps send it (the official one keeps it as the
			// file's metadata; others set it).
			up.Metadata = &localsend.FileMeta{Modified: time.Unix(0, f.MTime).UTC().Format(time.RFC3339Nano)}
		}
		if fi, err := os.Stat(f.src()); err == nil && cache != nil {
			if k, ok := shacache.KeyOf(fi); ok && k.Size == f.Size {
				if sum, ok := cache.Get(k); ok {
					up.SHA256 = sum // the receiver checks it (422 on a mismatch)
				} else {
					fh := &fileHash{key: k, src: f.src(), size: f.Size}
					hashing[up.ID] = fh
					up.Open = fh.open
				}
			}
		}
		open, src, size, mtime := up.Open, f.src(), f.Size, f.MTime
		up.Open = func() (io.ReadCloser, error) { return openSource(open, src, size, mtime) }
		ups = append(ups, up)
	}
	if a.text != "" && !ls.textDone {
		ups = append(ups, localsend.TextUpload("text", a.text))
	}
	ls.mu.Unlock()
	if len(ups) == 0 {
		return nil
	}
	// The name is asked beside the offer, not before it: a device out of
	// reach is not waited for twice. A device that refused the offer is
	// there: its name is waited for (nameWait), for the refusal's words.
	nctx, stopName := context.WithCancel(ctx)
	named := make(chan struct{})
	go func() {
		defer close(named)
		a.learnName(nctx)
	}()
	answered := false // the device answered the offer: its name is worth a moment
	defer func() {
		if answered {
			waitName(named)
		}
		stopName()
		<-named
	}()
	sizes := map[string]int64{}
	for _, u := range ups {
		sizes[u.ID] = u.Size
	}
	var mu sync.Mutex
	last := map[string]int64{}
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	res, err := a.client.Send(ctx, localsend.Target{Addr: ls.to.Addr, Fingerprint: ls.to.Fingerprint, Scheme: ls.to.Scheme}, ups, localsend.SendOptions{
		PIN:    ls.opts.PIN,
		AskPIN: ls.opts.AskPIN,
		// Waiting for the answer, which the other device's owner gives.
		Offered: func() { a.e.setState(a.t, StateWaiting) },
		Written: func(id string, n int64) {
			mu.Lock()
			d := n - last[id]
			last[id] = n
			mu.Unlock()
			a.sent.Add(d)
		},
		Accepted: func(ids []string) {
			a.accepted = len(ids)
			for _, id := range ids {
				a.total += sizes[id]
				a.textIn = a.textIn || id == "text"
			}
			// The device answered: it is there, and its name, asked
			// beside the offer, comes at once. Waited for before the files
			// move, so every sentence from here on names it ("The
			// connection to Pixel was lost"), however soon one comes.
			waitName(named)
			a.leaveOut(ups, ids)
			a.e.setState(a.t, StateActive)
			go a.e.watchProgress(pctx, a.t, a.sent.Load, a.total, func() int { return int(a.done.Load()) }, len(ids))
		},
	})
	var se *localsend.StatusError
	answered = errors.As(err, &se)
	if res != nil && cache != nil {
		remembered := false
		for _, id := range res.Accepted {
			if fh := hashing[id]; fh != nil && res.Failed[id] == nil {
				if sum, ok := fh.sum(); ok {
					cache.Put(fh.key, sum)
					remembered = true
				}
			}
		}
		if remembered {
			if err := cache.Flush(); err != nil {
				a.e.log.Warn("localsend: the sha256 cache", "err", err)
			}
		}
	}
	if res != nil {
		ls.mu.Lock()
		if a.text != "" && err == nil {
			ls.textDone = true // a text is delivered by the offer itself (204), or uploaded
		}
		for _, id := range res.Accepted {
			if res.Failed[id] != nil {
				continue
			}
			if i, perr := strconv.Atoi(id); perr == nil {
				ls.delivered[i] = true
				a.done.Add(1)
			}
		}
		ls.mu.Unlock()
		if res.Accepted == nil && err == nil {
			a.accepted = 0
		}
	}
	if ue := (*unreadableError)(nil); errors.As(err, &ue) {
		return ue // said once, without the request it was read for
	}
	if errors.Is(err, localsend.ErrStalled) {
		return &lsStalledError{who: a.receiverName(), err: err}
	}
	if oe := (*net.OpError)(nil); errors.As(err, &oe) && oe.Op == "dial" {
		return &lsDialError{who: a.receiverName(), addr: ls.to.Addr, cause: oe.Err, err: err}
	}
	if errors.Is(err, localsend.ErrConnectionLost) {
		// Said as a connection that broke ("The connection to Pixel was
		// lost."), tried again as one, not as the request's raw error.
		return fmt.Errorf("the connection to %s was lost: %w", a.receiverName(), err)
	}
	if err != nil {
		return lsSendError(err)
	}
	return nil
}

// receiverName is the LocalSend receiver as sentences name it.
func (a *lsAttempt) receiverName() string {
	a.t.mu.Lock()
	name := a.t.peer.Name // its alias, or the name learnName asked it for
	a.t.mu.Unlock()
	if name == "" {
		name = a.ls.to.Alias
	}
	if name != "" {
		return safetext.Name(name) // the device's own words: quoted and escaped if need be
	}
	return "the receiver"
}

// lsDialError: the LocalSend receiver could not be reached (it is gone,
// not receiving, or the address is wrong), said with its name, its
// address and the system's plain cause ("connect: connection refused"),
// not the request's Go error; retried as the dial failure it wraps.
type lsDialError struct {
	who, addr string
	cause     error // the dial's own cause
	err       error
}

func (e *lsDialError) Error() string {
	return fmt.Sprintf("could not connect to %s at %s (is LocalSend open there, and receiving?): %v", e.who, e.addr, e.cause)
}

func (e *lsDialError) Unwrap() error { return e.err }

// lsStalledError: the LocalSend receiver stopped taking the files
// (localsend.ErrStalled), said with its name.
type lsStalledError struct {
	who string
	err error
}

func (e *lsStalledError) Error() string {
	return e.who + " stopped taking the files (asleep, or out of range?)"
}

func (e *lsStalledError) Unwrap() error { return e.err }

// Is makes it a core.ErrReceiverStalled: not tried again on its own.
func (e *lsStalledError) Is(target error) bool { return target == core.ErrReceiverStalled }

// leaveOut records the offered files that the receiver did not take (ids
// are the ones it took) and tells of each, as a Ferry receiver's refusal
// by name is told: a file event with the reason.
func (a *lsAttempt) leaveOut(ups []localsend.Upload, ids []string) {
	took := make(map[string]bool, len(ids))
	for _, id := range ids {
		took[id] = true
	}
	var left []int
	for _, u := range ups {
		if i, err := strconv.Atoi(u.ID); err == nil && !took[u.ID] { // "text" is not a file of the offer
			left = append(left, i)
		}
	}
	if len(left) == 0 {
		return
	}
	who := a.receiverName() // "Pixel did not take this file"
	for _, i := range left {
		a.ls.mu.Lock()
		a.ls.leftOut[i] = true
		a.ls.mu.Unlock()
		f := a.files[i]
		a.e.publish(a.t, Event{Kind: EventFile, File: &FileResult{Path: f.Path, Size: f.Size,
			Err: core.Sentence(fmt.Errorf("%s did not take this file", who))}})
	}
}

// end has nothing to release: each Send closes its connections.
func (a *lsAttempt) End(error) {}

// outcome reports the attempt; verified counts every file delivered so far.
func (a *lsAttempt) Outcome() core.AttemptOutcome {
	a.ls.mu.Lock()
	delivered, leftOut := len(a.ls.delivered), len(a.ls.leftOut)
	if a.textIn && a.ls.textDone {
		delivered++ // the text, which Accepted counted beside the files
	}
	a.ls.mu.Unlock()
	acc := a.accepted
	if acc >= 0 {
		acc = max(acc, delivered)
	}
	return core.AttemptOutcome{Sent: a.sent.Load(), Accepted: acc, Verified: delivered, Refused: leftOut, Total: a.total, Reason: "LocalSend (HTTPS)"}
}

// lsSendError maps a LocalSend client error to the engine's words: the
// receiver's refusals become its decisions ("Declined by <alias>"), its
// PIN refusals its rule ("<alias> refused the PIN: it was wrong"), a
// certificate that is not the announced one and a checksum mismatch are
// final, and lost connections are retried.
func lsSendError(err error) error {
	switch {
	case errors.Is(err, localsend.ErrDeclined):
		return &wire.RemoteError{Code: wire.CodeDeclined}
	case errors.Is(err, localsend.ErrNoSpace):
		return &wire.RemoteError{Code: wire.CodeNoSpace, Reason: "its disk filled while the files arrived"}
	case errors.Is(err, localsend.ErrBusy):
		return &wire.RemoteError{Code: wire.CodeBusy, Reason: "it is busy with another transfer; try again when it is done"}
	case errors.Is(err, localsend.ErrTooManyPINs):
		return fmt.Errorf("%w: %w", core.ErrPINLockedOut, &wire.RemoteError{Code: wire.CodeDeclined, Reason: "too many wrong PINs"})
	case errors.Is(err, localsend.ErrWrongPIN):
		return fmt.Errorf("%w: %w", core.ErrPINWrong, &wire.RemoteError{Code: wire.CodeDeclined, Reason: "wrong PIN"})
	case errors.Is(err, localsend.ErrPINRequired):
		return fmt.Errorf("%w: %w", core.ErrPINNeeded, &wire.RemoteError{Code: wire.CodeDeclined, Reason: "a PIN is required"})
	case errors.Is(err, localsend.ErrFingerprint), errors.Is(err, localsend.ErrBadInput):
		return fmt.Errorf("%w: %w", wire.ErrProtocol, err)
	case errors.Is(err, localsend.ErrChecksum):
		return fmt.Errorf("%w: %w", wire.ErrVerifyFailed, err)
	}
	return err
}

// mimeOf is a file's MIME type by its extension (LocalSend shows it).
func mimeOf(name string) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// openSource opens a file to send through open and marks what goes wrong
// reading it as the file's (core.ErrUnreadable: a retry would meet it
// again), the file's path once in the words. size and mtime are the
// offer's (mtime 0: unknown).
func openSource(open func() (io.ReadCloser, error), path string, size, mtime int64) (io.ReadCloser, error) {
	rc, err := open()
	if err != nil {
		return nil, &unreadableError{fi: -1, path: path, err: err}
	}
	return &sourceReader{rc: rc, path: path, size: size, mtime: mtime, left: size}, nil
}

// sourceReader reads a file to send; a read that fails, or an end before
// the size the offer gave, is the file's unreadableError. So is a file
// written to while it was read (its size or modification time is not the
// offer's when its last bytes are read), which would arrive as parts of
// two versions: those last bytes are not handed on, so the upload ends
// short and the receiver does not keep it.
type sourceReader struct {
	rc          io.ReadCloser
	path        string
	size, mtime int64
	left        int64
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.rc.Read(p)
	if n > 0 && int64(n) >= s.left {
		if st, serr := os.Stat(s.path); serr != nil || st.Size() != s.size || s.mtime != 0 && st.ModTime().UnixNano() != s.mtime {
			return 0, &unreadableError{fi: -1, path: s.path, err: errChanged}
		}
	}
	s.left -= int64(n)
	switch {
	case err == io.EOF && s.left > 0:
		err = &unreadableError{fi: -1, path: s.path, err: errors.New("it became shorter while it was being sent")}
	case err != nil && err != io.EOF:
		err = &unreadableError{fi: -1, path: s.path, err: err}
	}
	return n, err
}

func (s *sourceReader) Close() error { return s.rc.Close() }
