// Package netlab is Ferry's network impairment lab: two network namespaces,
// Sender and Receiver, joined by one or more user-space wires. Each wire
// ("path") is a TUN device in each namespace and a forwarder in this process
// that moves IP packets between them through an impairment model (delay,
// jitter, random and bursty loss, a rate-limited bottleneck with a bounded
// queue, reordering, duplication, MTU). Real kernel TCP and real UDP/QUIC
// cross it unchanged, so Ferry and reference tools (iperf3, ssh, rsync) can
// be measured on the same impaired link. The kernel's netem qdisc is not
// needed.
//
// The lab needs Linux and root. Available reports why it cannot run, so
// tests can skip with a clear message.
//
// Addressing: path i (0-based, in Config.Paths order) uses 10.77.(i+1).1 in
// Sender and 10.77.(i+1).2 in Receiver, as point-to-point addresses that only
// exist inside the lab's namespaces. In Sender a socket bound to a path's
// address always leaves through that path, whatever the destination (policy
// routing), which is what connection migration needs; Receiver routes by
// destination, so replies follow the path the peer's address belongs to.
package netlab

import (
	"errors"
	"fmt"
	"net/netip"
)

// Namespace roles, the ns argument of the Lab methods.
const (
	Sender   = "sender"
	Receiver = "receiver"
)

// Config describes a lab. The zero value is one path named "main" with a
// 1500-byte MTU.
type Config struct {
	// Paths are the independent wires between Sender and Receiver.
	Paths []PathConfig
	// Seed seeds the impairment randomness; 0 picks a random seed (see
	// (*Lab).Seed to log it).
	Seed uint64
	// CongestionControl, when set, becomes the default TCP congestion
	// control of both namespaces (net.ipv4.tcp_congestion_control, e.g.
	// "cubic" or "bbr"). "" keeps what new namespaces inherit from the host,
	// which is not necessarily what typical hosts run. The kernel only
	// accepts one listed in the host's net.ipv4.tcp_allowed_congestion_control
	// (New fails with ErrCongestionControlNotAllowed otherwise).
	CongestionControl string
	// RouteCongestionControl, when set, is imposed on every TCP connection
	// across the lab's paths, both ends: the routes carry it (ip route ...
	// congctl), which needs no entry in the host's allowed list (global, and
	// read-only inside a namespace). The kernel applies it when a socket
	// connects or is accepted, over whatever the socket chose before, so
	// it suits labs where no program may choose its own (BBR unavailable);
	// a socket may still change it once connected. It must be loaded (listed
	// in net.ipv4.tcp_available_congestion_control): New fails with
	// ErrCongestionControlNotAllowed otherwise.
	RouteCongestionControl string
	// NamePrefix prefixes the namespace names; "" means "ferrylab". Stale
	// namespaces with this prefix left by dead processes are removed by New.
	NamePrefix string
}

// PathConfig describes one path.
type PathConfig struct {
	// Name identifies the path ("wifi", "cellular"); it must be unique.
	Name string
	// MTU is the interface MTU of both TUN devices; 0 means 1500.
	MTU int
}

// Sentinel errors.
var (
	// ErrUnsupported means the lab cannot run here (not Linux, not root, no
	// /dev/net/tun or no `ip` command); the wrapped text says which.
	ErrUnsupported = errors.New("netlab: unsupported")
	// ErrUnknownPath is returned for a path name not in the Config.
	ErrUnknownPath = errors.New("netlab: unknown path")
	// ErrUnknownNamespace is returned for a namespace other than Sender or Receiver.
	ErrUnknownNamespace = errors.New("netlab: unknown namespace")
	// ErrCongestionControlNotAllowed means Config.CongestionControl is not in
	// the host's net.ipv4.tcp_allowed_congestion_control, which the kernel
	// requires of a namespace's default (root may still pick it per socket),
	// or Config.RouteCongestionControl is not loaded.
	ErrCongestionControlNotAllowed = errors.New("netlab: congestion control not allowed as a namespace default")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("netlab: lab closed")
)

func (c Config) normalized() (Config, error) {
	if len(c.Paths) == 0 {
		c.Paths = []PathConfig{{Name: "main"}}
	}
	if len(c.Paths) > 250 {
		return c, fmt.Errorf("netlab: %d paths, at most 250", len(c.Paths))
	}
	seen := map[string]bool{}
	paths := make([]PathConfig, len(c.Paths))
	for i, p := range c.Paths {
		if p.Name == "" {
			return c, fmt.Errorf("netlab: path %d has no name", i)
		}
		if seen[p.Name] {
			return c, fmt.Errorf("netlab: duplicate path %q", p.Name)
		}
		seen[p.Name] = true
		if p.MTU == 0 {
			p.MTU = 1500
		}
		if p.MTU < 576 || p.MTU > 65535 {
			return c, fmt.Errorf("netlab: path %q MTU %d out of range", p.Name, p.MTU)
		}
		paths[i] = p
	}
	c.Paths = paths
	if c.NamePrefix == "" {
		c.NamePrefix = "ferrylab"
	}
	return c, nil
}

// pathAddr is the address of namespace role ns on path index i.
func pathAddr(ns string, i int) netip.Addr {
	last := byte(1)
	if ns == Receiver {
		last = 2
	}
	return netip.AddrFrom4([4]byte{10, 77, byte(i + 1), last})
}
