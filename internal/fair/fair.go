// Package fair shares a bounded number of slots (handshakes in flight,
// sessions waiting for an offer, prompts waiting for an answer) between the
// sources that ask for them, so that no source can take them all and a
// newcomer gets in while others flood (issue #14).
//
// Each source holds at most PerSource slots. When every slot is taken, a
// newcomer takes the oldest slot of the source that holds the most, provided
// that source holds more than the newcomer does; and a newcomer holding
// fewer than Floor slots takes the oldest slot of any other source: the
// holder is told through the evict function it gave. A flood from one
// source then costs PerSource slots, and a flood from many sources churns
// among its own slots, oldest first, while a real peer's slots, young and
// short-lived, are rarely the oldest; the real peer gets the few it needs
// at once (Floor) even when every other source holds as few.
//
// A flood from the real peer's own source (a laptop behind the flooder's
// NAT) is another matter: refusing that source's newcomers refuses the real
// peer too. With Limits.Renew, a newcomer of a source that holds PerSource
// slots takes the place of the least advanced of them instead, oldest
// first: its holders rank their slots by how far they got (Slot.SetRank),
// and a holder that proved itself (Slot.Hold) is never displaced by its
// own source. Idle
// connections then churn among themselves while a real peer's, which
// advances at once, stays.
package fair

import (
	"net/netip"
	"sync"
)

// Limits bound the slots of a Slots.
type Limits struct {
	// Total bounds the slots held at once.
	Total int
	// PerSource bounds the slots one source holds at once.
	PerSource int
	// Floor is how many slots a source may take from others that hold as
	// few as it does, oldest first (at most PerSource).
	Floor int
	// Renew lets a source that holds PerSource slots take the place of
	// the lowest ranked of its own slots that are not held firm (oldest
	// first among equals), instead of being refused.
	Renew bool
}

// Slots hands out slots within Limits. It is safe for concurrent use.
type Slots struct {
	lim Limits

	mu       sync.Mutex         // guards the fields below
	bySource map[string][]*Slot // each source's slots, oldest first
	held     int
	seq      uint64
}

// Slot is one admitted claim. Release it when done.
type Slot struct {
	s     *Slots
	src   string
	seq   uint64
	evict func()
	held  bool // guarded by s.mu
	rank  int  // guarded by s.mu: see SetRank
	firm  bool // guarded by s.mu: never renewed by its own source (Hold)
}

// New returns an empty Slots with the given limits (each at least 1).
func New(lim Limits) *Slots {
	lim.Total = max(lim.Total, 1)
	lim.PerSource = max(lim.PerSource, 1)
	lim.Floor = min(max(lim.Floor, 0), lim.PerSource)
	return &Slots{lim: lim, bySource: map[string][]*Slot{}}
}

// Take claims a slot for src. It returns nil when src may not have one now:
// it holds PerSource already (with Renew: none of them may be renewed),
// or every slot is taken by sources that hold
// no more than src would. When it takes a slot away from another source,
// that slot's evict runs (in the caller's goroutine, after Take's own
// bookkeeping). evict may be nil.
func (s *Slots) Take(src string, evict func()) *Slot {
	return s.take(src, evict, 0)
}

// TakeRanked is Take for a slot ranked from the start (see SetRank).
func (s *Slots) TakeRanked(src string, rank int, evict func()) *Slot {
	return s.take(src, evict, rank)
}

func (s *Slots) take(src string, evict func(), rank int) *Slot {
	s.mu.Lock()
	mine := len(s.bySource[src])
	var victim *Slot
	if mine >= s.lim.PerSource {
		if victim = s.renewLocked(src); victim == nil {
			s.mu.Unlock()
			return nil
		}
		s.removeLocked(victim)
	} else if s.held >= s.lim.Total {
		victim = s.victimLocked(src, mine)
		if victim == nil {
			s.mu.Unlock()
			return nil
		}
		s.removeLocked(victim)
	}
	s.seq++
	sl := &Slot{s: s, src: src, seq: s.seq, evict: evict, held: true, rank: rank}
	s.bySource[src] = append(s.bySource[src], sl)
	s.held++
	s.mu.Unlock()
	if victim != nil && victim.evict != nil {
		victim.evict()
	}
	return sl
}

// victimLocked picks the slot a newcomer from src holding mine slots may
// take: the oldest slot of the source holding the most, if it holds more
// than mine (among sources holding as many, the one with the oldest slot
// loses); else, below Floor, the oldest slot of any other source.
func (s *Slots) victimLocked(src string, mine int) *Slot {
	var victim, oldest *Slot
	most := 0
	for from, held := range s.bySource {
		n := len(held)
		if from != src && (oldest == nil || held[0].seq < oldest.seq) {
			oldest = held[0]
		}
		if n <= mine {
			continue
		}
		if victim == nil || n > most || n == most && held[0].seq < victim.seq {
			victim, most = held[0], n
		}
	}
	if victim == nil && mine < s.lim.Floor {
		victim = oldest
	}
	return victim
}

// renewLocked picks the slot of src a newcomer of src takes with Renew:
// the lowest ranked of those not held firm, the oldest among equals.
func (s *Slots) renewLocked(src string) *Slot {
	if !s.lim.Renew {
		return nil
	}
	var victim *Slot
	for _, sl := range s.bySource[src] { // oldest first
		if !sl.firm && (victim == nil || sl.rank < victim.rank) {
			victim = sl
		}
	}
	return victim
}

func (s *Slots) removeLocked(sl *Slot) {
	if !sl.held {
		return
	}
	sl.held = false
	s.held--
	held := s.bySource[sl.src]
	for i, x := range held {
		if x == sl {
			held = append(held[:i:i], held[i+1:]...)
			break
		}
	}
	if len(held) == 0 {
		delete(s.bySource, sl.src)
	} else {
		s.bySource[sl.src] = held
	}
}

// Release gives the slot back; releasing twice, or after it was taken
// away, does nothing. A nil Slot may be released.
func (sl *Slot) Release() {
	if sl == nil {
		return
	}
	sl.s.mu.Lock()
	sl.s.removeLocked(sl)
	sl.s.mu.Unlock()
}

// SetRank ranks the slot among its source's (0 when taken): with Renew, a
// newcomer of its source displaces lower ranked slots first, typically
// those whose holder got less far. A nil Slot may be ranked.
func (sl *Slot) SetRank(rank int) {
	if sl == nil {
		return
	}
	sl.s.mu.Lock()
	sl.rank = rank
	sl.s.mu.Unlock()
}

// Rank is the slot's rank (see SetRank); 0 for a nil Slot.
func (sl *Slot) Rank() int {
	if sl == nil {
		return 0
	}
	sl.s.mu.Lock()
	defer sl.s.mu.Unlock()
	return sl.rank
}

// Hold sets whether the slot is held firm: a firm slot is never taken by a
// newcomer of its own source (Renew), only released or, as any slot, taken
// by another source's newcomer (Floor, the busiest source). A nil Slot
// may be held.
func (sl *Slot) Hold(firm bool) {
	if sl == nil {
		return
	}
	sl.s.mu.Lock()
	sl.firm = firm
	sl.s.mu.Unlock()
}

// Held is the number of slots held now.
func (s *Slots) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// HeldBy is the number of slots src holds now.
func (s *Slots) HeldBy(src string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bySource[src])
}

// Source is the key fairness counts a remote address by: its IP address,
// or for a global IPv6 address its /64, since one host may use a whole /64
// (privacy addresses). addr is "host:port" or a bare host; what does not
// parse is its own source.
func Source(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return addr
		}
		ip = ap.Addr()
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() && !ip.IsLinkLocalUnicast() && !ip.IsLoopback() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
