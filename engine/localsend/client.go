package localsend

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"crypto/x509"
	"slices"

	"golang.org/x/sync/errgroup"
)

// ClientConfig configures a Client. Zero values are the defaults given.
type ClientConfig struct {
	// Info describes this device (alias, model, type; Port and Protocol
	// say where its own server listens, if it runs one). Version and
	// Fingerprint (from Cert) are filled in.
	Info Info
	// Cert is presented to servers (the official app 1.18 requires one).
	// Without it the client presents none.
	Cert tls.Certificate
	// Dial opens connections (nil: a net.Dialer); tests use it to dial from
	// inside a network namespace.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Parallel bounds the uploads of one send at once (0: 4).
	Parallel int
	// RequestTimeout bounds each request other than an upload's body and
	// prepare-upload (which waits for the receiver's user) (0: 10 s).
	RequestTimeout time.Duration
	// PromptTimeout bounds the wait for an answer to prepare-upload (0: 5 minutes).
	PromptTimeout time.Duration
	// StallTimeout gives up an upload whose receiver took none of its
	// bytes for this long (ErrStalled) (0: 30 s): a phone that went to
	// sleep or out of range otherwise held the send "active" until TCP
	// gave up, some 15 minutes later.
	StallTimeout time.Duration
}

// Client sends to LocalSend servers.
type Client struct {
	cfg  ClientConfig
	info Info
}

// NewClient makes a client.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Parallel <= 0 {
		cfg.Parallel = 4
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.PromptTimeout <= 0 {
		cfg.PromptTimeout = 5 * time.Minute
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = 30 * time.Second
	}
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	c := &Client{cfg: cfg, info: cfg.Info}
	c.info.Version = ProtocolVersion
	if len(cfg.Cert.Certificate) > 0 {
		c.info.Fingerprint = CertFingerprint(cfg.Cert)
	} else if c.info.Fingerprint == "" {
		c.info.Fingerprint = randomToken() // HTTP-mode style: only to skip ourselves
	}
	if c.info.DeviceType == "" {
		c.info.DeviceType = TypeDesktop
	}
	if c.info.Port == 0 {
		c.info.Port = DefaultPort // where a LocalSend server of this device would be
	}
	if c.info.Protocol == "" {
		c.info.Protocol = "https"
	}
	c.info.Announce = nil
	return c
}

// Info is this device as the client describes it.
func (c *Client) Info() Info { return c.info }

// Target is a LocalSend server to talk to.
type Target struct {
	// Addr is host:port.
	Addr string
	// Fingerprint is the one the device announced: its certificate must
	// have it. Empty accepts any certificate (an address typed by the
	// user); the one seen is then reported (Result.Fingerprint).
	Fingerprint string
	// Scheme is "https" (default) or "http".
	Scheme string
	// conn, when set, is the one connection to use (the scan dials each
	// host itself, so that no dial outlives its bound).
	conn net.Conn
}

// conn is one target's HTTP client, with the certificate pinned.
type conn struct {
	c    *Client
	t    Target
	http *http.Client
	base string

	mu   sync.Mutex        // guards the fields below
	seen string            // the fingerprint of the server's certificate
	leaf *x509.Certificate // the server's certificate, once an answer came
}

func (c *Client) open(t Target) *conn {
	k := &conn{c: c, t: t}
	scheme := "https"
	if t.Scheme == "http" {
		scheme = "http"
	}
	// url.URL escapes an IPv6 zone ("[fe80::1%25eth0]"): a link-local
	// address written in as it is parses as no URL.
	k.base = (&url.URL{Scheme: scheme, Host: t.Addr}).String() + apiPrefix
	tlsConf := &tls.Config{
		// A LocalSend certificate is self-signed: it is checked by its
		// fingerprint (below), not by a chain or a host name.
		InsecureSkipVerify: true,
		MinVersion:         tls.VersionTLS12,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return ErrFingerprint
			}
			fp := Fingerprint(raw[0])
			if t.Fingerprint != "" && !SameFingerprint(fp, t.Fingerprint) {
				return fmt.Errorf("%w: %s announced %s, its certificate is %s", ErrFingerprint, t.Addr, short(t.Fingerprint), short(fp))
			}
			k.mu.Lock()
			k.seen = fp
			k.mu.Unlock()
			return nil
		},
	}
	if len(c.cfg.Cert.Certificate) > 0 {
		tlsConf.Certificates = []tls.Certificate{c.cfg.Cert}
	}
	dial := c.cfg.Dial
	if t.conn != nil {
		var once sync.Once
		dial = func(context.Context, string, string) (net.Conn, error) {
			var conn net.Conn
			once.Do(func() { conn = t.conn })
			if conn == nil {
				return nil, errors.New("localsend: the one connection was used")
			}
			return conn, nil
		}
	}
	tr := &http.Transport{
		DialContext:           dial,
		TLSClientConfig:       tlsConf,
		ForceAttemptHTTP2:     false,
		MaxConnsPerHost:       c.cfg.Parallel + 1,
		MaxIdleConnsPerHost:   c.cfg.Parallel + 1,
		TLSHandshakeTimeout:   c.cfg.RequestTimeout,
		ResponseHeaderTimeout: 0, // prepare-upload waits for a person
		IdleConnTimeout:       30 * time.Second,
	}
	k.http = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return k
}

func (k *conn) close() { k.http.CloseIdleConnections() }

func (k *conn) fingerprint() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seen
}

func short(fp string) string {
	if len(fp) > 12 {
		return fp[:12] + "…"
	}
	return fp
}

// do posts body (JSON unless it is an io.Reader) to route with query q and
// returns the status and the bounded answer body.
func (k *conn) do(ctx context.Context, method, route string, q url.Values, body any, size int64, limit int64) (int, []byte, error) {
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case io.Reader:
		rd, ctype = b, "application/octet-stream"
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return 0, nil, fmt.Errorf("localsend %s: %w", route, err)
		}
		rd, ctype, size = bytes.NewReader(js), "application/json", int64(len(js))
	}
	u := k.base + route
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("localsend %s: %w", route, err)
	}
	if rd != nil {
		req.ContentLength = size
		req.Header.Set("Content-Type", ctype)
		if size == 0 {
			req.Body = http.NoBody
		}
	}
	resp, err := k.http.Do(req)
	if err != nil {
		if errors.Is(err, ErrFingerprint) {
			return 0, nil, err
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // not its URL, which holds the session's token
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
			err = fmt.Errorf("%w (%w)", ErrConnectionLost, err)
		}
		return 0, nil, fmt.Errorf("localsend %s: %w", route, err)
	}
	defer resp.Body.Close()
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		k.mu.Lock()
		k.leaf = resp.TLS.PeerCertificates[0]
		k.mu.Unlock()
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("localsend %s: reading the answer: %w", route, err)
	}
	if int64(len(b)) > limit {
		return resp.StatusCode, nil, fmt.Errorf("localsend %s: %w: the answer is over %d bytes", route, ErrBadInput, limit)
	}
	return resp.StatusCode, b, nil
}

// maxMessage bounds the server's words that messageOf keeps.
const maxMessage = 200

// messageOf is a server's {"message"} text, bounded for display, and cut
// between characters.
func messageOf(b []byte) string {
	var m message
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	if len(m.Message) <= maxMessage {
		return m.Message
	}
	n := maxMessage
	for n > 0 && !utf8.RuneStart(m.Message[n]) {
		n--
	}
	return m.Message[:n]
}

// readPrepareAnswer reads a receiver's answer to prepare-upload (200): a
// session ID and a token for each file it accepted, each one of those
// offered, both within the bound of an ID.
func readPrepareAnswer(b []byte, offered map[string]File) (*PrepareUploadAnswer, error) {
	var ans PrepareUploadAnswer
	if err := unmarshalBounded(b, MaxPrepareBytes, &ans); err != nil {
		return nil, err
	}
	if err := checkField("sessionId", ans.SessionID, true); err != nil {
		return nil, err
	}
	for id, tok := range ans.Files {
		if _, ok := offered[id]; !ok {
			return nil, fmt.Errorf("%w: a token for file %.64q that was not offered", ErrBadInput, id)
		}
		if err := checkField("token", tok, false); err != nil {
			return nil, err
		}
	}
	return &ans, nil
}

// Register tells the device at t about this one (as an answer to its
// announcement, or a scan) and returns its info.
func (c *Client) Register(ctx context.Context, t Target) (Info, error) {
	in, _, err := c.register(ctx, t)
	return in, err
}

// register is Register, with the certificate the device proved over TLS
// (nil in HTTP mode).
func (c *Client) register(ctx context.Context, t Target) (Info, *x509.Certificate, error) {
	return c.infoCall(ctx, t, http.MethodPost, "register", c.info)
}

// DeviceInfo asks the device at t for its info (GET info).
func (c *Client) DeviceInfo(ctx context.Context, t Target) (Info, error) {
	in, _, err := c.infoCall(ctx, t, http.MethodGet, "info", nil)
	return in, err
}

func (c *Client) infoCall(ctx context.Context, t Target, method, route string, body any) (Info, *x509.Certificate, error) {
	k := c.open(t)
	defer k.close()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	st, b, err := k.do(ctx, method, route, nil, body, 0, MaxSmallBytes)
	if err != nil {
		return Info{}, nil, err
	}
	if st != http.StatusOK {
		return Info{}, nil, errorOf(route, st, messageOf(b), false)
	}
	in, err := parseInfo(b, false)
	if err != nil {
		return Info{}, nil, fmt.Errorf("localsend %s: %w", route, err)
	}
	if fp := k.fingerprint(); fp != "" && t.Scheme != "http" {
		in.Fingerprint = fp // in HTTPS mode the certificate is the identity
	}
	if t.Scheme == "http" {
		return in, nil, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return in, k.leaf, nil
}

// Upload is one file to send: its entry in the offer (ID, FileName, Size,
// FileType, optional SHA256 and Preview) and how to read its bytes.
type Upload struct {
	File
	// Open returns the file's bytes from the start; it is called once,
	// if the receiver accepts the file.
	Open func() (io.ReadCloser, error)
}

// SendOptions are the choices of one send.
type SendOptions struct {
	// PIN is sent with prepare-upload when set.
	PIN string
	// AskPIN is called when the receiver answers 401 (wrong says a PIN
	// was given and refused); it returns the PIN to try, or an error to
	// give up. Nil gives up at the first 401.
	AskPIN func(ctx context.Context, wrong bool) (string, error)
	// Offered is called as the offer (prepare-upload) goes out, before the
	// receiver's answer, which may wait on a person; again for each PIN
	// tried.
	Offered func()
	// Written is called as each file's bytes go out (id, bytes so far);
	// from several goroutines at once.
	Written func(id string, n int64)
	// Accepted is called once the receiver has decided, with the IDs it
	// took, before any upload starts.
	Accepted func(ids []string)
}

// Result is what a send achieved.
type Result struct {
	// SessionID is the receiver's session ("" when it accepted nothing).
	SessionID string
	// Accepted lists the files the receiver took; nil when it answered
	// 204 (nothing to upload: a text offer, say).
	Accepted []string
	// Failed maps each accepted file that did not arrive to why.
	Failed map[string]error
	// Fingerprint is the receiver's certificate's fingerprint.
	Fingerprint string
}

// Send offers files to the server at t, then uploads the accepted ones,
// Parallel at once. The error is the first failure: the offer's (a
// *StatusError wrapping ErrDeclined, ErrBusy, ErrTooManyPINs, ...) or a
// file's (then Result.Failed says which). Cancelling ctx cancels the
// session on the receiver too.
func (c *Client) Send(ctx context.Context, t Target, files []Upload, opts SendOptions) (*Result, error) {
	if len(files) == 0 {
		return nil, errors.New("localsend send: no files")
	}
	k := c.open(t)
	defer k.close()
	req := PrepareUpload{Info: c.info, Files: make(map[string]File, len(files))}
	byID := make(map[string]*Upload, len(files))
	for i := range files {
		f := files[i].File
		if _, dup := byID[f.ID]; dup || f.ID == "" {
			return nil, fmt.Errorf("localsend send: file ID %q empty or twice", f.ID)
		}
		byID[f.ID] = &files[i]
		req.Files[f.ID] = f
	}
	res := &Result{}
	ans, err := c.prepare(ctx, k, &req, opts)
	res.Fingerprint = k.fingerprint()
	if err != nil {
		return res, err
	}
	if ans == nil {
		if opts.Accepted != nil {
			opts.Accepted(nil)
		}
		return res, nil // 204: nothing to upload
	}
	res.SessionID = ans.SessionID
	for id := range ans.Files {
		res.Accepted = append(res.Accepted, id)
	}
	sortByOffer(res.Accepted, files)
	if opts.Accepted != nil {
		opts.Accepted(res.Accepted)
	}
	// A cancel reaches the receiver before the uploads are cut, so that
	// it ends the session as cancelled rather than as short uploads.
	uctx, ucancel := context.WithCancelCause(context.WithoutCancel(ctx))
	cancelled := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(cancelled)
		c.cancelSession(k, ans.SessionID)
		ucancel(context.Cause(ctx))
	})
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(uctx)
	g.SetLimit(c.cfg.Parallel)
	for _, id := range res.Accepted {
		u := byID[id]
		tok := ans.Files[id]
		g.Go(func() error {
			err := context.Cause(gctx)
			if err == nil {
				err = c.uploadOne(gctx, k, ans.SessionID, u, tok, opts.Written)
			}
			if err != nil {
				mu.Lock()
				if res.Failed == nil {
					res.Failed = map[string]error{}
				}
				res.Failed[id] = err
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if !stop() {
		<-cancelled
		return res, context.Cause(ctx)
	}
	ucancel(nil)
	for _, id := range res.Accepted {
		if err := res.Failed[id]; err != nil {
			return res, fmt.Errorf("localsend upload of %s: %w", byID[id].FileName, err)
		}
	}
	return res, nil
}

func sortByOffer(ids []string, files []Upload) {
	pos := make(map[string]int, len(files))
	for i, f := range files {
		pos[f.ID] = i
	}
	slices.SortFunc(ids, func(a, b string) int { return pos[a] - pos[b] })
}

// prepare runs prepare-upload, asking for a PIN on 401; nil answer is 204.
func (c *Client) prepare(ctx context.Context, k *conn, req *PrepareUpload, opts SendOptions) (*PrepareUploadAnswer, error) {
	pin := opts.PIN
	for tries := 0; ; tries++ {
		q := url.Values{}
		if pin != "" {
			q.Set("pin", pin)
		}
		if opts.Offered != nil {
			opts.Offered()
		}
		pctx, cancel := context.WithTimeout(ctx, c.cfg.PromptTimeout)
		st, b, err := k.do(pctx, http.MethodPost, "prepare-upload", q, req, 0, MaxPrepareBytes)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				c.cancelSession(k, "")
				return nil, context.Cause(ctx)
			}
			return nil, err
		}
		if ctx.Err() != nil && st != http.StatusOK && st != http.StatusNoContent {
			// A refusal that crossed the cancel: the receiver answers a
			// request whose sender went away with an error, and net/http
			// hands over an answer that arrived as the request was being
			// cancelled. The cancel is what happened (a 200 goes on, and
			// Send then cancels the session it opened).
			return nil, context.Cause(ctx)
		}
		switch st {
		case http.StatusOK:
			ans, err := readPrepareAnswer(b, req.Files)
			if err != nil {
				return nil, fmt.Errorf("localsend prepare-upload: %w", err)
			}
			return ans, nil
		case http.StatusNoContent:
			return nil, nil
		case http.StatusUnauthorized:
			if opts.AskPIN == nil || tries >= 10 {
				return nil, errorOf("prepare-upload", st, messageOf(b), pin != "")
			}
			next, err := opts.AskPIN(ctx, pin != "")
			if err != nil {
				// Nobody gave another: the PIN tried was wrong, or there
				// was none. The receiver's answer (a *StatusError) is
				// kept: the receiver is there, and answered.
				return nil, fmt.Errorf("%w: %w", errorOf("prepare-upload", st, messageOf(b), pin != ""), err)
			}
			pin = next
			continue
		}
		return nil, errorOf("prepare-upload", st, messageOf(b), pin != "")
	}
}

// uploadOne sends one file's bytes.
func (c *Client) uploadOne(ctx context.Context, k *conn, session string, u *Upload, token string, written func(string, int64)) error {
	rc, err := u.Open()
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer rc.Close()
	uctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// net/http waits for the body's Read to return before it gives up a
	// cancelled request: closing the source makes a blocked Read return.
	stop := context.AfterFunc(uctx, func() { rc.Close() })
	defer stop()
	var body io.Reader = io.LimitReader(rc, u.Size)
	if written != nil {
		body = &countingReader{r: body, id: u.ID, fn: written}
	}
	watched := &stallReader{r: body}
	watched.last.Store(time.Now().UnixNano())
	go watched.watch(uctx, c.cfg.StallTimeout, cancel)
	q := url.Values{"sessionId": {session}, "fileId": {u.ID}, "token": {token}}
	st, b, err := k.do(uctx, http.MethodPost, "upload", q, io.NopCloser(watched), u.Size, MaxSmallBytes)
	if cause := context.Cause(uctx); errors.Is(cause, ErrStalled) {
		return cause
	}
	if err != nil {
		return err
	}
	if st != http.StatusOK {
		return errorOf("upload", st, messageOf(b), false)
	}
	return nil
}

// cancelSession tells the receiver the send is cancelled (best effort).
func (c *Client) cancelSession(k *conn, session string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var q url.Values
	if session != "" {
		q = url.Values{"sessionId": {session}}
	}
	_, _, _ = k.do(ctx, http.MethodPost, "cancel", q, nil, 0, MaxSmallBytes)
}

// stallReader notes when an upload's body was last read: net/http reads
// it only as fast as the receiver takes it.
type stallReader struct {
	r    io.Reader
	last atomic.Int64 // UnixNano of the last read that returned bytes
	done atomic.Bool  // the whole body was read: the answer is awaited
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.last.Store(time.Now().UnixNano())
	}
	if err != nil {
		s.done.Store(true)
	}
	return n, err
}

// watch gives up the upload (cancel with ErrStalled) once no byte of the
// body was taken for d, until the body is all read or ctx ends.
func (s *stallReader) watch(ctx context.Context, d time.Duration, cancel context.CancelCauseFunc) {
	t := time.NewTicker(d / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if s.done.Load() {
				return
			}
			if idle := now.Sub(time.Unix(0, s.last.Load())); idle > d {
				cancel(fmt.Errorf("%w for %v", ErrStalled, idle.Round(time.Second)))
				return
			}
		}
	}
}

type countingReader struct {
	r  io.Reader
	id string
	n  int64
	fn func(string, int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.n += int64(n)
		c.fn(c.id, c.n)
	}
	return n, err
}

// TextUpload is the protocol's text message: one text/plain file whose
// preview holds the text.
func TextUpload(id, text string) Upload {
	return Upload{
		File: File{ID: id, FileName: id + ".txt", Size: int64(len(text)), FileType: "text/plain", Preview: text},
		Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(text)), nil },
	}
}
