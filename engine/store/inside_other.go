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
