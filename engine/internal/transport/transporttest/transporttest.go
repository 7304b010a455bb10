// Package transporttest holds what the transport packages' tests share:
// identities, the goroutine leak check (package testutil's), a lossy UDP
// relay. Only tests import it.
package transporttest

import (
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// Identity returns a new device identity in a temp folder.
func Identity(t testing.TB) *identity.Identity {
	t.Helper()
	id, err := identity.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Main runs a package's tests with the goroutine leak check
// (testutil.Main).
func Main(m *testing.M) { testutil.Main(m) }

// HasBBR reports whether the kernel offers BBR to this process's TCP sockets.
func HasBBR() bool {
	b, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	return strings.Contains(string(b), "bbr")
}

// LossyRelay forwards UDP datagrams between clients and a server on
// loopback, dropping a share of those going to the server: enough loss for
// congestion events without the (root-only) network lab. Each client
// address gets a socket of its own towards the server, as a NAT would give
// it, so a session of several QUIC connections crosses it too.
type LossyRelay struct {
	conn   *net.UDPConn
	server *net.UDPAddr
	drop   float64
	delay  time.Duration // added to each datagram towards the server
	late   chan delayed  // datagrams waiting out the delay, in order
	done   chan struct{} // closed when the relay closes
	wg     sync.WaitGroup

	mu     sync.Mutex              // guards the fields below
	ups    map[string]*net.UDPConn // client address -> socket towards the server
	closed bool
}

// NewLossyRelay relays to server, dropping drop (0..1) of the datagrams
// towards it; it stops when t ends.
func NewLossyRelay(t testing.TB, server string, drop float64) *LossyRelay {
	t.Helper()
	return newRelay(t, server, drop, 0)
}

func newRelay(t testing.TB, server string, drop float64, delay time.Duration) *LossyRelay {
	t.Helper()
	sa, err := net.ResolveUDPAddr("udp", server)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r := &LossyRelay{conn: c, server: sa, drop: drop, ups: map[string]*net.UDPConn{}}
	if delay > 0 {
		r.delay, r.late, r.done = delay, make(chan delayed, 1<<12), make(chan struct{})
		r.wg.Go(r.sendLate)
	}
	r.wg.Go(r.toServer)
	t.Cleanup(func() {
		if r.done != nil {
			close(r.done)
		}
		c.Close()
		r.mu.Lock()
		r.closed = true
		for _, up := range r.ups {
			up.Close()
		}
		r.mu.Unlock()
		r.wg.Wait()
	})
	return r
}

// NewDelayRelay relays to server, each datagram towards it delay late: a
// path of an RTT of delay that a TCP dial on loopback beside it does not
// share. It stops when t ends.
func NewDelayRelay(t testing.TB, server string, delay time.Duration) *LossyRelay {
	t.Helper()
	return newRelay(t, server, 0, delay)
}

// delayed is a datagram and when it may go on.
type delayed struct {
	up  *net.UDPConn
	b   []byte
	due time.Time
}

// sendLate writes each delayed datagram when its delay is over, in order.
func (r *LossyRelay) sendLate() {
	for {
		select {
		case <-r.done:
			return
		case d := <-r.late:
			time.Sleep(time.Until(d.due))
			d.up.Write(d.b)
		}
	}
}

// Addr is where clients send.
func (r *LossyRelay) Addr() string { return r.conn.LocalAddr().String() }

func (r *LossyRelay) toServer() {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := r.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		up := r.upFor(from)
		if up == nil {
			return
		}
		if rand.Float64() < r.drop {
			continue
		}
		if r.late != nil {
			select {
			case r.late <- delayed{up, append([]byte(nil), buf[:n]...), time.Now().Add(r.delay)}:
			case <-r.done:
				return
			}
			continue
		}
		up.Write(buf[:n])
	}
}

// upFor returns the socket towards the server for client, opening it (and
// its way back) on first use; nil once the relay closed.
func (r *LossyRelay) upFor(client *net.UDPAddr) *net.UDPConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	if up, ok := r.ups[client.String()]; ok {
		return up
	}
	up, err := net.DialUDP("udp", nil, r.server)
	if err != nil {
		return nil
	}
	r.ups[client.String()] = up
	r.wg.Go(func() { r.toClient(up, client) })
	return up
}

func (r *LossyRelay) toClient(up *net.UDPConn, client *net.UDPAddr) {
	buf := make([]byte, 64<<10)
	for {
		n, err := up.Read(buf)
		if err != nil {
			return
		}
		r.conn.WriteToUDP(buf[:n], client)
	}
}

// LoopbackSource returns 127.0.0.n, an address a test may dial from to
// stand for another host (Linux routes all of 127/8 to loopback). It skips
// the test where the address cannot be bound (macOS has only 127.0.0.1).
func LoopbackSource(t testing.TB, n int) net.IP {
	t.Helper()
	ip := net.IPv4(127, 0, byte(n>>8), byte(n))
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		t.Skipf("cannot use %v as a second loopback host: %v", ip, err)
	}
	c.Close()
	return ip
}
