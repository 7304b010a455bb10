//go:build unix

package fileio

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Open opens the file name for reading, as os.Open does, without
// registering it with Go's poller: for a regular file the poller only
// costs system calls that fail or undo each other (four fcntl and a failing
// epoll_ctl per file on Linux; a sender of 10^5 small files spent an eighth
// of its CPU there, docs/benchmarks/trees.md). The file is blocking, as a
// regular file is anyway; Close and ReadAt work as on any *os.File.
func Open(name string) (*os.File, error) {
	for {
		fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}
