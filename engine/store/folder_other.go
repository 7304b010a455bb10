//go:build !unix

package store

import "os"

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
	return fo.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
}
