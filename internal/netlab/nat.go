package netlab

import (
	"fmt"
	"net/netip"
)

// The NAT lab: two private networks, each behind its own NAT router, and an
// "internet" between the routers where rendezvous, STUN and relay servers
// run. Five namespaces joined by veth pairs (no impairment):
//
//	HostA 192.168.1.2 -- 192.168.1.1 RouterA 7.0.1.2 --+
//	                                                    7.0.1.1 Internet 7.0.0.1, 7.0.0.2
//	HostB 192.168.2.2 -- 192.168.2.1 RouterB 7.0.2.2 --+ 7.0.2.1
//
// The "public" addresses (7.0.0.0/16) exist only inside the lab; they are
// ordinary unicast addresses on purpose, because NAT-traversal engines
// ignore addresses they know to be private or documentation-only (libp2p's
// manet treats 198.51.100.0/24 and 203.0.113.0/24 as unroutable). Each router
// masquerades what leaves its WAN side and, like a home router, forwards
// nothing inward that is not a reply to a mapping (conntrack's
// address-and-port-dependent filtering). With NATConfig.SharedLAN the two
// hosts also share a direct link, 10.99.0.1 and 10.99.0.2: the LAN a
// transfer starts on before one side leaves it.

// NAT lab roles, the ns argument of the NAT lab's methods.
const (
	HostA    = "host-a"
	RouterA  = "router-a"
	Internet = "internet"
	RouterB  = "router-b"
	HostB    = "host-b"
)

// NATKind is how a router maps private endpoints to public ones.
type NATKind int

const (
	// EndpointIndependent is plain iptables MASQUERADE: one private
	// address:port keeps one public port whatever the destination, and the
	// port is the private one when it is free. Hole punching works through
	// it (RFC 4787 "endpoint-independent mapping").
	EndpointIndependent NATKind = iota
	// PortRandom is MASQUERADE --random-fully: every new destination gets a
	// fresh random public port ("address-and-port-dependent mapping", the
	// "symmetric NAT" of RFC 3489). A port learned through one server says
	// nothing about the port towards a peer, so hole punching fails and
	// only a relay connects.
	PortRandom
)

// String names the kind as the docs do.
func (k NATKind) String() string {
	switch k {
	case EndpointIndependent:
		return "endpoint-independent"
	case PortRandom:
		return "port-random"
	}
	return fmt.Sprintf("NATKind(%d)", int(k))
}

// NATConfig describes a NAT lab. The zero value is two endpoint-independent
// NATs and no shared LAN.
type NATConfig struct {
	// A and B are the NAT behaviours of RouterA and RouterB.
	A, B NATKind
	// SharedLAN adds a direct link between HostA and HostB.
	SharedLAN bool
	// Impaired makes the WAN links (NATLinkWANA, NATLinkWANB) and the
	// shared LAN (NATLinkShared) TUN wires through this process's
	// forwarders instead of veth pairs, so that (*NAT).SetImpairment can
	// delay, shape or drop what crosses them (this kernel has no netem).
	// It costs a user-space hop per link.
	Impaired bool
	// NamePrefix prefixes the namespace names; "" means "ferrynat". Stale
	// namespaces with this prefix left by dead processes are removed.
	NamePrefix string
}

// The NAT lab's links that NATConfig.Impaired puts through a forwarder.
const (
	NATLinkWANA   = "wan-a"  // RouterA -- Internet
	NATLinkWANB   = "wan-b"  // RouterB -- Internet
	NATLinkShared = "shared" // HostA -- HostB (NATConfig.SharedLAN)
)

// The NAT lab's addresses, fixed: the namespaces are the lab's own.
var (
	natHostAddr   = [2]netip.Addr{netip.MustParseAddr("192.168.1.2"), netip.MustParseAddr("192.168.2.2")}
	natLANGateway = [2]netip.Addr{netip.MustParseAddr("192.168.1.1"), netip.MustParseAddr("192.168.2.1")}
	natWANAddr    = [2]netip.Addr{netip.MustParseAddr("7.0.1.2"), netip.MustParseAddr("7.0.2.2")}
	natWANGateway = [2]netip.Addr{netip.MustParseAddr("7.0.1.1"), netip.MustParseAddr("7.0.2.1")}
	natServers    = []netip.Addr{netip.MustParseAddr("7.0.0.1"), netip.MustParseAddr("7.0.0.2")}
	natSharedLAN  = [2]netip.Addr{netip.MustParseAddr("10.99.0.1"), netip.MustParseAddr("10.99.0.2")}
)

// natSide is 0 for the A roles, 1 for the B roles, -1 for Internet.
func natSide(role string) int {
	switch role {
	case HostA, RouterA:
		return 0
	case HostB, RouterB:
		return 1
	}
	return -1
}

// NATAddr is the address a role is known by: a host's private address, a
// router's public (WAN) address, the Internet's first server address.
func NATAddr(role string) (netip.Addr, error) {
	switch role {
	case HostA, HostB:
		return natHostAddr[natSide(role)], nil
	case RouterA, RouterB:
		return natWANAddr[natSide(role)], nil
	case Internet:
		return natServers[0], nil
	}
	return netip.Addr{}, fmt.Errorf("%w: %q", ErrUnknownNamespace, role)
}

// NATServerAddrs are the Internet's server addresses (two, for STUN servers
// that compare answers from two addresses, RFC 5780).
func NATServerAddrs() []netip.Addr { return append([]netip.Addr(nil), natServers...) }

// NATSharedLANAddr is a host's address on the shared LAN (NATConfig.SharedLAN).
func NATSharedLANAddr(role string) (netip.Addr, error) {
	if s := natSide(role); s >= 0 && (role == HostA || role == HostB) {
		return natSharedLAN[s], nil
	}
	return netip.Addr{}, fmt.Errorf("%w: %q has no shared LAN address", ErrUnknownNamespace, role)
}
