package engine

import (
	"io"
	"net"
	"sync"
	"testing"
)

// tcpGate is a TCP relay to a receiver that forwards what the sender
// writes until limit bytes passed, then holds everything the sender writes
// until Release: a transfer is stopped mid-way for certain, whatever the
// machine's speed (no race between the data and the test).
type tcpGate struct {
	t     *testing.T
	l     net.Listener
	to    string
	limit int64
	held  chan struct{} // closed once the limit is reached
	open  chan struct{} // closed by Release
	wg    sync.WaitGroup

	mu       sync.Mutex // guards the fields below
	passed   int64
	heldOnce bool
	released bool
	conns    []net.Conn
}

// newTCPGate relays from a loopback port to the TCP address to.
func newTCPGate(t *testing.T, to string, limit int64) *tcpGate {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &tcpGate{t: t, l: l, to: to, limit: limit, held: make(chan struct{}), open: make(chan struct{})}
	g.wg.Add(1)
	go g.accept()
	t.Cleanup(g.close)
	return g
}

// Addr is where the sender dials.
func (g *tcpGate) Addr() string { return g.l.Addr().String() }

// Held is closed once the gate holds the sender's bytes.
func (g *tcpGate) Held() <-chan struct{} { return g.held }

// Release lets everything through from now on.
func (g *tcpGate) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.released {
		g.released = true
		close(g.open)
	}
}

func (g *tcpGate) accept() {
	defer g.wg.Done()
	for {
		c, err := g.l.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", g.to)
		if err != nil {
			c.Close()
			continue
		}
		g.mu.Lock()
		g.conns = append(g.conns, c, u)
		g.mu.Unlock()
		g.wg.Add(2)
		go func() {
			defer g.wg.Done()
			g.forward(u, c)
			u.Close()
			c.Close()
		}()
		go func() {
			defer g.wg.Done()
			io.Copy(c, u)
			c.Close()
			u.Close()
		}()
	}
}

// forward copies the sender's bytes, holding them once the limit is reached.
func (g *tcpGate) forward(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			g.mu.Lock()
			hold := g.passed >= g.limit && !g.released
			if hold && !g.heldOnce {
				g.heldOnce = true
				close(g.held)
			}
			g.passed += int64(n)
			g.mu.Unlock()
			if hold {
				<-g.open
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (g *tcpGate) close() {
	g.l.Close()
	g.Release()
	g.mu.Lock()
	for _, c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}
