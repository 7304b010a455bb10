//go:build linux

package netlab

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// newNAT builds a NAT lab for one test and removes it when the test ends, or
// skips the test when the lab cannot run here.
func newNAT(t testing.TB, cfg NATConfig) *NAT {
	t.Helper()
	if err := NATAvailable(); err != nil {
		t.Skipf("skipping NAT lab test: %v (run the tests as root on Linux with iproute2 and iptables)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lab, err := NewNAT(ctx, cfg)
	if err != nil {
		t.Fatalf("netlab.NewNAT: %v", err)
	}
	t.Cleanup(func() {
		if err := lab.Close(); err != nil {
			t.Errorf("lab.Close: %v", err)
		}
	})
	return lab
}

// reflector is a UDP socket in the Internet namespace that answers every
// datagram with the source address it saw (what a STUN server does).
func reflector(t testing.TB, lab *NAT, addr netip.Addr) *net.UDPConn {
	t.Helper()
	c, err := lab.ListenUDP(Internet, netip.AddrPortFrom(addr, 0))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { c.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 64)
		for {
			_, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			_, _ = c.WriteToUDPAddrPort([]byte(from.String()), from)
		}
	}()
	return c
}

func udpIn(t testing.TB, lab *NAT, role string) *net.UDPConn {
	t.Helper()
	a, err := NATAddr(role)
	if err != nil {
		t.Fatal(err)
	}
	c, err := lab.ListenUDP(role, netip.AddrPortFrom(a, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func localPort(c *net.UDPConn) uint16 { return c.LocalAddr().(*net.UDPAddr).AddrPort().Port() }

func serverAddr(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// mapped asks a reflector which public address c's datagrams come from.
func mapped(t testing.TB, c *net.UDPConn, refl netip.AddrPort) netip.AddrPort {
	t.Helper()
	buf := make([]byte, 64)
	if _, err := c.WriteToUDPAddrPort([]byte("?"), refl); err != nil {
		t.Fatalf("to reflector %v: %v", refl, err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("from reflector %v: %v", refl, err)
		}
		if from != refl {
			continue
		}
		ap, err := netip.ParseAddrPort(string(buf[:n]))
		if err != nil {
			t.Fatalf("reflector answered %q: %v", buf[:n], err)
		}
		return ap
	}
}

// TestNATMapping: behind the endpoint-independent NAT a socket keeps its
// port towards every destination; behind the port-random one it gets a
// different port per destination; neither forwards a datagram from a
// server the host never wrote to, and private addresses are not routed.
func TestNATMapping(t *testing.T) {
	lab := newNAT(t, NATConfig{A: EndpointIndependent, B: PortRandom})
	srv := NATServerAddrs()
	refl := []*net.UDPConn{reflector(t, lab, srv[0]), reflector(t, lab, srv[1]), reflector(t, lab, srv[0])}
	wanA, _ := NATAddr(RouterA)
	wanB, _ := NATAddr(RouterB)

	a := udpIn(t, lab, HostA)
	for _, r := range refl {
		m := mapped(t, a, serverAddr(r))
		if m.Addr() != wanA || m.Port() != localPort(a) {
			t.Errorf("endpoint-independent NAT: towards %v the host's :%d is %v, want %v:%d", serverAddr(r), localPort(a), m, wanA, localPort(a))
		}
	}

	b := udpIn(t, lab, HostB)
	ports := map[uint16]bool{}
	for _, r := range refl {
		m := mapped(t, b, serverAddr(r))
		if m.Addr() != wanB {
			t.Errorf("port-random NAT: towards %v the host is %v, want address %v", serverAddr(r), m, wanB)
		}
		ports[m.Port()] = true
	}
	if len(ports) == 1 {
		t.Errorf("port-random NAT: one public port %v towards three destinations, want one per destination", ports)
	}
	if len(ports) == 1 && ports[localPort(b)] {
		t.Errorf("port-random NAT kept the private port %d", localPort(b))
	}

	// Filtering and routing: a stranger (a port A never wrote to) writes
	// to A's mapping, the Internet writes to A's private address, then
	// refl[0], which A wrote to, writes. All cross the same links in
	// order, so if either of the first two were let in it would arrive
	// first.
	mA := netip.AddrPortFrom(wanA, localPort(a))
	stranger, err := lab.ListenUDP(Internet, netip.AddrPortFrom(srv[1], 0))
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	if _, err := stranger.WriteToUDPAddrPort([]byte("uninvited"), mA); err != nil {
		t.Fatal(err)
	}
	hostA, _ := NATAddr(HostA)
	if _, err := refl[0].WriteToUDPAddrPort([]byte("private"), netip.AddrPortFrom(hostA, localPort(a))); err != nil {
		t.Fatalf("the Internet writing to a private address: %v, want it sent (and lost)", err)
	}
	if _, err := refl[0].WriteToUDPAddrPort([]byte("reply"), mA); err != nil {
		t.Fatal(err)
	}
	a.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, from, err := a.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != "reply" || from != serverAddr(refl[0]) {
		t.Errorf("host A first received %q from %v, want the reply from %v (the uninvited and the private datagram must be lost)", buf[:n], from, serverAddr(refl[0]))
	}
}

// punch has both hosts write to the other's public address (as a reflector
// saw it) every 20 ms until each heard the other or d passes; it reports
// what each heard from.
func punch(t *testing.T, a, b *net.UDPConn, pubA, pubB netip.AddrPort, d time.Duration) (fromA, fromB netip.AddrPort) {
	t.Helper()
	type heard struct {
		who  int
		from netip.AddrPort
	}
	got := make(chan heard, 2)
	deadline := time.Now().Add(d)
	for i, c := range []*net.UDPConn{a, b} {
		go func() {
			c.SetReadDeadline(deadline)
			buf := make([]byte, 64)
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil || string(buf[:n]) != "punch" {
				from = netip.AddrPort{}
			}
			got <- heard{i, from}
		}()
	}
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			_, _ = a.WriteToUDPAddrPort([]byte("punch"), pubB)
			_, _ = b.WriteToUDPAddrPort([]byte("punch"), pubA)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var res [2]netip.AddrPort
	for range 2 {
		h := <-got
		res[h.who] = h.from
	}
	close(stop)
	<-sent
	return res[1], res[0] // b heard from A, a heard from B
}

// TestNATHolePunch: two hosts that learnt their public addresses from a
// reflector reach each other directly when both NATs are
// endpoint-independent, and do not when one randomises its ports. The
// shared LAN, when configured, joins the hosts directly until it is taken
// down.
func TestNATHolePunch(t *testing.T) {
	cases := []struct {
		name  string
		cfg   NATConfig
		works bool
	}{
		{"both endpoint-independent", NATConfig{SharedLAN: true}, true},
		{"one port-random", NATConfig{B: PortRandom}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lab := newNAT(t, c.cfg)
			refl := serverAddr(reflector(t, lab, NATServerAddrs()[0]))
			a, b := udpIn(t, lab, HostA), udpIn(t, lab, HostB)
			pubA, pubB := mapped(t, a, refl), mapped(t, b, refl)
			wait := 5 * time.Second
			if !c.works {
				wait = time.Second // bounded: the failure is the absence of packets
			}
			fromA, fromB := punch(t, a, b, pubA, pubB, wait)
			if c.works && (fromA != pubA || fromB != pubB) {
				t.Fatalf("hole punching: B heard from %v (want %v), A heard from %v (want %v)", fromA, pubA, fromB, pubB)
			}
			if !c.works && (fromA.IsValid() || fromB.IsValid()) {
				t.Fatalf("hole punching through a port-random NAT: B heard from %v, A heard from %v; want nothing", fromA, fromB)
			}
			if !c.cfg.SharedLAN {
				return
			}
			checkSharedLAN(t, lab, b)
		})
	}
}

// checkSharedLAN: host A reaches B's shared-LAN address while the link is
// up, and cannot once it is down.
func checkSharedLAN(t *testing.T, lab *NAT, b *net.UDPConn) {
	t.Helper()
	la, _ := NATSharedLANAddr(HostA)
	lb, _ := NATSharedLANAddr(HostB)
	onLAN, err := lab.ListenUDP(HostA, netip.AddrPortFrom(la, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer onLAN.Close()
	// b is bound to B's private address: write to a socket on the shared one.
	lanB, err := lab.ListenUDP(HostB, netip.AddrPortFrom(lb, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer lanB.Close()
	if _, err := onLAN.WriteToUDPAddrPort([]byte("hi"), serverAddr(lanB)); err != nil {
		t.Fatal(err)
	}
	lanB.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 8)
	if _, from, err := lanB.ReadFromUDPAddrPort(buf); err != nil || from != serverAddr(onLAN) {
		t.Fatalf("over the shared LAN: from %v, %v; want from %v", from, err, serverAddr(onLAN))
	}
	if err := lab.SetSharedLAN(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	// The kernel's own answer: B's shared address now routes through the
	// router, which cannot reach a private network.
	out, err := lab.Command(context.Background(), HostA, "ip", "route", "get", lb.String()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "dev lan") {
		t.Errorf("with the shared LAN down, the route to %v: %s (%v), want via dev lan", lb, out, err)
	}
}

// TestNATImpaired: with NATConfig.Impaired the WAN links delay what
// crosses them (a round trip from HostA to a server crosses wan-a twice),
// the NAT still maps, and a link that is not impaired is refused.
func TestNATImpaired(t *testing.T) {
	lab := newNAT(t, NATConfig{Impaired: true, SharedLAN: true})
	refl := serverAddr(reflector(t, lab, natServers[0]))
	c := udpIn(t, lab, HostA)
	if got := mapped(t, c, refl); got.Addr() != natWANAddr[0] {
		t.Fatalf("mapped to %v, want RouterA's %v", got, natWANAddr[0])
	}
	rtt := func() time.Duration {
		start := time.Now()
		mapped(t, c, refl)
		return time.Since(start)
	}
	if d := rtt(); d > 15*time.Millisecond {
		t.Logf("round trip without delay: %v (a loaded machine)", d)
	}
	if err := lab.SetImpairment(NATLinkWANA, Impairment{Delay: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if d := rtt(); d < 40*time.Millisecond {
		t.Errorf("round trip over wan-a delayed 20 ms each way: %v, want at least 40 ms", d)
	}
	if err := lab.SetImpairment("lan", Impairment{}); err == nil {
		t.Error("a veth link took an impairment")
	}
	if err := lab.SetSharedLAN(t.Context(), false); err != nil {
		t.Fatal(err)
	}
}
