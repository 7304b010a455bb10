package fileio

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// writeTree makes the files rels (slash-separated) under top, each holding
// its own name.
func writeTree(tb testing.TB, top string, rels ...string) {
	tb.Helper()
	for _, rel := range rels {
		name := filepath.Join(top, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(rel), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// readSmall opens rel in top through d and reads it whole.
func readSmall(d *Folders, top, rel string) (string, error) {
	f, err := d.OpenSmall(top, rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, 256)
	n, err := f.ReadAt(b, 0)
	if err != nil && err != io.EOF {
		return "", err
	}
	return string(b[:n]), nil
}

// A file opened through Folders is the file OpenSmall of its whole path
// opens, and a failure is OpenSmall's error, naming the whole path.
func TestFoldersOpenWhatOpenSmallOpens(t *testing.T) {
	top := t.TempDir()
	rels := []string{"f", "tree/a", "tree/b/c", "tree/b/d/e", "tree/b/z", "tree/y", "other/x"}
	writeTree(t, top, rels...)
	d := NewFolders()
	defer d.Close()
	for range 2 { // the second time from folders already held
		for _, rel := range rels {
			if got, err := readSmall(d, top, rel); err != nil || got != rel {
				t.Errorf("%s: read %q, %v", rel, got, err)
			}
		}
	}
	for _, rel := range []string{"none", "tree/none", "tree/b/none/e", "none/x", "tree/a/x"} {
		_, err := d.OpenSmall(top, rel)
		_, want := OpenSmall(filepath.Join(top, filepath.FromSlash(rel)))
		var pe *fs.PathError
		if err == nil || !errors.As(err, &pe) || err.Error() != want.Error() || !errors.Is(err, errors.Unwrap(want)) {
			t.Errorf("%s: %v, want %v", rel, err, want)
		}
	}
	if _, err := d.OpenSmall(filepath.Join(top, "none"), "x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("in a missing folder: %v", err)
	}
}
