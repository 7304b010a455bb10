// Package hostile is a Ferry peer that breaks the rules on purpose: it
// floods a receiver (idle TCP connections, QUIC connections that open no
// stream, offers from a fresh identity each) and sends what a receiver
// must bound (oversized chunks it never finishes, huge manifests). It
// speaks the real protocol through the engine's own transports, so what it
// does is what an attacker on the same network could do. ferry-bench
// hostile drives it against a real `ferry-cli receive` (issue #14); tests
// may use it too. Nothing else should.
package hostile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/pairing"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
	"github.com/ferrydrop/ferry/engine/internal/transport/quic"
	"github.com/ferrydrop/ferry/engine/internal/transport/tcp"
	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
)

// Peer is where hostile connections come from.
type Peer struct {
	// From is the local IP address to dial from; empty lets the system
	// choose. On Linux any 127.x.y.z stands for another host on loopback.
	From string
	// Dir holds the identities the peer creates (one per Connect).
	Dir string
}

// Hold keeps what an attack opened until Close. It is safe for concurrent use.
type Hold struct {
	mu      sync.Mutex // guards closers
	closers []func()
}

func (h *Hold) add(f func()) {
	h.mu.Lock()
	h.closers = append(h.closers, f)
	h.mu.Unlock()
}

// Len is the number of things held.
func (h *Hold) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.closers)
}

// Close releases everything held.
func (h *Hold) Close() {
	h.mu.Lock()
	cs := h.closers
	h.closers = nil
	h.mu.Unlock()
	for _, c := range cs {
		c()
	}
}

// Stats counts what a flood did. Its fields are updated atomically.
type Stats struct {
	Tried    atomic.Int64 // attempts begun
	Opened   atomic.Int64 // connections or sessions the receiver let in
	Failed   atomic.Int64 // dials or hellos that failed (shed, refused)
	Accepted atomic.Int64 // offers accepted
	Declined atomic.Int64 // offers declined (by the user, or muted)
	Busy     atomic.Int64 // offers refused as busy
}

// String sums the counts up.
func (s *Stats) String() string {
	return fmt.Sprintf("%d in, %d refused; offers: %d accepted, %d declined, %d busy",
		s.Opened.Load(), s.Failed.Load(), s.Accepted.Load(), s.Declined.Load(), s.Busy.Load())
}

// pause is how long a flood's worker waits after its connection was
// refused or ended, so a flood that is shed does not spin.
const pause = 20 * time.Millisecond

// flood runs n workers of one until ctx ends, counting the attempts in st.
func flood(ctx context.Context, st *Stats, n int, one func(ctx context.Context)) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				st.Tried.Add(1)
				one(ctx)
				select {
				case <-ctx.Done():
				case <-time.After(pause):
				}
			}
		})
	}
	wg.Wait()
}

// FloodIdleTCP keeps n TCP connections to addr open that never send a
// byte, opening a new one whenever the receiver closes one, until ctx ends.
func (p Peer) FloodIdleTCP(ctx context.Context, addr string, n int, st *Stats) {
	d := net.Dialer{}
	if p.From != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(p.From)}
	}
	flood(ctx, st, n, func(ctx context.Context) {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			st.Failed.Add(1)
			return
		}
		defer c.Close()
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
		start := time.Now()
		var b [1]byte
		c.Read(b[:]) // returns when the receiver closes it
		if time.Since(start) < time.Second {
			st.Failed.Add(1) // shed at once
		} else {
			st.Opened.Add(1)
		}
	})
}

// FloodSilentQUIC keeps n QUIC connections to addr that finish their
// handshake and never open a stream, with one identity, opening a new one
// whenever the receiver closes one, until ctx ends.
func (p Peer) FloodSilentQUIC(ctx context.Context, addr string, n int, st *Stats) error {
	id, err := p.identity()
	if err != nil {
		return err
	}
	flood(ctx, st, n, func(ctx context.Context) {
		start := time.Now()
		s, err := quic.Dial(ctx, addr, id.TLSConfig(false, nil), p.config())
		if err != nil {
			st.Failed.Add(1)
			return
		}
		defer s.Close(nil)
		select {
		case <-s.Done():
		case <-ctx.Done():
		}
		if time.Since(start) < time.Second && ctx.Err() == nil {
			st.Failed.Add(1)
		} else {
			st.Opened.Add(1)
		}
	})
	return nil
}

// FloodStalledHandshakes keeps n QUIC handshakes with addr that never
// finish: each sends its first flight (the ClientHello) and, once the
// receiver answered, nothing more, until the receiver ends it or its
// handshake times out; then another comes, until ctx ends.
func (p Peer) FloodStalledHandshakes(ctx context.Context, addr string, n int, st *Stats) error {
	id, err := p.identity()
	if err != nil {
		return err
	}
	flood(ctx, st, n, func(ctx context.Context) {
		start := time.Now()
		err := quic.StallHandshake(ctx, addr, id.TLSConfig(false, nil), p.From, 10*time.Second)
		if err != nil || time.Since(start) < time.Second && ctx.Err() == nil {
			st.Failed.Add(1)
		} else {
			st.Opened.Add(1)
		}
	})
	return nil
}

// FloodOffers keeps n offers of files waiting at the receiver over kind,
// each from a fresh identity: as soon as one is answered, another comes.
// An accepted offer is held (no data follows) until ctx ends.
func (p Peer) FloodOffers(ctx context.Context, kind, addr string, n int, files []wire.FileEntry, st *Stats) {
	flood(ctx, st, n, func(ctx context.Context) {
		s, err := p.Connect(ctx, kind, addr, "flood")
		if err == nil {
			defer s.Close()
			st.Opened.Add(1)
			err = s.Offer(files, 1<<20)
		}
		var d *wire.Decision
		if err == nil {
			d, err = s.Decision(ctx)
		}
		switch {
		case err == nil && d.Accept:
			st.Accepted.Add(1)
			select {
			case <-ctx.Done():
			case <-s.Done():
			}
		case err == nil && d.Code == wire.CodeBusy, errors.Is(err, wire.ErrBusy):
			st.Busy.Add(1)
		case err == nil, errors.Is(err, wire.ErrDeclined):
			st.Declined.Add(1)
		case s == nil:
			st.Failed.Add(1)
		}
	})
}

// FloodWindows keeps n QUIC connections to addr, with one identity, that
// fill the receiver's flow-control windows before it reads anything: each
// sends a join header one byte short on its first stream and, on streams
// more, as much as the receiver lets through, and holds it until the
// receiver ends the connection; then another comes, until ctx ends (issue
// #27: 40 connections of 6 streams from one address took a receiver to
// 368 MiB). Sent counts the bytes the receiver let through.
func (p Peer) FloodWindows(ctx context.Context, addr string, n, streams int, st *Stats, sent *atomic.Int64) error {
	id, err := p.identity()
	if err != nil {
		return err
	}
	hdr := join.AppendHeader(nil, join.NewToken(), join.FlagNew)
	junk := make([]byte, 64<<10)
	flood(ctx, st, n, func(ctx context.Context) {
		start := time.Now()
		c, err := quic.DialRaw(ctx, addr, id.TLSConfig(false, nil), p.config())
		if err != nil {
			st.Failed.Add(1)
			return
		}
		defer c.Close()
		stop := context.AfterFunc(ctx, c.Close)
		defer stop()
		first, err := c.OpenStream(ctx)
		if err == nil {
			_, err = first.Write(hdr[:len(hdr)-1])
		}
		if err != nil {
			st.Failed.Add(1)
			return
		}
		var wg sync.WaitGroup
		for range streams {
			s, err := c.OpenStream(ctx)
			if err != nil {
				break
			}
			wg.Go(func() {
				for {
					n, err := s.Write(junk)
					sent.Add(int64(n))
					if err != nil {
						return
					}
				}
			})
		}
		wg.Wait() // until the receiver ends the connection
		if time.Since(start) < time.Second && ctx.Err() == nil {
			st.Failed.Add(1)
		} else {
			st.Opened.Add(1)
		}
	})
	return nil
}

// GrindPairing tries at the receiver's verification code as a man in the
// middle would (issue #27 item 2), with n workers over kind, a fresh
// identity each try: it commits to a nonce in its hello and, once the
// receiver answered with its own nonce (which fixes that session's code),
// hangs up without revealing. Tries counts the receiver's answers with a
// nonce, the tries the attacker got; Failed the refusals.
func (p Peer) GrindPairing(ctx context.Context, kind, addr string, n int, st *Stats, tries *atomic.Int64) {
	var count atomic.Int64
	flood(ctx, st, n, func(ctx context.Context) {
		id, err := p.identity()
		if err != nil {
			return
		}
		// A name of its own each try: a receiver's count per claimed name binds less.
		name := fmt.Sprintf("mallory %s %d", p.From, count.Add(1))
		h, err := p.hello(ctx, kind, addr, id, &wire.Hello{Version: wire.Version, Name: name, ID: id.ID.String(),
			Features: []string{"resume", "pair"}, Pair: pairing.Commit(pairing.NewNonce())})
		switch {
		case err == nil && h.Pair != "":
			tries.Add(1)
			st.Opened.Add(1)
		default:
			st.Failed.Add(1)
		}
	})
}

// hello dials addr over kind as id, sends hello and reads the answer;
// the session is closed before it returns.
func (p Peer) hello(ctx context.Context, kind, addr string, id *identity.Identity, hello *wire.Hello) (*wire.Hello, error) {
	s, err := p.connectAs(ctx, kind, addr, id)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := s.Send(hello); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, s.Close)
	defer stop()
	m, err := wire.ReadMessage(s.r)
	if err != nil {
		return nil, err
	}
	switch m := m.(type) {
	case *wire.Hello:
		return m, nil
	case *wire.Cancel:
		return nil, &wire.RemoteError{Code: m.Code, Reason: m.Reason}
	}
	return nil, fmt.Errorf("hello: got %v", m.Type())
}

// IdleTCP opens n TCP connections to addr that never send a byte, and holds
// them. It returns once all are open (the receiver may close some at once).
func (p Peer) IdleTCP(ctx context.Context, addr string, n int) (*Hold, error) {
	d := net.Dialer{}
	if p.From != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(p.From)}
	}
	h := &Hold{}
	for range n {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("idle tcp: %w", err)
		}
		h.add(func() { c.Close() })
	}
	return h, nil
}

// SilentQUIC opens n QUIC connections to addr that finish their handshake
// and never open a stream, and holds them, with a fresh identity each.
// It returns how many the receiver let finish the handshake.
func (p Peer) SilentQUIC(ctx context.Context, addr string, n int) (*Hold, int, error) {
	id, err := p.identity()
	if err != nil {
		return nil, 0, err
	}
	h := &Hold{}
	ok := 0
	for range n {
		// A QUIC session dials its first connection now and sends its
		// header with its first stream, which never comes.
		s, err := quic.Dial(ctx, addr, id.TLSConfig(false, nil), p.config())
		if err != nil {
			if ctx.Err() != nil {
				h.Close()
				return nil, ok, ctx.Err()
			}
			continue
		}
		ok++
		h.add(func() { s.Close(nil) })
	}
	return h, ok, nil
}

func (p Peer) config() transport.Config {
	return transport.Config{LocalIP: p.From, QUICConns: 1, HandshakeTimeout: 10 * time.Second}
}

func (p Peer) identity() (*identity.Identity, error) {
	dir, err := os.MkdirTemp(p.Dir, "id-")
	if err != nil {
		return nil, err
	}
	return identity.LoadOrCreate(dir)
}

// Session is one hostile session with a receiver, hellos exchanged.
type Session struct {
	conn transport.Conn
	ctl  transport.Stream
	r    *bufio.Reader
	w    *bufio.Writer
	mu   sync.Mutex // guards w
}

// Connect dials the receiver at addr over kind ("quic" or "tcp") with a
// fresh identity named name, and exchanges hellos.
func (p Peer) Connect(ctx context.Context, kind, addr, name string) (*Session, error) {
	id, err := p.identity()
	if err != nil {
		return nil, err
	}
	s, err := p.connectAs(ctx, kind, addr, id)
	if err != nil {
		return nil, err
	}
	if err := s.Send(&wire.Hello{Version: wire.Version, Name: name, ID: id.ID.String(), Features: []string{"resume"}}); err != nil {
		s.Close()
		return nil, err
	}
	stop := context.AfterFunc(ctx, s.Close)
	defer stop()
	m, err := wire.ReadMessage(s.r)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("hello: %w", err)
	}
	switch m := m.(type) {
	case *wire.Hello:
		return s, nil
	case *wire.Cancel:
		s.Close()
		return nil, &wire.RemoteError{Code: m.Code, Reason: m.Reason}
	}
	s.Close()
	return nil, fmt.Errorf("hello: got %v", m.Type())
}

// connectAs dials the receiver as id and opens the control stream.
func (p Peer) connectAs(ctx context.Context, kind, addr string, id *identity.Identity) (*Session, error) {
	var err error
	var c transport.Conn
	switch kind {
	case "quic":
		c, err = transport.AsConn(quic.Dial(ctx, addr, id.TLSConfig(false, nil), p.config()))
	case "tcp":
		c, err = transport.AsConn(tcp.Dial(ctx, addr, id.TLSConfig(false, nil), p.config()))
	default:
		return nil, fmt.Errorf("hostile: unknown transport %q", kind)
	}
	if err != nil {
		return nil, err
	}
	st, err := c.OpenStream(ctx)
	if err != nil {
		c.Close(nil)
		return nil, err
	}
	s := &Session{conn: c, ctl: st, r: bufio.NewReader(st), w: bufio.NewWriter(st)}
	if _, err := st.Write([]byte{wire.KindControl}); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Send writes one control message.
func (s *Session) Send(m wire.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := wire.WriteMessage(s.w, m); err != nil {
		return err
	}
	return s.w.Flush()
}

// Recv reads one control message.
func (s *Session) Recv() (wire.Message, error) { return wire.ReadMessage(s.r) }

// Offer offers files in chunks of chunkSize, the manifest in parts the
// protocol allows.
func (s *Session) Offer(files []wire.FileEntry, chunkSize int) error {
	var total int64
	for _, f := range files {
		total += f.Size
	}
	if err := s.Send(&wire.Offer{Transfer: "hostile", ChunkSize: chunkSize, Files: len(files), TotalBytes: total}); err != nil {
		return err
	}
	for start := 0; start < len(files); {
		end := min(start+wire.MaxFilesPerPart, len(files))
		for size := partSize(files[start:end]); size > wire.MaxMessage*3/4 && end-start > 1; size = partSize(files[start:end]) {
			end = start + (end-start)/2
		}
		if err := s.Send(&wire.OfferFiles{Start: start, Files: files[start:end]}); err != nil {
			return err
		}
		start = end
	}
	return nil
}

func partSize(files []wire.FileEntry) int {
	n := 0
	for _, f := range files {
		n += len(f.Path) + 64
	}
	return n
}

// Decision reads the receiver's answer to the offer; a refusal made by
// closing the session (a cancel) is an error.
func (s *Session) Decision(ctx context.Context) (*wire.Decision, error) {
	stop := context.AfterFunc(ctx, func() { s.conn.Close(nil) })
	defer stop()
	m, err := s.Recv()
	if err != nil {
		return nil, err
	}
	switch m := m.(type) {
	case *wire.Decision:
		return m, nil
	case *wire.Cancel:
		return nil, &wire.RemoteError{Code: m.Code, Reason: m.Reason}
	}
	return nil, fmt.Errorf("hostile: %v instead of a decision", m.Type())
}

// StallChunks opens streams data streams, and on each sends the header of
// one chunk of file of chunkLen bytes and all of it but its last byte, so
// the receiver holds a chunk buffer for each; then it stops sending. It
// returns once everything was written.
func (s *Session) StallChunks(ctx context.Context, file uint32, chunkLen, streams int) error {
	payload := make([]byte, chunkLen-1)
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for i := range streams {
		st, err := s.conn.OpenStream(ctx)
		if err != nil {
			return err
		}
		hdr := make([]byte, 1+wire.DataHeaderLen)
		hdr[0] = wire.KindData
		wire.DataHeader{File: file, Chunk: uint32(i), Length: uint32(chunkLen), Leaf: merkle.Hash{}}.Put(hdr[1:])
		wg.Go(func() {
			if _, err := st.Write(hdr); err != nil {
				errs <- err
				return
			}
			if _, err := st.Write(payload); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// Done is closed when the receiver ended the session.
func (s *Session) Done() <-chan struct{} { return s.conn.Done() }

// Close ends the session.
func (s *Session) Close() { s.conn.Close(nil) }
