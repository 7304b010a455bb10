//go:build unix

package store

import (
	"io/fs"
	"os"
	"runtime"
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
	err := unix.Fstatat(int(fo.dir.Fd()), fo.up, &st, unix.AT_SYMLINK_NOFOLLOW)
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

// openRead opens the regular file name (one element) in fo for reading:
// never through a symlink, nor anything but a regular file (a FIFO would
// block the open until a writer came, a device may act on an open), nor a
// file put in its place between the look and the open (O_NOFOLLOW,
// O_NONBLOCK, then its number checked). As create, it is not registered
// with Go's poller.
func (fo *folder) openRead(name string) (*os.File, error) {
	var st, now unix.Stat_t
	if err := fo.stat(name, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errNotRegular}
	}
	for {
		fd, err := unix.Openat(int(fo.dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		runtime.KeepAlive(fo.dir)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		if err := unix.Fstat(fd, &now); err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
			unix.Close(fd)
			return nil, &fs.PathError{Op: "open", Path: name, Err: errReplaced}
		}
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}

// stat is lstat(2) of name (one element) in fo: it follows no symlink.
func (fo *folder) stat(name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(int(fo.dir.Fd()), name, st, unix.AT_SYMLINK_NOFOLLOW)
		runtime.KeepAlive(fo.dir)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "lstat", Path: name, Err: err}
		}
		return nil
	}
}

// holds reports whether the file called base in fo is the file id.
func (fo *folder) holds(base string, id fs.FileInfo) bool {
	want, ok := id.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	var st unix.Stat_t
	return fo.stat(base, &st) == nil && uint64(st.Dev) == uint64(want.Dev) && uint64(st.Ino) == uint64(want.Ino)
}

// isDir reports whether name (one element) in fo is a folder, not a
// symlink to one; an error matching fs.ErrNotExist when nothing has that
// name.
func (fo *folder) isDir(name string) (bool, error) {
	var st unix.Stat_t
	if err := fo.stat(name, &st); err != nil {
		return false, err
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}

// mkdir creates the folder name (one element) in fo; an error matching
// fs.ErrExist when anything has that name.
func (fo *folder) mkdir(name string) error {
	for {
		err := unix.Mkdirat(int(fo.dir.Fd()), name, 0o755)
		runtime.KeepAlive(fo.dir)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "mkdirat", Path: name, Err: err}
		}
		return nil
	}
}

// rmdir removes the folder name (one element) in fo if it is empty:
// unlinkat with AT_REMOVEDIR removes nothing but an empty folder.
func (fo *folder) rmdir(name string) error {
	for {
		err := unix.Unlinkat(int(fo.dir.Fd()), name, unix.AT_REMOVEDIR)
		runtime.KeepAlive(fo.dir)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "rmdir", Path: name, Err: err}
		}
		return nil
	}
}
