// Package instance keeps one Ferry running per config dir. The first launch
// takes a lock file in the dir and listens on a local socket (a Unix socket
// next to the lock; on Windows loopback TCP with a token file); a later
// launch with the same dir finds the lock taken, hands its arguments to the
// running one over that socket and exits. The lock dies with its process, so
// a crash never leaves a stale socket that blocks the next start.
package instance

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ErrRunning means another process holds the config dir's lock.
var ErrRunning = errors.New("ferry is already running with this config dir")

// ErrRefused means the running instance did not take the request.
var ErrRefused = errors.New("the running ferry refused the request")

// Request is what a later launch hands to the running instance.
type Request struct {
	// Files are absolute paths to send (from the command line or a file
	// manager's "Open with"); empty just raises the window.
	Files []string `json:"files,omitempty"`
	// Config is the config dir the launch was given, absolute.
	Config string `json:"config"`
	// Token proves the sender may read the config dir (Windows only, where
	// the socket is a loopback port any local user can reach).
	Token string `json:"token,omitempty"`
}

type reply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// Limits on what a request may hold: it comes from another local process.
const (
	maxRequestBytes = 1 << 20
	maxFiles        = 10000
	ioTimeout       = 5 * time.Second
)

// ParseRequest reads one request line and checks it: every file an
// absolute path without NUL bytes, at most maxFiles of them.
func ParseRequest(line []byte) (Request, error) {
	var r Request
	if len(line) > maxRequestBytes {
		return Request{}, fmt.Errorf("request: %d bytes is too long", len(line))
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return Request{}, fmt.Errorf("request: %w", err)
	}
	if len(r.Files) > maxFiles {
		return Request{}, fmt.Errorf("request: %d files, at most %d", len(r.Files), maxFiles)
	}
	for _, f := range r.Files {
		if f == "" || strings.ContainsRune(f, 0) || !filepath.IsAbs(f) {
			return Request{}, fmt.Errorf("request: %q is not an absolute path", f)
		}
	}
	if r.Config == "" || strings.ContainsRune(r.Config, 0) || !filepath.IsAbs(r.Config) {
		return Request{}, fmt.Errorf("request: config %q is not an absolute path", r.Config)
	}
	return r, nil
}

// Primary is the running instance of a config dir.
type Primary struct {
	dir   string
	lock  *os.File
	ln    net.Listener
	token string // checked on every request; "" where the socket is private
	once  sync.Once
	err   error
}

// Claim makes this process the instance for dir, or returns ErrRunning
// when another process is. dir must exist.
func Claim(dir string) (*Primary, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("instance: %w", err)
	}
	lock, err := lockFile(filepath.Join(dir, lockName))
	if err != nil {
		return nil, err
	}
	ln, token, err := listen(dir)
	if err != nil {
		unlockFile(lock)
		return nil, fmt.Errorf("instance: listen: %w", err)
	}
	return &Primary{dir: dir, lock: lock, ln: ln, token: token}, nil
}

// Serve hands each valid request to handle, one at a time, until ctx ends
// or the Primary is closed.
func (p *Primary) Serve(ctx context.Context, handle func(Request)) error {
	stop := context.AfterFunc(ctx, func() { p.ln.Close() })
	defer stop()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return ctx.Err()
			}
			return fmt.Errorf("instance: accept: %w", err)
		}
		p.serveConn(c, handle)
	}
}

func (p *Primary) serveConn(c net.Conn, handle func(Request)) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	// A limited reader bounds the line: without its newline it ends in EOF.
	line, err := bufio.NewReader(io.LimitReader(c, maxRequestBytes+1)).ReadBytes('\n')
	rep := reply{OK: true}
	var r Request
	if err == nil {
		r, err = ParseRequest(line)
	}
	switch {
	case err != nil:
		rep = reply{Error: err.Error()}
	case p.token != "" && r.Token != p.token:
		rep = reply{Error: "wrong token"}
	case filepath.Clean(r.Config) != p.dir:
		rep = reply{Error: fmt.Sprintf("this instance runs with config dir %s", p.dir)}
	}
	if rep.OK {
		handle(r)
	}
	b, _ := json.Marshal(rep)
	_, _ = c.Write(append(b, '\n'))
}

// Close stops listening and releases the lock.
func (p *Primary) Close() error {
	p.once.Do(func() {
		err := p.ln.Close()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
		cleanup(p.dir)
		p.err = errors.Join(err, unlockFile(p.lock))
	})
	return p.err
}

// HandOver gives r to the instance running for dir. The instance may still
// be starting (it holds the lock before it listens), so refused connections
// are retried until ctx ends.
func HandOver(ctx context.Context, dir string, r Request) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("instance: %w", err)
	}
	r.Config = dir
	wait := 20 * time.Millisecond
	for {
		err = handOverOnce(ctx, dir, r)
		if err == nil || errors.Is(err, ErrRefused) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("instance: no answer from the running ferry: %w", err)
		case <-time.After(wait): // retry pacing while the other instance starts
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

func handOverOnce(ctx context.Context, dir string, r Request) error {
	c, token, err := dial(ctx, dir)
	if err != nil {
		return err
	}
	defer c.Close()
	r.Token = token
	deadline := time.Now().Add(ioTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.SetDeadline(deadline)
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("instance: %w", err)
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("instance: send: %w", err)
	}
	line, err := bufio.NewReader(io.LimitReader(c, maxRequestBytes)).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("instance: read reply: %w", err)
	}
	var rep reply
	if err := json.Unmarshal(line, &rep); err != nil {
		return fmt.Errorf("instance: reply: %w", err)
	}
	if !rep.OK {
		return fmt.Errorf("%w: %s", ErrRefused, rep.Error)
	}
	return nil
}
