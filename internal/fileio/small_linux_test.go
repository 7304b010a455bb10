package fileio

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// openHelperEnv makes the test binary open the files of a folder with
// OpenSmall (TestOpenHelper), for TestOpenSkipsThePoller to count its system
// calls.
const openHelperEnv = "FILEIO_SMALL_HELPER_DIR"

// TestOpenHelper is not a test of its own: run by TestOpenSkipsThePoller, it
// opens (OpenSmall), reads and closes every file of a folder.
func TestOpenHelper(t *testing.T) {
	dir := os.Getenv(openHelperEnv)
	if dir == "" {
		t.Skip("run by TestOpenSkipsThePoller")
	}
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
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	const files = 500
	dir := t.TempDir()
	for i := range files {
		name := fmt.Sprintf("f%04d", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	counts := filepath.Join(t.TempDir(), "counts")
	cmd := exec.Command(strace, "-f", "-c", "-e", "trace=fcntl,epoll_ctl,openat,pread64", "-o", counts,
		os.Args[0], "-test.run=^TestOpenHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), openHelperEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		if bytes.Contains(out, []byte("ptrace")) {
			t.Skipf("strace cannot trace here: %s", out)
		}
		t.Fatalf("helper: %v\n%s", err, out)
	}
	table, err := os.ReadFile(counts)
	if err != nil {
		t.Fatal(err)
	}
	calls := func(name string) int {
		m := regexp.MustCompile(`(?m)^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?` + name + `$`).FindSubmatch(table)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	if n := calls("pread64"); n < files {
		t.Fatalf("the helper read %d times, not once per file (%d):\n%s", n, files, table)
	}
	// The runtime's own start makes a few.
	if per := float64(calls("fcntl")+calls("epoll_ctl")) / files; per > 0.2 {
		t.Errorf("%.1f fcntl and epoll_ctl per opened file, want at most 0.2:\n%s", per, table)
	}
}
