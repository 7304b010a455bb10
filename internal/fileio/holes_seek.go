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
	return holeBytes(seekData(f), size, chunk)
}

// HoleChunks lists the chunks of f's first size bytes, cut in chunks of
// chunk bytes (the last one shorter), that hold no data at all, as
// HoleBytes counts them: runs of chunk indexes, in order, at most max of
// them (the first ones; the chunks beyond are left out, as if they held
// data). nil where the file system cannot tell, or on any error. It moves
// f's offset.
func HoleChunks(f *os.File, size int64, chunk int, max int) []ChunkRun {
	return holeChunks(seekData(f), size, chunk, max)
}

// seekData finds f's runs of data with lseek's SEEK_DATA and SEEK_HOLE.
func seekData(f *os.File) dataAfter {
	return func(off int64) (int64, int64, bool, error) {
		d, err := f.Seek(off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return 0, 0, false, nil // no data after off
		}
		if err != nil {
			return 0, 0, false, err
		}
		if d < off {
			return 0, 0, false, errors.New("SEEK_DATA went back")
		}
		h, err := f.Seek(d, unix.SEEK_HOLE)
		if err != nil {
			return 0, 0, false, err
		}
		if h <= d {
			return 0, 0, false, errors.New("SEEK_HOLE found no data")
		}
		return d, h, true, nil
	}
}
