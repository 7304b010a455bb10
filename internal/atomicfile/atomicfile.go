// Package atomicfile replaces files so that a crash leaves either the old
// content or the new one, never a mix: temp file -> fsync -> rename -> fsync
// of the folder. Read reads such a file back, bounded, and SetAside moves
// one that could not be read out of the way without replacing another.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrTooLarge and ErrNotRegular are why Read refuses a file.
var (
	ErrTooLarge   = errors.New("over the size it may have")
	ErrNotRegular = errors.New("not a regular file")
)

// Read reads the regular file name, up to limit bytes, and returns its
// content and the FileInfo of the file it read. It reads from the file it
// opened and no further than limit: a file that grows after its size was
// read, or one put in its place meanwhile, is not read whole into memory.
// Anything else in its place (a pipe, whose open would wait for a writer,
// a device) is refused before it is opened. With ErrTooLarge or
// ErrNotRegular it returns the FileInfo of what it found.
func Read(name string, limit int64) ([]byte, os.FileInfo, error) {
	if fi, err := os.Stat(name); err != nil {
		return nil, nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fi, fmt.Errorf("%s: %w", name, ErrNotRegular)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, fmt.Errorf("%s: %w", name, ErrNotRegular)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(b)) > limit {
		return nil, fi, fmt.Errorf("%s is over %d bytes: %w", name, limit, ErrTooLarge)
	}
	return b, fi, nil
}

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

// ErrAsideFull is returned by SetAside when every name it may give is
// taken by a copy set aside before.
var ErrAsideFull = errors.New("none is replaced")

// SetAside renames the file name (a damaged one, say) to name+suffix in
// its folder, or to name+suffix+"-2" and on up to "-keep" when that is
// taken, and returns the base name it took. A copy set aside before is
// never replaced: with all keep names taken it returns ErrAsideFull and
// leaves the file where it is, so the copies kept use bounded space.
func SetAside(name, suffix string, keep int) (string, error) {
	for n := 1; n <= keep; n++ {
		to := name + suffix
		if n > 1 {
			to += "-" + strconv.Itoa(n)
		}
		if _, err := os.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.Rename(name, to); err != nil {
			return "", err
		}
		return filepath.Base(to), nil
	}
	base := filepath.Base(name) + suffix
	return "", fmt.Errorf("%d copies (%s, %s-2...) are kept there already: %w", keep, base, base, ErrAsideFull)
}
