//go:build unix

package fileio

import (
	"io"
	"io/fs"

	"golang.org/x/sys/unix"
)

// Small is a file opened for reading with OpenSmall: a descriptor without an
// os.File around it. Safe for concurrent ReadAt; Close once, after the reads.
type Small struct {
	fd   int
	name string
}

// OpenSmall opens the file name for reading, as os.Open does, for a file
// that is read in one or a few reads (a small file of a tree): no os.File
// (and so none of Go's poller, which for a regular file only costs system
// calls that fail or undo each other: four fcntl and a failing epoll_ctl on
// Linux, and os.NewFile's fcntl), no finalizer. A sender of 10^5 small
// files spent about a tenth of its CPU on those (docs/benchmarks/trees.md).
// The reads are the same pread(2) an os.File makes.
func OpenSmall(name string) (*Small, error) {
	for {
		fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &Small{fd: fd, name: name}, nil
	}
}

// ReadAt reads like os.File.ReadAt: len(b) bytes at off, or io.EOF when the
// file ends before.
func (f *Small) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: fs.ErrInvalid}
	}
	n := 0
	for n < len(b) {
		m, err := unix.Pread(f.fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "read", Path: f.name, Err: err}
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

// Close closes the file; a second Close fails rather than close a
// descriptor number reused meanwhile.
func (f *Small) Close() error {
	fd := f.fd
	if fd < 0 {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.fd = -1
	if err := unix.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}
