package localsend

import (
	"crypto/subtle"
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

// limitListener closes connections over a per-address or total bound at
// once, so that one address cannot hold every connection of the server.
type limitListener struct {
	net.Listener
	perAddr, total int

	mu     sync.Mutex // guards the fields below
	byAddr map[netip.Addr]int
	n      int
}

func newLimitListener(ln net.Listener, perAddr, total int) *limitListener {
	return &limitListener{Listener: ln, perAddr: perAddr, total: total, byAddr: map[netip.Addr]int{}}
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
		if l.byAddr[a] >= l.perAddr || l.n >= l.total {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.byAddr[a]++
		l.n++
		l.mu.Unlock()
		return &limitConn{Conn: c, l: l, addr: a}, nil
	}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	addr netip.Addr
	once sync.Once
}

// Close closes the connection and frees its place.
func (c *limitConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.l.byAddr[c.addr]--; c.l.byAddr[c.addr] <= 0 {
			delete(c.l.byAddr, c.addr)
		}
		c.l.n--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
