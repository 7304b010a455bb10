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
	wg     sync.WaitGroup

	mu     sync.Mutex              // guards the fields below
	ups    map[string]*net.UDPConn // client address -> socket towards the server
	closed bool
}

// NewLossyRelay relays to server, dropping drop (0..1) of the datagrams
// towards it; it stops when t ends.
func NewLossyRelay(t testing.TB, server string, drop float64) *LossyRelay {
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
	r.wg.Go(r.toServer)
	t.Cleanup(func() {
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
