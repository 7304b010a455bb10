// Package atomicfile replaces files so that a crash leaves either the old
// content or the new one, never a mix: temp file -> fsync -> rename -> fsync
// of the folder.
package atomicfile

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
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
	f, err := os.CreateTemp(dir, tempPrefix(name)+"*")
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

func tempPrefix(name string) string { return "." + filepath.Base(name) + ".tmp" }

// RemoveLeftovers removes the temp files that writes of name left behind
// when the process was killed before their rename (".NAME.tmpNNN"). Only
// for a file that one process writes, at a time nothing else writes it
// (at start): another's write in progress would lose its temp file.
func RemoveLeftovers(name string) {
	ents, err := os.ReadDir(filepath.Dir(name))
	if err != nil {
		return
	}
	prefix := tempPrefix(name)
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), prefix) {
			os.Remove(filepath.Join(filepath.Dir(name), e.Name()))
		}
	}
}
