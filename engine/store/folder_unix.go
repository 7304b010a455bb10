//go:build unix

package store

import (
	"io/fs"
	"os"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// inside reports whether fo is still inside the destination, as deep as
// when it was opened: its depth-th parent, found by the kernel walking ".."
// up from the open folder (one system call at any depth, no symlink on the
// way), is the destination. A folder moved or renamed out of the
// destination, or removed, fails. One moved elsewhere inside the
// destination at the same depth passes, which is safe: what is written
// into it stays inside.
func (fo *folder) inside(d *Dest) bool {
	if fo == d.top {
		return true
	}
	top, ok := d.top.id.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	var st unix.Stat_t
	err := unix.Fstatat(int(fo.dir.Fd()), strings.Repeat("../", fo.depth-1)+"..", &st, unix.AT_SYMLINK_NOFOLLOW)
	runtime.KeepAlive(fo.dir)
	return err == nil && uint64(st.Dev) == uint64(top.Dev) && uint64(st.Ino) == uint64(top.Ino)
}

// create creates the file name (one element) in fo, failing if anything
// has that name (O_EXCL, which never follows a symlink): what os.Root does
// for one element, without registering the file with Go's poller, which
// for a regular file only costs five system calls that fail or undo each
// other.
func (fo *folder) create(name string) (*os.File, error) {
	for {
		fd, err := unix.Openat(int(fo.dir.Fd()), name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		runtime.KeepAlive(fo.dir)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "create", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}
