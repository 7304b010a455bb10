package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/atomicfile"
)

// LocalSend is the second protocol beside Ferry's (package localsend): its
// offers go through the same inbox as Ferry's (policy, trust, admission,
// space, the prompt, store.Dest, per-file results, history), and sending to
// a LocalSend device is an outbox attempt like a Ferry send.
//
// Several LocalSend sessions may run at once (the official app takes one):
// the server allows LocalSendOptions.MaxSessions (4) in all and 2 per
// address, and the engine's admission bounds them further like Ferry's.

// ProtocolLocalSend marks a peer that speaks LocalSend (PeerInfo.Protocol).
const ProtocolLocalSend = "localsend"

// LocalSendOptions configures the engine's LocalSend server.
type LocalSendOptions struct {
	// Alias is the name shown to LocalSend devices (empty: the engine's name).
	Alias string
	// DeviceModel and DeviceType describe this device (type empty: desktop).
	DeviceModel, DeviceType string
	// PIN, when set, must be given by every sender (401, and 429 after 3
	// wrong ones from an address).
	PIN string
	// Port is tried first (0: localsend.DefaultPort; negative: any free
	// port at once), then the port used last time (kept in the config
	// dir), then any free one.
	Port int
	// Host is the address to listen on (empty: all).
	Host string
	// Listener, when set, is served instead (tests: inside a namespace).
	Listener net.Listener
	// RequireClientCert refuses senders that present no certificate.
	RequireClientCert bool
	// OnRegister hears registers (discovery wires its table here).
	OnRegister func(info localsend.Info, addr netip.Addr, certFingerprint string)
}

// LocalSendServer is the engine's running LocalSend server.
type LocalSendServer struct {
	srv  *localsend.Server
	ln   net.Listener
	port int
	// Moved says the preferred port was taken, so another one is used:
	// devices that find others only by the /24 scan will not see this one.
	Moved bool
	done  chan error
}

// Port is the TCP port served.
func (s *LocalSendServer) Port() int { return s.port }

// Fingerprint is this device's LocalSend fingerprint.
func (s *LocalSendServer) Fingerprint() string { return s.srv.Fingerprint() }

// Info describes this device for announcements (with its port).
func (s *LocalSendServer) Info() localsend.Info {
	i := s.srv.Info()
	i.Port = s.port
	return i
}

// Close stops the server; running LocalSend sessions end.
func (s *LocalSendServer) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

// LocalSendCert is this device's LocalSend certificate (created on first
// use under the config dir's localsend/ folder).
func (e *Engine) LocalSendCert() (tls.Certificate, error) {
	return localsend.LoadOrCreateCert(filepath.Join(e.opts.ConfigDir, "localsend"))
}

// ServeLocalSend starts the LocalSend server: LocalSend devices may then
// send to this device, under the engine's receiving policy.
func (e *Engine) ServeLocalSend(opts LocalSendOptions) (*LocalSendServer, error) {
	cert, err := e.LocalSendCert()
	if err != nil {
		return nil, err
	}
	alias := opts.Alias
	if alias == "" {
		alias = e.Name()
	}
	srv, err := localsend.NewServer(localsend.ServerConfig{
		Info:              localsend.Info{Alias: alias, DeviceModel: opts.DeviceModel, DeviceType: opts.DeviceType},
		Cert:              cert,
		Receiver:          &lsReceiver{e: e},
		PIN:               opts.PIN,
		RequireClientCert: opts.RequireClientCert,
		OnRegister:        opts.OnRegister,
		Shared:            e.localSendShared, // the download API serves the newest share link
		Log:               e.log,
	})
	if err != nil {
		return nil, err
	}
	s := &LocalSendServer{srv: srv, ln: opts.Listener, done: make(chan error, 1)}
	if s.ln == nil {
		if s.ln, s.Moved, err = e.listenLocalSend(opts.Host, opts.Port); err != nil {
			return nil, err
		}
	}
	s.port = portOf(s.ln.Addr())
	go func() { s.done <- srv.Serve(s.ln) }()
	return s, nil
}

// lastPortFile keeps the LocalSend port used last, to reuse when the
// default is taken (senders that remember this device find it again).
const lastPortFile = "localsend/last-port"

// listenLocalSend opens the port: preferred, else the last used, else a free one.
func (e *Engine) listenLocalSend(host string, preferred int) (net.Listener, bool, error) {
	if preferred == 0 {
		preferred = localsend.DefaultPort
	}
	if preferred < 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, false, fmt.Errorf("localsend: listen: %w", err)
		}
		return ln, false, nil
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
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		port := portOf(ln.Addr())
		if err := atomicfile.Write(filepath.Join(e.opts.ConfigDir, lastPortFile), []byte(strconv.Itoa(port)+"\n"), 0o600); err != nil {
			e.log.Warn("localsend: cannot remember the port", "err", err)
		}
		if port != preferred {
			e.log.Warn("localsend: port taken; serving on another (devices that only scan will not find this one)",
				"wanted", preferred, "port", port, "err", first)
		}
		return ln, port != preferred, nil
	}
	return nil, false, fmt.Errorf("localsend: listen: %w", first)
}

// lsReceiver is the engine as the LocalSend server's Receiver.
type lsReceiver struct{ e *Engine }

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
	addr := netip.AddrPortFrom(o.Addr, 0).String()
	// The transfer lives beyond the prepare-upload request: its context is
	// the engine's receiving one, and the request's end (the sender gone,
	// or its cancel) ends it only until the offer is decided.
	e.mu.Lock()
	rxCtx := e.rxCtx
	e.mu.Unlock()
	tctx, tcancel := context.WithCancelCause(rxCtx)
	unlink := context.AfterFunc(ctx, func() { tcancel(context.Cause(ctx)) })
	defer unlink()
	tk, refused := e.admit.arrive(addr, id, func() { tcancel(errReceiverBusy) })
	if refused != nil {
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
	s := &lsSession{in: in, tk: tk, ctx: tctx, cancel: tcancel, byID: map[string]int{}}
	decided := false
	fail := func(err error) (localsend.Session, error) {
		if !decided {
			tk.decided()
		}
		in.finish(err, false, Result{})
		tk.end()
		tcancel(nil)
		return nil, err
	}
	var names int
	files := make([]offeredFile, 0, len(o.Files))
	text := ""
	if o.IsText {
		text = o.Text
	} else {
		for _, f := range o.Files {
			s.byID[f.ID] = len(files)
			s.ids = append(s.ids, f.ID)
			files = append(files, offeredFile{Path: f.FileName, Size: f.Size})
			names += len(f.FileName)
		}
	}
	if rerr := tk.holdManifest(manifestCost(len(files), int64(names))); rerr != nil {
		return fail(fmt.Errorf("%w: %s", localsend.ErrBusy, rerr.Reason))
	}
	_, known := e.trust.Get(id)
	if rerr := tk.checkMuted(in.t.peer.Trusted, known && verified); rerr != nil {
		return fail(fmt.Errorf("%w: %s", localsend.ErrDeclined, rerr.Reason))
	}
	if rerr := e.checkImpersonation(id, o.Sender.Alias, o.Addr.String()); rerr != nil {
		return fail(fmt.Errorf("%w: %s", localsend.ErrDeclined, rerr.Reason))
	}
	// LocalSend has no resume: every prepare-upload is a delivery of its own.
	err := in.offer(newTransferID(), files, text)
	tk.decided()
	decided = true
	if err != nil {
		return fail(fmt.Errorf("%w: %w", localsend.ErrDeclined, err))
	}
	if err := in.register(); err != nil {
		return fail(err)
	}
	d, err := in.decide(tctx)
	if err != nil {
		if errors.Is(err, localsend.ErrCancelled) {
			err = &wire.RemoteError{Code: wire.CodeCancelled} // "Cancelled by <alias>."
		}
		return fail(err)
	}
	if !d.Accept {
		verdict := errDecided(d)
		in.finish(verdict, false, Result{})
		tk.end()
		tcancel(nil)
		if d.code == wire.CodeBusy {
			return nil, fmt.Errorf("%w: %w", localsend.ErrBusy, verdict)
		}
		return nil, fmt.Errorf("%w: %w", localsend.ErrDeclined, verdict)
	}
	if verified {
		e.acceptedFrom(id, o.Sender.Alias)
	}
	s.accepted = make([]string, 0, len(in.accepted))
	for _, i := range in.accepted {
		s.accepted = append(s.accepted, s.ids[i])
	}
	in.begin()
	pctx, stop := context.WithCancel(tctx)
	s.stopProgress = stop
	go in.watchProgress(pctx)
	return s, nil
}

// lsSession is one accepted LocalSend offer.
type lsSession struct {
	in       *inbox
	tk       *ticket
	ctx      context.Context
	cancel   context.CancelCauseFunc
	ids      []string       // offer index -> file ID
	byID     map[string]int // file ID -> offer index
	accepted []string

	stopProgress context.CancelFunc
	mu           sync.Mutex // guards failed
	failed       int
}

// Accepted lists the accepted files' IDs.
func (s *lsSession) Accepted() []string { return s.accepted }

// Open creates the file's .partial in the destination.
func (s *lsSession) Open(id string) (localsend.Sink, error) {
	idx, ok := s.byID[id]
	if !ok {
		return nil, fmt.Errorf("file %q was not offered", id)
	}
	if err := context.Cause(s.ctx); err != nil {
		return nil, err
	}
	f := s.in.files[idx]
	p, err := s.in.dest.CreatePartial(f.Path)
	if err != nil {
		s.resolveFailed(idx, "cannot create the file: "+sentence(err))
		return nil, err
	}
	return &lsSink{s: s, idx: idx, p: p}, nil
}

func (s *lsSession) resolveFailed(idx int, reason string) {
	s.mu.Lock()
	s.failed++
	s.mu.Unlock()
	s.in.resolved(idx, false, "", "", reason)
}

// End finishes the inbox.
func (s *lsSession) End(err error) {
	s.stopProgress()
	s.mu.Lock()
	failed := s.failed
	s.mu.Unlock()
	switch {
	case errors.Is(err, localsend.ErrCancelled):
		err = &wire.RemoteError{Code: wire.CodeCancelled}
	case errors.Is(err, localsend.ErrTimeout):
		err = errConnectionLost
	case errors.Is(err, localsend.ErrClosed):
		err = ErrClosed
	case err == nil && failed > 0:
		err = fmt.Errorf("%w: %d of %d files did not arrive", wire.ErrIO, failed, len(s.accepted))
	}
	if cause := context.Cause(s.ctx); cause != nil && (errors.Is(cause, errCancelledByUser) || errors.Is(cause, errStoppedReceiving)) {
		err = cause
	}
	s.in.finish(err, false, Result{})
	s.tk.end()
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
	k.s.in.bytes.Add(int64(n))
	return n, err
}

// Commit gives the file its final name (never over an existing one).
func (k *lsSink) Commit() error {
	f := k.s.in.files[k.idx]
	savedAs, err := k.s.in.dest.Finalize(k.p, f.Path, f.Size)
	if err != nil {
		k.s.resolveFailed(k.idx, "cannot save the file: "+sentence(err))
		return err
	}
	k.s.in.resolved(k.idx, true, savedAs, "", "")
	return nil
}

// Abort ends the file: bytes that fail their checksum are discarded, a
// short upload's partial is kept (listed by ferry-cli partials).
func (k *lsSink) Abort(err error) {
	reason := "the upload did not finish"
	switch {
	case errors.Is(err, localsend.ErrChecksum):
		reason = "the bytes do not match the sender's checksum; nothing was saved"
		_ = k.s.in.dest.Discard(k.p)
	case errors.Is(err, localsend.ErrSize):
		reason = "the upload was not the size offered"
		_ = k.p.Close()
	default:
		_ = k.p.Close()
	}
	k.s.resolveFailed(k.idx, reason)
}
