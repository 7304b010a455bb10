package fileio

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ferrydrop/ferry/internal/directio"
)

// onDisk skips tests that need a real disk file system (tmpfs neither drops
// pages nor does direct I/O).
func onDisk(t *testing.T, dir string) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Type == 0x01021994 {
		t.Skipf("%s is not on a disk file system", dir)
	}
}

// uncachedFile writes size random bytes to a file, flushes it and drops it
// from the page cache.
func uncachedFile(t *testing.T, size int) *os.File {
	t.Helper()
	dir := t.TempDir()
	onDisk(t, dir)
	data := make([]byte, size)
	rand.Read(data)
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	return f
}

// Both ways of asking the kernel (cachestat, and mincore for kernels before
// 6.5) see a file leave the cache and come back.
func TestResidency(t *testing.T) {
	const size = 32 << 20
	for _, c := range []struct {
		name      string
		cachestat bool
	}{{"cachestat", true}, {"mincore", false}} {
		t.Run(c.name, func(t *testing.T) {
			f := uncachedFile(t, size)
			p := &pageResidency{f: f, cachestat: c.cachestat}
			defer p.close()
			if c.cachestat && !haveCachestat() {
				var cs unix.Cachestat_t
				err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Len: size}, &cs, 0)
				if err == nil {
					t.Fatal("cachestat works on a file, yet the probe said it is missing")
				}
				t.Skipf("no cachestat here: %v", err)
			}
			share := func(off, n int64) float64 {
				t.Helper()
				s, known := p.cachedShare(off, n)
				if !known {
					t.Fatalf("residency of [%d, +%d) unknown", off, n)
				}
				return s
			}
			if s := share(0, size); s > 0.1 {
				t.Fatalf("%.2f of a dropped file counted as cached", s)
			}
			// Read the first eighth; readahead may fetch a little beyond.
			buf := make([]byte, size/8)
			if _, err := f.ReadAt(buf, 0); err != nil {
				t.Fatal(err)
			}
			if s := share(0, size/8); s < 0.99 {
				t.Fatalf("only %.2f of the part just read counted as cached", s)
			}
			if s := share(size/2, size/2); s > 0.1 {
				t.Fatalf("%.2f of the second half, never read, counted as cached", s)
			}
		})
	}
}

// A real Reader reads a file that is not cached directly, and one that is
// through the cache.
func TestReaderFollowsTheCache(t *testing.T) {
	const size = 4 << 20
	f := uncachedFile(t, size)
	r := NewReader(f, Auto)
	defer r.Close()
	buf := directio.Buffer(1 << 20)
	read := func() {
		for off := int64(0); off < size; off += int64(len(buf)) {
			if _, err := r.ReadAt(buf, off); err != nil {
				t.Fatal(err)
			}
		}
	}
	read()
	cached, direct := r.Stats()
	if direct != size {
		t.Fatalf("not cached: %d bytes read directly, %d through the cache", direct, cached)
	}
	// Direct reads do not fill the cache; an ordinary read does.
	if _, err := f.ReadAt(make([]byte, size), 0); err != nil {
		t.Fatal(err)
	}
	read()
	if c2, d2 := r.Stats(); c2-cached != size || d2 != direct {
		t.Fatalf("cached: %d more bytes through the cache, %d more directly", c2-cached, d2-direct)
	}
}

// Write-behind keeps a big file's dirty data and cached data bounded while
// it is written through the cache.
func TestWriteBehindBoundsTheCache(t *testing.T) {
	dir := t.TempDir()
	onDisk(t, dir)
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stat := func() unix.Cachestat_t {
		var cs unix.Cachestat_t
		err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{}, &cs, 0)
		if errors.Is(err, unix.ENOSYS) {
			t.Skip("no cachestat on this kernel to look with")
		}
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	w := NewWriter(f, Buffered)
	const size = 24 * window
	buf := make([]byte, 1<<20)
	rand.Read(buf)
	page := uint64(os.Getpagesize())
	var maxDirty, maxCached uint64
	for off := int64(0); off < size; off += int64(len(buf)) {
		if _, err := w.WriteAt(buf, off); err != nil {
			t.Fatal(err)
		}
		cs := stat()
		maxDirty, maxCached = max(maxDirty, cs.Dirty*page), max(maxCached, cs.Cache*page)
	}
	w.Close()
	t.Logf("wrote %d MiB: at most %d MiB dirty, %d MiB cached", size>>20, maxDirty>>20, maxCached>>20)
	if maxDirty > window+uint64(len(buf)) {
		t.Errorf("%d bytes dirty at once; write-behind starts every %d", maxDirty, window)
	}
	if limit := uint64(lag+2) * window; maxCached > limit {
		t.Errorf("%d bytes cached at once; write-behind keeps about %d", maxCached, limit)
	}
	if buffered, direct := w.Stats(); buffered != size || direct != 0 {
		t.Errorf("stats %d buffered, %d direct", buffered, direct)
	}
}

// Preallocation makes the reserved size the file's size on a real file
// system, and a full file system is an error the caller can name.
func TestReserve(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewWriter(f, Auto)
	defer w.Close()
	if err := w.Reserve(3 << 20); err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if w.reserved.Load() == 0 {
		t.Skipf("no fallocate on %s", dir)
	}
	if fi.Size() != 3<<20 {
		t.Fatalf("size %d after Reserve(3 MiB)", fi.Size())
	}

	full := newWriter(f, Auto, sysOps{fallocate: func(*os.File, int64) error { return unix.ENOSPC }})
	if err := full.Reserve(1 << 40); !errors.Is(err, ErrNoSpace) || !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("Reserve on a full file system: %v", err)
	}
}

// On ext4 (this project's CI), whole chunks into a reserved file are direct
// writes, and several run at once without losing a byte.
func TestParallelDirectWritesOnExt4(t *testing.T) {
	dir := t.TempDir()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Type != 0xEF53 {
		t.Skipf("%s is not on ext4", dir)
	}
	path := filepath.Join(dir, "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := make([]byte, 32*directio.Min+5)
	rand.Read(want)
	w := NewWriter(f, Auto)
	if err := w.Reserve(int64(len(want))); err != nil {
		t.Fatal(err)
	}
	writeChunks(t, w, want)
	w.Close()
	buffered, direct := w.Stats()
	if direct != 32*directio.Min || buffered != 5 {
		t.Fatalf("%d bytes direct, %d buffered", direct, buffered)
	}
	got, _ := os.ReadFile(path)
	if string(got) != string(want) {
		t.Fatal("read back differs")
	}
}

// What the default leaves for after a crash: whole chunks written into a
// reserved file on ext4 are on the device when WriteAt returns (direct
// writes), so when the file gets its final name nothing of it is dirty or
// still being written back, without an fsync. Buffered mode (and so
// FERRY_BUFFERED_IO=1) leaves the last windows of every file in the page
// cache at Close; a crash before the kernel writes them loses them under
// the final name (docs/benchmarks/pagecache-default-2026-12-02.md).
func TestDirectChunksLeaveNothingUnwritten(t *testing.T) {
	dir := t.TempDir()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Type != 0xEF53 {
		t.Skipf("%s is not on ext4", dir)
	}
	for _, tc := range []struct {
		mode    Mode
		pending bool // may leave data unwritten at Close
	}{{Auto, false}, {Buffered, true}} {
		f, err := os.Create(filepath.Join(dir, fmt.Sprint(tc.mode)))
		if err != nil {
			t.Fatal(err)
		}
		const size = 2 * window
		w := NewWriter(f, tc.mode)
		if err := w.Reserve(size); err != nil {
			t.Fatal(err)
		}
		chunk := directio.Buffer(1 << 20)
		rand.Read(chunk)
		for off := int64(0); off < size; off += int64(len(chunk)) {
			if _, err := w.WriteAt(chunk, off); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		var cs unix.Cachestat_t
		err = unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{}, &cs, 0)
		f.Close()
		if errors.Is(err, unix.ENOSYS) {
			t.Skip("no cachestat on this kernel to look with")
		}
		if err != nil {
			t.Fatal(err)
		}
		unwritten := (cs.Dirty + cs.Writeback) * uint64(os.Getpagesize())
		t.Logf("mode %d: %d KiB of %d MiB dirty or under writeback at Close", tc.mode, unwritten>>10, size>>20)
		if !tc.pending && unwritten != 0 {
			t.Errorf("mode %d: %d bytes not yet on the device when the file is closed", tc.mode, unwritten)
		}
	}
}

// On a real file system, a preallocated file written with chunks of zeros
// keeps only its data's blocks: 2 of 8 MiB here, where it kept all 8.
func TestZeroChunksGiveBackTheirBlocks(t *testing.T) {
	for _, mode := range []Mode{Auto, Buffered} {
		path := filepath.Join(t.TempDir(), "f")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		const chunk, size = 1 << 20, 8 << 20
		w := NewWriter(f, mode)
		if err := w.Reserve(size); err != nil {
			t.Fatal(err)
		}
		if w.reserved.Load() == 0 {
			t.Skipf("no fallocate on %s", path)
		}
		want := make([]byte, size)
		rand.Read(want[:chunk])
		rand.Read(want[5*chunk : 6*chunk])
		b := directio.Buffer(chunk)
		for off := 0; off < size; off += chunk {
			copy(b, want[off:off+chunk])
			if _, err := w.WriteAt(b, int64(off)); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if w.Holes() == 0 && w.noHoles.Load() {
			t.Skipf("no holes on %s", path)
		}
		if on := st.Blocks * 512; on > 2*chunk+64<<10 || st.Size != size {
			t.Errorf("mode %d: %d bytes on disk for 2 MiB of data in a file of %d", mode, on, st.Size)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
			t.Errorf("mode %d: read back differs", mode)
		}
	}
}

// BenchmarkWriteChunks writes 1 MiB chunks into a reserved 64 MiB file as
// the receiver does, with holes for zeros (the platform's calls) and
// without (no punchHole: every chunk written), for data and for zeros:
// data must cost the same either way (a look at its first word).
//
//	go test -run - -bench WriteChunks -benchtime 20x ./internal/fileio
func BenchmarkWriteChunks(b *testing.B) {
	const chunk, size = 1 << 20, 64 << 20
	noHoles := platformOps
	noHoles.punchHole = nil
	for _, content := range []string{"data", "zeros"} {
		buf := directio.Buffer(chunk)
		if content == "data" {
			rand.Read(buf)
		}
		for _, tc := range []struct {
			name string
			ops  sysOps
		}{{"holes", platformOps}, {"noholes", noHoles}} {
			for _, mode := range []Mode{Auto, Buffered} {
				b.Run(fmt.Sprintf("%s/%s/mode%d", content, tc.name, mode), func(b *testing.B) {
					path := filepath.Join(b.TempDir(), "f")
					b.SetBytes(size)
					for b.Loop() {
						f, err := os.Create(path)
						if err != nil {
							b.Fatal(err)
						}
						w := newWriter(f, mode, tc.ops)
						if err := w.Reserve(size); err != nil {
							b.Fatal(err)
						}
						for off := int64(0); off < size; off += chunk {
							if _, err := w.WriteAt(buf, off); err != nil {
								b.Fatal(err)
							}
						}
						w.Close()
						f.Close()
						os.Remove(path)
					}
				})
			}
		}
	}
}

// HoleBytes counts the chunks that hold no data at all, as an offer says
// them (wire.FileEntry.Holes): a chunk with any data in it counts whole,
// the last chunk is short, and data in one chunk across two extents counts
// it once.
func TestHoleBytes(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name  string
		size  int64
		data  [][2]int64 // [offset, length) written with random bytes
		chunk int
		holes int64
	}{
		{"all hole", 10 * mib, nil, mib, 10 * mib},
		{"no hole", 3 * mib, [][2]int64{{0, 3 * mib}}, mib, 0},
		{"one block in the first chunk", 10 * mib, [][2]int64{{0, 4096}}, mib, 9 * mib},
		{"data across two chunks", 10 * mib, [][2]int64{{mib - 4096, 8192}}, mib, 8 * mib},
		{"two extents in one chunk", 10 * mib, [][2]int64{{4 * mib, 4096}, {4*mib + 512<<10, 4096}}, mib, 9 * mib},
		{"short last chunk with data", 10*mib + 100<<10, [][2]int64{{10 * mib, 4096}}, mib, 10 * mib},
		{"short last chunk of hole", 10*mib + 100<<10, [][2]int64{{0, 4096}}, mib, 9*mib + 100<<10},
		{"data between holes", 10 * mib, [][2]int64{{2 * mib, 4096}, {6*mib + 4096, mib}}, mib, 7 * mib},
		{"small chunks", 1 * mib, [][2]int64{{64 << 10, 4096}}, 64 << 10, 15 * 64 << 10},
		{"empty", 0, nil, mib, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := os.Create(filepath.Join(t.TempDir(), "f"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(tc.size); err != nil {
				t.Fatal(err)
			}
			for _, d := range tc.data {
				b := make([]byte, d[1])
				rand.Read(b)
				if _, err := f.WriteAt(b, d[0]); err != nil {
					t.Fatal(err)
				}
			}
			if tc.size > 0 && len(tc.data) == 0 && HoleBytes(f, tc.size, tc.chunk) == 0 {
				t.Skip("this file system reports no holes (no SEEK_HOLE)")
			}
			if got := HoleBytes(f, tc.size, tc.chunk); got != tc.holes {
				t.Errorf("%d bytes of holes, want %d", got, tc.holes)
			}
			// HoleChunks lists the same chunks: each one all zeros, and
			// their bytes what HoleBytes counts.
			checkHoleChunks(t, f, tc.size, tc.chunk, tc.holes)
			// Windows's way, allocated ranges a page at a time
			// (rangesAfter), finds the same, whatever the page's room.
			for _, room := range []int{1, 2, 64} {
				q := pagedRanges(t, f, room)
				if got := holeBytes(rangesAfter(q, tc.size), tc.size, tc.chunk); got != tc.holes {
					t.Errorf("through pages of %d ranges: %d bytes of holes, want %d", room, got, tc.holes)
				}
				if got, want := holeChunks(rangesAfter(q, tc.size), tc.size, tc.chunk, 1<<20), HoleChunks(f, tc.size, tc.chunk, 1<<20); !slices.Equal(got, want) {
					t.Errorf("through pages of %d ranges: runs %v, want %v", room, got, want)
				}
			}
		})
	}
}

// pagedRanges answers as FSCTL_QUERY_ALLOCATED_RANGES does, from f's data
// as SEEK_DATA tells it: the ranges inside the one asked, clipped to it,
// at most room of them, with more when some did not fit.
func pagedRanges(t *testing.T, f *os.File, room int) queryRanges {
	t.Helper()
	var all []allocatedRange
	next := seekData(f)
	for off := int64(0); ; {
		d, h, ok, err := next(off)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		all = append(all, allocatedRange{offset: d, length: h - d})
		off = h
	}
	return func(off, length int64, out []allocatedRange) (int, bool, error) {
		n := 0
		for _, r := range all {
			lo, hi := max(r.offset, off), min(r.offset+r.length, off+length)
			if lo >= hi {
				continue
			}
			if n == min(room, len(out)) {
				return n, true, nil
			}
			out[n] = allocatedRange{offset: lo, length: hi - lo}
			n++
		}
		return n, false, nil
	}
}

// checkHoleChunks checks that HoleChunks lists runs in order, apart, of
// chunks that read as zeros, holes bytes of them, and that a bound keeps
// the first runs.
func checkHoleChunks(t *testing.T, f *os.File, size int64, chunk int, holes int64) {
	t.Helper()
	runs := HoleChunks(f, size, chunk, 1<<20)
	var listed, end int64
	for _, r := range runs {
		if r.Count <= 0 || r.Start < end {
			t.Fatalf("runs %v: not in order and apart", runs)
		}
		end = r.Start + r.Count
		for c := r.Start; c < end; c++ {
			n := min(int64(chunk), size-c*int64(chunk))
			b := make([]byte, n)
			if _, err := f.ReadAt(b, c*int64(chunk)); err != nil || !AllZero(b) {
				t.Fatalf("chunk %d listed as a hole holds data (%v)", c, err)
			}
			listed += n
		}
	}
	if listed != holes {
		t.Errorf("HoleChunks lists %d bytes (%v), HoleBytes %d", listed, runs, holes)
	}
	if len(runs) > 1 {
		if first := HoleChunks(f, size, chunk, 1); len(first) != 1 || first[0] != runs[0] {
			t.Errorf("bound to one run: %v, want %v", first, runs[:1])
		}
	}
}

// LeavesHoles is true on a file system that punches holes (tmpfs, ext4),
// and leaves nothing in the folder it asked.
func TestLeavesHoles(t *testing.T) {
	dir := t.TempDir()
	if !LeavesHoles(dir) {
		t.Skip("the test folder's file system punches no holes")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the probe left %d entries", len(ents))
	}
	if LeavesHoles(filepath.Join(dir, "missing")) {
		t.Error("a folder that is not there keeps holes")
	}
}

// The sparse benchmarks write half of a file of sparseSize (1 GiB), in
// 1 MiB chunks, from four goroutines at once (as the receiver's direct
// writes come): in pieces of data one after the other, or, sparse, each
// 8 MiB piece followed by a hole of its size.
const sparseChunk, sparsePiece, sparseSize = 1 << 20, 8 << 20, 1 << 30

func writeHalfInPieces(b *testing.B, writeAt func([]byte, int64) (int, error), sparse bool) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			buf := directio.Buffer(sparseChunk)
			buf[0] = 1
			for i := int64(g); i < sparseSize/2/sparseChunk; i += 4 {
				off := i * sparseChunk // a piece of data follows a piece of data
				if sparse {
					off = i/(sparsePiece/sparseChunk)*2*sparsePiece + i%(sparsePiece/sparseChunk)*sparseChunk // a hole between pieces
				}
				if _, err := writeAt(buf, off); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkSparseWrites writes 512 MiB of data in 1 MiB chunks from 4
// goroutines (the receiver's streams) into a file Reserved whole (a file
// without holes: the direct writes run side by side) and into a file of
// 1 GiB that only has its size, its data in 8 MiB pieces 16 MiB apart (a
// sparse file, as store.Partial.Sparse leaves it: each write fills a hole,
// one at a time). What a sparse file's data costs the receiver against a
// file without holes; figures in docs/compatibility.md ("Sparse files").
//
//	go test -run - -bench SparseWrites -benchtime 4x ./internal/fileio
func BenchmarkSparseWrites(b *testing.B) {
	for _, sparse := range []bool{false, true} {
		b.Run(map[bool]string{false: "reserved", true: "sparse"}[sparse], func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "f")
			b.SetBytes(sparseSize / 2)
			for b.Loop() {
				f, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				w := NewWriter(f, Auto)
				if sparse {
					err = f.Truncate(sparseSize)
				} else {
					err = w.Reserve(sparseSize / 2)
				}
				if err != nil {
					b.Fatal(err)
				}
				writeHalfInPieces(b, w.WriteAt, sparse)
				w.Close()
				f.Close()
				os.Remove(path)
			}
		})
	}
}

// BenchmarkSparseRunsPreallocated asks what a receiver would gain by
// preallocating a sparse file's runs of data once, before any write (the
// zeros frame tells it where they are), so that their direct writes may run
// side by side: the same 512 MiB as BenchmarkSparseWrites, written with
// plain O_DIRECT pwrite from 4 goroutines and no Writer (nothing held
// between them), into a file preallocated whole ("reserved"), into the
// holes of a file that only has its size ("holes"), and into that file with
// each 8 MiB run preallocated first (fallocate KEEP_SIZE, counted:
// "runs"). Figures in docs/compatibility.md ("Sparse files").
//
//	go test -run - -bench SparseRunsPreallocated -benchtime 3x ./internal/fileio
func BenchmarkSparseRunsPreallocated(b *testing.B) {
	for _, mode := range []string{"reserved", "holes", "runs"} {
		b.Run(mode, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "f")
			b.SetBytes(sparseSize / 2)
			for b.Loop() {
				f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC|syscall.O_DIRECT, 0o644)
				if err != nil {
					b.Skipf("no O_DIRECT here: %v", err)
				}
				fd := int(f.Fd())
				if mode == "reserved" {
					err = unix.Fallocate(fd, 0, 0, sparseSize/2)
				} else {
					err = f.Truncate(sparseSize)
				}
				for p := int64(0); mode == "runs" && p < sparseSize && err == nil; p += 2 * sparsePiece {
					err = unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, p, sparsePiece)
				}
				if err != nil {
					b.Fatal(err)
				}
				writeHalfInPieces(b, func(p []byte, off int64) (int, error) { return unix.Pwrite(fd, p, off) }, mode != "reserved")
				f.Close()
				os.Remove(path)
			}
		})
	}
}
