// Package fair shares a bounded number of slots (handshakes in flight,
// sessions waiting for an offer, prompts waiting for an answer) between the
// sources that ask for them, so that no source can take them all and a
// newcomer gets in while others flood (issue #14).
//
// Each source holds at most PerSource slots. When every slot is taken, a
// newcomer takes the oldest slot of the source that holds the most, provided
// that source holds more than the newcomer does: the holder is told through
// the evict function it gave. A flood from one source then costs PerSource
// slots, and a flood from many sources churns among its own slots, oldest
// first, while a real peer's slot, young and short-lived, is rarely the
// oldest.
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
}

// New returns an empty Slots with the given limits (each at least 1).
func New(lim Limits) *Slots {
	lim.Total = max(lim.Total, 1)
	lim.PerSource = max(lim.PerSource, 1)
	return &Slots{lim: lim, bySource: map[string][]*Slot{}}
}

// Take claims a slot for src. It returns nil when src may not have one now:
// it holds PerSource already, or every slot is taken by sources that hold
// no more than src would. When it takes a slot away from another source,
// that slot's evict runs (in the caller's goroutine, after Take's own
// bookkeeping). evict may be nil.
func (s *Slots) Take(src string, evict func()) *Slot {
	s.mu.Lock()
	mine := len(s.bySource[src])
	if mine >= s.lim.PerSource {
		s.mu.Unlock()
		return nil
	}
	var victim *Slot
	if s.held >= s.lim.Total {
		victim = s.victimLocked(mine)
		if victim == nil {
			s.mu.Unlock()
			return nil
		}
		s.removeLocked(victim)
	}
	s.seq++
	sl := &Slot{s: s, src: src, seq: s.seq, evict: evict, held: true}
	s.bySource[src] = append(s.bySource[src], sl)
	s.held++
	s.mu.Unlock()
	if victim != nil && victim.evict != nil {
		victim.evict()
	}
	return sl
}

// victimLocked picks the slot a newcomer holding mine slots may take: the
// oldest slot of the source holding the most, if it holds more than mine.
// Among sources holding as many, the one with the oldest slot loses.
func (s *Slots) victimLocked(mine int) *Slot {
	var victim *Slot
	most := 0
	for _, held := range s.bySource {
		n := len(held)
		if n <= mine {
			continue
		}
		if victim == nil || n > most || n == most && held[0].seq < victim.seq {
			victim, most = held[0], n
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
