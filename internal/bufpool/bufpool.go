// Package bufpool hands out chunk buffers from a bounded budget shared by
// every receiving session, so that what peers send can never make the
// receiver hold more than the budget in chunk buffers, however many sessions,
// streams or oversized chunks they try. A session draws through a Quota of
// its own, so one peer cannot take the whole budget. Buffers are aligned for
// direct I/O; on Unix they are mapped and unmapped memory, so what is
// released beyond a small idle cache goes back to the system at once instead
// of waiting for the garbage collector and the runtime's scavenger.
package bufpool

import (
	"context"
	"fmt"
	"sync"
)

// Pool is a byte budget for buffers. The zero value is not usable: use New.
type Pool struct {
	limit   int64 // bytes handed out at most at once
	idleMax int64 // bytes of released buffers kept for reuse

	mu      sync.Mutex // guards the fields below
	used    int64      // bytes handed out
	idle    map[int][][]byte
	idleLen int64
	changed chan struct{} // closed (and replaced) whenever bytes are returned
}

// New returns a pool that hands out at most limit bytes at once and keeps up
// to idleMax bytes of released buffers for reuse.
func New(limit, idleMax int64) *Pool {
	return &Pool{limit: limit, idleMax: idleMax, idle: map[int][][]byte{}, changed: make(chan struct{})}
}

// InUse is the number of bytes handed out now.
func (p *Pool) InUse() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// Idle is the number of bytes kept for reuse.
func (p *Pool) Idle() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idleLen
}

// Quota is one session's share of a Pool. It is safe for concurrent use.
type Quota struct {
	p     *Pool
	limit int64
	used  int64 // guarded by p.mu
}

// Quota returns a share of p that holds at most limit bytes at once.
func (p *Pool) Quota(limit int64) *Quota { return &Quota{p: p, limit: limit} }

// Get returns a buffer of n bytes, waiting while the quota or the pool has
// no room, until ctx ends. n larger than the quota can never be served.
func (q *Quota) Get(ctx context.Context, n int) ([]byte, error) {
	if int64(n) > q.limit || int64(n) > q.p.limit {
		return nil, fmt.Errorf("bufpool: a %d-byte buffer exceeds the budget", n)
	}
	p := q.p
	for {
		p.mu.Lock()
		if q.used+int64(n) <= q.limit && p.used+int64(n) <= p.limit {
			q.used += int64(n)
			p.used += int64(n)
			b := p.takeIdle(n)
			p.mu.Unlock()
			if b == nil {
				b = alloc(n)
			}
			return b, nil
		}
		wait := p.changed
		p.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Put returns a buffer that Get handed out.
func (q *Quota) Put(b []byte) {
	n := cap(b)
	p := q.p
	p.mu.Lock()
	q.used -= int64(n)
	p.used -= int64(n)
	keep := p.idleLen+int64(n) <= p.idleMax
	if keep {
		p.idle[n] = append(p.idle[n], b[:n])
		p.idleLen += int64(n)
	}
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	if !keep {
		release(b)
	}
}

// takeIdle returns a kept buffer of n bytes, or nil. Called with p.mu held.
func (p *Pool) takeIdle(n int) []byte {
	list := p.idle[n]
	if len(list) == 0 {
		return nil
	}
	b := list[len(list)-1]
	p.idle[n] = list[:len(list)-1]
	p.idleLen -= int64(n)
	return b
}

// Trim releases every kept buffer (e.g. when the last session ended).
func (p *Pool) Trim() {
	p.mu.Lock()
	var drop [][]byte
	for n, list := range p.idle {
		drop = append(drop, list...)
		delete(p.idle, n)
	}
	p.idleLen = 0
	p.mu.Unlock()
	for _, b := range drop {
		release(b)
	}
}
