package fileio

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/ferrydrop/ferry/internal/directio"
)

func TestWriteBehindBookkeeping(t *testing.T) {
	type write struct {
		off, n    int64
		wantStart span
		wantDrop  []span
	}
	for _, c := range []struct {
		name     string
		writes   []write
		wantRest span
	}{
		{"in order", []write{
			{0, 2, span{}, nil},
			{2, 2, span{0, 4}, nil},
			{4, 4, span{4, 4}, nil},
			{8, 4, span{8, 4}, []span{{0, 4}}},
			{12, 4, span{12, 4}, []span{{4, 4}}},
			{16, 1, span{}, nil},
		}, span{16, 1}},
		{"out of order: a window spans all its writes", []write{
			{2, 1, span{}, nil},
			{0, 1, span{}, nil},
			{3, 1, span{}, nil},
			{1, 1, span{0, 4}, nil},
			{6, 1, span{}, nil},
		}, span{6, 1}},
		{"a late write joins the window it arrives in", []write{
			{4, 4, span{4, 4}, nil},
			{8, 2, span{}, nil},
			{0, 2, span{0, 10}, nil},
		}, span{}},
		{"one write larger than a window", []write{
			{0, 10, span{0, 10}, nil},
			{10, 10, span{10, 10}, nil},
			{20, 10, span{20, 10}, []span{{0, 10}}},
		}, span{}},
		{"empty writes change nothing", []write{
			{0, 0, span{}, nil},
			{5, 0, span{}, nil},
		}, span{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wb := writeBehind{window: 4, lag: 1}
			for i, w := range c.writes {
				start, drop := wb.wrote(w.off, w.n)
				if start != w.wantStart || !slices.Equal(drop, w.wantDrop) {
					t.Fatalf("write %d (%d bytes at %d): start %v drop %v, want %v %v", i, w.n, w.off, start, drop, w.wantStart, w.wantDrop)
				}
			}
			if got := wb.rest(); got != c.wantRest {
				t.Fatalf("rest %v, want %v", got, c.wantRest)
			}
		})
	}
}

// fakeResidency answers a fixed share.
type fakeResidency struct {
	share float64
	known bool
}

func (f fakeResidency) cachedShare(int64, int64) (float64, bool) { return f.share, f.known }
func (fakeResidency) close()                                     {}

func tempFile(t *testing.T, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// readAll reads f in chunks of directio.Min, as a sender does.
func readAll(t *testing.T, r *Reader, size int) []byte {
	t.Helper()
	buf := directio.Buffer(directio.Min)
	var got []byte
	for off := 0; off < size; off += len(buf) {
		n, err := r.ReadAt(buf[:min(len(buf), size-off)], int64(off))
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		got = append(got, buf[:n]...)
	}
	return got
}

// The read path follows what residency says, and the bytes are the same
// either way.
func TestReaderDecision(t *testing.T) {
	want := make([]byte, 3*directio.Min+1000)
	rand.Read(want)
	for _, c := range []struct {
		name       string
		mode       Mode
		probe      fakeResidency
		wantCached bool
	}{
		{"cached", Auto, fakeResidency{1, true}, true},
		{"mostly cached", Auto, fakeResidency{cachedShare, true}, true},
		{"not cached", Auto, fakeResidency{0, true}, false},
		{"unknown residency reads through the cache", Auto, fakeResidency{0, false}, true},
		{"buffered mode never reads directly", Buffered, fakeResidency{0, true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newReader(tempFile(t, want), c.mode, c.probe)
			defer r.Close()
			if got := readAll(t, r, len(want)); !bytes.Equal(got, want) {
				t.Fatal("read back differs")
			}
			cached, direct := r.Stats()
			if cached+direct != int64(len(want)) {
				t.Fatalf("stats %d + %d bytes, read %d", cached, direct, len(want))
			}
			if c.wantCached && direct != 0 {
				t.Fatalf("%d bytes read directly", direct)
			}
			// Where the platform has direct I/O, the aligned chunks went
			// there; the tail is never aligned.
			if !c.wantCached && cached < 1000 {
				t.Fatalf("only %d bytes through the cache: the tail must be", cached)
			}
			t.Logf("cached %d, direct %d", cached, direct)
		})
	}
}

// fakeOps records the platform calls and can refuse preallocation.
type fakeOps struct {
	mu        sync.Mutex
	falloc    error
	started   []span
	dropped   []span
	allocated int64
	maxWrite  int    // the largest write through the page cache
	punch     error  // what punchHole returns
	punched   []span // the holes punched
}

func (f *fakeOps) ops() sysOps {
	return sysOps{
		fallocate: func(file *os.File, size int64) error {
			if f.falloc != nil {
				return f.falloc
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if size <= f.allocated {
				return nil // fallocate never shrinks a file
			}
			f.allocated = size
			return file.Truncate(size)
		},
		startWriteback: func(_ *os.File, off, n int64) {
			f.mu.Lock()
			f.started = append(f.started, span{off, n})
			f.mu.Unlock()
		},
		dropCached: func(_ *os.File, off, n int64) {
			f.mu.Lock()
			f.dropped = append(f.dropped, span{off, n})
			f.mu.Unlock()
		},
		punchHole: func(file *os.File, off, n int64) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.punch != nil {
				return f.punch
			}
			f.punched = append(f.punched, span{off, n})
			_, err := file.WriteAt(make([]byte, n), off) // what a hole reads as
			return err
		},
		pwrite: func(file *os.File, b []byte, off int64) (int, error) {
			f.mu.Lock()
			f.maxWrite = max(f.maxWrite, len(b))
			f.mu.Unlock()
			return file.WriteAt(b, off)
		},
	}
}

// Writes through the page cache reach it in pieces of at most cachedPiece
// bytes, whatever the caller's chunk: the kernel sizes page-cache folios by
// the write, and large ones cost many times more on a VM whose host takes
// back free memory (cachedPiece).
func TestWriterCachesInSmallPieces(t *testing.T) {
	want := make([]byte, 3<<20+5)
	rand.Read(want)
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ops := &fakeOps{}
	w := newWriter(f, Buffered, ops.ops())
	for off := 0; off < len(want); off += 1 << 20 {
		if n, err := w.WriteAt(want[off:min(off+1<<20, len(want))], int64(off)); err != nil || n != min(1<<20, len(want)-off) {
			t.Fatalf("WriteAt at %d: %d, %v", off, n, err)
		}
	}
	w.Close()
	if ops.maxWrite == 0 || ops.maxWrite > cachedPiece {
		t.Fatalf("largest write into the page cache %d bytes, want 1 to %d", ops.maxWrite, cachedPiece)
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, want) {
		t.Fatal("read back differs")
	}
}

// Cached mode writes as a plain program does: through the page cache in
// small pieces, with no write-behind (no writeback started, nothing dropped
// from the cache, nothing kicked at close) and no direct write even for an
// aligned chunk in a reserved file; Buffered mode, the same bytes, does
// write behind.
func TestCachedWritesLeaveWritebackToTheKernel(t *testing.T) {
	want := make([]byte, 3*window+5)
	rand.Read(want)
	for _, mode := range []Mode{Cached, Buffered} {
		path := filepath.Join(t.TempDir(), "f")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		ops := &fakeOps{}
		w := newWriter(f, mode, ops.ops())
		if err := w.Reserve(int64(len(want))); err != nil {
			t.Fatal(err)
		}
		writeChunks(t, w, want)
		w.Close()
		f.Close()
		buffered, direct := w.Stats()
		behind := len(ops.started) + len(ops.dropped)
		switch {
		case direct != 0 || buffered != int64(len(want)):
			t.Fatalf("mode %d: %d bytes direct and %d through the cache, want all %d through the cache", mode, direct, buffered, len(want))
		case mode == Cached && behind != 0:
			t.Fatalf("Cached: writeback started %d times and dropped %d ranges, want none", len(ops.started), len(ops.dropped))
		case mode == Buffered && len(ops.started) == 0:
			t.Fatal("Buffered: writeback never started, want write-behind")
		case ops.maxWrite > cachedPiece:
			t.Fatalf("mode %d: a write of %d bytes into the page cache, want at most %d", mode, ops.maxWrite, cachedPiece)
		}
		got, _ := os.ReadFile(path)
		if !bytes.Equal(got, want) {
			t.Fatalf("mode %d: read back differs", mode)
		}
	}
}

// writeChunks writes data in directio.Min chunks from four goroutines, in
// the interleaved order several streams produce.
func writeChunks(t *testing.T, w *Writer, data []byte) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			buf := directio.Buffer(directio.Min)
			for i := g; i*directio.Min < len(data); i += 4 {
				off := i * directio.Min
				b := buf[:copy(buf, data[off:min(off+directio.Min, len(data))])]
				if _, err := w.WriteAt(b, int64(off)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Without preallocation (a file system that cannot), writes still land,
// and Reserve does not fail.
func TestWriterWithoutPreallocation(t *testing.T) {
	want := make([]byte, 40*directio.Min+123)
	rand.Read(want)
	for _, mode := range []Mode{Auto, Buffered} {
		path := filepath.Join(t.TempDir(), "f")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		ops := &fakeOps{falloc: errors.ErrUnsupported}
		w := newWriter(f, mode, ops.ops())
		if err := w.Reserve(int64(len(want))); err != nil {
			t.Fatalf("Reserve where unsupported: %v", err)
		}
		if w.reserved.Load() != 0 {
			t.Fatal("counted as reserved")
		}
		writeChunks(t, w, want)
		buffered, direct := w.Stats()
		w.Close()
		f.Close()
		got, _ := os.ReadFile(path)
		if !bytes.Equal(got, want) {
			t.Fatalf("mode %d: read back differs", mode)
		}
		if buffered+direct != int64(len(want)) {
			t.Fatalf("stats %d + %d, wrote %d", buffered, direct, len(want))
		}
		if mode == Buffered && direct != 0 {
			t.Fatal("direct writes in buffered mode")
		}
		// Everything written through the cache was handed to write-behind:
		// the windows and, at Close, the rest.
		var covered int64
		for _, s := range ops.started {
			covered += s.n
		}
		if buffered >= closeKick && covered < buffered {
			t.Fatalf("mode %d: writeback started for %d of %d buffered bytes (%v)", mode, covered, buffered, ops.started)
		}
		t.Logf("mode %d: buffered %d direct %d, writeback %v, dropped %v", mode, buffered, direct, ops.started, ops.dropped)
	}
}

// With preallocation, parallel writes land too, and the file keeps its
// reserved size until the caller cuts it.
func TestWriterReserved(t *testing.T) {
	want := make([]byte, 8*directio.Min+77)
	rand.Read(want)
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ops := &fakeOps{}
	w := newWriter(f, Auto, ops.ops())
	size := int64(len(want)) + 4096
	if err := w.Reserve(size); err != nil {
		t.Fatal(err)
	}
	if err := w.Reserve(size - 1); err != nil || w.reserved.Load() != size {
		t.Fatalf("a smaller Reserve shrank the reservation: %v, %d", err, w.reserved.Load())
	}
	small := &fakeOps{}
	if err := newWriter(f, Auto, small.ops()).Reserve(minReserve - 1); err != nil || small.allocated != 0 {
		t.Fatalf("a small file was preallocated: %v, %d", err, small.allocated)
	}
	writeChunks(t, w, want)
	w.Close()
	if fi, _ := f.Stat(); fi.Size() != size {
		t.Fatalf("size %d, reserved %d", fi.Size(), size)
	}
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("read back differs")
	}
}

// A chunk of zeros inside the file's size is left as a hole, not written:
// in a reserved file, and in one that holds the range already (a partial
// resumed); beyond the file's end, or where the file system punches no
// holes, it is written. Data is written whatever its start.
func TestZerosLeaveHoles(t *testing.T) {
	const chunk = 64 << 10
	zero := directio.Buffer(chunk)
	data := directio.Buffer(chunk)
	rand.Read(data)
	lateData := directio.Buffer(chunk) // zeros but for its last byte
	lateData[chunk-1] = 1
	open := func(t *testing.T) *os.File {
		f, err := os.Create(filepath.Join(t.TempDir(), "f"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	for _, mode := range []Mode{Auto, Buffered, Cached} {
		f := open(t)
		ops := &fakeOps{}
		w := newWriter(f, mode, ops.ops())
		if err := w.Reserve(minReserve); err != nil {
			t.Fatal(err)
		}
		for i, b := range [][]byte{zero, data, lateData, zero, zero[:holeMin-1], zero[:holeMin]} {
			if n, err := w.WriteAt(b, int64(i)*chunk); n != len(b) || err != nil {
				t.Fatalf("mode %d: write %d: %d, %v", mode, i, n, err)
			}
		}
		buffered, direct := w.Stats()
		w.Close()
		want := []span{{0, chunk}, {3 * chunk, chunk}, {5 * chunk, holeMin}}
		if !slices.Equal(ops.punched, want) || w.Holes() != 2*chunk+holeMin || buffered+direct != 2*chunk+holeMin-1 {
			t.Errorf("mode %d: holes %v (%d bytes), %d written; want %v", mode, ops.punched, w.Holes(), buffered+direct, want)
		}
	}

	// Not reserved: a range inside the file's size is a hole, one past its
	// end is written (a hole would not make the file longer).
	f := open(t)
	ops := &fakeOps{}
	w := newWriter(f, Auto, ops.ops())
	if err := f.Truncate(chunk); err != nil {
		t.Fatal(err)
	}
	w.WriteAt(zero, 0)
	w.WriteAt(zero, chunk)
	if fi, _ := f.Stat(); !slices.Equal(ops.punched, []span{{0, chunk}}) || fi.Size() != 2*chunk {
		t.Errorf("holes %v, size %d; want the first chunk a hole and the file two chunks long", ops.punched, fi.Size())
	}

	// A file system without holes: written, and asked once.
	f = open(t)
	ops = &fakeOps{punch: errors.ErrUnsupported}
	w = newWriter(f, Auto, ops.ops())
	w.Reserve(minReserve)
	w.WriteAt(zero, 0)
	w.WriteAt(zero, chunk)
	if buffered, direct := w.Stats(); w.Holes() != 0 || buffered+direct != 2*chunk || !w.noHoles.Load() {
		t.Errorf("where holes are unsupported: %d bytes of holes, %d written", w.Holes(), buffered+direct)
	}
}

func TestAllZero(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 4096, len(zeros), len(zeros) + 1, 3*len(zeros) + 5} {
		b := make([]byte, n)
		if !allZero(b) {
			t.Errorf("%d zeros: not all zero", n)
		}
		for _, at := range []int{0, n / 2, n - 1} {
			if n == 0 {
				continue
			}
			b[at] = 1
			if allZero(b) {
				t.Errorf("%d bytes with byte %d set: all zero", n, at)
			}
			b[at] = 0
		}
	}
}

// BenchmarkAllZero is the look a chunk of 1 MiB costs before it is
// written: data answers at its first word, zeros are read through.
func BenchmarkAllZero(b *testing.B) {
	data := make([]byte, 1<<20)
	rand.Read(data)
	data[0], data[1] = 0, 0 // a header that starts with zeros
	for _, tc := range []struct {
		name string
		b    []byte
	}{{"data", data}, {"zeros", make([]byte, 1<<20)}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.b)))
			for b.Loop() {
				allZero(tc.b)
			}
		})
	}
}
