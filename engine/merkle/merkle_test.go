package merkle

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestRootIndependentOfArrivalOrder(t *testing.T) {
	const chunk = 1000
	data := make([]byte, 10*chunk+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	n := Chunks(int64(len(data)), chunk)
	if n != 11 {
		t.Fatalf("Chunks = %d, want 11", n)
	}
	var inOrder []Hash
	for i := 0; i < n; i++ {
		off := i * chunk
		inOrder = append(inOrder, Leaf(data[off:off+ChunkLen(int64(len(data)), chunk, i)]))
	}
	want := Root(inOrder)
	for trial := 0; trial < 20; trial++ {
		tr := NewTree(n)
		for _, i := range rand.Perm(n) {
			if _, err := tr.Root(); err == nil {
				t.Fatal("Root succeeded with leaves missing")
			}
			off := i * chunk
			tr.Set(i, Leaf(data[off:off+ChunkLen(int64(len(data)), chunk, i)]))
		}
		got, err := tr.Root()
		if err != nil || got != want {
			t.Fatalf("trial %d: root %x err %v, want %x", trial, got, err, want)
		}
	}
}

func TestRootDetectsChanges(t *testing.T) {
	a := [][]byte{[]byte("one"), []byte("two"), []byte("three")}
	leaves := func(chunks [][]byte) []Hash {
		var out []Hash
		for _, c := range chunks {
			out = append(out, Leaf(c))
		}
		return out
	}
	base := Root(leaves(a))
	swapped := Root(leaves([][]byte{a[1], a[0], a[2]}))
	changed := Root(leaves([][]byte{a[0], []byte("twO"), a[2]}))
	short := Root(leaves(a[:2]))
	for name, r := range map[string]Hash{"swapped": swapped, "changed": changed, "short": short} {
		if r == base {
			t.Errorf("%s chunks give the same root", name)
		}
	}
	// An inner node must not be usable as a leaf (second-preimage resistance).
	two := leaves(a[:2])
	inner := node(two[0], two[1])
	if Root([]Hash{inner}) == Leaf(append(append([]byte{}, two[0][:]...), two[1][:]...)) {
		t.Error("inner node collides with a leaf")
	}
	if Root(nil) != Leaf(nil) {
		t.Error("empty root")
	}
}

func TestChunkLen(t *testing.T) {
	for _, c := range []struct {
		size      int64
		chunk, i  int
		wantLen   int
		wantCount int
	}{
		{0, 10, 0, 0, 1},
		{10, 10, 0, 10, 1},
		{11, 10, 1, 1, 2},
		{25, 10, 2, 5, 3},
		{25, 10, 3, 0, 3},
		// A size near the largest counts without overflowing (a damaged
		// resume journal's: its chunks were counted negative).
		{math.MaxInt64, 1 << 20, 0, 1 << 20, 1 << 43},
		{math.MaxInt64, 1 << 62, 1, 1<<62 - 1, 2},
	} {
		if got := ChunkLen(c.size, c.chunk, c.i); got != c.wantLen {
			t.Errorf("ChunkLen(%d,%d,%d)=%d want %d", c.size, c.chunk, c.i, got, c.wantLen)
		}
		if got := Chunks(c.size, c.chunk); got != c.wantCount {
			t.Errorf("Chunks(%d,%d)=%d want %d", c.size, c.chunk, got, c.wantCount)
		}
	}
}

func TestTreeSetOutOfRange(t *testing.T) {
	tr := NewTree(2)
	if err := tr.Set(2, Hash{}); err == nil {
		t.Error("Set(2) on a 2-leaf tree succeeded")
	}
	if err := tr.Set(-1, Hash{}); err == nil {
		t.Error("Set(-1) succeeded")
	}
}

func BenchmarkLeaf1MiB(b *testing.B) {
	data := make([]byte, 1<<20)
	h := NewHasher()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		h.Leaf(data)
	}
}

// TestOneLeafTreeAllocations: most files of a tree of small files have one
// chunk; their tree is one allocation, and its root none.
func TestOneLeafTreeAllocations(t *testing.T) {
	leaf := Leaf([]byte("one chunk"))
	for _, n := range []int{0, 1} {
		var root Hash
		allocs := testing.AllocsPerRun(100, func() {
			tr := NewTree(n)
			treeSink = tr // as a receiver's file state holds it: on the heap
			if n == 1 {
				tr.Set(0, leaf)
			}
			var err error
			if root, err = tr.Root(); err != nil {
				t.Fatal(err)
			}
		})
		want := Root(make([]Hash, 0))
		if n == 1 {
			want = Root([]Hash{leaf, {}}[:1])
		}
		if root != want || (n == 1 && root != leaf) {
			t.Errorf("%d leaves: root %x, want %x", n, root, want)
		}
		if allocs > 1 {
			t.Errorf("a tree of %d leaves and its root: %.0f allocations, want 1", n, allocs)
		}
	}
	if tr := NewTree(1); tr.Has(0) || tr.Missing() != 1 || tr.Set(1, leaf) == nil {
		t.Error("a new tree of one leaf: has it, or takes a second")
	}
}

var treeSink *Tree

// ZeroLeaf is the leaf of that many zero bytes, for lengths around its
// piece, the smallest and largest chunks and an odd last chunk; asked
// again (cached, and beyond the cache's bound) it is the same.
func TestZeroLeaf(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4 << 10, 64<<10 - 1, 64 << 10, 64<<10 + 1, 1 << 20, 1<<20 + 12345, 4 << 20} {
		want := Leaf(make([]byte, n))
		for range 2 {
			if got := ZeroLeaf(n); got != want {
				t.Fatalf("ZeroLeaf(%d) = %x, want %x", n, got, want)
			}
		}
	}
	for n := range 2 * maxZeroLeaves {
		if got, want := ZeroLeaf(n+100), Leaf(make([]byte, n+100)); got != want {
			t.Fatalf("ZeroLeaf(%d) = %x, want %x", n+100, got, want)
		}
	}
	if len(zeroLeaves.m) > maxZeroLeaves {
		t.Errorf("%d leaves cached, bound %d", len(zeroLeaves.m), maxZeroLeaves)
	}
}
