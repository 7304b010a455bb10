package store

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// createUnnamed creates a regular file without a name in fo's file system
// (O_TMPFILE), to be linked into fo by linkUnnamed. It fails with an error
// matching errors.ErrUnsupported where the file system has no O_TMPFILE
// (vfat, some FUSE and network file systems) or where the link would have no
// way to name it (no /proc).
func (fo *folder) createUnnamed() (int, error) {
	if !procFDs() {
		return -1, errNoUnnamed
	}
	for {
		fd, err := unix.Openat(int(fo.dir.Fd()), ".", unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o644)
		runtime.KeepAlive(fo.dir)
		switch {
		case err == unix.EINTR:
			continue
		case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL):
			// EISDIR: a kernel before 3.11, which reads O_TMPFILE as O_DIRECTORY.
			return -1, errNoUnnamed
		case err != nil:
			return -1, &fs.PathError{Op: "create", Path: fo.path, Err: err}
		}
		return fd, nil
	}
}

// linkUnnamed gives the unnamed file open as fd the name name in fo, failing with an
// error matching fs.ErrExist if anything (even a dangling symlink) has that
// name: link(2) never replaces. It links the descriptor itself (linkat with
// AT_EMPTY_PATH, which Linux 6.10 and later allow the process that opened
// the file; before, only with a privilege), or else its entry in /proc
// (createUnnamed checked that there is one).
func (fo *folder) linkUnnamed(fd int, name string) error {
	for {
		var err error
		if !emptyPathRefused.Load() {
			err = unix.Linkat(fd, "", int(fo.dir.Fd()), name, unix.AT_EMPTY_PATH)
			if err == unix.ENOENT || err == unix.EPERM {
				emptyPathRefused.Store(true) // not here: from now on through /proc
			}
		}
		if emptyPathRefused.Load() {
			err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), int(fo.dir.Fd()), name, unix.AT_SYMLINK_FOLLOW)
		}
		runtime.KeepAlive(fo.dir)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.LinkError{Op: "link", Old: "(unnamed)", New: name, Err: err}
		}
		return nil
	}
}

// unnamedIdentity is fdIdentity of p, a partial without a name, through
// its descriptor, bare or wrapped.
func (p *Partial) unnamedIdentity() (string, error) {
	r := p.raw
	r.mu.RLock()
	defer r.mu.RUnlock()
	switch {
	case p.f != nil:
		return fileIdentity(p.f)
	case r.closed:
		return "", os.ErrClosed
	}
	return fdIdentity(r.fd)
}

// emptyPathRefused is set once linkat refused AT_EMPTY_PATH.
var emptyPathRefused atomic.Bool

// procFDs reports whether this process can name its descriptors through
// /proc/self/fd (not where /proc is not mounted, or hidden).
var procFDs = sync.OnceValue(func() bool {
	f, err := os.Open(".")
	if err != nil {
		return false
	}
	defer f.Close()
	via, err := os.Stat("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return false
	}
	st, err := f.Stat()
	return err == nil && os.SameFile(via, st)
})

// closeFD closes a bare descriptor (rawFile).
func closeFD(fd int) error {
	if err := unix.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Err: err}
	}
	return nil
}
