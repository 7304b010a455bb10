package localsend

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// session is one accepted prepare-upload on the server.
type session struct {
	s    *Server
	id   string
	recv Session
	addr netip.Addr
	key  [32]byte // derives the files' tokens (token)

	mu sync.Mutex // guards the fields below
	// files are the accepted files, sorted by ID. A session accepted and
	// never uploaded holds them until it ends, so they hold what an upload
	// needs and no more: many addresses may each hold an accepted offer of
	// thousands of files at once (docs/localsend.md, floods).
	files     []upFile
	resolved  int
	uploading int
	timer     *time.Timer
	begun     bool        // an upload began (the timer runs SessionIdle, not StartGrace)
	unwatch   func() bool // stops watching an EndingSession's context
	ended     bool
	// busy counts the goroutines calling the Receiver or a Sink outside
	// mu: end waits for them, so nothing is called after End.
	busy sync.WaitGroup
}

// upFile is one accepted file of a session.
type upFile struct {
	id    string
	size  int64
	sum   *[sha256.Size]byte // the sha256 the offer gave; nil when none
	up    *upload            // while its upload runs
	index int32              // in Offer.Files: what Session.Open takes
	state fileState
}

// upload is a running upload of one file.
type upload struct {
	rc   *http.ResponseController // to cut it on cancel
	sink Sink                     // nil once done owns it
}

type fileState uint8

const (
	filePending fileState = iota
	fileUploading
	fileResolved
)

// newSession makes the server's session of an accepted offer: files are
// o.Files[i] for each i in accepted (others are skipped).
func newSession(s *Server, recv Session, addr netip.Addr, o *Offer, accepted []int) *session {
	ss := &session{s: s, id: randomToken(), recv: recv, addr: addr}
	_, _ = rand.Read(ss.key[:]) // crypto/rand never fails (Go 1.24+)
	ss.files = make([]upFile, 0, len(accepted))
	for _, i := range accepted {
		if i < 0 || i >= len(o.Files) {
			continue
		}
		f := &o.Files[i]
		uf := upFile{id: f.ID, size: f.Size, index: int32(i)}
		if f.SHA256 != "" {
			uf.sum = new([sha256.Size]byte)
			_, _ = hex.Decode(uf.sum[:], []byte(f.SHA256)) // Validate checked it
		}
		ss.files = append(ss.files, uf)
	}
	slices.SortFunc(ss.files, func(a, b upFile) int { return strings.Compare(a.id, b.id) })
	// The offer's IDs are its keys, so they are distinct; an index given
	// twice gives the same ID twice, which is kept once.
	ss.files = slices.CompactFunc(ss.files, func(a, b upFile) bool { return a.id == b.id })
	return ss
}

// token is file id's upload token: 128 bits of an HMAC under the
// session's random key, so it is unguessable, bound to the session and
// the file, and needs no room of its own per file.
func (ss *session) token(id string) string {
	m := hmac.New(sha256.New, ss.key[:])
	m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// file is the accepted file of ID id, nil when there is none.
func (ss *session) file(id string) *upFile {
	i, ok := slices.BinarySearchFunc(ss.files, id, func(f upFile, id string) int { return strings.Compare(f.id, id) })
	if !ok {
		return nil
	}
	return &ss.files[i]
}

// begin starts file fid's upload if tok is its token and it is pending.
func (ss *session) begin(fid, tok string, rc *http.ResponseController) (*upFile, Sink, error) {
	want := ss.token(fid)
	ss.mu.Lock()
	f := ss.file(fid)
	if ss.ended || f == nil || subtle.ConstantTimeCompare([]byte(tok), []byte(want)) != 1 || f.state != filePending {
		ss.mu.Unlock()
		return nil, nil, ErrRejected // a second upload of one file is refused too
	}
	f.state = fileUploading
	f.up = &upload{rc: rc}
	if !ss.begun && ss.timer != nil {
		ss.timer.Reset(ss.s.cfg.SessionIdle) // StartGrace is over
	}
	ss.begun = true
	ss.uploading++
	ss.busy.Add(1)
	ss.mu.Unlock()
	// Open runs outside the lock: it may touch the disk.
	sink, err := ss.recv.Open(int(f.index))
	defer ss.busy.Done()
	if err != nil {
		ss.mu.Lock()
		f.state = fileResolved
		f.up = nil
		ss.uploading--
		ss.resolved++
		all := ss.resolved == len(ss.files) && !ss.ended
		ss.mu.Unlock()
		if all {
			go ss.end(nil) // end waits for busy, which this call holds
		}
		return nil, nil, fmt.Errorf("open: %w", err)
	}
	ss.mu.Lock()
	if ss.ended {
		ss.mu.Unlock()
		sink.Abort(ErrCancelled)
		return nil, nil, ErrRejected
	}
	f.up.sink = sink
	ss.mu.Unlock()
	return f, sink, nil
}

// done resolves file f after its upload (err nil: commit) and returns the
// file's outcome: nil once committed, ErrCancelled when the session had
// ended meanwhile, the error otherwise.
func (ss *session) done(f *upFile, sink Sink, err error) error {
	ss.mu.Lock()
	if ss.ended {
		ss.mu.Unlock()
		return ErrCancelled // end aborted the sink
	}
	f.up = nil // from here on this goroutine owns the sink's end
	ss.busy.Add(1)
	ss.mu.Unlock()
	if err == nil {
		if cerr := sink.Commit(); cerr != nil {
			err = fmt.Errorf("commit: %w", cerr)
		}
	} else {
		sink.Abort(err)
	}
	ss.busy.Done()
	ss.mu.Lock()
	f.state = fileResolved
	ss.uploading--
	ss.resolved++
	all := ss.resolved == len(ss.files) && !ss.ended
	if ss.timer != nil && !all {
		ss.timer.Reset(ss.s.cfg.SessionIdle)
	}
	ss.mu.Unlock()
	if all {
		ss.end(nil)
	}
	return err
}

// idle ends a session that saw no upload for SessionIdle.
func (ss *session) idle() {
	ss.mu.Lock()
	if ss.uploading > 0 && !ss.ended {
		ss.timer.Reset(ss.s.cfg.SessionIdle)
		ss.mu.Unlock()
		return
	}
	ss.mu.Unlock()
	ss.end(ErrTimeout)
}

// end ends the session once: running uploads are cut, their sinks
// aborted, and the Receiver's End called with err.
func (ss *session) end(err error) {
	ss.mu.Lock()
	if ss.ended {
		ss.mu.Unlock()
		return
	}
	ss.ended = true
	if ss.timer != nil {
		ss.timer.Stop()
	}
	if ss.unwatch != nil {
		ss.unwatch()
	}
	var sinks []Sink
	for i := range ss.files {
		up := ss.files[i].up
		if up == nil {
			continue
		}
		if up.sink != nil {
			sinks = append(sinks, up.sink)
			up.sink = nil
		}
		_ = up.rc.SetReadDeadline(time.Now()) // unblocks the upload's read
	}
	ss.mu.Unlock()
	ss.s.mu.Lock()
	delete(ss.s.sessions, ss.id)
	ss.s.checkIdleLocked()
	ss.s.mu.Unlock()
	cause := err
	if cause == nil {
		cause = ErrCancelled
	}
	for _, k := range sinks {
		k.Abort(cause)
	}
	ss.busy.Wait()
	ss.recv.End(err)
}

// limitListener bounds the connections per address (more are closed at
// once, so that one address cannot hold every connection of the server)
// and in all. At the total bound a newcomer takes the place of another
// connection (victimLocked: by fair shares between addresses, else the
// one quiet longest) rather than being refused: connections opened from
// many addresses that send nothing would otherwise keep every sender out
// until the read-header timeout, and renew themselves as they are dropped.
type limitListener struct {
	net.Listener
	perAddr, total int
	quiet          time.Duration // ServerConfig.EvictQuiet

	mu     sync.Mutex // guards the fields below
	byAddr map[netip.Addr]int
	n      int
	conns  map[*limitConn]struct{}
}

func newLimitListener(ln net.Listener, perAddr, total int, quiet time.Duration) *limitListener {
	return &limitListener{Listener: ln, perAddr: perAddr, total: total, quiet: quiet, byAddr: map[netip.Addr]int{}, conns: map[*limitConn]struct{}{}}
}

// Accept returns the next connection within the bounds.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		var a netip.Addr
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
			a = ap.Addr().Unmap()
		}
		l.mu.Lock()
		if l.byAddr[a] >= l.perAddr {
			l.mu.Unlock()
			c.Close()
			continue
		}
		var victim *limitConn
		if l.n >= l.total {
			if victim = l.victimLocked(a); victim == nil {
				l.mu.Unlock()
				c.Close()
				continue
			}
			l.dropLocked(victim) // its place is the newcomer's now
		}
		lc := &limitConn{Conn: c, l: l, addr: a}
		lc.active.Store(time.Now().UnixNano())
		l.byAddr[a]++
		l.n++
		l.conns[lc] = struct{}{}
		l.mu.Unlock()
		if victim != nil {
			victim.Conn.Close()
		}
		return lc, nil
	}
}

// victimLocked is the connection a newcomer from addr replaces at the
// total bound, among those not serving a request (a prepare-upload
// waiting for the user reads nothing, and must not lose its place): the
// quietest of an address holding at least two more connections than addr
// (fair shares: a device that holds none gets in beside many addresses
// that hold several), else the quietest quiet for at least l.quiet.
func (l *limitListener) victimLocked(addr netip.Addr) *limitConn {
	var fair, quiet *limitConn
	mine := l.byAddr[addr]
	deadline := time.Now().Add(-l.quiet).UnixNano()
	for c := range l.conns {
		if c.serving.Load() {
			continue
		}
		t := c.active.Load()
		if l.byAddr[c.addr] >= mine+2 && (fair == nil || t < fair.active.Load()) {
			fair = c
		}
		if t <= deadline && (quiet == nil || t < quiet.active.Load()) {
			quiet = c
		}
	}
	if fair != nil {
		return fair
	}
	return quiet
}

// dropLocked frees c's place (once).
func (l *limitListener) dropLocked(c *limitConn) {
	if _, ok := l.conns[c]; !ok {
		return
	}
	delete(l.conns, c)
	if l.byAddr[c.addr]--; l.byAddr[c.addr] <= 0 {
		delete(l.byAddr, c.addr)
	}
	l.n--
}

type limitConn struct {
	net.Conn
	l       *limitListener
	addr    netip.Addr
	active  atomic.Int64 // when a byte was last read (UnixNano)
	serving atomic.Bool  // a request is being served on it
}

// markServing is the server's http.Server.ConnState: it tells each
// connection whether a request is being served on it.
func markServing(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if lc, ok := c.(*limitConn); ok {
		lc.serving.Store(st == http.StateActive)
	}
}

// Read notes the connection's activity.
func (c *limitConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.active.Store(time.Now().UnixNano())
	}
	return n, err
}

// Close closes the connection and frees its place.
func (c *limitConn) Close() error {
	c.l.mu.Lock()
	c.l.dropLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}
