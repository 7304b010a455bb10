package fileio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A file is opened in its folder, held open since a file of that folder
// was first opened, not by its whole path: a folder renamed meanwhile
// still gives its files (the whole path no longer leads there).
func TestFoldersOpenInTheHeldFolder(t *testing.T) {
	top := t.TempDir()
	writeTree(t, top, "tree/a/b/one", "tree/a/b/two")
	d := NewFolders()
	defer d.Close()
	if got, err := readSmall(d, top, "tree/a/b/one"); err != nil || got != "tree/a/b/one" {
		t.Fatalf("read %q, %v", got, err)
	}
	if err := os.Rename(filepath.Join(top, "tree", "a"), filepath.Join(top, "tree", "moved")); err != nil {
		t.Fatal(err)
	}
	if got, err := readSmall(d, top, "tree/a/b/two"); err != nil || got != "tree/a/b/two" {
		t.Errorf("after its folder was renamed: read %q, %v; want the file, from the folder held open", got, err)
	}
}

// Below the folder a path starts in, no symbolic link is followed, neither
// a folder nor the file (the sender's walk follows none, and a link put in
// the tree after the walk must not take the send out of it); a file given
// by its own path, and the folder a path starts in, are followed as they
// are by their whole path.
func TestFoldersFollowNoLinkInTheTree(t *testing.T) {
	top, outside := t.TempDir(), t.TempDir()
	writeTree(t, outside, "secret", "dir/secret")
	writeTree(t, top, "tree/plain")
	for link, to := range map[string]string{
		"tree/file": filepath.Join(outside, "secret"),
		"tree/dir":  filepath.Join(outside, "dir"),
		"given":     filepath.Join(outside, "secret"),
		"linked":    filepath.Join(top, "tree"),
	} {
		if err := os.Symlink(to, filepath.Join(top, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	d := NewFolders()
	defer d.Close()
	for _, rel := range []string{"tree/file", "tree/dir/secret", "linked/plain"} {
		// open(2) with O_NOFOLLOW: ELOOP for a file, ENOTDIR for a folder.
		if got, err := readSmall(d, top, rel); !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("%s: read %q, %v; want ELOOP or ENOTDIR, no link followed", rel, got, err)
		}
		// OpenSmall of the whole path follows them: what this guards.
		if _, err := OpenSmall(filepath.Join(top, filepath.FromSlash(rel))); err != nil {
			t.Errorf("%s by its whole path: %v", rel, err)
		}
	}
	if got, err := readSmall(d, top, "given"); err != nil || got != "secret" {
		t.Errorf("a file given as a link: read %q, %v; want it followed", got, err)
	}
	if got, err := readSmall(d, filepath.Join(top, "linked"), "plain"); err != nil || got != "tree/plain" {
		t.Errorf("a path that starts in a linked folder: read %q, %v; want it followed", got, err)
	}
}

// Folders holds at most maxHeldFolders descriptors, whatever the tree,
// and Close gives them all back.
func TestFoldersBounded(t *testing.T) {
	top := t.TempDir()
	var rels []string
	for i := range 3 * maxHeldFolders {
		rels = append(rels, fmt.Sprintf("t/%d/%d/f", i%7, i))
	}
	writeTree(t, top, rels...)
	before := openFDs(t)
	d := NewFolders()
	for _, rel := range rels {
		if _, err := readSmall(d, top, rel); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(d.open); n > maxHeldFolders {
		t.Errorf("%d folders held, bound %d", n, maxHeldFolders)
	}
	if n := openFDs(t) - before; n > maxHeldFolders {
		t.Errorf("%d descriptors more than before, bound %d", n, maxHeldFolders)
	}
	d.Close()
	if n := openFDs(t) - before; n > 0 {
		t.Errorf("%d descriptors left open after Close", n)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	return len(ents)
}

// Opening (and closing) every file of a tree in the order of a walk, as a
// sender of small files does: by whole path (OpenSmall) or in the folders
// held open (Folders). The tree is 1024 files, 32 in each of 32 folders
// 10 deep (workload D's files are up to 14 deep). docs/benchmarks/trees.md.
func BenchmarkOpenSmallTree(b *testing.B) {
	top := b.TempDir()
	var rels []string
	for i := range 32 {
		for j := range 32 {
			rels = append(rels, fmt.Sprintf("tree/src/cmd/vendor/golang.org/x/tools/%d/%d/f%02d.go", i/8, i%8, j))
		}
	}
	writeTree(b, top, rels...)
	open := map[string]func(rel string) (*Small, error){
		"whole-path": func(rel string) (*Small, error) { return OpenSmall(filepath.Join(top, filepath.FromSlash(rel))) },
	}
	d := NewFolders()
	defer d.Close()
	open["folders"] = func(rel string) (*Small, error) { return d.OpenSmall(top, rel) }
	for _, name := range []string{"whole-path", "folders"} {
		b.Run(name, func(b *testing.B) {
			cpu0 := cpuTime(b)
			for b.Loop() {
				for _, rel := range rels {
					f, err := open[name](rel)
					if err != nil {
						b.Fatal(err)
					}
					f.Close()
				}
			}
			// CPU time, user and system, as well: on a loaded machine the
			// wall time is mostly waiting for a core.
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rels)), "ns/file")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N*len(rels)), "cpu-ns/file")
		})
	}
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
