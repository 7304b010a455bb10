package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/identity"
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
// target has one, is called at once beside the LAN addresses.
func (e *Engine) dialTarget(ctx context.Context, to Target, want identity.DeviceID, kind transport.Kind, pathLost bool) (auto.Dialled, error) {
	if rv, ok := addr.First(to.Addrs, addr.Rendezvous); ok && !want.IsZero() && kind == "" {
		// A device beyond the LAN: its LAN addresses first, then the relay (anywhere.go).
		lanOnly := to
		lanOnly.Addrs = slices.DeleteFunc(slices.Clone(to.Addrs), func(a addr.Addr) bool { return a.Kind == addr.Rendezvous })
		headStart := anywhereHeadStart
		if pathLost {
			headStart = 0
		}
		return e.dialWithRendezvous(ctx, rv, func(ctx context.Context) (auto.Dialled, error) {
			return e.dialTarget(ctx, lanOnly, want, kind, false)
		}, want, headStart)
	}
	if !to.Follow || want.IsZero() {
		return e.dial(ctx, to.Addrs, candidateStagger, want, kind)
	}
	cands := e.candidates(ctx, to, want)
	d, err := e.dial(ctx, cands, candidateStagger, want, kind)
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
