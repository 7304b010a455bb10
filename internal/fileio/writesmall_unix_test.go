//go:build unix

package fileio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// WriteSmall leaves a file as os.File.WriteAt does: any length (within and
// across its pieces) at any offset, holes included.
func TestWriteSmallWritesAsOSFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ off, n int }{
		{0, 0}, {0, 1}, {0, cachedPiece - 1}, {0, cachedPiece}, {0, cachedPiece + 1}, {3, 3*cachedPiece + 17}, {100000, 5},
	} {
		data := make([]byte, c.n)
		for i := range data {
			data[i] = byte(i*7 + c.off)
		}
		want, got := filepath.Join(dir, "want"), filepath.Join(dir, "got")
		fw, err := os.Create(want)
		if err != nil {
			t.Fatal(err)
		}
		fw.WriteAt(data, int64(c.off))
		fw.Close()
		fg, err := os.Create(got)
		if err != nil {
			t.Fatal(err)
		}
		n, err := WriteSmall(int(fg.Fd()), data, int64(c.off))
		fg.Close()
		if n != c.n || err != nil {
			t.Errorf("WriteSmall(%d bytes at %d) = %d, %v", c.n, c.off, n, err)
		}
		a, _ := os.ReadFile(want)
		b, _ := os.ReadFile(got)
		if !bytes.Equal(a, b) {
			t.Errorf("WriteSmall(%d bytes at %d): a file of %d bytes unlike os.File's %d", c.n, c.off, len(b), len(a))
		}
	}
	if _, err := WriteSmall(-1, []byte("x"), 0); err == nil {
		t.Error("WriteSmall to a bad descriptor: no error")
	}
	if _, err := WriteSmall(0, []byte("x"), -1); err == nil {
		t.Error("WriteSmall at a negative offset: no error")
	}
}
