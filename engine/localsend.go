package engine

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/atomicfile"
	"github.com/ferrydrop/ferry/internal/fileio"
)

// LocalSend is the second protocol beside Ferry's (package localsend): its
// offers go through the same inbox as Ferry's (policy, trust, admission,
// space, the prompt, store.Dest, per-file results, history), and sending to
// a LocalSend device is an outbox attempt like a Ferry send.
//
// Several LocalSend sessions may run at once (the official app takes one):
// the server reads at most 4 offers' bodies at once (2 per address) and
// holds at most 256 offers (8 per address) being decided or uploading;
// within that, the engine's admission decides who waits, fairly between
// addresses, like Ferry's.

// ProtocolLocalSend marks a peer that speaks LocalSend (PeerInfo.Protocol).
const ProtocolLocalSend = "localsend"

// LocalSendOptions configures the engine's LocalSend server.
type LocalSendOptions struct {
	// Alias is the name shown to LocalSend devices (empty: the engine's name).
	Alias string
	// DeviceModel and DeviceType describe this device (type empty: desktop).
	DeviceModel, DeviceType string
	// PIN, when set, must be given by every sender (401, and 429 after 3
	// wrong ones from an address); offers refused for it are told as
	// EventLocalSendPIN, at most one a minute per address.
	PIN string
	// Port is tried first (0: localsend.DefaultPort; negative: any free
	// port at once), then the port used last time (kept in the config
	// dir), then any free one.
	Port int
	// Host is the address to listen on (empty: all).
	Host string
	// Listener, when set, is served instead, the first time (tests: inside
	// a namespace); receiving again listens at its address.
	Listener net.Listener
	// RequireClientCert refuses senders that present no certificate.
	RequireClientCert bool
	// OnRegister hears registers (discovery wires its table here).
	OnRegister func(info localsend.Info, addr netip.Addr, cert *x509.Certificate)
	// StartGrace ends an accepted session whose sender begins no upload
	// within it (0: localsend.ServerConfig's 10 s).
	StartGrace time.Duration
	// StallAfter is how long an accepted transfer may go without a byte
	// before it says it is interrupted (0: lsStallAfter).
	StallAfter time.Duration
}

// lsStallAfter is LocalSendOptions.StallAfter by default: as long as the
// session a Ferry device's receiver holds without a byte (SessionIdleTimeout).
const lsStallAfter = time.Minute

// LocalSendReceiver is the LocalSend server as a row of the receiver
// table (named "localsend"; add it with AddLocalSend). Start opens it with
// Ferry's rows, StopReceiving withdraws it (new offers get 403 while the
// sessions running finish; the socket is released after the last of
// them), StopReceivingNow and Close close it; one that cannot open its
// port, or stops serving, is reported alone (EventListener, Listeners)
// while the other rows carry on.
//
// Its port follows the rule at each Listen: LocalSendOptions.Port
// (53317 by default) when free, else the port used last time, else any
// free one; a port other than the one asked for is said in the row's
// ListenerStatus.Note (devices that find others only by the /24 scan will
// not see this one).
type LocalSendReceiver struct {
	e    *Engine
	opts LocalSendOptions
	cert tls.Certificate

	mu    sync.Mutex // guards the fields below
	srv   *localsend.Server
	ln    net.Listener
	moved int           // the port asked for when another one is served; 0 otherwise
	done  chan struct{} // closed when the server's Serve returns
	err   error         // what it returned
	given bool          // opts.Listener was served already
}

// AddLocalSend adds the LocalSend server to the receiver table: LocalSend
// devices may then send to this device while it receives, under the
// engine's receiving policy. While receiving it opens at once, and an
// error to open is returned (the row stays: the next Start tries again).
func (e *Engine) AddLocalSend(opts LocalSendOptions) (*LocalSendReceiver, error) {
	cert, err := e.LocalSendCert()
	if err != nil {
		return nil, err
	}
	if opts.Alias == "" {
		opts.Alias = e.Name()
	}
	r := &LocalSendReceiver{e: e, opts: opts, cert: cert}
	return r, e.AddReceiver(r)
}

// Name is the row's name in ListenerStatus and EventListener.
func (r *LocalSendReceiver) Name() string { return ProtocolLocalSend }

// Listen opens the port (see LocalSendReceiver) and serves it.
func (r *LocalSendReceiver) Listen() error {
	o := r.opts
	srv, err := localsend.NewServer(localsend.ServerConfig{
		Info:              localsend.Info{Alias: o.Alias, DeviceModel: o.DeviceModel, DeviceType: o.DeviceType},
		Cert:              r.cert,
		Receiver:          &lsReceiver{e: r.e, stallAfter: cmp.Or(r.opts.StallAfter, lsStallAfter)},
		PIN:               o.PIN,
		OnPIN:             r.e.lsPINs.refused,
		RequireClientCert: o.RequireClientCert,
		OnRegister:        o.OnRegister,
		StartGrace:        o.StartGrace,
		Shared:            r.e.localSendShared, // the download API serves the newest share link
		Log:               r.e.log,
	})
	if err != nil {
		return err
	}
	r.mu.Lock()
	given := r.given
	r.mu.Unlock()
	var (
		ln    net.Listener
		moved int
	)
	switch {
	case o.Listener != nil && !given:
		ln = o.Listener
	case o.Listener != nil:
		// Receiving again: the given listener was closed with the row.
		if ln, err = net.Listen("tcp", o.Listener.Addr().String()); err != nil {
			return fmt.Errorf("localsend: listen: %w", err)
		}
	default:
		if ln, moved, err = r.e.listenLocalSend(o.Host, o.Port); err != nil {
			return err
		}
	}
	done := make(chan struct{})
	r.mu.Lock()
	r.srv, r.ln, r.moved, r.done, r.err, r.given = srv, ln, moved, done, nil, true
	r.mu.Unlock()
	go func() {
		err := srv.Serve(ln)
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
		close(done)
	}()
	return nil
}

// Serve waits for ctx; the HTTP server runs from Listen until the row
// closes, since the uploads of running sessions come in on connections of
// their own even after it is withdrawn. An error says the server stopped.
func (r *LocalSendReceiver) Serve(ctx context.Context) error {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done == nil {
		return errors.New("localsend: not listening")
	}
	select {
	case <-ctx.Done():
		return nil
	case <-done:
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.err
	}
}

// Addr is where the server listens; nil while it does not.
func (r *LocalSendReceiver) Addr() net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln == nil {
		return nil
	}
	return r.ln.Addr()
}

// Withdraw refuses new offers; the server closes after its last session.
func (r *LocalSendReceiver) Withdraw() {
	r.mu.Lock()
	srv := r.srv
	r.mu.Unlock()
	if srv != nil {
		srv.Withdraw(func() { r.Close() })
	}
}

// Resume takes offers again, unless the server closed meanwhile.
func (r *LocalSendReceiver) Resume() bool {
	r.mu.Lock()
	srv := r.srv
	r.mu.Unlock()
	return srv != nil && srv.Resume()
}

// Close ends the running sessions, releases the port and waits for the
// server.
func (r *LocalSendReceiver) Close() error {
	r.mu.Lock()
	srv, done := r.srv, r.done
	r.srv, r.ln = nil, nil
	r.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	<-done
	return err
}

// ListenNote says the port moved (see ListenerStatus.Note).
func (r *LocalSendReceiver) ListenNote() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.moved == 0 || r.ln == nil {
		return ""
	}
	return fmt.Sprintf("port %d was taken, so LocalSend devices reach this one on port %d: devices that find others only by scanning the network will not see it", r.moved, portOf(r.ln.Addr()))
}

// Port is the TCP port served (0 while not listening).
func (r *LocalSendReceiver) Port() int {
	if a := r.Addr(); a != nil {
		return portOf(a)
	}
	return 0
}

// Moved is the port asked for when another one is served (0 otherwise).
func (r *LocalSendReceiver) Moved() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.moved
}

// Fingerprint is this device's LocalSend fingerprint (its certificate's).
func (r *LocalSendReceiver) Fingerprint() string { return localsend.CertFingerprint(r.cert) }

// Info describes this device for LocalSend announcements: alias, model,
// type, fingerprint, protocol, the port served now, and whether a share
// link is open for the download API.
func (r *LocalSendReceiver) Info() localsend.Info {
	dt := r.opts.DeviceType
	if dt == "" {
		dt = localsend.TypeDesktop
	}
	return localsend.Info{Alias: r.opts.Alias, DeviceModel: r.opts.DeviceModel, DeviceType: dt,
		Fingerprint: r.Fingerprint(), Port: r.Port(), Protocol: "https",
		Download: r.e.localSendShared() != nil} // a share link is open: the download API serves it
}

// LocalSendCert is the certificate this device serves and presents over
// LocalSend: its Ferry identity certificate, so that a Ferry device that
// meets it over LocalSend recognises this device by its key (one device in
// the device table, the same trust: identity.Store.Recognise). Any
// self-signed certificate satisfies LocalSend's checks.
func (e *Engine) LocalSendCert() (tls.Certificate, error) {
	if len(e.ident.Cert.Certificate) == 0 {
		return tls.Certificate{}, errors.New("localsend: this device has no identity certificate")
	}
	return e.ident.Cert, nil
}

// lastPortFile keeps the LocalSend port used last, to reuse when the
// default is taken (senders that remember this device find it again).
const lastPortFile = "localsend/last-port"

// listenLocalSend opens the port: preferred, else the last used, else a
// free one. moved is the preferred port when another one was opened.
func (e *Engine) listenLocalSend(host string, preferred int) (ln net.Listener, moved int, err error) {
	if preferred == 0 {
		preferred = localsend.DefaultPort
	}
	if preferred < 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, 0, fmt.Errorf("localsend: listen: %w", err)
		}
		return ln, 0, nil
	}
	tries := []int{preferred}
	if b, err := os.ReadFile(filepath.Join(e.opts.ConfigDir, lastPortFile)); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 && p < 65536 && p != preferred {
			tries = append(tries, p)
		}
	}
	tries = append(tries, 0)
	var first error
	for _, p := range tries {
		ln, err = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		port := portOf(ln.Addr())
		file := filepath.Join(e.opts.ConfigDir, lastPortFile)
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			e.log.Warn("localsend: cannot remember the port", "err", err)
		} else if err := atomicfile.Write(file, []byte(strconv.Itoa(port)+"\n"), 0o600); err != nil {
			e.log.Warn("localsend: cannot remember the port", "err", err)
		}
		if port != preferred {
			e.log.Warn("localsend: port taken; serving on another (devices that only scan will not find this one)",
				"wanted", preferred, "port", port, "err", first)
			moved = preferred
		}
		return ln, moved, nil
	}
	return nil, 0, fmt.Errorf("localsend: listen: %w", first)
}

// lsReceiver is the engine as the LocalSend server's Receiver.
type lsReceiver struct {
	e          *Engine
	stallAfter time.Duration // LocalSendOptions.StallAfter
}

// Offer takes one prepare-upload through the inbox.
func (r *lsReceiver) Offer(ctx context.Context, o *localsend.Offer) (localsend.Session, error) {
	e := r.e
	// A sender with a client certificate is the LocalSend device of its
	// fingerprint; one without proved nothing: an anonymous peer named by
	// its address, never trusted or remembered, whatever it claims.
	verified := o.Verified()
	id := peer.Anonymous(o.Addr.String())
	if verified {
		if fid, err := peer.Fingerprint(o.CertFingerprint); err == nil {
			id = fid
		} else {
			verified = false
		}
	}
	if verified && o.Cert != nil {
		// A Ferry device known here, sending over LocalSend, is that
		// device (its trust, its name).
		id = e.trust.Recognise(o.Cert)
	}
	addr := netip.AddrPortFrom(o.Addr, 0).String()
	// The transfer lives beyond the prepare-upload request: its context is
	// the engine's receiving one, and the request's end (the sender gone,
	// or its cancel) ends it only until the offer is decided.
	e.mu.Lock()
	rxCtx := e.rxCtx
	e.mu.Unlock()
	tctx, tcancel := context.WithCancelCause(rxCtx)
	unlink := context.AfterFunc(ctx, func() {
		cause := context.Cause(ctx)
		if errors.Is(cause, context.Canceled) && rxCtx.Err() == nil {
			// The request ended without a word: the sender went away
			// (not "Ferry was closed", which a plain cancel reads as).
			cause = core.ErrConnectionLost
		}
		tcancel(cause)
	})
	defer unlink()
	tk, refused := e.admit.Arrive(addr, id, func() { tcancel(core.ErrReceiverBusy) })
	// Refused before the offer is taken: no transfer tells of it.
	unread := func(r *wire.RemoteError) {
		e.refusals.refused(addr, RefusedDevice{ID: id.String(), Name: o.Sender.Alias, Protocol: ProtocolLocalSend}, r)
	}
	if refused != nil {
		unread(refused)
		tcancel(nil)
		return nil, fmt.Errorf("%w: %s", localsend.ErrBusy, refused.Reason)
	}
	in := e.newInbox(id, o.Sender.Alias, o.Addr.String(), nil, tk)
	in.t.cancel = tcancel
	in.t.peer.Protocol = ProtocolLocalSend
	in.t.peer.Model = o.Sender.DeviceModel
	in.t.peer.DeviceType = o.Sender.DeviceType
	in.t.peer.Fingerprint = o.Sender.Fingerprint
	in.t.peer.Unverified = !verified
	if !verified {
		in.t.peer.Trusted = false
	}
	s := &lsSession{in: in, tk: tk, ctx: tctx, cancel: tcancel}
	decided := false
	fail := func(err error) (localsend.Session, error) {
		if !decided {
			tk.Decided()
		}
		in.Finish(err, false, Result{})
		tk.End()
		tcancel(nil)
		return nil, err
	}
	var names int
	files := make(core.Files, 0, len(o.Files))
	text := ""
	if o.IsText {
		text = o.Text
	} else {
		for i, f := range o.Files {
			files = append(files, core.OfferedFile{Path: f.FileName, Size: f.Size})
			names += len(f.FileName) + len(f.ID) // the server keeps each accepted file's ID
			if f.Metadata == nil || f.Metadata.Modified == "" {
				continue
			}
			if t, err := time.Parse(time.RFC3339Nano, f.Metadata.Modified); err == nil {
				if s.modified == nil {
					s.modified = make([]time.Time, len(o.Files))
				}
				s.modified[i] = t
			}
		}
	}
	// LocalSend's offer is held whole in memory, as decoded: it costs what
	// the Ferry receiver's list cost before it spilled (core.HeldFileCost).
	cost := core.HeldCost(len(files), int64(names))
	if rerr := tk.HoldManifest(cost); rerr != nil {
		unread(rerr)
		return fail(fmt.Errorf("%w: %s", localsend.ErrBusy, rerr.Reason))
	}
	if err := in.CheckCost(cost); err != nil {
		return fail(fmt.Errorf("%w: %w", localsend.ErrDeclined, err))
	}
	_, known := e.trust.Get(id)
	if rerr := tk.CheckMuted(in.t.peer.Trusted, known && verified); rerr != nil {
		unread(rerr)
		return fail(fmt.Errorf("%w: %s", localsend.ErrDeclined, rerr.Reason))
	}
	if rerr := e.checkImpersonation(id, o.Sender.Alias, o.Addr.String()); rerr != nil {
		return fail(fmt.Errorf("%w: %s", localsend.ErrDeclined, rerr.Reason))
	}
	// LocalSend has no resume: every prepare-upload is a delivery of its own.
	s.files = files
	err := in.Offer(newTransferID(), files, text)
	tk.Decided()
	decided = true
	if err != nil {
		return fail(fmt.Errorf("%w: %w", localsend.ErrDeclined, err))
	}
	if err := in.Register(); err != nil {
		return fail(err)
	}
	d, err := in.Decide(tctx)
	if err != nil {
		if errors.Is(err, localsend.ErrCancelled) {
			err = &wire.RemoteError{Code: wire.CodeCancelled} // "Cancelled by <alias>."
		}
		return fail(err)
	}
	if !d.Accept {
		verdict := d.Err()
		in.Finish(verdict, false, Result{})
		tk.End()
		tcancel(nil)
		if d.Code == wire.CodeBusy {
			return nil, fmt.Errorf("%w: %w", localsend.ErrBusy, verdict)
		}
		return nil, fmt.Errorf("%w: %w", localsend.ErrDeclined, verdict)
	}
	if verified {
		e.acceptedFrom(id, o.Sender.Alias)
	}
	// Uploads are written through the page cache without write-behind, as
	// the plain server and the official app write them (fileio.Cached):
	// LocalSend has no resume journal to keep in step with the device, and
	// its sender waits for each file's answer, which direct writes held
	// back until the device had the last piece (the "drain") and
	// write-behind until it had all but the last windows (a 1 GiB upload
	// then ran at the disk's speed: docs/localsend.md "Figures"). A crash
	// of Ferry still loses nothing it answered for; a power cut may, as
	// with every file received without Options.SyncFiles.
	in.Dest.SetIOMode(fileio.Cached)
	in.Begin()
	pctx, stop := context.WithCancel(tctx)
	s.stopProgress = stop
	go in.WatchProgress(pctx)
	s.watched.Go(func() {
		e.watchStalled(pctx, in.t, r.stallAfter, func() int64 { return s.read.Load() + int64(in.ResolvedCount()) })
	})
	// Until its first upload, another's offer may take its budget.
	tk.IdleAccepted(func() { tcancel(errDisplaced) })
	return s, nil
}

// errDisplaced ends an accepted LocalSend session whose sender began no
// upload when another sender's offer needed its manifest budget: many
// addresses whose accepted offers are never uploaded would otherwise keep
// every real sender out (docs/localsend.md, floods).
var errDisplaced = errors.New("the sender began no upload, and another sender's offer took its place")

// lsSession is one accepted LocalSend offer.
type lsSession struct {
	in    *inbox
	files core.Files // the offer's, as the inbox has them
	// modified are the files' modification times where the sender gave
	// them (metadata.modified; zero where not, nil when none did).
	modified []time.Time
	tk       *core.Ticket
	ctx      context.Context
	cancel   context.CancelCauseFunc

	stopProgress context.CancelFunc
	watched      sync.WaitGroup // watchStalled returned
	read         atomic.Int64   // bytes read of the uploads (lsSink.Arrived)
	mu           sync.Mutex     // guards the fields below
	failed       int
	cut          int // of failed, cut short by their sender
	// uploads logs the partials being written, as a receive link's do, so
	// that the next start removes those a crash left (cleanLinkUploads):
	// LocalSend has no resume, and nothing else lists them. Opened with the
	// first file; open counts the partials it lists not yet gone.
	uploads *linkUploads
	open    int
	// twins keeps the offer's names of two spellings for their first
	// once, before the first partial (keepTwins).
	twins sync.Once
	// copies is the place of each file among the copies of its name, by
	// its index in the offer (copyPlaces); set under twins.
	copies map[uint32]int
}

// began logs p, a partial just created, before any byte lands in it.
func (s *lsSession) began(p *store.Partial) {
	s.mu.Lock()
	if s.uploads == nil {
		s.uploads = s.in.e.openLinkUploads()
	}
	s.open++
	u := s.uploads
	s.mu.Unlock()
	u.began(s.in.Dest.Dir(), p.Name(), p.Identity())
}

// ended logs that the partial name is gone (saved, or removed).
func (s *lsSession) ended(name string) {
	s.mu.Lock()
	s.open--
	u := s.uploads
	s.mu.Unlock()
	u.ended(s.in.Dest.Dir(), name)
}

// Accepted lists the accepted files, as indexes in the offer (the
// inbox's files are the offer's, in its order).
func (s *lsSession) Accepted() []int { return s.in.Accepted }

// Context ends with the transfer (localsend.EndingSession): cancelled or
// displaced here, the server ends the session and refuses its uploads.
func (s *lsSession) Context() context.Context { return s.ctx }

// Open creates the .partial of the offer's file idx in the destination.
func (s *lsSession) Open(idx int) (localsend.Sink, error) {
	if idx < 0 || idx >= len(s.files) {
		return nil, fmt.Errorf("file %d was not offered", idx)
	}
	if !s.tk.Uploading() {
		return nil, fmt.Errorf("%w: %w", localsend.ErrRejected, errDisplaced)
	}
	if err := context.Cause(s.ctx); err != nil {
		return nil, err
	}
	f := s.files[idx]
	s.twins.Do(s.keepTwins)
	p, err := s.in.Dest.CreatePartial(f.Path)
	if err != nil {
		s.resolveFailed(idx, "cannot create the file: "+core.Sentence(err))
		return nil, err
	}
	if k, ok := s.copies[uint32(idx)]; ok {
		p.SetCopy(k) // the offer's first copy keeps the name, whichever lands first
	}
	p.SparseUpload(f.Size) // its chunks of zeros stay holes
	s.began(p)
	return &lsSink{s: s, idx: idx, p: p}, nil
}

// keepTwins keeps the first spelling of each of the accepted files' names
// that are one where letter case is ignored (store.Twins), and numbers the
// copies of one name in the offer's order (copies): a LocalSend app
// uploads its files in an order of its own, and then whichever landed
// first kept its name. The offer is in the order of its names, and of
// IDs within a name (sorted as it arrives: "READ.ME" before "Read.me",
// id0's "a.txt" before id1's), so that order decides.
func (s *lsSession) keepTwins() {
	acc := s.in.Accepted
	if len(acc) < 2 {
		return
	}
	var twins store.Twins
	for _, i := range acc {
		twins.Add(s.files[i].Path)
	}
	s.in.e.keepTwins(s.in.Dest, &twins)
	s.copies = copyPlaces(&twins, acc)
}

func (s *lsSession) resolveFailed(idx int, reason string) {
	s.mu.Lock()
	s.failed++
	s.mu.Unlock()
	s.in.Resolved(idx, false, "", "", reason)
}

// End finishes the inbox.
func (s *lsSession) End(err error) {
	s.stopProgress()
	s.watched.Wait() // no state after the result
	s.mu.Lock()
	failed, cut := s.failed, s.cut
	s.mu.Unlock()
	switch {
	case errors.Is(err, localsend.ErrCancelled):
		err = &wire.RemoteError{Code: wire.CodeCancelled}
	case errors.Is(err, localsend.ErrTimeout):
		err = errConnectionLost
	case errors.Is(err, localsend.ErrClosed):
		err = ErrClosed
	case err == nil && failed > 0 && failed == cut:
		// Each that did not arrive was cut by its sender: the
		// connection, not this side's disk ("Read or write error").
		err = fmt.Errorf("%w: %d of %d files did not arrive", errConnectionLost, failed, len(s.in.Accepted))
	case err == nil && failed > 0:
		err = fmt.Errorf("%w: %d of %d files did not arrive", wire.ErrIO, failed, len(s.in.Accepted))
	}
	if cause := context.Cause(s.ctx); cause != nil && (errors.Is(cause, errCancelledByUser) || errors.Is(cause, errStoppedReceiving) || errors.Is(cause, errDisplaced)) {
		err = cause
	}
	s.in.Finish(err, false, Result{})
	s.mu.Lock()
	if s.uploads != nil {
		s.uploads.close(s.open == 0) // else the next start removes what is left
	}
	s.mu.Unlock()
	s.tk.End()
	s.cancel(nil)
}

// lsSink writes one file into its partial.
type lsSink struct {
	s   *lsSession
	idx int
	p   *store.Partial
	off int64
}

// Write appends to the partial; a cancelled transfer stops the upload.
func (k *lsSink) Write(b []byte) (int, error) {
	if err := context.Cause(k.s.ctx); err != nil {
		return 0, err
	}
	n, err := k.p.WriteAt(b, k.off)
	k.off += int64(n)
	k.s.in.Bytes.Add(int64(n))
	return n, err
}

// Arrived counts bytes of the upload read from the network
// (localsend.ArrivalCounter), for watchStalled.
func (k *lsSink) Arrived(n int64) { k.s.read.Add(n) }

var _ localsend.ArrivalCounter = (*lsSink)(nil)

// Commit gives the file its final name (never over an existing one).
func (k *lsSink) Commit() error {
	f := k.s.files[k.idx]
	if k.s.modified != nil {
		k.p.SetMeta(store.Meta{ModTime: k.s.modified[k.idx]})
	}
	name := k.p.Name()
	savedAs, err := k.s.in.Dest.Finalize(k.p, f.Path, f.Size)
	if err != nil {
		k.s.resolveFailed(k.idx, "cannot save the file: "+saveCause(err)) // "the download folder was deleted ...", not "Store: finalize ..."
		return err
	}
	k.s.ended(name)
	k.s.in.Resolved(k.idx, true, savedAs, "", "")
	return nil
}

// Abort ends the file and removes its partial: LocalSend has no resume (a
// sender sends a file again from its start, in a session of its own), and
// no resume state lists it, so a partial kept would be left for ever.
func (k *lsSink) Abort(err error) {
	reason := "the upload did not finish"
	switch {
	case errors.Is(err, localsend.ErrChecksum):
		reason = "the bytes do not match the sender's checksum; nothing was saved"
	case errors.Is(err, localsend.ErrNoSpace):
		reason = "not saved: the disk is full"
	case errors.Is(err, localsend.ErrStore):
		reason = "not saved: " + saveCause(err)
	case errors.Is(err, localsend.ErrUploadCut):
		reason = "the sender stopped sending it before its end"
		k.s.mu.Lock()
		k.s.cut++
		k.s.mu.Unlock()
	case errors.Is(err, localsend.ErrSize):
		reason = "the upload was not the size offered"
	}
	if name := k.p.Name(); k.s.in.Dest.Discard(k.p) == nil {
		k.s.ended(name)
	}
	k.s.resolveFailed(k.idx, reason)
}
