package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
)

// createWhole is CreateWhole that, on Linux, insists the file has no name
// (the destination is on a file system with O_TMPFILE: tmpfs, ext4, ...).
func createWhole(t *testing.T, d *Dest, rel string) *Partial {
	t.Helper()
	p, err := d.CreateWhole(rel)
	if err != nil {
		t.Fatalf("CreateWhole(%q): %v", rel, err)
	}
	if runtime.GOOS == "linux" && !p.unnamed {
		t.Fatalf("CreateWhole(%q) made %q, a file with a name, here", rel, p.Name())
	}
	return p
}

// A whole file has no name at all until Finalize gives it its final one,
// and then it has exactly that one; whatever has the name already (a file,
// a folder, a dangling symlink to outside) is never replaced.
func TestWholeFileNamedOnlyWhenFinalized(t *testing.T) {
	d, dir := openDest(t)
	outside := t.TempDir()
	writeFile(t, dir, "taken.txt", "old")
	if err := os.MkdirAll(filepath.Join(dir, "sub", "d.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(outside, "evil.txt"), filepath.Join(dir, "sub", "evil.txt"))
	want := map[string]string{"taken.txt": "old", "sub/evil.txt": "-> " + filepath.Join(outside, "evil.txt")}
	for _, tc := range []struct{ rel, saved string }{
		{"sub/new.txt", "sub/new.txt"},
		{"taken.txt", "taken (1).txt"},
		{"sub/d.txt", "sub/d (1).txt"},
		{"sub/evil.txt", "sub/evil (1).txt"},
		{"deep/er/and/deeper.bin", "deep/er/and/deeper.bin"},
	} {
		p := createWhole(t, d, tc.rel)
		data := []byte("new " + tc.rel)
		half := len(data) / 2
		if _, err := p.WriteAt(data[half:], int64(half)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.WriteAt(data[:half], 0); err != nil {
			t.Fatal(err)
		}
		if p.unnamed {
			assertTree(t, dir, want) // nothing new under any name
		}
		saved, err := d.Finalize(p, tc.rel, int64(len(data)))
		if err != nil || saved != tc.saved {
			t.Fatalf("Finalize(%q) = %q, %v; want %q", tc.rel, saved, err, tc.saved)
		}
		want[saved] = string(data)
		assertTree(t, dir, want)
	}
	assertTree(t, outside, map[string]string{})
}

// Finalize cuts a whole file to the declared size and can give it another
// name than it was created for; SyncOnFinalize is honoured.
func TestWholeFileSizeAndOtherName(t *testing.T) {
	d, dir := openDest(t)
	d.SyncOnFinalize = true
	p := createWhole(t, d, "a/x.txt")
	if _, err := p.WriteAt([]byte("0123456789"), 0); err != nil {
		t.Fatal(err)
	}
	saved, err := d.Finalize(p, "b/y.txt", 4)
	if err != nil || saved != "b/y.txt" {
		t.Fatalf("Finalize = %q, %v", saved, err)
	}
	assertTree(t, dir, map[string]string{"b/y.txt": "0123"})
}

// A whole file whose folder was moved out of the destination (the folder's
// name then free, or taken by a new folder) does not get its name there,
// nor anywhere; nothing of it is left. The next file goes where the name
// is now.
func TestWholeFileInMovedFolder(t *testing.T) {
	for _, recreate := range []bool{false, true} {
		t.Run(fmt.Sprintf("recreated %v", recreate), func(t *testing.T) {
			d, dir := openDest(t)
			away := filepath.Join(t.TempDir(), "moved")
			p := createWhole(t, d, "album/deep/2.jpg")
			if _, err := p.WriteAt([]byte("two"), 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, "album"), away); err != nil {
				t.Fatal(err)
			}
			if recreate {
				if err := os.MkdirAll(filepath.Join(dir, "album", "deep"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if saved, err := d.Finalize(p, "album/deep/2.jpg", 3); !errors.Is(err, ErrMovedOut) {
				t.Errorf("a file whose folder moved out: finalized as %q, %v; want ErrMovedOut", saved, err)
			}
			if err := d.Discard(p); err != nil {
				t.Errorf("Discard after a failed Finalize: %v", err)
			}
			want := map[string]string{}
			if !p.unnamed {
				want["deep/2.jpg.partial"] = "two" // a named partial stays for resume, as CreatePartial's
			}
			assertTree(t, away, want)
			p = createWhole(t, d, "album/deep/3.jpg")
			if _, err := p.WriteAt([]byte("three"), 0); err != nil {
				t.Fatal(err)
			}
			if saved, err := d.Finalize(p, "album/deep/3.jpg", 5); err != nil || saved != "album/deep/3.jpg" {
				t.Errorf("saved as %q, %v", saved, err)
			}
			assertTree(t, dir, map[string]string{"album/deep/3.jpg": "three"})
		})
	}
}

// Discard leaves nothing, and neither does a whole file abandoned without
// Discard (a crash, a killed process): it never had a name.
func TestWholeFileDiscardLeavesNothing(t *testing.T) {
	d, dir := openDest(t)
	p := createWhole(t, d, "a/b/c.txt")
	if _, err := p.WriteAt([]byte("half a file"), 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Discard(p); err != nil {
		t.Fatal(err)
	}
	if err := d.Discard(p); err != nil {
		t.Errorf("second Discard: %v", err)
	}
	q := createWhole(t, d, "a/b/d.txt")
	if _, err := q.WriteAt([]byte("abandoned"), 0); err != nil {
		t.Fatal(err)
	}
	if q.unnamed {
		q.Close() // as a killed process's descriptors are
	}
	assertTree(t, dir, map[string]string{})
	if q.unnamed {
		return
	}
	d.Discard(q)
}

// Where files cannot be created without a name, CreateWhole is
// CreatePartial: a named partial, finalized as any.
func TestWholeFileFallsBackToPartial(t *testing.T) {
	d, dir := openDest(t)
	d.noUnnamed.Store(true)
	p, err := d.CreateWhole("a/x.txt")
	if err != nil {
		t.Fatal(err)
	}
	if p.unnamed || p.Name() != "a/x.txt"+PartialSuffix {
		t.Fatalf("fallback made %q (unnamed %v), want a partial a/x.txt%s", p.Name(), p.unnamed, PartialSuffix)
	}
	if _, err := p.WriteAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	assertTree(t, dir, map[string]string{"a/x.txt" + PartialSuffix: "x"})
	if saved, err := d.Finalize(p, "a/x.txt", 1); err != nil || saved != "a/x.txt" {
		t.Fatalf("Finalize = %q, %v", saved, err)
	}
	assertTree(t, dir, map[string]string{"a/x.txt": "x"})
}

// Whole files finalized under one name at once each get their own.
func TestWholeFilesConcurrentFinalize(t *testing.T) {
	d, dir := openDest(t)
	const n = 8
	var wg sync.WaitGroup
	saved := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		p := createWhole(t, d, "same/name.txt")
		if _, err := p.WriteAt([]byte(fmt.Sprint(i)), 0); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { saved[i], errs[i] = d.Finalize(p, "same/name.txt", 1) })
	}
	wg.Wait()
	want := map[string]string{}
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		want[saved[i]] = fmt.Sprint(i)
	}
	assertTree(t, dir, want)
	names := make([]string, 0, n)
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) != n || names[n-1] != "same/name.txt" {
		t.Errorf("saved as %v", names)
	}
}
