package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// folderHelperEnv makes the test binary receive files into new folders
// (TestFolderHelper), for TestNewFoldersSkipThePoller to count its system
// calls.
const folderHelperEnv = "FERRY_STORE_FOLDER_HELPER_DIR"

const helperFolders = 300

// TestFolderHelper is not a test of its own: run by
// TestNewFoldersSkipThePoller, it receives one whole file into each of
// helperFolders new folders, two deep.
func TestFolderHelper(t *testing.T) {
	dir := os.Getenv(folderHelperEnv)
	if dir == "" {
		t.Skip("run by TestNewFoldersSkipThePoller")
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range helperFolders {
		rel := fmt.Sprintf("top/f%03d/x.txt", i)
		p := createWhole(t, d, rel)
		if _, err := p.WriteAt([]byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Finalize(p, rel, 1); err != nil {
			t.Fatal(err)
		}
	}
}

// A tree of small files has a new folder every nine files or so (workload
// D): opening one must not cost Go's poller its system calls (os.Root's
// Open(".") registers the folder: four fcntl and an epoll_ctl that fails
// with EPERM) nor a second descriptor (an os.Root beside the os.File); and
// a small file is written through its bare descriptor (rawFile: no
// os.NewFile and its fcntl). Counted with strace: per new folder one openat
// for it and one for its file, one fcntl (the folder's os.NewFile), no
// epoll_ctl. Skipped where strace cannot run.
func TestNewFoldersSkipThePoller(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	if !procFDs() {
		t.Skip("no /proc/self/fd: folders are opened through their Root here")
	}
	counts := filepath.Join(t.TempDir(), "counts")
	cmd := exec.Command(strace, "-f", "-c", "-e", "trace=epoll_ctl,fcntl,openat,mkdirat", "-o", counts,
		os.Args[0], "-test.run=^TestFolderHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), folderHelperEnv+"="+filepath.Join(t.TempDir(), "dst"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("ptrace")) {
			t.Skipf("strace cannot trace here: %s", out)
		}
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestFolderHelper")) {
		t.Fatalf("the helper did not run:\n%s", out)
	}
	table, err := os.ReadFile(counts)
	if err != nil {
		t.Fatal(err)
	}
	row := func(name string) (calls int) {
		m := regexp.MustCompile(`(?m)^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?` + name + `$`).FindSubmatch(table)
		if m == nil {
			return 0
		}
		calls, _ = strconv.Atoi(string(m[1]))
		return calls
	}
	if n := row("mkdirat"); n < helperFolders {
		t.Fatalf("%d mkdirat for %d new folders:\n%s", n, helperFolders, table)
	}
	epoll, fcntl, openat := row("epoll_ctl"), row("fcntl"), row("openat")
	t.Logf("%d new folders with a file each: %d epoll_ctl, %d fcntl, %d openat", helperFolders, epoll, fcntl, openat)
	// The test binary's own start makes a few of each.
	if epoll > helperFolders/10 || fcntl > helperFolders+30 || openat > 2*helperFolders+30 {
		t.Errorf("%d new folders with a file each made %d epoll_ctl, %d fcntl and %d openat; want none, 1 and 2 per folder "+
			"(the file in an os.File: 2 fcntl; the folder through os.Root: 1 epoll_ctl, 4 fcntl more, 1 openat more):\n%s",
			helperFolders, epoll, fcntl, openat, table)
	}
}

// A folder opened by its descriptor alone gets its Root when something
// needs one (a named partial discarded, reopened, truncated, or linked where
// renameat cannot refuse to replace): the very folder, even once it moved.
func TestFolderRootOpenedLater(t *testing.T) {
	d, dir := openDest(t)
	p, err := d.CreatePartial("a/b/c.txt")
	if err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	fo := d.folders[filepath.Join("a", "b")]
	d.mu.Unlock()
	if fo == nil || fo.root != nil {
		t.Fatalf("folder a/b: %+v; want one without a Root yet", fo)
	}
	if _, err := p.WriteAt([]byte("half"), 0); err != nil {
		t.Fatal(err)
	}
	p.Close()
	q, err := d.OpenPartial(p.Name(), "")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := q.Size(); err != nil || n != 4 {
		t.Errorf("reopened partial: %d bytes, %v", n, err)
	}
	q.Close()
	if err := d.truncate(q, 2); err != nil { // closed: through a fresh handle from the Root
		t.Fatal(err)
	}
	if err := d.Discard(q); err != nil {
		t.Fatal(err)
	}
	assertTree(t, dir, map[string]string{})

	// The Root of a folder that moved away is that folder, not the path.
	r, err := d.CreatePartial("m/x.txt")
	if err != nil {
		t.Fatal(err)
	}
	away := filepath.Join(t.TempDir(), "away")
	if err := os.Rename(filepath.Join(dir, "m"), away); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := r.fo.rootOf()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Lstat("x.txt.partial"); err != nil {
		t.Errorf("the Root of a moved folder does not hold its partial: %v", err)
	}
	if err := d.Discard(r); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Log(err)
	}
}
