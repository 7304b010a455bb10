// Package fileio moves a transfer's chunks between files and memory the way
// the data lies: a chunk already in the page cache is read from it, one that
// is not is read with direct I/O (one DMA into our buffer, no cache to fill
// and evict); whole received chunks are written with direct I/O into a
// preallocated file, so several streams write into one file at once, and
// everything else goes through the page cache with write-behind: writeback
// starts every few MiB and what is written is dropped from the cache, so
// dirty data stays bounded and one big file never waits for the disk chunk
// by chunk. The measurements behind each choice are in
// docs/benchmarks/README.md ("File I/O").
//
// A chunk of zeros inside the file's size is left as a hole instead of
// written (Writer.WriteAt), so a sparse file arrives sparse.
//
// The platform calls (cachestat/mincore, fallocate, sync_file_range,
// posix_fadvise) are Linux's; elsewhere reads and writes go through the page
// cache as ordinary file I/O, and zeros are written.
package fileio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/ferrydrop/ferry/internal/directio"
)

// Mode says which ways data may move.
type Mode int

const (
	// Auto follows the data: direct I/O for chunk reads that are not in the
	// page cache and for whole chunk writes, the page cache with
	// write-behind for the rest.
	Auto Mode = iota
	// Buffered never uses direct I/O: every read and write goes through the
	// page cache (writes still with write-behind).
	Buffered
	// Cached writes through the page cache without write-behind, as a plain
	// program's writes go: what is written stays dirty until the kernel's
	// own writeback takes it, so a write waits for a copy, never for the
	// disk. For files that are answered for one at a time and have no
	// resume to keep in step with the device (LocalSend uploads); the
	// kernel's dirty limits bound what it keeps.
	Cached
)

// cachedShare is the share of a chunk's pages that must be in the page cache
// for it to be read from there: a read through the cache of a mostly cached
// chunk copies memory and reads the few missing pages; a direct read would
// fetch all of it from the device again.
const cachedShare = 0.5

// Reader reads chunks of one file. Safe for concurrent use.
type Reader struct {
	f     *os.File
	mode  Mode
	dio   *directio.File
	probe residency

	cached, direct atomic.Int64 // bytes read each way (Stats)
}

// residency tells what share of a file's range is in the page cache; known
// is false when the platform cannot tell.
type residency interface {
	cachedShare(off, n int64) (share float64, known bool)
	close()
}

// NewReader reads f (which the caller keeps owning and closes after the
// Reader) in mode.
func NewReader(f *os.File, mode Mode) *Reader { return newReader(f, mode, newResidency(f)) }

func newReader(f *os.File, mode Mode, probe residency) *Reader {
	return &Reader{f: f, mode: mode, dio: directio.New(f, os.O_RDONLY, mode == Auto), probe: probe}
}

// ReadAt reads like os.File.ReadAt: through the page cache, or directly when
// b and off suit direct I/O (directio.Aligned) and most of the range is not
// cached.
func (r *Reader) ReadAt(b []byte, off int64) (int, error) {
	if r.mode == Auto && directio.Aligned(b, off) {
		if share, known := r.probe.cachedShare(off, int64(len(b))); known && share < cachedShare {
			n, err := r.dio.ReadAt(b, off)
			r.direct.Add(int64(n))
			return n, err
		}
	}
	n, err := r.f.ReadAt(b, off)
	r.cached.Add(int64(n))
	return n, err
}

// Stats returns how many bytes were read through the page cache and how many
// were read directly (tests, metrics).
func (r *Reader) Stats() (cached, direct int64) { return r.cached.Load(), r.direct.Load() }

// Close releases what the Reader opened; the file stays open.
func (r *Reader) Close() error {
	r.probe.close()
	return r.dio.Close()
}

// Write-behind: every window bytes written through the page cache, writeback
// of what they cover starts (without waiting); a range started lag windows
// ago is then waited for (normally long done) and dropped from the cache.
// A file keeps at most about (lag+1) x window bytes in the cache.
const (
	window = 8 << 20
	lag    = 2
	// closeKick is the smallest file whose unwritten rest starts writeback
	// when it is closed; smaller ones are left to the kernel, so that many
	// small files do not cost a call each.
	closeKick = 1 << 20
)

// Writer writes chunks into one file. Safe for concurrent use: direct writes
// inside the reserved size run in parallel; the others are serialised (the
// file system serialises them anyway: ext4 takes the inode lock, and
// several writers spinning on it cost a core).
type Writer struct {
	f      *os.File
	dio    *directio.File // nil in Buffered and Cached mode
	sys    sysOps
	behind bool // write-behind for writes through the page cache (not Cached)

	reserved         atomic.Int64 // bytes preallocated by Reserve
	buffered, direct atomic.Int64 // bytes written each way (Stats)
	holes            atomic.Int64 // bytes of zeros left as holes (Holes)
	noHoles          atomic.Bool  // the file system punches no holes

	mu sync.Mutex // serialises the writes that are not parallel; guards wb
	wb writeBehind
}

// sysOps are the platform's calls; tests replace them.
type sysOps struct {
	// fallocate allocates [0, size) and makes it the file's size at least;
	// errors.ErrUnsupported where the file system cannot.
	fallocate func(f *os.File, size int64) error
	// startWriteback starts writing [off, off+n) back, without waiting.
	startWriteback func(f *os.File, off, n int64)
	// dropCached waits until [off, off+n) is written back and drops it from
	// the page cache.
	dropCached func(f *os.File, off, n int64)
	// pwrite is one write through the page cache (os.File.WriteAt when
	// nil); writeCached calls it with at most cachedPiece bytes.
	pwrite func(f *os.File, b []byte, off int64) (int, error)
	// punchHole gives back the blocks of [off, off+n), which then read as
	// zeros, and keeps the file's size; errors.ErrUnsupported (or nil
	// punchHole) where the file system cannot.
	punchHole func(f *os.File, off, n int64) error
}

// cachedPiece is the most one write hands the page cache. Linux sizes the
// page-cache folios a write allocates by the write's length: a 1 MiB write
// takes 1 MiB folios, a 32 KiB one 32 KiB folios (order 3, the largest the
// page allocator keeps per-CPU lists for). Large folios come out of large
// free blocks, and on a VM whose host takes back the guest's free memory
// (free page reporting: on this project's VM, free blocks of 2 MiB and more)
// those are the blocks the host no longer backs, so the copy into them
// waits for the host to fault every page back in, several times the CPU of
// the same bytes in small folios (docs/localsend.md, "Why page-cache writes
// cost what they cost"). Small folios come from the fragments free memory
// always has, for a few more system calls per MiB.
const cachedPiece = 32 << 10

// writeCached writes b at off through the page cache in pieces of at most
// cachedPiece bytes.
func (w *Writer) writeCached(b []byte, off int64) (int, error) {
	pwrite := w.sys.pwrite
	if pwrite == nil {
		pwrite = (*os.File).WriteAt
	}
	n := 0
	for n < len(b) {
		m, err := pwrite(w.f, b[n:min(len(b), n+cachedPiece)], off+int64(n))
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// NewWriter writes into f (which the caller keeps owning and closes after
// the Writer) in mode.
func NewWriter(f *os.File, mode Mode) *Writer { return newWriter(f, mode, platformOps) }

func newWriter(f *os.File, mode Mode, sys sysOps) *Writer {
	w := &Writer{f: f, sys: sys, wb: writeBehind{window: window, lag: lag}, behind: mode != Cached}
	if mode == Auto {
		w.dio = directio.New(f, os.O_WRONLY, true)
	}
	return w
}

// minReserve is the smallest file Reserve preallocates: below, there are no
// parallel chunk writes to help, and the call would cost more than it saves
// on thousands of small files.
const minReserve = 2 << 20

// Reserves reports whether Reserve(size) preallocates (where the file
// system can): smaller files are left as they are.
func Reserves(size int64) bool { return size >= minReserve }

// ErrNoSpace means the file system has no room for the reserved size.
var ErrNoSpace = errors.New("not enough space")

// Reserve preallocates the file's first size bytes and makes size its
// length, so that parallel direct writes into it are overwrites (which ext4
// lets run side by side) and the file is laid out in few extents. Where the
// file system cannot preallocate, or the file is small (minReserve),
// Reserve does nothing and returns nil. A file system that is full returns
// an error matching ErrNoSpace. Call it before writing; the file's final
// size is set when it is finished.
func (w *Writer) Reserve(size int64) error {
	if size < minReserve {
		return nil
	}
	err := w.sys.fallocate(w.f, size)
	switch {
	case err == nil:
		for {
			old := w.reserved.Load()
			if old >= size || w.reserved.CompareAndSwap(old, size) {
				return nil
			}
		}
	case isNoSpace(err):
		return fmt.Errorf("reserve %d bytes: %w", size, errors.Join(ErrNoSpace, err))
	default:
		return nil // not supported here: ordinary writes allocate as they go
	}
}

// WriteAt writes like os.File.WriteAt. A write of zeros inside the file's
// size (a chunk of a sparse file: a disk image, a database) is not written
// where the file system can leave a hole instead (leaveHole): the file
// keeps its holes, where it took its whole size on disk.
func (w *Writer) WriteAt(b []byte, off int64) (int, error) {
	end := off + int64(len(b))
	if w.leaveHole(b, off) {
		return len(b), nil
	}
	if w.dio != nil && directio.Aligned(b, off) && end <= w.reserved.Load() {
		n, err := w.dio.WriteAt(b, off)
		if w.dio.Direct() {
			w.direct.Add(int64(n))
			return n, err
		}
		// The file system refused direct I/O: it went through the cache.
		w.mu.Lock()
		return w.wroteBuffered(off, n, err)
	}
	w.mu.Lock()
	if w.dio != nil && directio.Aligned(b, off) {
		n, err := w.dio.WriteAt(b, off)
		if w.dio.Direct() {
			w.direct.Add(int64(n))
			w.mu.Unlock()
			return n, err
		}
		return w.wroteBuffered(off, n, err)
	}
	n, err := w.writeCached(b, off)
	return w.wroteBuffered(off, n, err)
}

// holeMin is the smallest write of zeros that may leave a hole: a block of
// the file system, below which nothing is given back.
const holeMin = 4096

// leaveHole writes b, when it is all zeros, by punching a hole over
// [off, off+len(b)) (which then reads as zeros, and gives back its blocks,
// its preallocation too), if that range is inside the file's size (so the
// size needs no write to grow) and the file system can; false when it did
// not, and b is to be written. Data that is not zeros costs a look at its
// first word.
func (w *Writer) leaveHole(b []byte, off int64) bool {
	if len(b) < holeMin || w.sys.punchHole == nil || w.noHoles.Load() || !allZero(b) {
		return false
	}
	end := off + int64(len(b))
	if end > w.reserved.Load() {
		// Not reserved here: a partial resumed, written by an earlier
		// attempt, or a file that grows as it is written.
		fi, err := w.f.Stat()
		if err != nil || end > fi.Size() {
			return false
		}
	}
	if err := w.sys.punchHole(w.f, off, int64(len(b))); err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			w.noHoles.Store(true)
		}
		return false
	}
	w.holes.Add(int64(len(b)))
	return true
}

// AllZero reports whether b holds only zero bytes: a chunk a Writer leaves
// as a hole. Data that is not zeros costs a look at its first word.
func AllZero(b []byte) bool { return allZero(b) }

// zeros is what allZero compares a buffer with, a piece at a time.
var zeros [64 << 10]byte

// allZero reports whether b holds only zero bytes; most data answers at its
// first word.
func allZero(b []byte) bool {
	if len(b) >= 8 && binary.NativeEndian.Uint64(b) != 0 {
		return false
	}
	for len(b) > 0 {
		n := min(len(b), len(zeros))
		if !bytes.Equal(b[:n], zeros[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

// wroteBuffered does the write-behind bookkeeping of a write through the
// page cache and unlocks w.mu, which the caller holds.
func (w *Writer) wroteBuffered(off int64, n int, err error) (int, error) {
	w.buffered.Add(int64(n))
	if !w.behind {
		w.mu.Unlock()
		return n, err
	}
	start, drop := w.wb.wrote(off, int64(n))
	w.mu.Unlock()
	// Outside the lock: the other streams keep writing meanwhile.
	if start.n > 0 {
		w.sys.startWriteback(w.f, start.off, start.n)
	}
	for _, s := range drop {
		w.sys.dropCached(w.f, s.off, s.n)
	}
	return n, err
}

// Stats returns how many bytes were written through the page cache and how
// many directly (tests, metrics).
func (w *Writer) Stats() (buffered, direct int64) { return w.buffered.Load(), w.direct.Load() }

// Holes returns how many bytes of zeros were left as holes, not written
// (tests, metrics).
func (w *Writer) Holes() int64 { return w.holes.Load() }

// Close starts writeback of what was written through the page cache and not
// yet handed to the disk (without waiting for it), and releases what the
// Writer opened; the file stays open.
func (w *Writer) Close() error {
	w.mu.Lock()
	rest := w.wb.rest()
	w.mu.Unlock()
	if w.behind && rest.n > 0 && w.buffered.Load() >= closeKick {
		w.sys.startWriteback(w.f, rest.off, rest.n)
	}
	if w.dio != nil {
		return w.dio.Close()
	}
	return nil
}

// span is a byte range of a file.
type span struct{ off, n int64 }

// writeBehind is the bookkeeping of write-behind for one file: it says when
// which range goes to the disk and when which leaves the cache. Writes may
// come in any order (several streams write chunks of one file); a window's
// range spans all its writes.
type writeBehind struct {
	window int64
	lag    int

	pending int64  // bytes written since writeback last started
	lo, hi  int64  // the range those writes cover
	started []span // ranges whose writeback started and that are still cached, oldest first
}

// wrote records a write of n bytes at off. It returns the range whose
// writeback should start now (n == 0: none yet) and the ranges to wait for
// and drop from the cache.
func (wb *writeBehind) wrote(off, n int64) (start span, drop []span) {
	if n <= 0 {
		return span{}, nil
	}
	if wb.pending == 0 {
		wb.lo, wb.hi = off, off+n
	} else {
		wb.lo, wb.hi = min(wb.lo, off), max(wb.hi, off+n)
	}
	wb.pending += n
	if wb.pending < wb.window {
		return span{}, nil
	}
	start = span{wb.lo, wb.hi - wb.lo}
	wb.pending = 0
	wb.started = append(wb.started, start)
	if k := len(wb.started) - wb.lag - 1; k > 0 {
		drop = append(drop, wb.started[:k]...)
		wb.started = append(wb.started[:0], wb.started[k:]...)
	}
	return start, drop
}

// rest returns the range written since writeback last started.
func (wb *writeBehind) rest() span {
	if wb.pending == 0 {
		return span{}
	}
	return span{wb.lo, wb.hi - wb.lo}
}
