package weblink

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
)

// limitListener bounds the connections a server holds open, in all and per
// client address. A connection over either bound is closed as soon as it is
// accepted, and the listener goes on accepting: a flood from one address
// never keeps another device out (golang.org/x/net/netutil's LimitListener
// bounds the total only, and by blocking Accept, which lets one address
// starve everyone).
type limitListener struct {
	net.Listener
	max, perAddr int

	mu     sync.Mutex // guards the fields below
	total  int
	byAddr map[netip.Addr]int
}

func newLimitListener(ln net.Listener, max, perAddr int) *limitListener {
	return &limitListener{Listener: ln, max: max, perAddr: perAddr, byAddr: map[netip.Addr]int{}}
}

// Accept returns the next connection within the bounds.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := connAddr(c)
		l.mu.Lock()
		ok := l.total < l.max && l.byAddr[addr] < l.perAddr
		if ok {
			l.total++
			l.byAddr[addr]++
		}
		l.mu.Unlock()
		if !ok {
			c.Close()
			continue
		}
		return &limitConn{Conn: c, l: l, addr: addr}, nil
	}
}

// open reports the connections held open: in all, and from addr.
func (l *limitListener) open(addr netip.Addr) (total, fromAddr int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.byAddr[addr]
}

func (l *limitListener) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.byAddr[addr]--; l.byAddr[addr] <= 0 {
		delete(l.byAddr, addr)
	}
}

// limitConn gives its place back once, on its first Close.
type limitConn struct {
	net.Conn
	l    *limitListener
	addr netip.Addr
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.addr) })
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// ReadFrom keeps the connection's own ReadFrom reachable through the
// wrapper, so net/http can send a file with sendfile (splice) rather than
// copying it through user space.
func (c *limitConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c.Conn}, r)
}

// connAddr is a connection's remote IP address (the zero Addr when it has
// none, which then shares one count).
func connAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return ip.Unmap()
		}
	}
	return netip.Addr{}
}
