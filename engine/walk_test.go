//go:build unix

package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// walkFixture makes a tree with what a sender meets: files at several
// depths, an empty file, an empty folder, symbolic links to a file and to a
// folder, and (where there are) a named pipe.
func walkFixture(t testing.TB) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "tree")
	for _, f := range []string{"b.txt", "a/z.txt", "a/b/c/d.txt", "a/b/e.txt", "a/b/empty", "Z/upper.txt", "m/n/o/p/q/r.txt"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		content := []byte(f)
		if filepath.Base(f) == "empty" {
			content = nil
		}
		if err := os.WriteFile(p, content, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "a/nothing/here"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A sparse file: grown without data, so it may hold holes (on Windows
	// a file is sparse only once marked so: there it is not).
	if f, err := os.Create(filepath.Join(root, "m/sparse")); err != nil {
		t.Fatal(err)
	} else if err := f.Truncate(8 << 20); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	if err := os.Symlink("b.txt", filepath.Join(root, "link-file")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(root, "m/link-dir")); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if err := syscall.Mkfifo(filepath.Join(root, "a/pipe"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func collectWalk(t *testing.T, walk func(string, func(treeEntry) error) error, root string) []treeEntry {
	t.Helper()
	var got []treeEntry
	if err := walk(root, func(e treeEntry) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}

// The walk through folder descriptors sees what filepath.WalkDir sees, in
// the same order, with the same attributes.
func TestWalkTreeMatchesWalkDir(t *testing.T) {
	root := walkFixture(t)
	want := collectWalk(t, walkDirTree, root)
	got := collectWalk(t, walkTree, root)
	if !slices.Equal(got, want) {
		t.Fatalf("walkTree:\n%+v\nfilepath.WalkDir:\n%+v", got, want)
	}
	if len(want) < 15 {
		t.Fatalf("the fixture has only %d entries: %+v", len(want), want)
	}
	for _, e := range want {
		if holey := e.rel == "m/sparse" && runtime.GOOS != "windows"; e.holey != holey {
			t.Errorf("%q: holey %v, want %v", e.rel, e.holey, holey)
		}
	}
	// A symbolic link given as the folder is not followed either.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	if got, want := collectWalk(t, walkTree, link), collectWalk(t, walkDirTree, link); !slices.Equal(got, want) {
		t.Fatalf("a linked folder: walkTree %+v, filepath.WalkDir %+v", got, want)
	}
}

// A folder inside that cannot be read (here: removed after its parent was
// listed; as well, one without permission) is visited as unreadable, with
// an error naming it, and the walk goes on without it: a send leaves it
// out and says so. The folder given itself ends the walk.
func TestWalkTreeFolderGone(t *testing.T) {
	for _, w := range []struct {
		name string
		walk func(string, func(treeEntry) error) error
	}{{"walkTree", walkTree}, {"filepath.WalkDir", walkDirTree}} {
		root := walkFixture(t)
		gone := filepath.Join(root, "a", "nothing")
		var unreadable []treeEntry
		after := 0
		err := w.walk(root, func(e treeEntry) error {
			switch {
			case e.rel == "a/b/e.txt":
				return os.RemoveAll(gone)
			case e.unreadable != nil:
				unreadable = append(unreadable, e)
			case len(unreadable) > 0:
				after++
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: the walk ended: %v", w.name, err)
		}
		if len(unreadable) != 1 || unreadable[0].rel != "a/nothing" || !errors.Is(unreadable[0].unreadable, fs.ErrNotExist) ||
			!strings.Contains(unreadable[0].unreadable.Error(), gone) {
			t.Errorf("%s: unreadable folders %+v", w.name, unreadable)
		}
		if after == 0 {
			t.Errorf("%s: nothing was visited after the folder that went", w.name)
		}
		if err := w.walk(filepath.Join(root, "not there"), func(treeEntry) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the walk of a folder that is not there: %v", w.name, err)
		}
	}
}

// BenchmarkWalkManifest walks a tree of small files as a sender does before
// its offer: FERRY_BENCH_TREE, or 4000 files 8 folders deep.
//
//	go test -run '^$' -bench WalkManifest -benchtime 5x ./engine/
//	FERRY_BENCH_TREE=/dev/shm/d1 go test -run '^$' -bench WalkManifest ./engine/
func BenchmarkWalkManifest(b *testing.B) {
	root := os.Getenv("FERRY_BENCH_TREE")
	if root == "" {
		root = filepath.Join(b.TempDir(), "tree")
		for i := range 4000 {
			p := filepath.Join(root, fmt.Sprintf("a%d/b%d/c/d/e%d/f/g/h", i%5, i%7, i%3), fmt.Sprintf("file%04d.go", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("package x\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, w := range []struct {
		name string
		walk func(string, func(treeEntry) error) error
	}{{"walkTree", walkTree}, {"filepath.WalkDir", walkDirTree}} {
		b.Run(w.name, func(b *testing.B) {
			var n int
			cpu0 := testutil.CPUTime()
			for b.Loop() {
				n = 0
				if err := w.walk(root, func(e treeEntry) error {
					if e.typ.IsRegular() {
						n++
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time, which the machine's load does not stretch as it
			// does the wall time.
			b.ReportMetric(float64(testutil.CPUTime()-cpu0)/float64(b.N)/float64(n), "cpu-ns/file")
		})
	}
}

// TestGivenNamedPipeSaysWhatItIs: a named pipe given to send (a pick in the
// app, a path on the command line) is refused before anything is dialled,
// in words that say what it is: "… is a named pipe (FIFO), not a file or
// folder", where it said only "is not a file or folder"; a socket too.
func TestGivenNamedPipeSaysWhatItIs(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	_, err := buildManifest([]string{fifo})
	if want := fifo + " is a named pipe (FIFO), not a file or folder"; err == nil || err.Error() != want {
		t.Fatalf("a named pipe given: %v, want %q", err, want)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skip("no unix sockets here:", err)
	}
	defer l.Close()
	if _, err := buildManifest([]string{sock}); err == nil || !strings.Contains(err.Error(), "is a socket, not a file or folder") {
		t.Fatalf("a socket given: %v", err)
	}
}
