package join

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/internal/fair"
)

const (
	// MaxPending bounds handshakes in flight per listener.
	MaxPending = 64
	// MaxPendingPerSource bounds the handshakes in flight from one source
	// address (package fair): a real sender needs a few at once (its first
	// connection, data streams, a spare); a flood from one address gets no
	// more than this, and a flood from many churns among its own slots; a
	// newcomer from an address holding this many displaces the least
	// advanced of them (Stage).
	MaxPendingPerSource = 16
	// PendingFloor is how many handshakes a source may have at once
	// however many other sources hold one each: what a real sender opens
	// together (its first connection, data streams and a spare).
	PendingFloor = 8
	// AcceptQueue bounds new sessions waiting for Accept.
	AcceptQueue = 16
)

type key struct {
	kind  transport.Kind
	token Token
}

// Registry knows the running sessions of every listener of one engine, by
// transport and token. It is safe for concurrent use.
type Registry struct {
	mu       sync.Mutex // guards the fields below
	sessions map[key]transport.Conn
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{sessions: make(map[key]transport.Conn)}
}

// Gate is one listener's side of the sub-protocol. Create it with NewGate.
type Gate struct {
	reg     *Registry
	kind    transport.Kind
	timeout time.Duration
	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	queue   chan transport.Conn
	pending *fair.Slots // handshakes in flight, shared fairly by source
	wg      sync.WaitGroup

	mu        sync.Mutex // guards the fields below
	mine      map[Token]transport.Conn
	withdrawn bool
	released  bool   // withdrawn and emptied: onEmpty ran
	onEmpty   func() // set by Withdraw
	closed    bool
}

// NewGate returns the gate of a listener of kind on reg; handshakes get
// timeout each.
func NewGate(reg *Registry, kind transport.Kind, timeout time.Duration) *Gate {
	ctx, cancel := context.WithCancel(context.Background())
	return &Gate{reg: reg, kind: kind, timeout: timeout, ctx: ctx, cancel: cancel,
		queue:   make(chan transport.Conn, AcceptQueue),
		pending: fair.New(fair.Limits{Total: MaxPending, PerSource: MaxPendingPerSource, Floor: PendingFloor, Renew: true}),
		mine:    make(map[Token]transport.Conn)}
}

// Context ends when the gate is closed.
func (g *Gate) Context() context.Context { return g.ctx }

// Stage is how far a new connection got before its session was joined.
// An address holding MaxPendingPerSource handshakes does not refuse its
// next connection: the newcomer ends the least advanced of that address's
// handshakes, the oldest first (package fair, Renew), so idle connections
// from a real sender's own address (a flooder behind the same NAT or on the
// same host) churn among themselves while the sender's own connection,
// which advances at once, gets through (issue #27).
type Stage int

// Stages of a handshake.
const (
	Connected  Stage = iota // nothing arrived yet
	Talking                 // its TLS handshake began (TCP: bytes arrived)
	Identified              // its TLS handshake finished with a valid identity
	Joined                  // its join header arrived: it made progress, and its own address no longer displaces it
)

// Pending is one handshake's place at the gate.
type Pending struct{ slot *fair.Slot }

// Reached records that the handshake got to s.
func (p *Pending) Reached(s Stage) {
	p.slot.SetRank(int(s))
	if s >= Joined {
		p.slot.Hold(true)
	}
}

// Handshake runs f for one new connection from remote ("host:port"), at
// stage from, in a goroutine Close waits for, with a context that ends
// after the handshake timeout, at Close, or when a newcomer takes its
// place (a less busy source's, or a less advanced one's of its own source;
// see Stage): f reports its progress on p. It reports false, running
// nothing, when the connection's source may not have a place now or the
// gate is closed: the caller sheds the connection.
func (g *Gate) Handshake(remote string, from Stage, f func(ctx context.Context, p *Pending)) bool {
	ctx, cancel := context.WithTimeout(g.ctx, g.timeout)
	slot := g.pending.Take(fair.Source(remote), cancel)
	if slot == nil {
		cancel()
		return false
	}
	p := &Pending{slot}
	p.Reached(from)
	ok := g.Go(func() {
		defer slot.Release()
		defer cancel()
		f(ctx, p)
	})
	if !ok {
		slot.Release()
		cancel()
	}
	return ok
}

// Pending is the number of handshakes in flight.
func (g *Gate) Pending() int { return g.pending.Held() }

// Go runs f in a goroutine Close waits for, unless the gate is closed.
func (g *Gate) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
	return true
}

// Start registers a new session (FlagNew) and queues it for Accept.
func (g *Gate) Start(token Token, s transport.Conn) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return errcode.ErrListenerBusy
	case g.withdrawn:
		return errcode.ErrNotReceiving
	}
	if err := g.reg.add(key{g.kind, token}, s); err != nil {
		return err
	}
	select {
	case g.queue <- s:
	default:
		g.reg.remove(key{g.kind, token}, s)
		return errcode.ErrListenerBusy
	}
	g.track(token, s)
	return nil
}

// Attach registers a new session (FlagAttach) that hands its streams to the
// running session of another transport with the same token.
func (g *Gate) Attach(token Token, s transport.Conn) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.released {
		return errcode.ErrUnknownSession
	}
	target := g.reg.other(g.kind, token)
	if target == nil {
		return errcode.ErrUnknownSession
	}
	if err := CheckPeer(target.PeerID(), s.PeerID()); err != nil {
		return err
	}
	to, ok := target.(TakeOver)
	if !ok {
		return errcode.ErrUnknownSession
	}
	if err := g.reg.add(key{g.kind, token}, s); err != nil {
		return errcode.ErrSessionFull // this transport took over already
	}
	if err := to.TakeOver(s); err != nil {
		g.reg.remove(key{g.kind, token}, s)
		return err
	}
	g.track(token, s)
	return nil
}

// Find returns the running session a connection joins (FlagJoin,
// FlagSpare), which must be the peer's.
func (g *Gate) Find(token Token, peer identity.DeviceID) (transport.Conn, error) {
	g.reg.mu.Lock()
	s := g.reg.sessions[key{g.kind, token}]
	g.reg.mu.Unlock()
	if s == nil {
		return nil, errcode.ErrUnknownSession
	}
	if err := CheckPeer(s.PeerID(), peer); err != nil {
		return nil, err
	}
	return s, nil
}

// track notes a session the gate admitted and forgets it once it ended.
// Called with g.mu held.
func (g *Gate) track(token Token, s transport.Conn) {
	g.mine[token] = s
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		<-s.Done()
		g.forget(token, s)
	}()
}

func (g *Gate) forget(token Token, s transport.Conn) {
	g.reg.remove(key{g.kind, token}, s)
	g.mu.Lock()
	if g.mine[token] == s {
		delete(g.mine, token)
	}
	empty := g.emptied()
	g.mu.Unlock()
	if empty != nil {
		empty()
	}
}

// emptied returns onEmpty once a withdrawn gate has no session left.
// Called with g.mu held.
func (g *Gate) emptied() func() {
	if !g.withdrawn || g.released || g.closed || len(g.mine) > 0 {
		return nil
	}
	g.released = true
	return g.onEmpty
}

// Accept returns the next new session. Sessions that ended while queued
// are skipped.
func (g *Gate) Accept(ctx context.Context) (transport.Conn, error) {
	for {
		select {
		case s := <-g.queue:
			select {
			case <-s.Done():
				s.Close(nil) // ended while queued: free what it holds
				continue
			default:
			}
			return s, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-g.ctx.Done():
			return nil, net.ErrClosed
		}
	}
}

// Withdraw refuses new sessions from now on (ErrNotReceiving) and ends the
// ones queued that nobody accepted. Running sessions go on; onEmpty runs
// once (in a goroutine of the gate, or at once) when the last one ended,
// unless Resume or Close come first.
func (g *Gate) Withdraw(onEmpty func()) {
	g.mu.Lock()
	g.withdrawn, g.onEmpty = true, onEmpty
	g.mu.Unlock()
	for {
		select {
		case s := <-g.queue:
			s.Close(errcode.ErrNotReceiving)
			continue
		default:
		}
		break
	}
	g.mu.Lock()
	empty := g.emptied()
	g.mu.Unlock()
	if empty != nil {
		empty()
	}
}

// Resume takes new sessions again; false once onEmpty ran.
func (g *Gate) Resume() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.released || g.closed {
		return false
	}
	g.withdrawn, g.onEmpty = false, nil
	return true
}

// Released reports whether a withdrawn gate ran onEmpty.
func (g *Gate) Released() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.released
}

// Close refuses everything from now on, ends every session the gate
// admitted (queued or running), and waits for the gate's goroutines.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	sessions := make([]transport.Conn, 0, len(g.mine))
	for _, s := range g.mine {
		sessions = append(sessions, s)
	}
	g.mu.Unlock()
	g.cancel()
	for _, s := range sessions {
		s.Close(nil) // a normal end: the peer reads no error
	}
	g.wg.Wait()
}

func (r *Registry) add(k key, s transport.Conn) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.sessions[k]; dup {
		return errcode.ErrBadHeader
	}
	r.sessions[k] = s
	return nil
}

func (r *Registry) remove(k key, s transport.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sessions[k] == s {
		delete(r.sessions, k)
	}
}

// other finds the session with token on another transport than kind.
func (r *Registry) other(kind transport.Kind, token Token) transport.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, s := range r.sessions {
		if k.token == token && k.kind != kind {
			return s
		}
	}
	return nil
}
