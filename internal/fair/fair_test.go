package fair

import (
	"fmt"
	"testing"
)

func TestPerSourceBound(t *testing.T) {
	t.Parallel()
	s := New(Limits{Total: 10, PerSource: 3})
	var got []*Slot
	for range 5 {
		if sl := s.Take("flood", nil); sl != nil {
			got = append(got, sl)
		}
	}
	if len(got) != 3 {
		t.Fatalf("one source holds %d slots, want 3", len(got))
	}
	if s.Take("peer", nil) == nil {
		t.Fatal("another source was refused while slots were free")
	}
	got[0].Release()
	got[0].Release() // twice is harmless
	if s.HeldBy("flood") != 2 || s.Held() != 3 {
		t.Fatalf("after a release: flood holds %d, %d held", s.HeldBy("flood"), s.Held())
	}
	if s.Take("flood", nil) == nil {
		t.Fatal("a released slot was not given back to its source")
	}
}

// A flood from many sources fills every slot; a newcomer takes the oldest
// slot of the heaviest source, and its holder is told.
func TestNewcomerEvictsOldestOfHeaviest(t *testing.T) {
	t.Parallel()
	s := New(Limits{Total: 4, PerSource: 4})
	evicted := map[string]int{}
	take := func(src string) *Slot {
		return s.Take(src, func() { evicted[src]++ })
	}
	take("a")
	take("b")
	take("b")
	take("c")
	if sl := take("d"); sl == nil {
		t.Fatal("a newcomer was refused while a source held two slots")
	}
	if evicted["b"] != 1 || s.HeldBy("b") != 1 || s.Held() != 4 {
		t.Fatalf("evicted %v, b holds %d, %d held", evicted, s.HeldBy("b"), s.Held())
	}
	// Now everyone holds one: the oldest slot (a's) goes to the next newcomer.
	if take("e") == nil || evicted["a"] != 1 {
		t.Fatalf("evicted %v, want a's slot, the oldest", evicted)
	}
	// A source that already holds as many as anyone gets nothing more.
	if take("e") != nil {
		t.Fatal("a source took a second slot from sources holding one each")
	}
}

// A real peer's slot is the youngest: a flood from many sources that keeps
// coming evicts its own old slots first.
func TestFloodChurnsOwnSlots(t *testing.T) {
	t.Parallel()
	s := New(Limits{Total: 64, PerSource: 16})
	for i := range 64 {
		s.Take(fmt.Sprintf("flood%d", i), func() {})
	}
	peerEvicted := false
	peer := s.Take("peer", func() { peerEvicted = true })
	if peer == nil {
		t.Fatal("the peer was refused")
	}
	for i := range 62 { // fewer new flood slots than there are older ones
		s.Take(fmt.Sprintf("flood%d", 100+i), func() {})
	}
	if peerEvicted {
		t.Fatal("the peer's young slot was evicted before the flood's older ones")
	}
	peer.Release()
	if s.Held() != 63 {
		t.Fatalf("%d held", s.Held())
	}
}

func TestSource(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"192.0.2.7:47800", "192.0.2.7"},
		{"192.0.2.7", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:1", "192.0.2.7"},
		{"[2001:db8:1:2:a:b:c:d]:9", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2::1]:9", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:9", "fe80::1"},
		{"[::1]:9", "::1"},
		{"pipe", "pipe"},
	} {
		if got := Source(c.in); got != c.want {
			t.Errorf("Source(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Below Floor, a newcomer takes the oldest slots even from sources holding
// as few as it does: a real peer gets the handshakes it needs at once while
// many sources hold one each.
func TestFloor(t *testing.T) {
	t.Parallel()
	s := New(Limits{Total: 8, PerSource: 8, Floor: 3})
	evicted := map[string]bool{}
	for i := range 8 {
		src := fmt.Sprintf("flood%d", i)
		s.Take(src, func() { evicted[src] = true })
	}
	for i := range 3 {
		if s.Take("peer", nil) == nil {
			t.Fatalf("the peer's slot %d was refused below the floor", i+1)
		}
	}
	if !evicted["flood0"] || !evicted["flood1"] || !evicted["flood2"] || len(evicted) != 3 {
		t.Fatalf("evicted %v, want the three oldest", evicted)
	}
	if s.Take("peer", nil) != nil {
		t.Fatal("the peer took a fourth slot from sources holding one each")
	}
}

// Issue #27 (4): with Renew, a flood from a real peer's own source churns
// among its own idle slots, least advanced and oldest first, and never
// takes a slot its holder held firm; without Renew the source is refused.
func TestRenewOwnSource(t *testing.T) {
	t.Parallel()
	s := New(Limits{Total: 64, PerSource: 4, Renew: true})
	evicted := map[string]bool{}
	take := func(name string) *Slot {
		return s.Take("nat", func() { evicted[name] = true })
	}
	take("idle1")
	real := take("real")
	take("idle2")
	idle3 := take("idle3")
	real.SetRank(1) // the real peer's handshake started
	if take("idle4") == nil || !evicted["idle1"] {
		t.Fatalf("a newcomer of a full source was refused or took another slot than the oldest idle one: %v", evicted)
	}
	if take("idle5") == nil || !evicted["idle2"] || evicted["real"] {
		t.Fatalf("the newcomer took the advanced slot before an idle one: %v", evicted)
	}
	real.Hold(true)
	idle3.SetRank(2)
	for i := range 10 {
		if take(fmt.Sprint("more", i)) == nil {
			t.Fatalf("newcomer %d was refused", i)
		}
	}
	// The newcomers displace each other, the least advanced.
	if evicted["real"] || evicted["idle3"] || !evicted["more7"] || evicted["more8"] || evicted["more9"] || s.HeldBy("nat") != 4 {
		t.Fatalf("after the flood: evicted %v, the source holds %d", evicted, s.HeldBy("nat"))
	}
	// Every slot of the source held firm: the newcomer is refused.
	f := New(Limits{Total: 8, PerSource: 2, Renew: true})
	f.Take("nat", nil).Hold(true)
	f.TakeRanked("nat", 5, nil).Hold(true)
	if f.Take("nat", nil) != nil {
		t.Fatal("a newcomer took a slot held firm")
	}
	// Without Renew a full source is refused, as before.
	n := New(Limits{Total: 8, PerSource: 1})
	n.Take("nat", nil)
	if n.Take("nat", nil) != nil {
		t.Fatal("a full source took a slot without Renew")
	}
}
