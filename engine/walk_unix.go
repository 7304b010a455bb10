//go:build unix

package engine

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

var platformWalk = fdWalk

// fdWalk is walkTree through folder descriptors: each folder is opened
// inside its parent (openat with O_NOFOLLOW), its entries listed once and
// each regular file's attributes read with fstatat relative to it. A
// sender of D (10^5 files, up to 14 folders deep) spent a sixth of its walk
// resolving each file's whole path again for lstat (docs/benchmarks/trees.md).
func fdWalk(abs string, visit func(treeEntry) error) error {
	var st unix.Stat_t
	if err := unix.Lstat(abs, &st); err != nil {
		return &fs.PathError{Op: "lstat", Path: abs, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return visit(entryOf("", &st))
	}
	fd, err := openDir(unix.AT_FDCWD, abs)
	if err != nil {
		return &fs.PathError{Op: "open", Path: abs, Err: err}
	}
	return walkFD(abs, fd, "", visit)
}

// walkFD visits the folder open as fd (which it closes) and what is under it.
func walkFD(abs string, fd int, rel string, visit func(treeEntry) error) error {
	f := os.NewFile(uintptr(fd), filepath.Join(abs, filepath.FromSlash(rel)))
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		err = &fs.PathError{Op: "readdirent", Path: f.Name(), Err: err}
		if rel == "" {
			return err
		}
		return visit(treeEntry{rel: rel, typ: fs.ModeDir, unreadable: err}) // the walk goes on without it
	}
	if err := visit(treeEntry{rel: rel, typ: fs.ModeDir}); err != nil {
		return err
	}
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, d := range ents {
		name := d.Name()
		r := joinRel(rel, name)
		if !d.IsDir() {
			// Folders need no attributes, nor do the entries skipped
			// (their type came with the listing); a regular file may have
			// become something else since: fstatat does not follow it.
			e := treeEntry{rel: r, typ: d.Type()}
			if d.Type().IsRegular() {
				var st unix.Stat_t
				if err := fstatat(fd, name, &st); err != nil {
					return &fs.PathError{Op: "lstat", Path: filepath.Join(f.Name(), name), Err: err}
				}
				e = entryOf(r, &st)
			}
			if err := visit(e); err != nil {
				return err
			}
			continue
		}
		sub, err := openDir(fd, name)
		if err != nil {
			err = &fs.PathError{Op: "open", Path: filepath.Join(f.Name(), name), Err: err}
			if err := visit(treeEntry{rel: r, typ: fs.ModeDir, unreadable: err}); err != nil {
				return err
			}
			continue // a folder that cannot be opened (no permission): the walk goes on without it
		}
		if err := walkFD(abs, sub, r, visit); err != nil {
			return err
		}
	}
	return nil
}

// entryOf describes an entry from its lstat.
func entryOf(rel string, st *unix.Stat_t) treeEntry {
	e := treeEntry{rel: rel}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.size, e.perm, e.mtime, e.ctime = st.Size, fs.FileMode(st.Mode&0o777), st.Mtim.Nano(), st.Ctim.Nano()
		e.holey = st.Blocks*512 < st.Size
	case unix.S_IFDIR:
		e.typ = fs.ModeDir
	case unix.S_IFLNK:
		e.typ = fs.ModeSymlink
	default:
		e.typ = fs.ModeIrregular // devices, sockets, pipes: skipped, as WalkDir's types are
	}
	return e
}

func openDir(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func fstatat(dirfd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}

// changeTime is the change time of the file at path (following a symbolic
// link, as os.Stat does), 0 when it cannot be read.
func changeTime(path string) int64 {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0
	}
	return st.Ctim.Nano()
}
