//go:build unix

package shacache

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A pipe in the cache file's place (another process's) is refused as it
// is: its size said 0 bytes, and the cache then read all the pipe gave
// past its bound, found it did not parse and set the pipe aside as .bad.
func TestCacheFileThatIsAPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip(err)
	}
	// Opened for reading and writing, a pipe does not wait for a reader;
	// the write does, once the pipe's buffer is full.
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		w.Write(make([]byte, maxFileBytes+1))
		w.Close()
	}()
	t.Cleanup(func() {
		if r, err := os.Open(path); err == nil {
			io.Copy(io.Discard, r) // lets the write end
			r.Close()
		}
		<-wrote
	})
	c, err := Open(path, 0)
	if err == nil || c != nil {
		t.Fatalf("a pipe was read as the cache: %v", err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the pipe was moved: %v", err)
	}
}
