package fileio

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Small reads as os.File.ReadAt does: every offset and length in and
// around the file gives the same bytes, count and io.EOF.
func TestSmallReadsAsOSFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	data := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSmall(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, c := range []struct{ off, n int }{
		{0, 0}, {0, 1}, {0, len(data)}, {7, 100}, {len(data) - 3, 3}, {len(data) - 3, 10},
		{len(data), 1}, {len(data) + 5, 4}, {0, len(data) + 1},
	} {
		want, got := make([]byte, c.n), make([]byte, c.n)
		wn, werr := f.ReadAt(want, int64(c.off))
		gn, gerr := s.ReadAt(got, int64(c.off))
		if gn != wn || !bytes.Equal(got[:gn], want[:wn]) || (werr == io.EOF) != (gerr == io.EOF) || (werr == nil) != (gerr == nil) {
			t.Errorf("ReadAt(%d bytes at %d): %d, %v; os.File: %d, %v", c.n, c.off, gn, gerr, wn, werr)
		}
	}
	if _, err := s.ReadAt(make([]byte, 1), -1); err == nil {
		t.Error("a negative offset read")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("a second Close: %v, want fs.ErrClosed", err)
	}
	if _, err := OpenSmall(filepath.Join(t.TempDir(), "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}
