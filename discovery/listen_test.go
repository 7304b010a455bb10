package discovery

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/addr"
)

// A device is advertised only at the addresses its listeners take
// connections on: one listening on 127.0.0.1 alone advertised its LAN
// addresses with that port, where nothing answered.
func TestReachedAt(t *testing.T) {
	ips := []string{"192.0.2.2", "10.1.2.3", "2001:db8::5", "fe80::1"}
	both := func(host string) []addr.Addr {
		return []addr.Addr{addr.New(addr.QUIC, net.JoinHostPort(host, "47800")), addr.New(addr.TCP, net.JoinHostPort(host, "47800"))}
	}
	cases := []struct {
		name  string
		addrs []addr.Addr
		want  []string
	}{
		{"every address", both("::"), ips},
		{"no host", []addr.Addr{addr.New(addr.QUIC, ":47800")}, ips},
		{"every IPv4 address", both("0.0.0.0"), []string{"192.0.2.2", "10.1.2.3"}},
		{"loopback alone", both("127.0.0.1"), nil},
		{"IPv6 loopback alone", both("::1"), nil},
		{"one LAN address", both("10.1.2.3"), []string{"10.1.2.3"}},
		{"one IPv6 address", both("2001:db8::5"), []string{"2001:db8::5"}},
		{"link-local with its zone", both("fe80::1%eth0"), []string{"fe80::1"}},
		{"QUIC on one, TCP on every", []addr.Addr{addr.New(addr.QUIC, "10.1.2.3:1"), addr.New(addr.TCP, "[::]:2")}, ips},
		{"QUIC on one, TCP on another", []addr.Addr{addr.New(addr.QUIC, "10.1.2.3:1"), addr.New(addr.TCP, "192.0.2.2:2")}, []string{"192.0.2.2", "10.1.2.3"}},
		{"a host name", both("pc.local"), ips},
		{"not a listener kind", []addr.Addr{addr.New(addr.QUIC, "[::]:1"), addr.NewRendezvous("127.0.0.1:9")}, ips},
	}
	for _, c := range cases {
		got := Service{Addrs: c.addrs}.reachedAt(ips)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: advertised at %v, want %v", c.name, got, c.want)
		}
	}
}

// ipsOn, on this machine's interfaces (read, nothing sent): a loopback
// listener is advertised nowhere, and says why.
func TestIPsOnSaysWhyALoopbackListenerIsNotAdvertised(t *testing.T) {
	ifaces, err := multicastInterfaces(net.Interfaces)
	if err != nil || len(advertisedIPs(ifaces)) == 0 {
		t.Skipf("no multicast interface with an address here (%v)", err)
	}
	all, err := Service{Addrs: listeners(47800, 47800)}.ipsOn(ifaces)
	if err != nil || len(all) == 0 {
		t.Fatalf("a listener on every address: %v, %v", all, err)
	}
	ips, err := Service{Addrs: []addr.Addr{addr.New(addr.QUIC, "127.0.0.1:47800"), addr.New(addr.TCP, "127.0.0.1:47800")}}.ipsOn(ifaces)
	if !errors.Is(err, ErrNotListening) || len(ips) != 0 {
		t.Fatalf("a listener on 127.0.0.1: %v, %v", ips, err)
	}
	if want := "listening on 127.0.0.1 alone"; !strings.Contains(err.Error(), want) {
		t.Errorf("%q does not say %q", err, want)
	}
	one, err := Service{Addrs: []addr.Addr{addr.New(addr.TCP, net.JoinHostPort(all[0], "47800"))}}.ipsOn(ifaces)
	if err != nil || !slices.Equal(one, all[:1]) {
		t.Errorf("a listener on %s: %v, %v", all[0], one, err)
	}
}
