package transporttest

import (
	"net"
	"net/netip"
	"sync"
	"testing"
)

// NATRelay stands between UDP clients and a server on loopback the way a
// NAT does: each client address gets a socket of its own towards the
// server. Rebind gives every client a new one (NAT rebinding: the server
// sees the client's source port change under the connection); Cut drops
// everything from and to one client address (a path that went silent with
// its link up).
type NATRelay struct {
	conn   *net.UDPConn // where clients send
	server *net.UDPAddr
	wg     sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	clients map[netip.AddrPort]*natMapping
	cut     map[netip.Addr]bool
	closed  bool
}

type natMapping struct {
	client *net.UDPAddr
	up     *net.UDPConn // towards the server
}

// NewNATRelay relays to server until t ends.
func NewNATRelay(t testing.TB, server string) *NATRelay {
	t.Helper()
	sa, err := net.ResolveUDPAddr("udp", server)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r := &NATRelay{conn: c, server: sa, clients: map[netip.AddrPort]*natMapping{}, cut: map[netip.Addr]bool{}}
	r.wg.Go(r.fromClients)
	t.Cleanup(r.Close)
	return r
}

// Addr is where clients send.
func (r *NATRelay) Addr() string { return r.conn.LocalAddr().String() }

// Rebind gives every client a new socket towards the server; the old ones
// close, so the server's datagrams to them are lost.
func (r *NATRelay) Rebind() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.clients {
		up, err := net.DialUDP("udp", nil, r.server)
		if err != nil {
			return err
		}
		old := m.up
		m.up = up
		old.Close()
		r.wg.Go(func() { r.toClient(m, up) })
	}
	return nil
}

// Cut drops (on) or lets through again (off) everything from and to the
// client address ip.
func (r *NATRelay) Cut(ip netip.Addr, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut[ip] = on
}

// Clients counts the client addresses seen.
func (r *NATRelay) Clients() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.clients)
}

func (r *NATRelay) fromClients() {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := r.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		r.mu.Lock()
		if r.closed || r.cut[from.Addr()] {
			r.mu.Unlock()
			continue
		}
		m := r.clients[from]
		if m == nil {
			up, err := net.DialUDP("udp", nil, r.server)
			if err != nil {
				r.mu.Unlock()
				continue
			}
			m = &natMapping{client: net.UDPAddrFromAddrPort(from), up: up}
			r.clients[from] = m
			r.wg.Go(func() { r.toClient(m, up) })
		}
		up := m.up
		r.mu.Unlock()
		up.Write(buf[:n])
	}
}

// toClient relays the server's datagrams on up to the client, until up closes.
func (r *NATRelay) toClient(m *natMapping, up *net.UDPConn) {
	buf := make([]byte, 64<<10)
	ip, _ := netip.AddrFromSlice(m.client.IP)
	ip = ip.Unmap()
	for {
		n, err := up.Read(buf)
		if err != nil {
			return
		}
		r.mu.Lock()
		cut := r.cut[ip]
		r.mu.Unlock()
		if !cut {
			r.conn.WriteToUDP(buf[:n], m.client)
		}
	}
}

// Close stops the relay at once, as a killed process would: its port is
// closed and nobody says goodbye.
func (r *NATRelay) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	for _, m := range r.clients {
		m.up.Close()
	}
	r.mu.Unlock()
	r.conn.Close()
	r.wg.Wait()
}
