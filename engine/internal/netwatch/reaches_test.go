package netwatch

import (
	"net"
	"net/netip"
	"testing"
)

func TestReaches(t *testing.T) {
	cidr := func(s string) net.Addr {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = ip
		return n
	}
	cafe := []net.Addr{cidr("127.0.0.1/8"), cidr("10.0.0.23/24"), cidr("fe80::1/64"), cidr("::1/128"), &net.IPAddr{IP: net.ParseIP("172.16.0.1")}}
	for _, c := range []struct {
		ip    string
		ifs   []net.Addr
		reach bool
	}{
		{"127.0.0.1", nil, true},
		{"::1", nil, true},
		{"10.0.0.99", cafe, true},                                          // this network
		{"10.0.1.99", cafe, false},                                         // a private address beside it
		{"192.168.1.20", cafe, false},                                      // home
		{"172.16.0.1", cafe, false},                                        // an interface address without its prefix says nothing
		{"192.168.1.20", nil, false},                                       // no interface at all
		{"203.0.113.7", cafe, true},                                        // public: routed
		{"2001:db8::7", nil, true},                                         // public IPv6
		{"fd12:3456::7", cafe, false},                                      // unique-local elsewhere
		{"fe80::abcd", cafe, true},                                         // link-local on an interface here
		{"fe80::abcd%eth0", cafe, true},                                    // with its zone
		{"169.254.10.10", cafe, false},                                     // IPv4 link-local, no such interface
		{"::ffff:10.0.0.5", cafe, true},                                    // IPv4-mapped
		{"::ffff:192.168.1.20", cafe, false},                               // IPv4-mapped, elsewhere
		{"192.168.1.20", []net.Addr{cidr("::ffff:192.168.1.1/120")}, true}, // a mapped interface address
	} {
		ip := netip.MustParseAddr(c.ip)
		if got := Reaches(ip, c.ifs); got != c.reach {
			t.Errorf("Reaches(%s) = %v, want %v", c.ip, got, c.reach)
		}
	}
}

// Each address of this machine's interfaces is reached from them, as the
// engine reads them (the IPv4 ones in Go's 16-byte form).
func TestReachesOwnAddresses(t *testing.T) {
	ifaddrs, err := InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ifaddrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, _ := netip.AddrFromSlice(n.IP)
		if !Reaches(ip, ifaddrs) {
			t.Errorf("%s (%s) is not reached from this machine's interfaces", ip, a)
		}
	}
}
