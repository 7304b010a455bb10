// Package atomicfile replaces files so that a crash leaves either the old
// content or the new one, never a mix: temp file -> fsync -> rename -> fsync
// of the folder.
package atomicfile

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
)

// Write replaces name with data (mode perm). The folder must exist.
func Write(name string, data []byte, perm os.FileMode) error {
	return WriteWith(name, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteWith replaces name with what write writes (mode perm), streamed
// through a buffer: content too large to hold in memory at once (a resume
// snapshot of 10^6 files) is never held whole. An error from write leaves
// the old content.
func WriteWith(name string, perm os.FileMode, write func(io.Writer) error) error {
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
	bw := bufio.NewWriterSize(f, 256<<10)
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
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
