//go:build unix

package fileio

import (
	"io"
	"io/fs"

	"golang.org/x/sys/unix"
)

// WriteSmall writes b at off into the bare descriptor fd as a Writer of any
// mode writes into a small file: through the page cache, in pieces of at
// most cachedPiece bytes, all of b unless an error stops it. It is for a
// file that stays below directio.Min (no direct write is possible) and so
// below closeKick and the write-behind window (nothing to start or drop):
// there a Writer, and the os.File it needs, only cost system calls and
// allocations (a receiver of many small files, store.Partial).
func WriteSmall(fd int, b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "writeat", Err: fs.ErrInvalid}
	}
	n := 0
	for n < len(b) {
		m, err := unix.Pwrite(fd, b[n:min(len(b), n+cachedPiece)], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "write", Err: err}
		}
		if m == 0 {
			return n, io.ErrShortWrite
		}
		n += m
	}
	return n, nil
}
