package fileio

import (
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Folders opens the small files a sender was given (OpenSmall's bare
// descriptors) relative to the folders they are in, each folder opened
// once and held: a file of a tree costs an openat that resolves one name,
// not its whole path (up to 14 folders deep on workload D, where that
// lookup was about 7 % of the sender's CPU, docs/benchmarks/trees.md).
// Below the folder a path starts in, every folder and the file are opened
// without following a symbolic link, as the sender's walk read them
// (engine/walk_unix.go); a path that is one name (a file given by its own
// path) is followed, as open(2) of its whole path would. Elsewhere than
// Linux it is OpenSmall of the whole path. Safe for concurrent use; Close
// once, after the opens.
type Folders struct {
	mu    sync.Mutex // guards the fields below
	open  map[folderKey]*heldFolder
	clock uint64 // counts uses, so the least recently used folder goes first
}

// folderKey names a folder: dir (slash-separated, "" for top itself) in top.
type folderKey struct{ top, dir string }

type heldFolder struct {
	fd   int
	refs int    // opens using fd now: it is closed only when none is
	used uint64 // Folders.clock when last taken
}

// maxHeldFolders bounds the descriptors Folders holds. A sender's workers
// take files in the order of the walk, so the folders in use are those of
// a few neighbouring files and their parents; those no open uses are
// closed, least recently used first, to make room.
const maxHeldFolders = 64

// NewFolders returns an empty set of held folders.
func NewFolders() *Folders { return &Folders{open: map[folderKey]*heldFolder{}} }

// OpenSmall opens for reading the file rel (slash-separated) in the folder
// top (absolute, OS form), as OpenSmall(filepath.Join(top, rel)) would but
// without resolving the whole path, and without following a symbolic link
// below top when rel has folders. Errors are OpenSmall's: an *fs.PathError
// naming the whole path.
func (d *Folders) OpenSmall(top, rel string) (*Small, error) {
	dir, name, flags := "", rel, unix.O_RDONLY|unix.O_CLOEXEC
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dir, name, flags = rel[:i], rel[i+1:], flags|unix.O_NOFOLLOW
	}
	d.mu.Lock()
	h, err := d.take(top, dir)
	d.mu.Unlock()
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(top, filepath.FromSlash(rel)), Err: err}
	}
	fd, err := openat(h.fd, name, flags)
	d.mu.Lock()
	d.give(h)
	d.mu.Unlock()
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(top, filepath.FromSlash(rel)), Err: err}
	}
	return &Small{fd: fd, name: filepath.Join(top, filepath.FromSlash(rel))}, nil
}

// take returns the folder dir of top with a reference, opening it (and
// the folders above it that are not held) when it is not held. Opens under
// d.mu: a folder is opened once for every file in it, and two workers that
// need it at once open it once. Called with d.mu held.
func (d *Folders) take(top, dir string) (*heldFolder, error) {
	d.clock++
	k := folderKey{top, dir}
	if h := d.open[k]; h != nil {
		h.refs++
		h.used = d.clock
		return h, nil
	}
	var fd int
	var err error
	if dir == "" {
		// top as its path says, links and all: what the sender was given.
		fd, err = openat(unix.AT_FDCWD, top, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	} else {
		parent, name := "", dir
		if i := strings.LastIndexByte(dir, '/'); i >= 0 {
			parent, name = dir[:i], dir[i+1:]
		}
		var p *heldFolder
		if p, err = d.take(top, parent); err != nil {
			return nil, err
		}
		fd, err = openat(p.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
		d.give(p)
	}
	if err != nil {
		return nil, err
	}
	d.makeRoom()
	h := &heldFolder{fd: fd, refs: 1, used: d.clock}
	d.open[k] = h
	return h, nil
}

// give returns a reference taken by take. Called with d.mu held.
func (d *Folders) give(h *heldFolder) { h.refs-- }

// makeRoom closes the least recently used folder no open uses, if the
// set is full. Called with d.mu held.
func (d *Folders) makeRoom() {
	if len(d.open) < maxHeldFolders {
		return
	}
	var oldest folderKey
	var victim *heldFolder
	for k, h := range d.open {
		if h.refs == 0 && (victim == nil || h.used < victim.used) {
			oldest, victim = k, h
		}
	}
	if victim != nil {
		delete(d.open, oldest)
		unix.Close(victim.fd)
	}
}

// Close closes every folder held; the files opened through them stay open.
func (d *Folders) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, h := range d.open {
		unix.Close(h.fd)
		delete(d.open, k)
	}
	return nil
}

func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
