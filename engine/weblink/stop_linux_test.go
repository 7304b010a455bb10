package weblink

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Stop returns once the link is over (its doc says so): a shared folder
// is closed by then, so that a sharer who stops a link can unmount the
// stick it shared at once. Before, the folder was closed by a goroutine
// of its own that could run after Stop returned. The race is checked
// many times over, since one look could miss it.
func TestStopClosesTheSharedFolders(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	writeFile(t, dir, "a.txt", 10)
	s := startServer(t, Options{})
	for i := range 50 {
		l, err := s.Share(context.Background(), []string{dir}, ShareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := fdsOpenOn(t, dir); n == 0 {
			t.Fatalf("share %d: the shared folder is not open while shared", i)
		}
		l.Stop()
		if n := fdsOpenOn(t, dir); n != 0 {
			t.Fatalf("share %d: %d descriptors of the shared folder still open after Stop", i, n)
		}
	}
}

// fdsOpenOn counts this process's descriptors open on path.
func fdsOpenOn(t *testing.T, path string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}
