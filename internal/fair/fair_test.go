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
