//go:build darwin || windows

package fileio

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
)

// On a Mac (APFS) and on Windows (NTFS), where a Writer left no holes
// before (zeros were written there), a temporary folder keeps them
// (LeavesHoles: F_PUNCHHOLE, FSCTL_SET_ZERO_DATA), and a chunk of zeros
// inside a sparse file's size is a hole, read back as zeros, and found
// by HoleBytes and HoleChunks as a sender looks for them. Vetted and
// cross-compiled on Linux (GOOS=darwin, GOOS=windows go vet), not run
// there: it needs a Mac or Windows runner.
func TestZeroChunksLeaveHolesOnMacAndWindows(t *testing.T) {
	dir := t.TempDir()
	if !LeavesHoles(dir) {
		t.Fatalf("%s keeps no holes", dir)
	}
	path := filepath.Join(dir, "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const chunk, size = 1 << 20, 8 << 20
	MarkSparse(f)
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, Auto)
	want := make([]byte, size)
	rand.Read(want[:chunk])
	for off := 0; off < size; off += chunk {
		if _, err := w.WriteAt(want[off:off+chunk], int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if w.Holes() != size-chunk {
		t.Errorf("%d bytes left as holes, want the %d of zeros", w.Holes(), size-chunk)
	}
	// A sender finds them (SEEK_DATA on a Mac, FSCTL_QUERY_ALLOCATED_RANGES
	// on Windows), the first chunk as data.
	if got := HoleBytes(f, size, chunk); got != size-chunk {
		t.Errorf("HoleBytes finds %d bytes of holes, want %d", got, size-chunk)
	}
	if got := HoleChunks(f, size, chunk, 10); len(got) != 1 || got[0] != (ChunkRun{Start: 1, Count: size/chunk - 1}) {
		t.Errorf("HoleChunks lists %v, want chunks 1-%d", got, size/chunk-1)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Error("read back differs")
	}
}
