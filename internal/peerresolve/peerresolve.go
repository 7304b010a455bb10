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
	d atomic.Pointer[table]
}

// table is what a Resolver reads of a discovery.Discovery (tests give
// one of their own).
type table interface {
	Peers() []discovery.Peer
	Looked() bool
}

var (
	_ engine.Resolver        = (*Resolver)(nil)
	_ engine.AbsenceReporter = (*Resolver)(nil)
)

// Use makes r answer from d's table.
func (r *Resolver) Use(d *discovery.Discovery) {
	if d == nil {
		r.d.Store(nil)
		return
	}
	r.use(d)
}

func (r *Resolver) use(t table) { r.d.Store(&t) }

// table is the table r answers from, nil before Use.
func (r *Resolver) table() table {
	if t := r.d.Load(); t != nil {
		return *t
	}
	return nil
}

// ResolvePeer returns where discovery sees the device now, best first;
// nothing when it does not see it (or saw another identity there).
func (r *Resolver) ResolvePeer(ctx context.Context, id string) []addr.Addr {
	t := r.table()
	if t == nil {
		return nil
	}
	return seen(t, id)
}

// Absent reports that discovery has looked at the LAN long enough
// (discovery.Discovery.Looked) and does not see the device there now: a
// paired device that is away, whose LAN addresses would not answer.
// False without discovery, or before it has looked long enough.
func (r *Resolver) Absent(id string) bool {
	t := r.table()
	return t != nil && t.Looked() && len(seen(t, id)) == 0
}

// seen is where t sees device id now, best first (nothing: it does not).
func seen(t table, id string) []addr.Addr {
	for _, p := range t.Peers() {
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
