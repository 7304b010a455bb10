// Package peerresolve lets the engine find a device that moved: it answers
// the engine's Resolver questions from discovery's live peer table. The app
// and ferry-cli both give it to their engine (engine.Options.Resolver).
package peerresolve

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
)

// Resolver is an engine.Resolver backed by a discovery.Discovery. It is
// created before the engine and given the discovery once that exists (the
// discovery needs the engine to probe remembered devices).
type Resolver struct {
	d atomic.Pointer[discovery.Discovery]
}

var _ engine.Resolver = (*Resolver)(nil)

// Use makes r answer from d's table.
func (r *Resolver) Use(d *discovery.Discovery) { r.d.Store(d) }

// ResolvePeer returns where discovery sees the device now, best first;
// nothing when it does not see it (or saw another identity there).
func (r *Resolver) ResolvePeer(ctx context.Context, id string) []addr.Addr {
	d := r.d.Load()
	if d == nil {
		return nil
	}
	for _, p := range d.Peers() {
		if p.ID == id && !p.Refused {
			return Addrs(p)
		}
	}
	return nil
}

// Addrs lists the ways to reach a discovered peer, best first: at the
// "host:port" a direct probe proved, every kind the engine dials (a probed
// peer advertises one port; Ferry listens on every kind at that port
// number when it can, and the ID check guards a wrong guess), then what it
// advertises (discovery.Peer.Addresses).
func Addrs(p discovery.Peer) []addr.Addr {
	if p.Refused {
		return nil
	}
	var out []addr.Addr
	if p.Direct != "" {
		out = engine.AddrsAt(p.Direct)
	}
	for _, a := range p.Addresses() {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}
