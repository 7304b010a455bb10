package engine

import (
	"context"
	"io"
	"sync"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// pipeStream is one direction-pair of in-memory pipes with half-close, so
// protocol tests run without sockets.
type pipeStream struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func (s pipeStream) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s pipeStream) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s pipeStream) Close() error                { return s.w.Close() }
func (s pipeStream) Abort() {
	s.r.CloseWithError(io.ErrClosedPipe)
	s.w.CloseWithError(io.ErrClosedPipe)
}

// pipeConn is one end of an in-memory connection.
type pipeConn struct {
	peer   identity.DeviceID
	addr   string // RemoteAddr; "pipe" when empty
	other  *pipeConn
	accept chan Stream
	done   chan struct{}
	once   *sync.Once
	mu     sync.Mutex
	open   []pipeStream
}

// newPipeConns returns two connected ends; a proves idA to b and b proves idB to a.
func newPipeConns(idA, idB identity.DeviceID) (a, b *pipeConn) {
	done, once := make(chan struct{}), &sync.Once{}
	a = &pipeConn{peer: idB, accept: make(chan Stream, 16), done: done, once: once}
	b = &pipeConn{peer: idA, accept: make(chan Stream, 16), done: done, once: once}
	a.other, b.other = b, a
	return a, b
}

func (c *pipeConn) OpenStream(ctx context.Context) (Stream, error) {
	r1, w1 := io.Pipe()
	r2, w2 := io.Pipe()
	mine, theirs := pipeStream{r: r1, w: w2}, pipeStream{r: r2, w: w1}
	c.mu.Lock()
	select {
	case <-c.done:
		// Closed: a stream opened now would never be aborted (Close
		// aborted those it found), and a write to it would block for ever.
		c.mu.Unlock()
		return nil, io.ErrClosedPipe
	default:
	}
	c.open = append(c.open, mine, theirs)
	c.mu.Unlock()
	select {
	case c.other.accept <- theirs:
		return mine, nil
	case <-c.done:
		return nil, io.ErrClosedPipe
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *pipeConn) AcceptStream(ctx context.Context) (Stream, error) {
	select {
	case s := <-c.accept:
		return s, nil
	case <-c.done:
		return nil, io.ErrClosedPipe
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *pipeConn) PeerID() identity.DeviceID { return c.peer }
func (c *pipeConn) RemoteAddr() string {
	if c.addr == "" {
		return "pipe"
	}
	return c.addr
}
func (c *pipeConn) Transport() transport.Kind { return "pipe" }
func (c *pipeConn) Metrics() Metrics          { return Metrics{Transport: "pipe"} }
func (c *pipeConn) Done() <-chan struct{}     { return c.done }

func (c *pipeConn) Close(error) error {
	c.once.Do(func() {
		close(c.done)
		for _, end := range []*pipeConn{c, c.other} {
			end.mu.Lock()
			for _, s := range end.open {
				s.Abort()
			}
			end.mu.Unlock()
		}
	})
	return nil
}
