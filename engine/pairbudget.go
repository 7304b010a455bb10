package engine

import (
	"math"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/pairing"
	"github.com/ferrydrop/ferry/internal/fair"
)

// The verification code cannot be ground (issue #27 item 2). A man in the
// middle between a sender and this device learns each session's code as
// soon as this device answers its commitment with a nonce; when the code
// does not match the one it already holds with the sender, it hangs up
// before revealing its nonce, and nobody sees anything. So every
// commitment this device answered and that was never revealed is counted,
// per source address, per claimed device name and in all, within
// pairWindow; once a count is reached, this device answers untrusted
// devices' commitments (that address's, that name's, or everyone's) with
// no nonce of its own until the window has moved on: their sessions go on
// without a verification code, so nobody can pair with this device
// meanwhile, and a transfer from a new device still works, unverified, as
// with a Ferry that does not pair. Paired devices keep their codes: a MITM
// cannot present their keys. A revealed commitment is no hidden try: the
// session goes on to an offer or a pairing request, which the user sees
// and which the prompt bounds govern.
//
// The bound: at most pairTriesPerWindow hidden tries in any pairWindow,
// each with one chance in 10^pairing.Digits of a match, so a MITM matches
// a code with probability at most pairTriesPerWindow × 10^-6 = 1e-4 within
// a window as long as the longest wait a user can leave open (a sender
// waits up to 15 minutes for a decision; a prompt lasts 2). docs/hostile.md
// has the figures.
const (
	pairWindow             = 15 * time.Minute
	pairTriesPerWindow     = 100
	pairTriesPerSource     = 10
	pairTriesPerName       = 10
	maxPairTriesRemembered = 4096 // sources and names with hidden tries in the window
)

// pairTries counts hidden tries at the code (answered commitments never
// revealed) within pairWindow. It is safe for concurrent use.
type pairTries struct {
	now func() time.Time

	mu     sync.Mutex // guards the fields below
	all    []time.Time
	bySrc  map[string][]time.Time
	byName map[string][]time.Time
}

func newPairTries(now func() time.Time) *pairTries {
	return &pairTries{now: now, bySrc: map[string][]time.Time{}, byName: map[string][]time.Time{}}
}

// try counts a commitment of an untrusted device at remote ("host:port")
// claiming name as a hidden try, before it is answered, or reports false
// when it may not be answered. The count holds until revealed takes it
// back, so that tries under way at once count too.
func (p *pairTries) try(remote, name string) (at time.Time, ok bool) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all = recent(p.all, now)
	src := fair.Source(remote)
	if len(p.all) >= pairTriesPerWindow || len(trim(p.bySrc, src, now)) >= pairTriesPerSource ||
		len(trim(p.byName, name, now)) >= pairTriesPerName {
		return now, false
	}
	p.all = append(p.all, now)
	note(p.bySrc, src, now)
	note(p.byName, name, now)
	return now, true
}

// revealed takes back the try counted at at: the commitment was revealed.
func (p *pairTries) revealed(remote, name string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all = dropOne(p.all, at)
	dropKey(p.bySrc, fair.Source(remote), at)
	dropKey(p.byName, name, at)
}

// dropKey removes one time equal to at from key k of m.
func dropKey(m map[string][]time.Time, k string, at time.Time) {
	if ts := dropOne(m[k], at); len(ts) > 0 {
		m[k] = ts
	} else {
		delete(m, k)
	}
}

// dropOne removes one time equal to at from ts.
func dropOne(ts []time.Time, at time.Time) []time.Time {
	for i, t := range ts {
		if t.Equal(at) {
			return append(ts[:i:i], ts[i+1:]...)
		}
	}
	return ts
}

// note records a try of key k in m, which holds maxPairTriesRemembered
// keys at most: beyond, the count in all still binds.
func note(m map[string][]time.Time, k string, now time.Time) {
	if len(m) >= maxPairTriesRemembered {
		for key := range m {
			trim(m, key, now)
		}
	}
	if _, ok := m[k]; ok || len(m) < maxPairTriesRemembered {
		m[k] = append(trim(m, k, now), now)
	}
}

// hidden is the number of hidden tries in the window now (tests, bench).
func (p *pairTries) hidden() int {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all = recent(p.all, now)
	return len(p.all)
}

// recent drops the times before the window ending now.
func recent(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= pairWindow {
		i++
	}
	return ts[i:]
}

// trim is recent for one key of m, which it drops when nothing is left.
func trim(m map[string][]time.Time, k string, now time.Time) []time.Time {
	ts := recent(m[k], now)
	if len(ts) == 0 {
		delete(m, k)
		return nil
	}
	m[k] = ts
	return ts
}

// mitmChance is the probability that a man in the middle matches a
// verification code of pairing.Digits digits in tries hidden tries.
func mitmChance(tries int) float64 {
	return 1 - math.Pow(1-math.Pow(10, -pairing.Digits), float64(tries))
}
