package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// openIn opens the folder name (one element) in fo, path being its path
// from the destination. On Linux a folder is opened by its descriptor alone
// (openat with O_DIRECTORY and O_NOFOLLOW: a symlink, even to a folder
// inside, is refused) and an os.NewFile around it, which stays out of Go's
// poller; its Root is opened only if something needs it (rootOf, through
// /proc/self/fd, the very same folder). os.Root.OpenRoot and Root.Open(".")
// cost a folder about nine system calls (four fcntl and a failing epoll_ctl
// of the poller among them) and two descriptors, where this takes two
// (docs/benchmarks/trees.md). Without /proc it is opened through fo's Root.
func (fo *folder) openIn(name, path string) (*folder, error) {
	if !procFDs() {
		return fo.openInRoot(name, path)
	}
	for {
		fd, err := unix.Openat(int(fo.dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		runtime.KeepAlive(fo.dir)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "openat", Path: name, Err: err}
		}
		depth := fo.depth + 1
		return &folder{path: path, depth: depth, up: upTo(depth), dir: os.NewFile(uintptr(fd), path)}, nil
	}
}

// rootFromDir opens the folder dir has open as an os.Root: its entry in
// /proc/self/fd names the open folder itself, wherever it is now, not a
// path walked again; that it is the same folder is checked.
func rootFromDir(dir *os.File) (*os.Root, error) {
	r, err := os.OpenRoot("/proc/self/fd/" + strconv.Itoa(int(dir.Fd())))
	runtime.KeepAlive(dir)
	if err != nil {
		return nil, err
	}
	want, err := dir.Stat()
	if err != nil {
		r.Close()
		return nil, err
	}
	got, err := r.Stat(".")
	if err != nil || !os.SameFile(got, want) {
		r.Close()
		return nil, fmt.Errorf("open %s as a root: %w", dir.Name(), errors.Join(err, errors.New("not the same folder")))
	}
	return r, nil
}
