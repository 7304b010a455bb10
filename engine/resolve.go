package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/netwatch"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/internal/transport/auto"
)

// DefaultPort is the port Ferry listens on when it is free (UDP for QUIC,
// TCP for TCP+TLS); a device that moved is also looked for there.
const DefaultPort = "47800"

// Resolver finds where a device can be reached now: the engine asks it
// before each attempt of a send whose Target follows the device
// (Target.Follow). The app and ferry-cli give discovery's live table.
type Resolver interface {
	// ResolvePeer returns the device's current addresses, best first, or
	// none when it is not seen now. It must answer quickly (ctx is short).
	ResolvePeer(ctx context.Context, id string) []addr.Addr
}

// AbsenceReporter is what a Resolver may also know (an optional
// interface, as io.WriterTo is to io.Writer): that a device is away from
// the LAN now. A paired device beyond the LAN that is away gets no head
// start for its LAN addresses over the relay (dialTarget).
type AbsenceReporter interface {
	// Absent reports that the Resolver has looked at the LAN long enough
	// to know (discovery's first queries answered, its remembered devices
	// probed) and does not see device id there now. It must answer at
	// once (a table read).
	Absent(id string) bool
}

// absent says whether the Resolver knows device id to be away from the LAN
// now (AbsenceReporter); false when it cannot tell.
func (e *Engine) absent(id identity.DeviceID) bool {
	a, ok := e.opts.Resolver.(AbsenceReporter)
	return ok && a.Absent(id.String())
}

// onAnotherNetwork reports whether every address device id is known at (as,
// and where it was last reached) is one this device's networks do not
// reach (netwatch.Reaches): private addresses of another network. False
// when none is known, or one is a name rather than an address.
func (e *Engine) onAnotherNetwork(as []addr.Addr, id identity.DeviceID) bool {
	hosts := make([]string, 0, len(as))
	for _, a := range as {
		hosts = append(hosts, a.HostPort())
	}
	if p, ok := e.trust.Get(id.Peer()); ok {
		hosts = append(hosts, p.LastAddrs...)
	}
	reaches := e.reaches
	if reaches == nil {
		ifaddrs, err := netwatch.InterfaceAddrs()
		if err != nil {
			return false
		}
		reaches = func(ip netip.Addr) bool { return netwatch.Reaches(ip, ifaddrs) }
	}
	known := false
	for _, hp := range hosts {
		host, _, err := net.SplitHostPort(hp)
		if err != nil {
			continue
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || reaches(ip) {
			return false
		}
		known = true
	}
	return known
}

// resolveWait bounds how long one attempt asks the Resolver.
const resolveWait = time.Second

// candidateStagger is the head start each host a device may be at gets
// over the next one in the dial race (a dead address costs a QUIC dial its
// whole handshake timeout).
const candidateStagger = 250 * time.Millisecond

// maxCandidates bounds the "host:port"s one attempt dials.
const maxCandidates = 8

// candidates lists where a followed device may be, best first: what the
// Resolver sees now (live discovery), the target's own addresses (where it
// was seen when the send started), the addresses it was last reached at
// (trust store), then each of those hosts on DefaultPort (a device that
// restarted on the default port).
func (e *Engine) candidates(ctx context.Context, to Target, id identity.DeviceID) []addr.Addr {
	var out []addr.Addr
	seen := map[addr.Addr]bool{}
	var hostports []string
	add := func(as []addr.Addr) {
		for _, a := range as {
			hp := a.HostPort()
			if hp == "" || seen[a] {
				continue
			}
			if !slices.Contains(hostports, hp) {
				if len(hostports) >= maxCandidates {
					continue
				}
				hostports = append(hostports, hp)
			}
			seen[a] = true
			out = append(out, a)
		}
	}
	if r := e.opts.Resolver; r != nil {
		rctx, cancel := context.WithTimeout(ctx, resolveWait)
		add(r.ResolvePeer(rctx, id.String()))
		cancel()
	}
	add(to.Addrs)
	if p, ok := e.trust.Get(id.Peer()); ok {
		for _, a := range p.LastAddrs {
			add(AddrsAt(a))
		}
	}
	for _, hp := range slices.Clone(hostports) {
		if host, port, err := net.SplitHostPort(hp); err == nil && port != DefaultPort {
			add(AddrsAt(net.JoinHostPort(host, DefaultPort)))
		}
	}
	return out
}

// dialTarget connects for one attempt of a send. A target that follows its
// device is looked up again first (see candidates); another one is dialled
// at its addresses as given. Either way the addresses are one race: each
// host candidateStagger after the one before, the first that proves the
// device winning. It returns the address it reached. pathLost says the
// last attempt lost its path with this device's address: a relay, if the
// target has one, is called at once beside the LAN addresses (as it is
// when the Resolver knows the device is away, AbsenceReporter). A followed
// device seen at another address while its race runs (the Resolver asked
// again every movedEvery) gets a new race there at once; tried, if set,
// is given the addresses the last race dialled (Transfer.tried).
func (e *Engine) dialTarget(ctx context.Context, to Target, want identity.DeviceID, kind transport.Kind, pathLost bool, tried func([]addr.Addr)) (auto.Dialled, error) {
	if rv, ok := addr.First(to.Addrs, addr.Rendezvous); ok && !want.IsZero() && kind == "" {
		// A device beyond the LAN: its LAN addresses first, then the relay (anywhere.go).
		lanOnly := to
		lanOnly.Addrs = slices.DeleteFunc(slices.Clone(to.Addrs), func(a addr.Addr) bool { return a.Kind == addr.Rendezvous })
		headStart := anywhereHeadStart
		switch {
		case pathLost:
			headStart = 0
		case e.absent(want):
			// Its LAN addresses would not answer: they still race, but
			// the relay is called at once.
			e.log.Info("device not on the LAN now; calling it through the relay at once", "id", want.Short())
			headStart = 0
		case e.onAnotherNetwork(lanOnly.Addrs, want):
			// Every address it was seen at is on a network this device
			// is not on (a laptop taken from home to a café): the same.
			e.log.Info("device last seen on another network; calling it through the relay at once", "id", want.Short())
			headStart = 0
		}
		return e.dialWithRendezvous(ctx, rv, func(ctx context.Context) (auto.Dialled, error) {
			return e.dialTarget(ctx, lanOnly, want, kind, false, tried)
		}, want, headStart)
	}
	if !to.Follow || want.IsZero() {
		return e.dial(ctx, to.Addrs, candidateStagger, want, kind)
	}
	cands := e.candidates(ctx, to, want)
	d, err := e.dialFollowing(ctx, cands, want, kind, true)
	for moves := 1; errors.Is(err, errMoved) && ctx.Err() == nil; moves++ {
		// Seen elsewhere while this race dialled where it was: a race
		// on where it is now, at once, not after the rest of this one
		// (a dead QUIC address holds it for its handshake timeout) and
		// the back-off.
		cands = e.candidates(ctx, to, want)
		e.log.Info("device seen at another address; dialling it", "id", want.Short(), "candidates", len(cands))
		d, err = e.dialFollowing(ctx, cands, want, kind, moves < maxMoves)
	}
	if tried != nil {
		tried(cands)
	}
	var mm *identity.MismatchError
	switch {
	case err == nil:
		e.log.Info("device found", "id", want.Short(), "at", d.At.String(), "candidates", len(cands))
		return d, nil
	case errors.As(err, &mm) && ctx.Err() == nil:
		// A device that moved away leaves someone else at its old
		// addresses: report a failure to reach it (retried), not the
		// refusal itself; the device may show up elsewhere by the next
		// attempt.
		return auto.Dialled{}, fmt.Errorf("could not reach device %s: other devices answer at the %d addresses it was known at", want.Short(), len(cands))
	}
	return auto.Dialled{}, err
}

// movedEvery is how often a followed device is looked up again while an
// attempt dials it or waits for the next (the Resolver is a table read).
const movedEvery = 500 * time.Millisecond

// maxMoves bounds the races one attempt starts afresh because the device
// was seen elsewhere (a device whose advertisements flap between
// addresses must not keep an attempt from ever ending).
const maxMoves = 4

// errMoved ends a dial race whose device was seen at an address it does
// not dial.
var errMoved = errors.New("the device was seen at another address")

// dialFollowing is e.dial of a followed device's candidates; with watch,
// it ends with errMoved as soon as the Resolver sees the device at an
// address not among them.
func (e *Engine) dialFollowing(ctx context.Context, cands []addr.Addr, want identity.DeviceID, kind transport.Kind, watch bool) (auto.Dialled, error) {
	if !watch || e.opts.Resolver == nil {
		return e.dial(ctx, cands, candidateStagger, want, kind)
	}
	dctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	moved := e.seenElsewhere(dctx, want.String(), cands)
	go func() {
		select {
		case <-moved:
			cancel(errMoved)
		case <-dctx.Done():
		}
	}()
	d, err := e.dial(dctx, cands, candidateStagger, want, kind)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(dctx), errMoved) {
		return auto.Dialled{}, errMoved
	}
	return d, err
}

// seenElsewhere returns a channel closed once the Resolver sees the device
// id at an address not among tried, asking it every movedEvery until ctx
// ends; nil (never ready) without a Resolver.
func (e *Engine) seenElsewhere(ctx context.Context, id string, tried []addr.Addr) <-chan struct{} {
	r := e.opts.Resolver
	if r == nil || id == "" || len(tried) == 0 {
		return nil
	}
	moved := make(chan struct{})
	ticker, tick := e.opts.Clock.NewTicker(movedEvery)
	go func() {
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
			rctx, cancel := context.WithTimeout(ctx, resolveWait)
			now := r.ResolvePeer(rctx, id)
			cancel()
			var hostports []string // as many as candidates dials, best first
			for _, a := range now {
				if hp := a.HostPort(); !slices.Contains(hostports, hp) {
					if len(hostports) == maxCandidates {
						break
					}
					hostports = append(hostports, hp)
				}
				if !slices.Contains(tried, a) {
					close(moved)
					return
				}
			}
		}
	}()
	return moved
}

// setTried notes where the attempt now running dialled t's device.
func (t *Transfer) setTried(cands []addr.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tried = cands
}
