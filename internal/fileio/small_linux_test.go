package fileio

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// TestOpenHelper is not a test of its own: run by TestOpenSkipsThePoller, it
// opens (OpenSmall), reads and closes every file of a folder.
func TestOpenHelper(t *testing.T) {
	dir := testutil.HelperArg(t)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	for _, e := range ents {
		f, err := OpenSmall(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if n, err := f.ReadAt(buf, 0); n != len(e.Name()) || string(buf[:n]) != e.Name() {
			t.Fatalf("%s: read %q, %v", e.Name(), buf[:n], err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A sender opens every file it sends: OpenSmall must not cost the poller's
// system calls per file (os.Open: four fcntl and a failing epoll_ctl for a
// regular file; os.NewFile one fcntl). Counted with strace; skipped where it
// cannot run.
func TestOpenSkipsThePoller(t *testing.T) {
	const files = 500
	dir := t.TempDir()
	for i := range files {
		name := fmt.Sprintf("f%04d", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	calls := testutil.CountSyscalls(t, "TestOpenHelper", "fcntl,epoll_ctl,openat,pread64", dir)
	if n, _ := calls.Calls("pread64"); n < files {
		t.Fatalf("the helper read %d times, not once per file (%d):\n%s", n, files, calls)
	}
	fcntl, _ := calls.Calls("fcntl")
	epoll, _ := calls.Calls("epoll_ctl")
	// The runtime's own start makes a few.
	if per := float64(fcntl+epoll) / files; per > 0.2 {
		t.Errorf("%.1f fcntl and epoll_ctl per opened file, want at most 0.2:\n%s", per, calls)
	}
}
