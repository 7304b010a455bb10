package localsend

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
)

// ScanConfig configures Scan, LocalSend's fallback for networks where
// multicast does not pass: a register to every host of this device's own
// /24 subnets. Zero values are the defaults given.
type ScanConfig struct {
	// Client sends the registers (required).
	Client *Client
	// Port is the port scanned (0: DefaultPort); Scheme "https" (default) or "http".
	Port   int
	Scheme string
	// Subnets are scanned instead of the own ones (tests; each is cut to
	// at most a /24).
	Subnets []netip.Prefix
	// Parallel bounds the registers in flight (0: 32); PerHost bounds each
	// (0: 1 s); Total bounds the whole scan (0: 30 s).
	Parallel       int
	PerHost, Total time.Duration
	// OnDevice hears each device that answered.
	OnDevice func(Device)
}

// maxScanSubnets bounds the subnets one scan covers (254 hosts each).
const maxScanSubnets = 4

// OwnSubnets are the /24s of this device's IPv4 addresses on interfaces
// that are up (not loopback, not link-local), at most maxScanSubnets.
func OwnSubnets() ([]netip.Prefix, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	seen := map[netip.Prefix]bool{}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipn.IP)
			if !ok || !ip.Unmap().Is4() || ip.IsLinkLocalUnicast() || ip.IsLoopback() {
				continue
			}
			p := subnet24(netip.PrefixFrom(ip.Unmap(), 24))
			if !seen[p] && len(out) < maxScanSubnets {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// subnet24 narrows a prefix to at most a /24 around its address.
func subnet24(p netip.Prefix) netip.Prefix {
	if p.Bits() < 24 {
		p = netip.PrefixFrom(p.Addr(), 24)
	}
	return p.Masked()
}

// Scan registers with every host of the subnets and reports those that
// answer; it returns when every host was tried, Total passed or ctx ended.
// Only IPv4 subnets are scanned.
func Scan(ctx context.Context, cfg ScanConfig) error {
	if cfg.Client == nil {
		return errors.New("localsend scan: no client")
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 32
	}
	if cfg.PerHost <= 0 {
		cfg.PerHost = time.Second
	}
	if cfg.Total <= 0 {
		cfg.Total = 30 * time.Second
	}
	subnets := cfg.Subnets
	if subnets == nil {
		var err error
		if subnets, err = OwnSubnets(); err != nil {
			return err
		}
	}
	if len(subnets) > maxScanSubnets {
		subnets = subnets[:maxScanSubnets]
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Total)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Parallel)
	for _, p := range subnets {
		p = subnet24(p)
		if !p.Addr().Is4() {
			continue
		}
		for a := p.Addr().Next(); p.Contains(a) && gctx.Err() == nil; a = a.Next() {
			if !p.Contains(a.Next()) {
				break // the broadcast address
			}
			g.Go(func() error {
				if gctx.Err() != nil {
					return nil // the scan ended while this host waited for a slot
				}
				hctx, hcancel := context.WithTimeout(gctx, cfg.PerHost)
				defer hcancel()
				t := Target{Addr: net.JoinHostPort(a.String(), strconv.Itoa(cfg.Port)), Scheme: cfg.Scheme}
				// Dialled here, within the host's bound: a dial that
				// http.Transport started would go on after the request
				// ended (it keeps dials for later requests), and hosts
				// that do not answer would pile up beyond Parallel.
				conn, err := cfg.Client.cfg.Dial(hctx, "tcp", t.Addr)
				if err != nil {
					return nil
				}
				t.conn = conn
				in, cert, err := cfg.Client.register(hctx, t)
				conn.Close() // the transport's idle close may not reach a conn it never pooled
				if err != nil || SameFingerprint(in.Fingerprint, cfg.Client.Info().Fingerprint) {
					return nil
				}
				in.Port, in.Protocol = cfg.Port, t.Scheme
				if cfg.OnDevice != nil {
					cfg.OnDevice(Device{Info: in, Addr: a, Verified: cert != nil, KeyHash: KeyHash(cert), Via: "scan", Seen: time.Now()})
				}
				return nil
			})
		}
	}
	_ = g.Wait()
	return nil
}
