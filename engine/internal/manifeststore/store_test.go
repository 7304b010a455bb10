package manifeststore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
)

func entry(i int) Entry {
	return Entry{Path: fmt.Sprintf("d%d/sub/file-%07d.txt", i/1000, i), Size: int64(i) * 7, Mode: 0o644, MTime: int64(i) * 1e9, Holes: int64(i) * 3}
}

func newStore(t testing.TB, mem int64, b *Budget) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := New(Options{Dir: dir, Memory: mem, Budget: b, Peer: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func TestStoreSpillsAndReadsBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		mem  int64
	}{
		{"all in memory", 1000, 1 << 20},
		{"all spilled", 1000, 0},
		{"half and half", 1000, 500 * (entryOverhead + 29)},
		{"one block and one entry", blockEntries + 1, 0},
		{"empty", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBudget(1<<30, 1<<30)
			s, dir := newStore(t, tc.mem, b)
			for i := range tc.n {
				if err := s.Append(entry(i)); err != nil {
					t.Fatal(err)
				}
			}
			if s.Len() != tc.n {
				t.Fatalf("Len %d, want %d", s.Len(), tc.n)
			}
			// Random reads, then in order.
			for _, i := range rand.Perm(tc.n) {
				got, err := s.Get(i)
				if err != nil || got != entry(i) {
					t.Fatalf("Get(%d) = %+v, %v; want %+v", i, got, err, entry(i))
				}
			}
			n := 0
			if err := s.Each(func(i int, e Entry) error {
				if i != n || e != entry(i) {
					return fmt.Errorf("entry %d: %+v, want %d %+v", i, e, n, entry(n))
				}
				n++
				return nil
			}); err != nil || n != tc.n {
				t.Fatalf("Each: %d entries, %v", n, err)
			}
			if _, err := s.Get(tc.n); err == nil {
				t.Error("Get past the end succeeded")
			}
			if own, _ := b.Used("alice"); own != s.DiskBytes() {
				t.Errorf("budget charged %d, the spill file holds %d", own, s.DiskBytes())
			}
			// The spill file is unlinked at once: nothing to leave behind.
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("files in the spill folder while open: %v", left)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if own, all := b.Used("alice"); own != 0 || all != 0 {
				t.Errorf("after Close the budget still holds %d (%d in all)", own, all)
			}
			if _, err := s.Get(0); tc.n > 0 && err == nil {
				t.Error("Get after Close succeeded")
			}
		})
	}
}

func TestBudgetRefusesPerPeerAndInAll(t *testing.T) {
	b := NewBudget(10_000, 15_000)
	a, _ := newStore(t, 0, b)
	var err error
	n := 0
	for ; err == nil; n++ {
		err = a.Append(entry(n))
	}
	var be *BudgetError
	if !errors.As(err, &be) || !errors.Is(err, ErrDiskBudget) || be.All || be.Peer != "alice" {
		t.Fatalf("over the peer's budget: %v", err)
	}
	if a.Len() != n-1 || a.DiskBytes() > 10_000 {
		t.Fatalf("after the refusal: %d entries, %d bytes (want %d entries, at most 10000 bytes)", a.Len(), a.DiskBytes(), n-1)
	}
	if got, err := a.Get(a.Len() - 1); err != nil || got != entry(a.Len()-1) {
		t.Fatalf("the entries before the refusal: %+v, %v", got, err)
	}
	// Another peer has its own budget, but not more than what is left in all.
	c, err := New(Options{Dir: t.TempDir(), Budget: b, Peer: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for err == nil {
		err = c.Append(entry(0))
	}
	if !errors.As(err, &be) || !be.All || c.DiskBytes() > 15_000-a.DiskBytes() {
		t.Fatalf("over the budget for all: %v (carol holds %d, alice %d)", err, c.DiskBytes(), a.DiskBytes())
	}
	a.Close()
	if err := c.Append(entry(0)); err != nil {
		t.Fatalf("once alice's list is gone, carol's goes on: %v", err)
	}
}

func TestDamagedSpillIsAnError(t *testing.T) {
	b := NewBudget(1<<30, 1<<30)
	for _, tc := range []struct {
		name   string
		damage func(s *Store)
	}{
		{"truncated", func(s *Store) { s.f.Truncate(s.written - 3) }},
		{"length byte", func(s *Store) { s.f.WriteAt([]byte{0xff, 0xff, 0xff}, s.blocks[1]) }},
		{"zeroed", func(s *Store) { s.f.WriteAt(make([]byte, 200), s.blocks[1]+5) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newStore(t, 0, b)
			for i := range 3 * blockEntries {
				if err := s.Append(entry(i)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Get(0); err != nil { // sealed
				t.Fatal(err)
			}
			tc.damage(s)
			bad := 0
			for i := range s.Len() {
				got, err := s.Get(i)
				if err != nil {
					bad++
					continue
				}
				if got != entry(i) {
					t.Fatalf("Get(%d) returned a wrong entry %+v from a damaged file", i, got)
				}
			}
			errEach := s.Each(func(i int, e Entry) error {
				if e != entry(i) {
					return fmt.Errorf("wrong entry %d", i)
				}
				return nil
			})
			if bad == 0 || errEach == nil {
				t.Errorf("damage not seen: %d entries failed, Each: %v", bad, errEach)
			}
		})
	}
}

func TestDuplicates(t *testing.T) {
	s, _ := newStore(t, 2000, NewBudget(1<<30, 1<<30)) // some in memory, most spilled
	names := []string{"a", "b", "a", "c/d", "b", "a", "C/d", "c/d"}
	for i := range 500 {
		names = append(names, fmt.Sprintf("x/%d", i))
	}
	names = append(names, "x/7", "a")
	for _, n := range names {
		if err := s.Append(Entry{Path: n}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Duplicates[Entry](s, func(e Entry) string { return e.Path })
	if err != nil {
		t.Fatal(err)
	}
	want := []int{2, 4, 5, 7, len(names) - 2, len(names) - 1}
	if !slices.Equal(got, want) {
		t.Errorf("duplicates %v, want %v", got, want)
	}
	// The same from hashes taken by another pass.
	h := NewNameHashes(len(names))
	for i, n := range names {
		h.Add(i, n)
	}
	if got, err := DuplicatesOf[Entry](h, s, func(e Entry) string { return e.Path }); err != nil || !slices.Equal(got, want) {
		t.Errorf("DuplicatesOf: %v, %v; want %v", got, err, want)
	}
	// Up to two of a name are kept: only "a" comes more often (4 times).
	h = NewNameHashes(len(names))
	for i, n := range names {
		h.Add(i, n)
	}
	if got, err := CopiesBeyond[Entry](h, s, func(e Entry) string { return e.Path }, 2); err != nil || !slices.Equal(got, []int{5, len(names) - 1}) {
		t.Errorf("CopiesBeyond 2: %v, %v; want [5 %d]", got, err, len(names)-1)
	}
	short := NewNameHashes(1)
	short.Add(0, "a")
	if _, err := DuplicatesOf[Entry](short, s, func(e Entry) string { return e.Path }); err == nil {
		t.Error("DuplicatesOf took hashes of 1 name for a list of many")
	}
}

// TestMillionEntriesInBoundedMemory appends 10^6 entries (names about 30
// bytes, as a tree's) with 1 MiB kept in memory: the heap the store holds
// stays under 4 MiB where a []wire.FileEntry holds about 80 MB.
func TestMillionEntriesInBoundedMemory(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	b := NewBudget(1<<30, 1<<30)
	heapBefore := heapInUse()
	s, _ := newStore(t, 1<<20, b)
	for i := range n {
		if err := s.Append(entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	held := heapInUse() - heapBefore
	if e, err := s.Get(n - 1); err != nil || e != entry(n-1) {
		t.Fatalf("last entry: %+v, %v", e, err)
	}
	t.Logf("%d entries: %d bytes of heap held, %d on disk (%.1f per entry), MemoryBytes %d",
		n, held, s.DiskBytes(), float64(s.DiskBytes())/float64(n), s.MemoryBytes())
	if held > 4<<20 {
		t.Errorf("the store holds %d bytes of heap for %d entries (want under 4 MiB)", held, n)
	}
	runtime.KeepAlive(s)
}

func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func FuzzDecodeRecord(f *testing.F) {
	for _, e := range []Entry{entry(0), entry(123456), {Path: "a", Size: -1, MTime: -5}, {Path: "h", Size: 1 << 40, Holes: 1<<40 - 1}, {}} {
		f.Add(appendRecord(nil, e))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, n, err := decodeRecord(b)
		if err != nil {
			return
		}
		if n > len(b) || len(e.Path) > maxRecordPath {
			t.Fatalf("decoded %d of %d bytes, a name of %d", n, len(b), len(e.Path))
		}
		// What decodes encodes to the same bytes, and back.
		again, m, err := decodeRecord(appendRecord(nil, e))
		if err != nil || again != e || m != len(appendRecord(nil, e)) {
			t.Fatalf("round trip of %+v: %+v, %v", e, again, err)
		}
	})
}

// Get keeps several blocks: reading the entries of files that arrive and
// finish at indexes blocks apart reads each block once, not once per file.
func TestGetKeepsBlocks(t *testing.T) {
	s, _ := newStore(t, 0, NewBudget(1<<30, 1<<30))
	n := 20 * blockEntries
	for i := range n {
		if err := s.Append(entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Files arriving and files finishing, 3 blocks apart.
	for i := range n - 3*blockEntries {
		for _, j := range []int{i + 3*blockEntries, i} {
			if e, err := s.Get(j); err != nil || e != entry(j) {
				t.Fatalf("entry %d: %+v, %v", j, e, err)
			}
		}
	}
	if s.reads > 20 {
		t.Errorf("%d block reads for %d blocks", s.reads, 20)
	}
}
