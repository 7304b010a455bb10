package discovery

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/internal/clock"
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
// immediately and then every ProbeInterval, and beside that the ones
// Unreached asks for (probeAgainLoop).
func (d *Discovery) probeLoop(ctx context.Context) {
	if d.opts.Prober == nil {
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); d.probeAgainLoop(ctx) }()
	defer wg.Wait()
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

// probeTargets lists the remembered and manual peers to probe in a round:
// the ones with an address that mDNS does not see.
func (d *Discovery) probeTargets() []probeTarget {
	targets := d.knownTargets()
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.opts.Now()
	// Skip peers mDNS currently sees: they need no probing.
	out := targets[:0]
	for _, tg := range targets {
		if len(tg.addrs) == 0 {
			continue
		}
		if e, ok := d.peers[tg.id]; ok && e.peer.Source == SourceMDNS && now.Before(e.expires) {
			continue
		}
		out = append(out, tg)
	}
	return out
}

// knownTargets lists the peers discovery may probe: each remembered one
// and each added by address (AddManual), that one only when not
// remembered with an address. A remembered peer without an address is
// listed too (Unreached probes it where the table last had it).
func (d *Discovery) knownTargets() []probeTarget {
	var targets []probeTarget
	seen := map[string]bool{}
	if d.opts.Remembered != nil {
		for _, r := range d.opts.Remembered() {
			id, err := normalizeID(r.ID)
			if err != nil || id == d.opts.SelfID || seen[id] {
				continue
			}
			seen[id] = len(r.Addrs) > 0
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
	return targets
}

// againGap paces what Unreached asks for: a query goes out no sooner than
// againGap after the last one (RFC 6762 6.2: a responder multicasts a
// record at most once a second, so it might not answer sooner), and a
// device is probed again no sooner than againGap after its last probe
// again began.
const againGap = time.Second

// againProbe is a device Unreached asked discovery to probe at once.
type againProbe struct {
	name  string
	addrs []string  // the "host:port"s it was last listed with, best first
	want  bool      // asked for since its last probe began
	busy  bool      // a probe of it is under way
	began time.Time // when its last probe began (zero: none yet)
}

// probeAgainLocked asks probeAgainLoop to probe the device with id; last
// is the device as the table listed it (the zero Peer: not listed).
// Called with d.mu held.
func (d *Discovery) probeAgainLocked(id string, last Peer) {
	if d.opts.Prober == nil {
		return
	}
	a, ok := d.again[id]
	if !ok {
		if len(d.again) >= d.opts.MaxPeers {
			d.logf("discovery: %d devices wait for a probe already; %s waits for the next round", len(d.again), shortID(id))
			return
		}
		a = &againProbe{}
		d.again[id] = a
	}
	if last.ID != "" {
		a.name, a.addrs = last.Name, last.HostPorts()
	}
	a.want = true
}

// dueAgain marks as under way, and returns, up to probeParallel (less the
// ones under way) devices that probeAgainLocked asked for and that may be
// probed now, and says how long until the next one held back by againGap
// may be (0: none is). It forgets the devices nothing is left to do for,
// and the ones listed again (heard meanwhile: nothing to look for).
func (d *Discovery) dueAgain() (due []probeTarget, wait time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.opts.Clock.Now()
	free := probeParallel
	for _, a := range d.again {
		if a.busy {
			free--
		}
	}
	for id, a := range d.again {
		if _, listed := d.peers[id]; listed {
			a.want = false
		}
		next := a.began.Add(againGap)
		switch {
		case a.busy:
		case !a.want:
			if !now.Before(next) {
				delete(d.again, id)
			}
		case now.Before(next):
			if w := next.Sub(now); wait == 0 || w < wait {
				wait = w
			}
		case free > 0:
			free--
			a.want, a.busy, a.began = false, true, now
			due = append(due, probeTarget{id: id, name: a.name, addrs: slices.Clone(a.addrs)})
		}
	}
	return due, wait
}

// probedAgain notes that a probe dueAgain handed out ended.
func (d *Discovery) probedAgain(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if a, ok := d.again[id]; ok {
		a.busy = false
	}
}

// probeAgainLoop probes the devices Unreached asks for (probeAgainLocked)
// as soon as dueAgain lets it, each at the addresses the table last had
// for it and then the ones remembered (probeTarget: the first to answer
// as that device lists it again). Only a remembered or manually added
// device is probed: a probed peer is one of those (its Source).
func (d *Discovery) probeAgainLoop(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	var held clock.Timer
	var release <-chan time.Time
	for {
		due, wait := d.dueAgain()
		if len(due) > 0 {
			known := map[string]probeTarget{}
			for _, tg := range d.knownTargets() {
				if k, ok := known[tg.id]; !ok || len(k.addrs) == 0 {
					known[tg.id] = tg
				}
			}
			for _, a := range due {
				tg, ok := known[a.id]
				if !ok {
					d.probedAgain(a.id)
					continue
				}
				for _, hp := range tg.addrs {
					if !slices.Contains(a.addrs, hp) {
						a.addrs = append(a.addrs, hp)
					}
				}
				tg.addrs = a.addrs
				if tg.name == "" {
					tg.name = a.name
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					d.probeTarget(ctx, tg)
					d.probedAgain(tg.id)
					poke(d.probeNow)
				}()
			}
		}
		if wait > 0 {
			if held == nil {
				held, release = d.opts.Clock.NewTimer(wait)
			} else {
				held.Reset(wait)
			}
		}
		select {
		case <-ctx.Done():
			if held != nil {
				held.Stop()
			}
			return
		case <-d.probeNow:
		case <-release:
		}
	}
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
