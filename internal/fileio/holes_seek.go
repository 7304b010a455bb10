//go:build linux || darwin || freebsd

package fileio

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// HoleBytes is how many of the first size bytes of f lie in chunks of chunk
// bytes (the last one shorter) that hold no data at all: holes through and
// through, as lseek's SEEK_DATA and SEEK_HOLE tell them. A chunk with any
// data in it is counted as data, whole. 0 where the file system cannot tell
// (one without SEEK_HOLE reports the whole file as data) or on any error:
// then all of it is data. It moves f's offset.
func HoleBytes(f *os.File, size int64, chunk int) int64 {
	c := int64(chunk)
	if size <= 0 || c <= 0 {
		return 0
	}
	var data, counted int64 // bytes of chunks with data; chunks below counted are in data
	for off := int64(0); off < size; {
		d, err := f.Seek(off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // no data after off
		}
		if err != nil || d < off {
			return 0
		}
		if d >= size {
			break
		}
		h, err := f.Seek(d, unix.SEEK_HOLE)
		if err != nil || h <= d {
			return 0
		}
		h = min(h, size)
		first := max(d/c*c, counted)
		last := min((h+c-1)/c*c, size)
		if last > first {
			data += last - first
			counted = last
		}
		off = h
	}
	return size - data
}

// HoleChunks lists the chunks of f's first size bytes, cut in chunks of
// chunk bytes (the last one shorter), that hold no data at all, as
// HoleBytes counts them: runs of chunk indexes, in order, at most max of
// them (the first ones; the chunks beyond are left out, as if they held
// data). nil where the file system cannot tell, or on any error. It moves
// f's offset.
func HoleChunks(f *os.File, size int64, chunk int, max int) []ChunkRun {
	c := int64(chunk)
	if size <= 0 || c <= 0 || max <= 0 {
		return nil
	}
	chunks := (size + c - 1) / c
	var runs []ChunkRun
	// next is the first chunk not known to hold data or listed; hole
	// lists chunks [next, end) as a run, and says whether more may follow.
	next := int64(0)
	hole := func(end int64) bool {
		if end > next {
			runs = append(runs, ChunkRun{Start: next, Count: end - next})
		}
		return len(runs) < max
	}
	for off := int64(0); off < size; {
		d, err := f.Seek(off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // no data after off
		}
		if err != nil || d < off {
			return nil
		}
		if d >= size {
			break
		}
		h, err := f.Seek(d, unix.SEEK_HOLE)
		if err != nil || h <= d {
			return nil
		}
		h = min(h, size)
		if !hole(d / c) {
			return runs
		}
		next = (h + c - 1) / c
		off = h
	}
	hole(chunks)
	return runs
}
