package engine

import (
	"context"
	"net"

	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// This file shows connection migration to the engine's users: each change
// of the network path under a transfer becomes an EventPath, and a TCP
// session whose local address went away is ended at once so that the
// sender reconnects on the new path (TCP cannot move a connection); so is
// a QUIC session whose address went away when no other path reached the
// peer within a grace (transport.PathLoser): leaving the LAN, the retry
// then goes through the relay instead of waiting for QUIC's idle timeout.

// EventPath: the network path under a transfer changed and the transfer
// goes on (Path says how). A QUIC connection moved to another local
// address, or the peer's address changed under it (it moved, or a NAT gave
// it another port).
const EventPath EventKind = "path"

// PathInfo describes one change of the network path under a transfer.
type PathInfo struct {
	// Moved is "local" when this device's address changed, "peer" when the
	// peer's did.
	Moved string `json:"moved"`
	// From and To are the address before and after (an IP for a local
	// move, host:port for the peer's).
	From string `json:"from"`
	To   string `json:"to"`
	// Reason says why, in a few words ("address removed", "path silent",
	// "route changed", "peer address changed").
	Reason string `json:"reason"`
	// ProbeMs is how long validating the new path took, when this side
	// probed it (it may have been validated before it was needed).
	ProbeMs float64 `json:"probe_ms,omitempty"`
	// StallMs is the longest time nothing came from the peer around the
	// change, up to its first packet on the new path.
	StallMs float64 `json:"stall_ms"`
}

// watchPath publishes t's path changes on c until the returned function is
// called (or ctx ends); it also ends the attempt, with stop, when the
// session's path is gone: a TCP session's local address went away, or a
// QUIC session lost its path (transport.PathLoser).
func (e *Engine) watchPath(ctx context.Context, t *Transfer, c Conn, stop context.CancelCauseFunc) func() {
	pr, _ := c.(transport.PathReporter)
	la, _ := c.(transport.LocalAddresser)
	var changed <-chan struct{}
	if e.netw != nil && la != nil && c.Transport() == transport.TCP {
		changed = e.netw.Changed()
	}
	var lost <-chan struct{}
	if pl, ok := c.(transport.PathLoser); ok && stop != nil {
		lost = pl.PathLost()
	}
	if pr == nil && changed == nil && lost == nil {
		return func() {}
	}
	var paths <-chan transport.PathChange
	if pr != nil {
		paths = pr.PathChanges()
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case ch := <-paths:
				e.publishPath(t, ch)
			case <-changed:
				changed = e.netw.Changed()
				if !e.hasLocalAddr(la.LocalAddr()) && stop != nil {
					e.pathGone(t)
					stop(errPathGone)
					return
				}
			case <-lost:
				e.log.Info("the connection's address is gone and no other path reaches the device", "transfer", t.id)
				e.pathGone(t)
				stop(errPathGone)
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// pathGone notes that t's attempt ends because its path went away with
// this device's address: the LAN address that session used is the one
// that failed, so the next attempt need not give it a head start over the
// relay (anywhere.go).
func (e *Engine) pathGone(t *Transfer) {
	t.mu.Lock()
	t.pathLost = true
	t.mu.Unlock()
}

// takePathLost reports (once) whether t's last attempt lost its path.
func (t *Transfer) takePathLost() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	lost := t.pathLost
	t.pathLost = false
	return lost
}

// hasLocalAddr reports whether this device still has the address of a
// local "host:port" (an unknown one counts as present).
func (e *Engine) hasLocalAddr(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	for _, a := range e.netw.Addrs() {
		if net.IP(a.AsSlice()).Equal(ip) {
			return true
		}
	}
	return false
}

// publishPath publishes one path change; a peer's move updates the peer's
// address that later events carry.
func (e *Engine) publishPath(t *Transfer, ch transport.PathChange) {
	pi := &PathInfo{Moved: "local", From: ch.From, To: ch.To, Reason: ch.Reason,
		ProbeMs: transport.Ms(ch.Probe), StallMs: transport.Ms(ch.Stall)}
	if !ch.Local {
		pi.Moved = "peer"
		t.mu.Lock()
		t.peer.Addr = ch.To
		t.mu.Unlock()
	}
	e.log.Info("network path changed", "transfer", t.id, "moved", pi.Moved, "from", pi.From, "to", pi.To,
		"reason", pi.Reason, "stall_ms", pi.StallMs)
	e.publish(t, Event{Kind: EventPath, Path: pi})
}
