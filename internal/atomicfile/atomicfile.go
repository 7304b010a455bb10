// Package atomicfile replaces files so that a crash leaves either the old
// content or the new one, never a mix: temp file -> fsync -> rename -> fsync
// of the folder.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces name with data (mode perm). The folder must exist.
func Write(name string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after a successful rename
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: not every platform can fsync a folder; the rename is what matters
		d.Close()
	}
	return nil
}
