package localsend

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/internal/fileio"
)

// Receiver is the engine's side of the server: it decides each offer and
// stores each accepted file. The server calls it from its request
// goroutines, concurrently for different sessions.
type Receiver interface {
	// Offer is asked once for each prepare-upload, and blocks until the
	// offer is decided or ctx ends (the sender hung up or cancelled, or the
	// server closed). To refuse, it returns an error wrapping ErrDeclined
	// (403), ErrBusy (409), ErrTooManyPINs (429) or anything else (500).
	Offer(ctx context.Context, o *Offer) (Session, error)
}

// Session is one accepted offer.
type Session interface {
	// Accepted lists the files the receiver takes, as indexes in the
	// offer's Files. None (a text offer, say) ends the session at once
	// with 204 No Content.
	Accepted() []int
	// Open returns where the bytes of accepted file Files[index] go; the
	// server calls it once per file, when its upload starts.
	Open(index int) (Sink, error)
	// End is called once: with nil when every accepted file has been
	// committed or has failed; with ErrCancelled, ErrTimeout or ErrClosed
	// otherwise. No Sink method is called after End returns.
	End(err error)
}

// EndingSession is a Session the Receiver may end itself (it gave the
// session's place to another offer, say): once its Context is done, the
// server ends the session with ErrCancelled, so that its uploads get 403
// as for a cancelled session.
type EndingSession interface {
	Session
	Context() context.Context
}

// Sink takes one file's bytes, in order.
type Sink interface {
	io.Writer
	// Commit makes the file final once all its declared bytes arrived
	// (and matched its sha256, when the offer gave one).
	Commit() error
	// Abort ends the file without making it final; err says why (ErrSize
	// for a short or long upload, ErrChecksum, ErrCancelled, ...).
	Abort(err error)
}

// ArrivalCounter is a Sink that also hears how many bytes of its upload were
// read from the network, as they are (they reach Write a buffer at a time,
// up to a MiB later): a sender that stalls, or moves again, shows there
// first. Arrived is called from the upload's reads: it must return at once.
type ArrivalCounter interface {
	Sink
	Arrived(n int64)
}

// countedBody tells an ArrivalCounter of each read of an upload's body.
type countedBody struct {
	r io.Reader
	c ArrivalCounter
}

func (b countedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.c.Arrived(int64(n))
	}
	return n, err
}

// Offer is one prepare-upload, as the Receiver sees it.
type Offer struct {
	// Sender is the info the client sent; its Fingerprint is only a claim
	// unless CertFingerprint equals it.
	Sender Info
	// CertFingerprint is the fingerprint of the certificate the client
	// presented, "" when it presented none.
	CertFingerprint string
	// Cert is that certificate (nil when none).
	Cert *x509.Certificate
	// Addr is where the request came from.
	Addr netip.Addr
	// Files are the offered files, sorted by name.
	Files []File
	// Text is the text of a text offer (IsText): one text/* file whose
	// preview holds it.
	Text   string
	IsText bool
}

// Verified reports whether the sender's fingerprint is proven by the
// certificate it presented.
func (o *Offer) Verified() bool { return SameFingerprint(o.CertFingerprint, o.Sender.Fingerprint) }

// ServerConfig configures a Server. Zero values are the defaults given.
type ServerConfig struct {
	// Info describes this device: alias, device model and type. Version,
	// Fingerprint (from Cert) and Protocol ("https") are filled in.
	Info Info
	// Cert is the certificate served and whose fingerprint is announced.
	Cert tls.Certificate
	// Receiver decides offers and stores files; required.
	Receiver Receiver
	// PIN, when set, is required on every prepare-upload (?pin=).
	PIN string
	// RequireClientCert refuses clients that present no certificate (the
	// official app 1.18 does; by default both kinds are served).
	RequireClientCert bool
	// OnRegister hears every valid register request (a device answering
	// this device's announcement, or scanning): its info, address and its
	// client certificate (nil when none).
	OnRegister func(info Info, addr netip.Addr, cert *x509.Certificate)
	// MaxSessions bounds the prepare-upload bodies being read and decoded
	// at once (each up to MaxPrepareBytes) (0: 4); MaxSessionsPerAddr
	// bounds them per address (0: 2). More get 409, except that an offer
	// from an address holding none waits a moment for a place (hold).
	MaxSessions, MaxSessionsPerAddr int
	// MaxBodyBytes bounds the memory of the prepare-upload bodies being
	// read at once (0: 48 MiB, 1.5 x MaxPrepareBytes): a body of known
	// length takes its length (and waits for it, up to BodyTimeout), one
	// of unknown length takes its pieces as they come and as much again
	// to join them (so it may be at most half of this), and gets 409 when
	// they do not fit. Without it, bodies streamed to the cap from a few
	// addresses held 4 x 32 MiB (ferry-bench hostile-localsend).
	MaxBodyBytes int64
	// MaxOffers bounds the offers read and not yet ended (being decided by
	// the Receiver, or accepted and uploading) (0: 256), MaxOffersPerAddr
	// per address (0: 8); more get 409. Within them the Receiver decides
	// who waits: the engine's admission shares its places fairly between
	// addresses, so a flood from many addresses keeps no sender out, which
	// a bound of a few sessions here would (ferry-bench hostile-localsend).
	MaxOffers, MaxOffersPerAddr int
	// ConnsPerAddr bounds the open connections from one address (0: 16);
	// more are closed at once. MaxConns bounds them all (0: 256); at that
	// bound a newcomer takes the place of the connection quiet longest,
	// when it has been quiet for EvictQuiet (0: 1 s).
	ConnsPerAddr, MaxConns int
	EvictQuiet             time.Duration
	// ReadHeaderTimeout (0: 10 s) and IdleTimeout (0: 60 s) close slow and idle connections.
	ReadHeaderTimeout, IdleTimeout time.Duration
	// SessionIdle ends an accepted session with no upload running or
	// starting for that long (0: 2 minutes).
	SessionIdle time.Duration
	// StartGrace ends an accepted session whose sender begins no upload
	// within it (0: 10 s): real senders upload at once, and one that does
	// not holds a place here and its manifest in the Receiver meanwhile.
	StartGrace time.Duration
	// BodyTimeout bounds the reading of a prepare-upload body (0: 30 s).
	BodyTimeout time.Duration
	// PINLockout is how long an address that gave 3 wrong PINs gets 429 (0: 5 minutes).
	PINLockout time.Duration
	// OnPIN hears every prepare-upload, and every prepare-download of a
	// share, refused for its PIN, and from where: err is ErrPINRequired
	// (none given: the app asks its user), ErrWrongPIN, or ErrTooManyPINs
	// (refused unread: the address gave 3 wrong PINs within PINLockout). It is called on the request's
	// goroutine and must not block; nil: nobody hears.
	OnPIN func(addr netip.Addr, err error)
	// Shared is the share open now for the download API (prepare-download,
	// download; download.go), nil when none; nil Shared: never.
	Shared func() Shared
	// MaxDownloadFiles is the most files prepare-download lists (0:
	// DefaultMaxDownloadFiles): a share of more is refused with a message
	// that says so, never listed in part.
	MaxDownloadFiles int
	// Log takes the server's debug lines; nil discards them.
	Log *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// maxWrongPINs is the number of wrong PINs from one address after which it
// gets 429 (the official app's figure).
const maxWrongPINs = 3

// maxPINAddrs bounds the addresses whose wrong PINs are remembered.
const maxPINAddrs = 4096

// Server is Ferry's LocalSend HTTPS server.
type Server struct {
	cfg  ServerConfig
	info Info
	http *http.Server

	mu       sync.Mutex // guards the fields below
	sessions map[string]*session
	pending  map[*pendingOffer]struct{}
	bodyWait []*bodyWaiter // prepare-uploads waiting for a body place, first come first
	// bodyHeld is the memory of the bodies being read (MaxBodyBytes),
	// bodyPeak the most it was; bodyFreed is closed when some is given
	// back (then replaced).
	bodyHeld, bodyPeak int64
	bodyFreed          chan struct{}
	pins               map[netip.Addr]*pinState
	dls                downloadSessions
	// listing counts the prepare-download lists being written, by the
	// address that asked (startListing).
	listing map[netip.Addr]int
	closed  bool
	lns     []net.Listener
	// withdrawn refuses new offers (Withdraw); onIdle is called once
	// nothing runs any more, and released says it was.
	withdrawn, released bool
	onIdle              func()
	bufs                uploadBuffers // what uploads copy through
}

type pinState struct {
	wrong int
	until time.Time
}

// pendingOffer is a prepare-upload being read or decided.
type pendingOffer struct {
	addr    netip.Addr
	cancel  context.CancelCauseFunc
	reading bool // its body is being read and decoded (MaxSessions)
}

// bodyWaiter is a prepare-upload waiting for a body place (hold).
type bodyWaiter struct {
	p       *pendingOffer
	granted chan struct{} // closed once p holds a place
}

// bodyWait bounds how long a prepare-upload from an address that holds
// no offer waits for a body place before 409.
const bodyWait = 3 * time.Second

// NewServer makes a server; Serve runs it on a listener.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Receiver == nil {
		return nil, errors.New("localsend server: no receiver")
	}
	if len(cfg.Cert.Certificate) == 0 {
		return nil, errors.New("localsend server: no certificate")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defi := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	defi(&cfg.MaxSessions, 4)
	defi(&cfg.MaxDownloadFiles, DefaultMaxDownloadFiles)
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = MaxPrepareBytes * 3 / 2
	}
	defi(&cfg.MaxSessionsPerAddr, 2)
	defi(&cfg.MaxOffers, 256)
	defi(&cfg.MaxOffersPerAddr, 8)
	defi(&cfg.ConnsPerAddr, 16)
	defi(&cfg.MaxConns, 256)
	def(&cfg.ReadHeaderTimeout, 10*time.Second)
	def(&cfg.IdleTimeout, 60*time.Second)
	def(&cfg.SessionIdle, 2*time.Minute)
	def(&cfg.StartGrace, 10*time.Second)
	def(&cfg.PINLockout, 5*time.Minute)
	def(&cfg.BodyTimeout, 30*time.Second)
	def(&cfg.EvictQuiet, time.Second)
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, sessions: map[string]*session{}, pending: map[*pendingOffer]struct{}{}, pins: map[netip.Addr]*pinState{},
		bodyFreed: make(chan struct{})}
	s.info = cfg.Info
	s.info.Version = ProtocolVersion
	s.info.Fingerprint = CertFingerprint(cfg.Cert)
	s.info.Protocol = "https"
	s.info.Announce = nil
	if s.info.DeviceType == "" {
		s.info.DeviceType = TypeDesktop
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+apiPrefix+"prepare-upload", s.prepareUpload)
	mux.HandleFunc("POST "+apiPrefix+"upload", s.upload)
	mux.HandleFunc("POST "+apiPrefix+"cancel", s.cancel)
	mux.HandleFunc("POST "+apiPrefix+"register", s.register)
	mux.HandleFunc("GET "+apiPrefix+"info", s.infoRoute)
	mux.HandleFunc("POST "+apiPrefix+"prepare-download", s.prepareDownload)
	mux.HandleFunc("GET "+apiPrefix+"download", s.download)
	clientAuth := tls.RequestClientCert
	if cfg.RequireClientCert {
		clientAuth = tls.RequireAnyClientCert
	}
	s.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(cfg.Log.Handler(), slog.LevelDebug),
		ConnState:         markServing,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cfg.Cert},
			ClientAuth:   clientAuth, // any self-signed certificate: it is an identity, not a chain
			MinVersion:   tls.VersionTLS12,
		},
	}
	return s, nil
}

// Info is this device as the server describes it (announcements, register
// answers); Port is 0 until the caller sets it. Download says whether a
// share is open for the download API now.
func (s *Server) Info() Info {
	i := s.info
	i.Download = s.shared() != nil
	return i
}

// Fingerprint is this server's fingerprint.
func (s *Server) Fingerprint() string { return s.info.Fingerprint }

// Serve serves HTTPS on ln until Close; it returns ErrClosed then.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	lim := newLimitListener(ln, s.cfg.ConnsPerAddr, s.cfg.MaxConns, s.cfg.EvictQuiet)
	err := s.http.Serve(tls.NewListener(lim, s.http.TLSConfig))
	if errors.Is(err, http.ErrServerClosed) {
		return ErrClosed
	}
	return fmt.Errorf("localsend server: %w", err)
}

// Close stops the server: listeners and connections close, pending offers
// and running sessions end with ErrClosed. It waits for the sessions' End.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	sessions := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	for p := range s.pending {
		p.cancel(ErrClosed)
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		ss.end(ErrClosed)
	}
	// Handlers still running get a moment to answer: the last upload of a
	// session ends it before its 200 is written, and a server closed on
	// that end (receive --once) must not cut the answer. Uploads whose
	// session ended above fail their next write and answer at once.
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	_ = s.http.Shutdown(ctx)
	return s.http.Close()
}

// closeGrace bounds how long Close waits for running handlers to answer.
const closeGrace = time.Second

// remote is a request's source address.
func remote(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// clientCert is the client's certificate, if any.
func clientCert(r *http.Request) *x509.Certificate {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil
	}
	return r.TLS.PeerCertificates[0]
}

// certFingerprint is the fingerprint of the client's certificate, if any.
func certFingerprint(r *http.Request) string {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return ""
	}
	return Fingerprint(r.TLS.PeerCertificates[0].Raw)
}

// fail answers an error with the protocol's {"message": ...} body.
func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(message{Message: msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) infoRoute(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, s.answerInfo(r))
}

// answerInfo is this device as info and register answers give it, with
// the port the request came in on.
func (s *Server) answerInfo(r *http.Request) Info {
	i := s.Info()
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && i.Port == 0 {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			i.Port = int(ap.Port())
		}
	}
	return i
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var in Info
	if err := decodeJSON(r.Body, MaxSmallBytes, &in); err != nil {
		fail(w, http.StatusBadRequest, "invalid body")
		return
	}
	if err := in.Validate(false); err != nil {
		fail(w, http.StatusBadRequest, "invalid body")
		return
	}
	in.Announce = nil
	if s.cfg.OnRegister != nil && !SameFingerprint(in.Fingerprint, s.info.Fingerprint) {
		s.cfg.OnRegister(in, remote(r), clientCert(r))
	}
	writeJSON(w, s.answerInfo(r))
}

// checkPIN applies the PIN rule to a prepare-upload from addr: nil when no
// PIN is set or the right one was given.
func (s *Server) checkPIN(addr netip.Addr, pin string) error {
	return s.checkPINFor(s.cfg.PIN, addr, pin)
}

// checkPINFor applies the PIN rule against want (the upload PIN, or a
// share's): nil when want is empty or pin is it. Wrong PINs from one
// address count together whichever PIN they were for.
func (s *Server) checkPINFor(want string, addr netip.Addr, pin string) error {
	if want == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	st := s.pins[addr]
	if st != nil && st.wrong >= maxWrongPINs {
		if now.Before(st.until) {
			return ErrTooManyPINs
		}
		delete(s.pins, addr)
		st = nil
	}
	if pin == "" {
		return ErrPINRequired // a missing PIN is a question, not a wrong try
	}
	if subtle.ConstantTimeCompare([]byte(pin), []byte(want)) == 1 {
		delete(s.pins, addr)
		return nil
	}
	if st == nil {
		if len(s.pins) >= maxPINAddrs {
			// Forget the addresses that are not locked out; the locked stay.
			for a, p := range s.pins {
				if p.wrong < maxWrongPINs {
					delete(s.pins, a)
				}
			}
			if len(s.pins) >= maxPINAddrs {
				return ErrTooManyPINs
			}
		}
		st = &pinState{}
		s.pins[addr] = st
	}
	st.wrong++
	if st.wrong >= maxWrongPINs {
		st.until = now.Add(s.cfg.PINLockout)
	}
	return ErrWrongPIN
}

func (s *Server) prepareUpload(w http.ResponseWriter, r *http.Request) {
	defer s.checkIdle() // last: a withdrawn server may be idle now
	addr := remote(r)
	if err := s.checkPIN(addr, r.URL.Query().Get("pin")); err != nil {
		msg := map[error]string{ErrTooManyPINs: "Too many requests", ErrPINRequired: "PIN required", ErrWrongPIN: "Invalid PIN"}[err]
		fail(w, statusOf(err), msg)
		if s.cfg.OnPIN != nil {
			s.cfg.OnPIN(addr, err)
		}
		return
	}
	if r.ContentLength > MaxPrepareBytes {
		fail(w, http.StatusBadRequest, "Request body too large")
		return
	}
	// The place is taken before the body is read: at most MaxSessions
	// bodies (each up to MaxPrepareBytes) are held and decoded at once.
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	p := &pendingOffer{addr: addr, cancel: cancel, reading: true}
	if err := s.hold(ctx, p); err != nil {
		msg := "Blocked by another session"
		if errors.Is(err, ErrDeclined) {
			msg = "Not receiving now"
		}
		fail(w, statusOf(err), msg)
		return
	}
	held := true
	defer func() {
		if held {
			s.mu.Lock()
			delete(s.pending, p)
			s.grantLocked()
			s.mu.Unlock()
		}
	}()
	// A body trickled in slowly must not hold the slot: it has BodyTimeout.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) // sockets keep the system clock
	var req PrepareUpload
	err := s.readPrepare(ctx, r, &req)
	_ = rc.SetReadDeadline(time.Time{})
	if errors.Is(err, ErrBusy) {
		fail(w, http.StatusConflict, "Blocked by another session")
		return
	}
	if err != nil {
		fail(w, http.StatusBadRequest, "Request body malformed")
		return
	}
	if err := req.Validate(); err != nil {
		fail(w, http.StatusBadRequest, "Request body malformed")
		return
	}
	o := &Offer{Sender: req.Info, CertFingerprint: certFingerprint(r), Cert: clientCert(r), Addr: addr}
	o.Sender.Announce = nil
	o.Text, o.IsText = req.TextOf()
	o.Files = offerFiles(req.Files, o.IsText)
	req = PrepareUpload{}
	// Read: the body's place goes to the next one; the offer keeps its
	// place among those being decided.
	s.mu.Lock()
	p.reading = false
	s.grantLocked()
	s.mu.Unlock()

	sess, err := s.cfg.Receiver.Offer(ctx, o)
	s.mu.Lock()
	delete(s.pending, p)
	held = false
	s.grantLocked()
	s.mu.Unlock()
	if err != nil {
		s.cfg.Log.Debug("localsend offer refused", "from", addr, "err", err)
		msg := "Rejected"
		switch statusOf(err) {
		case http.StatusConflict:
			msg = "Blocked by another session"
		case http.StatusInternalServerError:
			msg = "Unknown error by receiver"
		}
		fail(w, statusOf(err), msg)
		return
	}
	if ctx.Err() != nil {
		// Decided, but the sender cancelled or went away meanwhile.
		sess.End(context.Cause(ctx))
		return
	}
	ss := newSession(s, sess, addr, o, sess.Accepted())
	answer := PrepareUploadAnswer{SessionID: ss.id, Files: make(map[string]string, len(ss.files))}
	for i := range ss.files {
		answer.Files[ss.files[i].id] = ss.token(ss.files[i].id)
	}
	if len(ss.files) == 0 {
		sess.End(nil)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if !s.start(ss) {
		sess.End(ErrClosed)
		fail(w, http.StatusInternalServerError, "Server closed")
		return
	}
	writeJSON(w, answer)
}

// offerFiles lists an offer's files by name and, among files of one name,
// by ID: the receiver numbers copies of a name in the order it is given
// them ("a.txt", "a (1).txt"), so which file takes which name is the same
// for every offer of the same files, not the map's order of the moment.
// A preview is kept only for a text offer: what is held while deciding is
// the manifest, which the Receiver budgets.
func offerFiles(files map[string]File, isText bool) []File {
	out := make([]File, 0, len(files))
	for id, f := range files {
		f.ID = id
		if !isText {
			f.Preview = ""
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b File) int {
		return cmp.Or(strings.Compare(a.FileName, b.FileName), strings.Compare(a.ID, b.ID))
	})
	return out
}

// readPrepare reads and decodes a prepare-upload body within the memory
// the server holds for bodies (MaxBodyBytes), which it gives back once
// the body is decoded.
func (s *Server) readPrepare(ctx context.Context, r *http.Request, v any) error {
	var held int64
	defer func() { s.releaseBody(held) }()
	take := func(n int64, wait bool) error {
		if err := s.takeBody(ctx, n, wait); err != nil {
			return err
		}
		held += n
		return nil
	}
	b, err := readBudgeted(r.Body, r.ContentLength, MaxPrepareBytes, take)
	if err != nil {
		return err
	}
	return unmarshalBounded(b, MaxPrepareBytes, v)
}

// takeBody takes n bytes of the body budget; when they do not fit, it
// waits for them if wait is set (until ctx ends or BodyTimeout), else
// refuses at once. A charge no budget could hold is errBodyTooLarge.
func (s *Server) takeBody(ctx context.Context, n int64, wait bool) error {
	var timeout <-chan time.Time
	for {
		s.mu.Lock()
		switch {
		case s.bodyHeld+n <= s.cfg.MaxBodyBytes:
			s.bodyHeld += n
			s.bodyPeak = max(s.bodyPeak, s.bodyHeld)
			s.mu.Unlock()
			return nil
		case n > s.cfg.MaxBodyBytes:
			s.mu.Unlock()
			return errBodyTooLarge
		case !wait:
			s.mu.Unlock()
			return errBodyBudget
		}
		freed := s.bodyFreed
		s.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(s.cfg.BodyTimeout)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return errBodyBudget
		case <-timeout:
			return errBodyBudget
		}
	}
}

// releaseBody gives back n bytes of the body budget.
func (s *Server) releaseBody(n int64) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodyHeld -= n
	close(s.bodyFreed)
	s.bodyFreed = make(chan struct{})
}

// hold reserves a session slot for an offer being decided, its body place
// first. When every body place is taken (MaxSessions), an offer from an
// address that holds no offer here waits up to bodyWait for one, first
// come first, rather than get 409: a flood whose clients post again at
// once after each 409 would otherwise keep the places from any other
// sender; an address that holds an offer (being read, decided or
// uploading) or waits already gets 409 at once.
func (s *Server) hold(ctx context.Context, p *pendingOffer) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.withdrawn {
		s.mu.Unlock()
		return errNotReceiving
	}
	reading, readingHere, offersHere := 0, 0, 0
	for q := range s.pending {
		if q.reading {
			reading++
		}
		if q.addr == p.addr {
			offersHere++
			if q.reading {
				readingHere++
			}
		}
	}
	for _, ss := range s.sessions {
		if ss.addr == p.addr {
			offersHere++
		}
	}
	waitingHere := slices.ContainsFunc(s.bodyWait, func(w *bodyWaiter) bool { return w.p.addr == p.addr })
	if readingHere >= s.cfg.MaxSessionsPerAddr || len(s.pending)+len(s.sessions) >= s.cfg.MaxOffers ||
		offersHere >= s.cfg.MaxOffersPerAddr || waitingHere {
		s.mu.Unlock()
		return ErrBusy
	}
	if reading < s.cfg.MaxSessions && len(s.bodyWait) == 0 {
		s.pending[p] = struct{}{}
		s.mu.Unlock()
		return nil
	}
	if offersHere > 0 || len(s.bodyWait) >= s.cfg.MaxOffers {
		s.mu.Unlock()
		return ErrBusy
	}
	w := &bodyWaiter{p: p, granted: make(chan struct{})}
	s.bodyWait = append(s.bodyWait, w)
	s.mu.Unlock()
	t := time.NewTimer(bodyWait)
	defer t.Stop()
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
	case <-t.C:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-w.granted:
		return nil // granted meanwhile: p holds its place
	default:
	}
	s.bodyWait = slices.DeleteFunc(s.bodyWait, func(x *bodyWaiter) bool { return x == w })
	return ErrBusy
}

// grantLocked gives the body places free to the offers waiting for one.
func (s *Server) grantLocked() {
	if len(s.bodyWait) == 0 || s.closed || s.withdrawn {
		return
	}
	reading := 0
	for q := range s.pending {
		if q.reading {
			reading++
		}
	}
	for len(s.bodyWait) > 0 && reading < s.cfg.MaxSessions && len(s.pending)+len(s.sessions) < s.cfg.MaxOffers {
		w := s.bodyWait[0]
		s.bodyWait = s.bodyWait[1:]
		s.pending[w.p] = struct{}{}
		reading++
		close(w.granted)
	}
}

// start registers an accepted session and arms its idle timer.
func (s *Server) start(ss *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.sessions[ss.id] = ss
	ss.mu.Lock() // the timer's func reads ss.timer under ss.mu
	ss.timer = time.AfterFunc(min(s.cfg.StartGrace, s.cfg.SessionIdle), ss.idle)
	if es, ok := ss.recv.(EndingSession); ok {
		ss.unwatch = context.AfterFunc(es.Context(), func() { ss.end(ErrCancelled) })
	}
	ss.mu.Unlock()
	return true
}

func (s *Server) lookup(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sid, fid, tok := q.Get("sessionId"), q.Get("fileId"), q.Get("token")
	if sid == "" || fid == "" || tok == "" {
		fail(w, http.StatusBadRequest, "Missing parameters")
		return
	}
	// Each upload is a trace task, its steps regions (uploadTrace), so
	// that a runtime trace shows what each file waited for.
	ctx, task := trace.NewTask(r.Context(), uploadTrace)
	defer task.End()
	ss := s.lookup(sid)
	if ss == nil || ss.addr != remote(r) {
		fail(w, http.StatusForbidden, "Invalid token or IP address")
		return
	}
	region := trace.StartRegion(ctx, traceOpen)
	f, sink, err := ss.begin(fid, tok, http.NewResponseController(w))
	region.End()
	if err != nil {
		fail(w, statusOf(err), "Invalid token or IP address")
		return
	}
	err = receive(ctx, &s.bufs, r.Body, f, sink)
	region = trace.StartRegion(ctx, traceCommit)
	err = ss.done(f, sink, err)
	region.End()
	if err != nil {
		s.cfg.Log.Debug("localsend upload failed", "file", f.id, "err", err)
		fail(w, statusOf(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusOK)
}

// The runtime trace of an upload (go test -trace, then ferry-bench regions,
// or go tool trace's "User-defined tasks" and "User-defined regions"): a
// task per upload, with regions for its steps. docs/localsend.md,
// "Figures", reads a receive's per-file timeline from them. Untraced, a
// task and its regions cost a few allocations per upload.
const (
	uploadTrace  = "localsend.upload"
	traceOpen    = "localsend.open"    // the token checks and the Sink's creation
	traceReceive = "localsend.receive" // the body copied into the Sink
	traceDrain   = "localsend.drain"   // from the body's end until the last write is done
	traceCommit  = "localsend.commit"  // the Sink's Commit (or Abort) and the session's bookkeeping
)

// receive copies one upload's body into sink, bounded to the declared size,
// checking the sha256 when the offer gave one.
func receive(ctx context.Context, bufs *uploadBuffers, body io.Reader, f *upFile, sink Sink) error {
	defer trace.StartRegion(ctx, traceReceive).End()
	var h hash.Hash
	sw := &sinkWriter{w: sink}
	var w io.Writer = sw
	if f.sum != nil {
		h = sha256.New()
		w = io.MultiWriter(sw, h)
	}
	if c, ok := sink.(ArrivalCounter); ok {
		body = countedBody{r: body, c: c}
	}
	n, err := bufs.copy(ctx, w, io.LimitReader(body, f.size+1))
	switch {
	case sw.err != nil && fileio.DiskFull(sw.err) != "":
		// This side's disk, not the sender's bytes (it read 400 "size
		// differs", and its sender a protocol violation).
		return fmt.Errorf("%w: %v", ErrNoSpace, sw.err)
	case sw.err != nil:
		return fmt.Errorf("%w: %v", ErrStore, sw.err)
	case n > f.size:
		return fmt.Errorf("%w: more than the %d bytes offered", ErrSize, f.size)
	case err != nil:
		return fmt.Errorf("%w: at %d of %d bytes: %v", ErrUploadCut, n, f.size, err)
	case n < f.size:
		return fmt.Errorf("%w: at %d of %d bytes", ErrUploadCut, n, f.size)
	case h != nil && !bytes.Equal(h.Sum(nil), f.sum[:]):
		return ErrChecksum
	}
	return nil
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	addr := remote(r)
	sid := r.URL.Query().Get("sessionId")
	if sid == "" {
		// The app cancels a prepare-upload still being decided this way.
		s.mu.Lock()
		for p := range s.pending {
			if p.addr == addr {
				p.cancel(ErrCancelled)
			}
		}
		s.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		return
	}
	ss := s.lookup(sid)
	if ss == nil || ss.addr != addr {
		fail(w, http.StatusForbidden, "Invalid session or IP address")
		return
	}
	ss.end(ErrCancelled)
	w.WriteHeader(http.StatusOK)
}

// randomToken is 128 random bits in hex: unguessable session IDs and tokens.
func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// sinkWriter keeps the error of the sink's own writes, told apart from the
// upload's body's.
type sinkWriter struct {
	w   io.Writer
	err error
}

func (s *sinkWriter) Write(b []byte) (int, error) {
	n, err := s.w.Write(b)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}
