// Package weblink shares files with, and receives files from, a device that
// has nothing but a web browser: a phone, a work laptop, a TV. A link is a
// URL with an unguessable token in its path (128 bits), shown as text and a
// QR code by the app or the CLI.
//
//   - A share link (Server.Share) serves a fixed table of files: a page
//     listing them (sizes, thumbnails of pictures), each file with HTTP range
//     requests (http.ServeContent, so a browser's own download resume works),
//     and all of them as one zip streamed on the fly (stored, not
//     recompressed; no temporary copy). Nothing but the table is reachable:
//     a request names a row by its index, never a path.
//   - A receive link (Server.Receive) serves an upload page that sends files
//     with the tus protocol (tus.io): github.com/tus/tusd/v2's handler on this
//     side behind a data store of Ferry's own that writes through package
//     store into ".partial" files, and tus-js-client in the page (vendored in
//     assets/ with its licence). An upload resumes from the last
//     acknowledged offset after a dropped connection, and after a reload
//     when the same file is picked again. Where files go is the caller's
//     Inbox: the space check, safe names and per-file refusal are its.
//
// Why plain HTTP: browsers refuse a self-signed certificate with a full-page
// warning, and a device on a LAN has no name a public CA would certify. So
// the link travels in the clear on the local network, like LocalSend's and
// PairDrop's. The token keeps the link from being guessed; an optional PIN
// protects a link that leaked (a photo of the QR code, a forwarded URL,
// browser history) but not against someone who can read the network's
// traffic, who sees the PIN too. Pages say so.
//
// Bounds: connections per server and per address, devices per link,
// uploads open per link, request bodies (a tus chunk is at most ChunkSize),
// header bytes, read-header and idle timeouts. Every page escapes names
// (html/template; the upload page's script sets textContent only), sends
// Content-Security-Policy default-src 'self', nosniff, no-store, and no
// referrer. After Stop or expiry a link answers 410 and an unknown token 404.
//
// The package is plain Go: it never imports Fyne, nor the rest of the engine.
package weblink

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// Errors a link ends with (Link.Err), matched with errors.Is.
var (
	// ErrStopped means the link's owner stopped it.
	ErrStopped = errors.New("weblink: the link was stopped")
	// ErrExpired means the link's time ran out.
	ErrExpired = errors.New("weblink: the link expired")
	// ErrOnce means a share link made for one device ended after the first
	// device had every file.
	ErrOnce = errors.New("weblink: the link ended after its first download")
	// ErrClosed means the server was closed.
	ErrClosed = errors.New("weblink: the server was closed")
)

// Options configure a Server. The zero value of every field means its
// documented default.
type Options struct {
	// DeviceName is this device's name as the pages show it ("Files from
	// Alice's laptop", "3 files sent to Alice's laptop"). Default "Ferry".
	DeviceName string
	// MaxConns bounds the server's open connections (default 256); a
	// connection beyond it is closed at once.
	MaxConns int
	// MaxConnsPerAddr bounds the open connections from one IP address
	// (default 16; a browser opens up to 6 per host).
	MaxConnsPerAddr int
	// ReadHeaderTimeout bounds how long a request's headers may take
	// (default 10 s); IdleTimeout how long a kept-alive connection may wait
	// for its next request (default 60 s).
	ReadHeaderTimeout, IdleTimeout time.Duration
	// Logger receives the server's diagnostics. Default: discarded.
	Logger *slog.Logger
	// Now is the clock that decides expiry. Default time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.DeviceName == "" {
		o.DeviceName = "Ferry"
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 256
	}
	if o.MaxConnsPerAddr <= 0 {
		o.MaxConnsPerAddr = 16
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// maxHeaderBytes bounds a request's header block.
const maxHeaderBytes = 16 << 10

// maxEnded bounds the tokens of ended links remembered to answer 410 rather
// than 404.
const maxEnded = 4096

// Server is one HTTP server holding any number of links. Close it when done:
// every link ends and its goroutines are waited for.
type Server struct {
	opts Options
	ln   *limitListener
	srv  *http.Server
	done chan struct{} // closed when Serve returned
	err  error         // why Serve returned, once done is closed

	mu    sync.Mutex       // guards the fields below
	links map[string]*Link // open links by token
	ended map[string]error // tokens of ended links -> why
	order []string         // ended tokens, oldest first
	close bool
}

// Listen opens a server on addr ("host:port"; ":0" picks a free port on
// every address).
func Listen(addr string, opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("weblink: listen: %w", err)
	}
	return Serve(ln, opts), nil
}

// Serve starts a server on ln, which it owns from then on.
func Serve(ln net.Listener, opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{
		opts:  opts,
		ln:    newLimitListener(ln, opts.MaxConns, opts.MaxConnsPerAddr),
		done:  make(chan struct{}),
		links: map[string]*Link{},
		ended: map[string]error{},
	}
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(s.done)
		s.err = s.srv.Serve(s.ln)
	}()
	return s
}

// Done is closed when the server stopped serving: closed, or its listener
// failed (Err says why).
func (s *Server) Done() <-chan struct{} { return s.done }

// Err is why the server stopped serving before Close was called, or nil
// (still serving, or closed).
func (s *Server) Err() error {
	select {
	case <-s.done:
	default:
		return nil
	}
	if errors.Is(s.err, http.ErrServerClosed) {
		return nil
	}
	return s.err
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Port is the TCP port the server listens on.
func (s *Server) Port() int {
	if a, ok := s.ln.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// Close ends every link (uploads in flight are discarded, see Link.Stop),
// closes the listener and every connection, and waits for the server's
// goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.close = true
	links := make([]*Link, 0, len(s.links))
	for _, l := range s.links {
		links = append(links, l)
	}
	s.mu.Unlock()
	for _, l := range links {
		l.end(ErrClosed)
	}
	err := s.srv.Close()
	<-s.done
	for _, l := range links {
		l.wait()
	}
	if err != nil {
		return fmt.Errorf("weblink: close: %w", err)
	}
	return nil
}

// add registers a new link under a fresh token.
func (s *Server) add(l *Link) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.close {
		return ErrClosed
	}
	for {
		tok, err := newToken()
		if err != nil {
			return err
		}
		if _, taken := s.links[tok]; taken {
			continue
		}
		if _, taken := s.ended[tok]; taken {
			continue
		}
		l.token = tok
		s.links[tok] = l
		return nil
	}
}

// remove forgets an ended link, remembering its token to answer 410.
func (s *Server) remove(l *Link, why error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.links[l.token] != l {
		return
	}
	delete(s.links, l.token)
	s.ended[l.token] = why
	s.order = append(s.order, l.token)
	if len(s.order) > maxEnded {
		delete(s.ended, s.order[0])
		s.order = s.order[1:]
	}
}

// lookup finds the link of a token: the open link, or why it ended.
func (s *Server) lookup(tok string) (*Link, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.links[tok]; ok {
		return l, nil
	}
	if why, ok := s.ended[tok]; ok {
		return nil, why
	}
	return nil, errUnknown
}

// errUnknown is a token no link ever had (404).
var errUnknown = errors.New("weblink: no such link")

// tokenBytes is the randomness of a link's token: 128 bits.
const tokenBytes = 16

// tokenEncoding spells tokens in lower-case base32 without padding: 26
// characters a-z and 2-7, unambiguous to read aloud and safe in a path.
var tokenEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// tokenLen is the length of a token in characters.
var tokenLen = tokenEncoding.EncodedLen(tokenBytes)

func newToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("weblink: token: %w", err)
	}
	return tokenEncoding.EncodeToString(b), nil
}

// URLs returns the link's address for every host given ("192.168.1.23",
// "fe80::1%eth0" is refused: a browser cannot use a zone), e.g. for the
// device's LAN addresses.
func (s *Server) URLs(l *Link, hosts []netip.Addr) []string {
	var out []string
	for _, h := range hosts {
		if h.Zone() != "" {
			continue
		}
		out = append(out, "http://"+netip.AddrPortFrom(h, uint16(s.Port())).String()+l.Path())
	}
	return out
}

// Hosts are the addresses a browser on the network can reach the server
// at: the one it listens on, or every up interface's unicast address (IPv4
// first; link-local IPv6 left out: a browser cannot use a zone), or
// 127.0.0.1 when there is none.
func (s *Server) Hosts() []netip.Addr {
	if ap, err := netip.ParseAddrPort(s.Addr().String()); err == nil && !ap.Addr().IsUnspecified() {
		return []netip.Addr{ap.Addr().Unmap()}
	}
	var hosts []netip.Addr
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			pfx, err := netip.ParsePrefix(a.String())
			if err != nil {
				continue
			}
			ip := pfx.Addr().Unmap()
			if ip.IsLinkLocalUnicast() || ip.IsLoopback() || ip.IsMulticast() {
				continue
			}
			hosts = append(hosts, ip)
		}
	}
	slices.SortStableFunc(hosts, func(a, b netip.Addr) int {
		switch {
		case a.Is4() && !b.Is4():
			return -1
		case b.Is4() && !a.Is4():
			return 1
		}
		return 0
	})
	if len(hosts) == 0 {
		hosts = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	return hosts
}

// ServeHTTP routes a request: static assets under /a/, links under /l/.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	if name, ok := strings.CutPrefix(r.URL.Path, "/a/"); ok {
		serveAsset(w, r, name)
		return
	}
	tok, rest, err := parseLinkPath(r.URL.Path)
	if err != nil {
		notFound(w)
		return
	}
	l, err := s.lookup(tok)
	switch {
	case errors.Is(err, errUnknown):
		notFound(w)
		return
	case err != nil:
		gone(w, err)
		return
	}
	if rest == "" && !strings.HasSuffix(r.URL.Path, "/") {
		// The pages use relative links: give them their folder.
		http.Redirect(w, r, l.Path(), http.StatusFound)
		return
	}
	l.serve(w, r, rest)
}

// secure sets the headers every answer carries.
func secure(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

// parseLinkPath splits "/l/<token>/<rest>" into the token and rest ("" for
// the link's page). The token must be exactly a token's length and alphabet;
// rest is returned as it is (each handler parses its own).
func parseLinkPath(p string) (tok, rest string, err error) {
	after, ok := strings.CutPrefix(p, "/l/")
	if !ok {
		return "", "", errBadPath
	}
	tok, rest, _ = strings.Cut(after, "/")
	if len(tok) != tokenLen {
		return "", "", errBadPath
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return "", "", errBadPath
		}
	}
	return tok, rest, nil
}

// errBadPath is a request path that names no link.
var errBadPath = errors.New("weblink: bad path")

// remoteAddr is a request's client address, without the port.
func remoteAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
