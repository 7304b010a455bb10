package localsend

import (
	"crypto/subtle"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
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

	mu        sync.Mutex // guards the fields below
	files     map[string]*upFile
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
	File
	token    string
	state    fileState
	rc       *http.ResponseController // of the running upload, to cut it on cancel
	sink     Sink
	received atomic.Int64
}

type fileState int

const (
	filePending fileState = iota
	fileUploading
	fileResolved
)

// begin starts file fid's upload if tok is its token and it is pending.
func (ss *session) begin(fid, tok string, rc *http.ResponseController) (*upFile, Sink, error) {
	ss.mu.Lock()
	f := ss.files[fid]
	if ss.ended || f == nil || subtle.ConstantTimeCompare([]byte(tok), []byte(f.token)) != 1 || f.state != filePending {
		ss.mu.Unlock()
		return nil, nil, ErrRejected // a second upload of one file is refused too
	}
	f.state = fileUploading
	f.rc = rc
	if !ss.begun && ss.timer != nil {
		ss.timer.Reset(ss.s.cfg.SessionIdle) // StartGrace is over
	}
	ss.begun = true
	ss.uploading++
	ss.busy.Add(1)
	ss.mu.Unlock()
	// Open runs outside the lock: it may touch the disk.
	sink, err := ss.recv.Open(fid)
	defer ss.busy.Done()
	if err != nil {
		ss.mu.Lock()
		f.state = fileResolved
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
	f.sink = sink
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
	f.sink = nil // from here on this goroutine owns the sink's end
	f.rc = nil
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
	for _, f := range ss.files {
		if f.sink != nil {
			sinks = append(sinks, f.sink)
			f.sink = nil
		}
		if f.rc != nil {
			_ = f.rc.SetReadDeadline(time.Now()) // unblocks the upload's read
		}
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
