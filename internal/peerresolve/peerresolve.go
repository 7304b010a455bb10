// Package peerresolve lets the engine find a device that moved: it answers
// the engine's Resolver questions from discovery's live peer table. The app
// and ferry-cli both give it to their engine (engine.Options.Resolver).
package peerresolve

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
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
func (r *Resolver) ResolvePeer(ctx context.Context, id string) []engine.Target {
	d := r.d.Load()
	if d == nil {
		return nil
	}
	for _, p := range d.Peers() {
		if p.ID == id && !p.Refused {
			return Targets(p)
		}
	}
	return nil
}

// Targets lists where to send to a discovered peer, best first: each of its
// QUIC addresses with the TCP address of the same host, and its ID, which
// the TLS handshake must prove.
func Targets(p discovery.Peer) []engine.Target {
	tcpByHost := map[string]string{}
	for _, a := range p.TCPDialAddrs() {
		if h, _, err := net.SplitHostPort(a); err == nil {
			if _, ok := tcpByHost[h]; !ok {
				tcpByHost[h] = a
			}
		}
	}
	var out []engine.Target
	for _, q := range p.DialAddrs() {
		t := engine.Target{ID: p.ID, QUICAddr: q}
		if h, _, err := net.SplitHostPort(q); err == nil {
			t.TCPAddr = tcpByHost[h]
			delete(tcpByHost, h)
		}
		if t.TCPAddr == "" && q == p.Direct {
			// A probed peer advertises no TCP port; Ferry listens for TCP on
			// the QUIC port number, and the ID check guards a wrong guess.
			t.TCPAddr = q
		}
		out = append(out, t)
	}
	for _, a := range p.TCPDialAddrs() {
		if h, _, _ := net.SplitHostPort(a); tcpByHost[h] == a {
			out = append(out, engine.Target{ID: p.ID, TCPAddr: a})
		}
	}
	return out
}
