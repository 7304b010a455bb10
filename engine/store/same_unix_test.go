//go:build unix

package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSameFileCheckPassesAFIFOBy: a FIFO under the name (no file a sender
// sends, but one a local program may leave in the download folder) is not
// opened to be read, which would wait for a writer forever: the file is
// numbered beside it, at once.
func TestSameFileCheckPassesAFIFOBy(t *testing.T) {
	d, dir := openDest(t)
	writeFile(t, dir, "p/.keep", "")
	if err := unix.Mkfifo(filepath.Join(dir, "p", "a.txt"), 0o644); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	p, err := d.CreatePartial("p/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("new bytes")
	if _, err := p.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	p.SetSame(func(*os.File) bool {
		t.Error("the check was asked of a FIFO")
		return true
	})
	type result struct {
		saved string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		saved, err := d.Finalize(p, "p/a.txt", int64(len(data)))
		done <- result{saved, err}
	}()
	select {
	case r := <-done:
		if r.err != nil || r.saved != "p/a (1).txt" {
			t.Errorf("saved as %q (%v), want p/a (1).txt", r.saved, r.err)
		}
	case <-time.After(10 * time.Second):
		// Let the open end, so that the test's cleanup does not hang too.
		if f, err := os.OpenFile(filepath.Join(dir, "p", "a.txt"), os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Finalize still waits after 10 s: it opened the FIFO to read it")
	}
}
