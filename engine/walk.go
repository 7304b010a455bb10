package engine

import (
	"io/fs"
	"path"
	"path/filepath"

	"github.com/ferrydrop/ferry/engine/store"
)

// treeEntry is one entry found under a folder given to send.
type treeEntry struct {
	rel   string      // slash-separated, relative to the folder ("" for the folder itself)
	typ   fs.FileMode // the type bits: fs.ModeDir, fs.ModeSymlink, 0 for a regular file, ...
	size  int64       // regular files: the size,
	perm  fs.FileMode // the permission bits
	mtime int64       // and the modification time (Unix nanoseconds),
	ctime int64       // and the change time where the platform has one (else 0): see manifestID
	// holey: a regular file that may hold holes (store.MayHoldHoles: it
	// takes fewer blocks than its size, or, on Windows, is marked sparse):
	// the send looks for its holes (sender.entries). Others are not opened
	// for that.
	holey bool
	// unreadable: a folder inside the walked one that could not be opened
	// or listed (no permission): the walk goes on without it.
	unreadable error
}

// walkTree calls visit for the folder abs and everything under it, in the
// order filepath.WalkDir visits them (depth first, each folder's entries in
// lexical order), without following symbolic links. An error reading a
// folder or an entry ends the walk with an *fs.PathError naming it.
// walk_unix.go reads each folder through its descriptor (openat, fstatat),
// so a file's attributes cost one system call that resolves one name, not
// its whole path; elsewhere it is filepath.WalkDir.
func walkTree(abs string, visit func(treeEntry) error) error { return platformWalk(abs, visit) }

// walkDirTree is walkTree through filepath.WalkDir.
func walkDirTree(abs string, visit func(treeEntry) error) error {
	return filepath.WalkDir(abs, func(src string, d fs.DirEntry, err error) error {
		r, rerr := filepath.Rel(abs, src)
		if err != nil {
			if d != nil && d.IsDir() && rerr == nil && r != "." {
				// A folder inside that cannot be listed: the walk goes on.
				if err := visit(treeEntry{rel: filepath.ToSlash(r), typ: fs.ModeDir, unreadable: err}); err != nil {
					return err
				}
				return filepath.SkipDir
			}
			return err
		}
		if rerr != nil {
			return rerr
		}
		e := treeEntry{typ: d.Type()}
		if r != "." {
			e.rel = filepath.ToSlash(r)
		}
		if e.typ.IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			e.typ, e.size, e.perm, e.mtime = info.Mode().Type(), info.Size(), info.Mode().Perm(), info.ModTime().UnixNano()
			e.ctime = changeTime(src) // 0 where there is none (its only use in production: Windows)
			e.holey = store.MayHoldHoles(info)
		}
		return visit(e)
	})
}

// joinRel joins a relative slash path and a name.
func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return path.Join(rel, name)
}
