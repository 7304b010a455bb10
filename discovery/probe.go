package discovery

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
)

const (
	maxProbeAddrs  = 4 // addresses tried per remembered peer and round
	probeParallel  = 4 // peers probed at once
	probeTTLFactor = 3 // a probed peer stays this many probe intervals
	maxManual      = 64
)

type probeTarget struct {
	id, name string
	addrs    []string
	source   Source
}

// probeLoop probes remembered and manual peers that mDNS does not see,
// immediately and then every ProbeInterval.
func (d *Discovery) probeLoop(ctx context.Context) {
	if d.opts.Prober == nil {
		return
	}
	t, tick := d.opts.Clock.NewTicker(d.opts.ProbeInterval)
	defer t.Stop()
	for {
		d.probeRound(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

func (d *Discovery) probeTargets() []probeTarget {
	var targets []probeTarget
	seen := map[string]bool{}
	if d.opts.Remembered != nil {
		for _, r := range d.opts.Remembered() {
			id, err := normalizeID(r.ID)
			if err != nil || id == d.opts.SelfID || seen[id] || len(r.Addrs) == 0 {
				continue
			}
			seen[id] = true
			targets = append(targets, probeTarget{id: id, name: r.Name, addrs: r.Addrs, source: SourceRemembered})
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, addr := range d.manual {
		if !seen[id] {
			targets = append(targets, probeTarget{id: id, addrs: []string{addr}, source: SourceManual})
		}
	}
	now := d.opts.Now()
	// Skip peers mDNS currently sees: they need no probing.
	out := targets[:0]
	for _, tg := range targets {
		if e, ok := d.peers[tg.id]; ok && e.peer.Source == SourceMDNS && now.Before(e.expires) {
			continue
		}
		out = append(out, tg)
	}
	return out
}

func (d *Discovery) probeRound(ctx context.Context) {
	began := d.opts.Now()
	targets := d.probeTargets()
	sem := make(chan struct{}, probeParallel)
	var wg sync.WaitGroup
	for _, tg := range targets {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			d.probeTarget(ctx, tg)
		}()
	}
	wg.Wait()
	if ctx.Err() == nil {
		d.probeRoundDone(began)
	}
}

func (d *Discovery) probeTarget(ctx context.Context, tg probeTarget) {
	for i, addr := range tg.addrs {
		if i >= maxProbeAddrs {
			return
		}
		p, err := d.probe(ctx, addr, tg.source)
		if err != nil {
			d.logf("discovery: probe %s (%s): %v", addr, shortID(tg.id), err)
			continue
		}
		if p.ID != tg.id {
			// Someone else lives at this address now (DHCP moved it): not an attack.
			d.logf("discovery: %s answered as %s, not %s", addr, shortID(p.ID), shortID(tg.id))
			continue
		}
		if p.Name == "" {
			p.Name, _ = cleanNameUpTo(tg.name, maxProbedNameLen) // the name it was remembered by
		}
		d.mu.Lock()
		d.observe(p, probeTTLFactor*d.opts.ProbeInterval)
		d.mu.Unlock()
		return
	}
}

// probe runs the Prober against addr and turns its answer into a Peer.
func (d *Discovery) probe(ctx context.Context, addr string, src Source) (Peer, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return Peer{}, fmt.Errorf("probe %q: %w", addr, err)
	}
	_, port, err := hostPort(net.JoinHostPort("0.0.0.0", portStr))
	if err != nil {
		return Peer{}, fmt.Errorf("probe %q: %w", addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.ProbeTimeout)
	defer cancel()
	ip, err := netip.ParseAddr(host)
	if err != nil {
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(ips) == 0 {
			return Peer{}, fmt.Errorf("probe %q: resolve: %w", addr, err)
		}
		ip = ips[0].Unmap()
	}
	direct := netip.AddrPortFrom(ip, uint16(port)).String()
	id, name, err := d.opts.Prober(ctx, direct)
	if err != nil {
		return Peer{}, fmt.Errorf("probe %s: %w", direct, err)
	}
	nid, err := normalizeID(id)
	if err != nil {
		return Peer{}, fmt.Errorf("probe %s: %w", direct, err)
	}
	clean, _ := cleanNameUpTo(name, maxProbedNameLen)
	return Peer{
		Name:  clean,
		ID:    nid,
		Addrs: []netip.Addr{ip},
		// The probe raced every kind at direct and does not say which
		// answered: the port is taken as the SRV record's kind's, as an
		// advertisement would give it.
		Ports:  []Port{{Kind: txtPorts[0].kind, Port: port}},
		Source: src,
		Direct: direct,
	}, nil
}

// AddManual probes hostport ("host:port" of a peer's QUIC listener) with the
// Prober and adds whoever answers as a manual peer, re-probed like a
// remembered one. It returns the peer as the table now holds it.
func (d *Discovery) AddManual(ctx context.Context, hostport string) (Peer, error) {
	if d.opts.Prober == nil {
		return Peer{}, fmt.Errorf("add %s: %w", hostport, ErrNoProber)
	}
	p, err := d.probe(ctx, hostport, SourceManual)
	if err != nil {
		return Peer{}, fmt.Errorf("add: %w", err)
	}
	if p.ID == d.opts.SelfID {
		return Peer{}, fmt.Errorf("add %s: that address is this device", hostport)
	}
	if p.Name == "" {
		p.Name = hostport
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.manual[p.ID]; ok || len(d.manual) < maxManual {
		d.manual[p.ID] = p.Direct
	}
	d.observe(p, probeTTLFactor*d.opts.ProbeInterval)
	if e, ok := d.peers[p.ID]; ok {
		return clonePeer(e.peer), nil
	}
	return p, nil
}
