//go:build !unix

package store

import (
	"errors"
	"io/fs"
	"os"
)

// inside reports whether fo is still the folder found at its path from the
// destination's Root (a walk of the path): a folder moved out of the
// destination, or replaced, fails.
func (fo *folder) inside(d *Dest) bool {
	if fo == d.top {
		return true
	}
	now, err := d.root.Lstat(fo.path)
	return err == nil && now.IsDir() && os.SameFile(now, fo.id)
}

// create creates the file name (one element) in fo, failing if anything
// has that name (O_EXCL: never an existing file or a symlink's target).
func (fo *folder) create(name string) (*os.File, error) {
	root, err := fo.rootOf()
	if err != nil {
		return nil, err
	}
	return root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
}

// openRead opens the regular file name (one element) in fo for reading:
// never through a symlink, nor anything but a regular file, nor a file put
// in its place between the look and the open.
func (fo *folder) openRead(name string) (*os.File, error) {
	root, err := fo.rootOf()
	if err != nil {
		return nil, err
	}
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errNotRegular}
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	if now, err := f.Stat(); err != nil || !os.SameFile(fi, now) {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: errReplaced}
	}
	return f, nil
}

// holds reports whether the file called base in fo is the file id.
func (fo *folder) holds(base string, id fs.FileInfo) bool {
	root, err := fo.rootOf()
	if err != nil {
		return false
	}
	now, err := root.Lstat(base)
	return err == nil && os.SameFile(now, id)
}

// isDir reports whether name (one element) in fo is a folder, not a
// symlink to one; an error matching fs.ErrNotExist when nothing has that
// name.
func (fo *folder) isDir(name string) (bool, error) {
	root, err := fo.rootOf()
	if err != nil {
		return false, err
	}
	fi, err := root.Lstat(name)
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}

// mkdir creates the folder name (one element) in fo; an error matching
// fs.ErrExist when anything has that name.
func (fo *folder) mkdir(name string) error {
	root, err := fo.rootOf()
	if err != nil {
		return err
	}
	return root.Mkdir(name, 0o755)
}

// rmdir removes the folder name (one element) in fo if it is a folder and
// empty (the Root refuses to remove a folder with something in it).
func (fo *folder) rmdir(name string) error {
	root, err := fo.rootOf()
	if err != nil {
		return err
	}
	fi, err := root.Lstat(name)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &fs.PathError{Op: "rmdir", Path: name, Err: errors.New("not a folder")}
	}
	return root.Remove(name)
}
