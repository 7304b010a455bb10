//go:build linux

package netlab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
)

// NATAvailable reports whether a NAT lab can be built here, and if not, why.
func NATAvailable() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: needs root (network namespaces and iptables)", ErrUnsupported)
	}
	for _, c := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("%w: no `%s` command: %v", ErrUnsupported, c, err)
		}
	}
	return nil
}

// NAT is a running NAT lab (see NATConfig). Its methods are safe for
// concurrent use.
type NAT struct {
	spaces
	cfg  NATConfig
	once sync.Once
	cerr error
	// With cfg.Impaired: the forwarders of each link ([0]: a to b, [1]:
	// b to a), their devices, and what stops them.
	links  map[string][2]*link
	devs   []*tunDevice
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var natRoles = []string{HostA, RouterA, Internet, RouterB, HostB}

// NewNAT builds a NAT lab. ctx bounds the setup only; the lab lives until
// Close, which the caller must call. On error everything already created is
// removed.
func NewNAT(ctx context.Context, cfg NATConfig) (*NAT, error) {
	if err := NATAvailable(); err != nil {
		return nil, err
	}
	for _, k := range []NATKind{cfg.A, cfg.B} {
		if k != EndpointIndependent && k != PortRandom {
			return nil, fmt.Errorf("netlab: unknown NAT kind %v", k)
		}
	}
	if cfg.NamePrefix == "" {
		cfg.NamePrefix = "ferrynat"
	}
	sweepStale(ctx, cfg.NamePrefix)
	id := fmt.Sprintf("%s-%d-%d", cfg.NamePrefix, os.Getpid(), labSeq.Add(1))
	n := &NAT{cfg: cfg, spaces: spaces{names: map[string]string{}}}
	for _, r := range natRoles {
		n.names[r] = id + "-" + r
	}
	if err := n.setup(ctx); err != nil {
		n.Close()
		return nil, fmt.Errorf("netlab: NAT setup: %w", err)
	}
	return n, nil
}

// Config is the configuration the lab was built with.
func (n *NAT) Config() NATConfig { return n.cfg }

func (n *NAT) setup(ctx context.Context) error {
	for _, r := range natRoles {
		if err := addNamespace(ctx, n.names[r], func(f func() error) error { return n.Do(r, f) }); err != nil {
			return err
		}
	}
	type wire struct {
		a, aIf, aAddr string
		b, bIf, bAddr string
		link          string // a link NATConfig.Impaired shapes
	}
	wires := []wire{
		{HostA, "lan", natHostAddr[0].String(), RouterA, "lan", natLANGateway[0].String(), ""},
		{HostB, "lan", natHostAddr[1].String(), RouterB, "lan", natLANGateway[1].String(), ""},
		{RouterA, "wan", natWANAddr[0].String(), Internet, "wan-a", natWANGateway[0].String(), NATLinkWANA},
		{RouterB, "wan", natWANAddr[1].String(), Internet, "wan-b", natWANGateway[1].String(), NATLinkWANB},
	}
	if n.cfg.SharedLAN {
		wires = append(wires, wire{HostA, "shared", natSharedLAN[0].String(), HostB, "shared", natSharedLAN[1].String(), NATLinkShared})
	}
	runCtx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	for _, w := range wires {
		if n.cfg.Impaired && w.link != "" {
			if err := n.tunWire(ctx, runCtx, w.link, [2][3]string{{w.a, w.aIf, w.aAddr}, {w.b, w.bIf, w.bAddr}}); err != nil {
				return err
			}
			continue
		}
		if err := ipCmd(ctx, "-n", n.names[w.a], "link", "add", w.aIf, "type", "veth", "peer", "name", w.bIf, "netns", n.names[w.b]); err != nil {
			return err
		}
		for _, end := range [][3]string{{w.a, w.aIf, w.aAddr}, {w.b, w.bIf, w.bAddr}} {
			if err := ipCmd(ctx, "-n", n.names[end[0]], "addr", "add", end[2]+"/24", "dev", end[1]); err != nil {
				return err
			}
			if err := ipCmd(ctx, "-n", n.names[end[0]], "link", "set", end[1], "up"); err != nil {
				return err
			}
		}
	}
	for _, a := range natServers {
		if err := ipCmd(ctx, "-n", n.names[Internet], "addr", "add", a.String()+"/32", "dev", "lo"); err != nil {
			return err
		}
	}
	// Packets for private addresses must vanish on the Internet without
	// an error for the sender, as they do somewhere upstream on the real
	// one (coturn, for one, stops relaying on a socket whose send failed
	// with "network unreachable"): the Internet's default route leads to
	// RouterA, whose firewall drops what answers nothing.
	if err := ipCmd(ctx, "-n", n.names[Internet], "route", "add", "default", "via", natWANAddr[0].String()); err != nil {
		return err
	}
	for side, host := range []string{HostA, HostB} {
		if err := ipCmd(ctx, "-n", n.names[host], "route", "add", "default", "via", natLANGateway[side].String()); err != nil {
			return err
		}
	}
	for side, router := range []string{RouterA, RouterB} {
		if err := ipCmd(ctx, "-n", n.names[router], "route", "add", "default", "via", natWANGateway[side].String()); err != nil {
			return err
		}
		kind := n.cfg.A
		if side == 1 {
			kind = n.cfg.B
		}
		masq := []string{"-t", "nat", "-A", "POSTROUTING", "-o", "wan", "-j", "MASQUERADE"}
		if kind == PortRandom {
			masq = append(masq, "--random-fully")
		}
		rules := [][]string{
			masq,
			// A home router: inward only what answers a mapping.
			{"-A", "FORWARD", "-i", "wan", "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"},
			{"-A", "FORWARD", "-i", "wan", "-j", "DROP"},
			// Nor to itself. This also keeps an early punch from the peer
			// (which arrives before this side has written to the peer)
			// from leaving a conntrack entry that holds the very tuple the
			// host's own packet to the peer is about to be mapped to: the
			// NAT would then pick another port and hole punching would
			// fail. A dropped packet's entry is never confirmed.
			{"-A", "INPUT", "-i", "wan", "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"},
			{"-A", "INPUT", "-i", "wan", "-j", "DROP"},
		}
		for _, r := range rules {
			if err := n.iptables(ctx, router, r...); err != nil {
				return err
			}
		}
	}
	for _, r := range []string{RouterA, RouterB, Internet} {
		if err := n.Do(r, func() error {
			return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0)
		}); err != nil {
			return fmt.Errorf("ip_forward in %s: %w", r, err)
		}
	}
	return nil
}

// tunWire joins two namespaces by a TUN device in each, point to point,
// and two forwarders (a to b, b to a) through the impairment model.
func (n *NAT) tunWire(ctx, runCtx context.Context, name string, ends [2][3]string) error {
	var devs [2]*tunDevice
	for i, end := range ends {
		role, ifname, local := end[0], end[1], end[2]
		peer := ends[1-i][2]
		if err := n.Do(role, func() error {
			var err error
			devs[i], err = openTUN(ifname)
			return err
		}); err != nil {
			return fmt.Errorf("tun %s in %s: %w", ifname, role, err)
		}
		n.devs = append(n.devs, devs[i])
		if err := ipCmd(ctx, "-n", n.names[role], "addr", "add", local, "peer", peer+"/32", "dev", ifname); err != nil {
			return err
		}
		if err := ipCmd(ctx, "-n", n.names[role], "link", "set", ifname, "mtu", "1500", "txqueuelen", "1000", "up"); err != nil {
			return err
		}
	}
	if n.links == nil {
		n.links = map[string][2]*link{}
	}
	seed := rand.Uint64()
	ab, ba := newLink(devs[0], devs[1], 1500+64, seed), newLink(devs[1], devs[0], 1500+64, seed+1)
	n.links[name] = [2]*link{ab, ba}
	for _, ln := range []*link{ab, ba} {
		n.wg.Add(2)
		go func() { defer n.wg.Done(); _ = ln.readLoop() }()
		go func() { defer n.wg.Done(); _ = ln.writeLoop(runCtx) }()
	}
	return nil
}

// SetImpairment replaces the impairment of both directions of one of the
// links NATConfig.Impaired puts through a forwarder (NATLinkWANA,
// NATLinkWANB, NATLinkShared).
func (n *NAT) SetImpairment(name string, im Impairment) error {
	if err := im.Validate(); err != nil {
		return err
	}
	ls, ok := n.links[name]
	if !ok {
		return fmt.Errorf("netlab: the NAT lab has no impaired link %q (NATConfig.Impaired)", name)
	}
	for _, ln := range ls {
		ln.setImpairment(im)
	}
	return nil
}

func (n *NAT) iptables(ctx context.Context, role string, args ...string) error {
	out, err := n.Command(ctx, role, "iptables", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %v in %s: %w: %s", args, role, err, out)
	}
	return nil
}

// SetSharedLAN takes the hosts' shared link down (both ends, as when a
// laptop leaves the house) or brings it back up. Sockets bound to the shared
// address stay open; their packets go nowhere.
func (n *NAT) SetSharedLAN(ctx context.Context, up bool) error {
	if !n.cfg.SharedLAN {
		return errors.New("netlab: the NAT lab has no shared LAN")
	}
	state := "down"
	if up {
		state = "up"
	}
	for _, h := range []string{HostA, HostB} {
		if err := ipCmd(ctx, "-n", n.names[h], "link", "set", "shared", state); err != nil {
			return err
		}
	}
	return nil
}

// Close kills processes left in the lab's namespaces and deletes them (the
// veth pairs go with them). It is idempotent and safe on a half-built lab.
func (n *NAT) Close() error {
	n.once.Do(func() {
		n.closed.Store(true)
		if n.cancel != nil {
			n.cancel()
		}
		for _, d := range n.devs {
			d.close()
		}
		n.wg.Wait()
		var errs []error
		for _, r := range natRoles {
			errs = append(errs, removeNamespace(context.Background(), n.names[r]))
		}
		if err := errors.Join(errs...); err != nil {
			n.cerr = fmt.Errorf("netlab: close: %w", err)
		}
	})
	return n.cerr
}
