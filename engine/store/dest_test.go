package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// openDest opens a Dest on a fresh temporary folder and closes it at the end
// of the test.
func openDest(t *testing.T) (*Dest, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "Downloads") // also checks Open creates it
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d, dir
}

// receive creates rel's partial, writes data in two WriteAt calls and
// finalizes it under rel.
func receive(t *testing.T, d *Dest, rel string, data []byte) string {
	t.Helper()
	p, err := d.CreatePartial(rel)
	if err != nil {
		t.Fatalf("CreatePartial(%q): %v", rel, err)
	}
	half := len(data) / 2
	// Second half first: WriteAt must not depend on order.
	if _, err := p.WriteAt(data[half:], int64(half)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt(data[:half], 0); err != nil {
		t.Fatal(err)
	}
	saved, err := d.Finalize(p, rel, int64(len(data)))
	if err != nil {
		t.Fatalf("Finalize(%q): %v", rel, err)
	}
	return saved
}

// writeFile creates a file (and its folders) under dir, from a slash path.
func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	name := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree lists the files (not folders) under dir with their contents, keyed
// by slash path; symlinks are listed as "-> target".
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(name string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, name)
		rel = filepath.ToSlash(rel)
		if e.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(name)
			files[rel] = "-> " + target
			return err
		}
		b, err := os.ReadFile(name)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func assertTree(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	got := tree(t, dir)
	if fmt.Sprint(got) != fmt.Sprint(want) { // fmt sorts map keys
		t.Errorf("files under %s:\n got %v\nwant %v", dir, got, want)
	}
}

// symlink creates a symlink or skips the test where that is not allowed
// (Windows without developer mode).
func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Skipf("cannot create symlinks here: %v", err)
	}
}

func TestReceiveHappyPath(t *testing.T) {
	for _, rel := range []string{
		"a.txt",
		"photos/2024/IMG_0001.JPG",
		"ünïcödé/日本語/файл 🎉.txt",
		".bashrc",
		strings.Repeat("deep/", 40) + "leaf",
		strings.Repeat("n", MaxElementBytes-len(PartialSuffix)),
	} {
		for _, sync := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sync=%v", rel[:min(len(rel), 20)], sync), func(t *testing.T) {
				d, dir := openDest(t)
				d.SyncOnFinalize = sync
				data := bytes.Repeat([]byte(rel), 1000)
				if saved := receive(t, d, rel, data); saved != rel {
					t.Errorf("saved as %q, want %q", saved, rel)
				}
				assertTree(t, dir, map[string]string{rel: string(data)})
			})
		}
	}
}

func TestFinalizeCollisions(t *testing.T) {
	tests := []struct {
		rel      string
		existing []string // files already in the destination
		want     string
	}{
		{"a.txt", nil, "a.txt"},
		{"a.txt", []string{"a.txt"}, "a (1).txt"},
		{"a.txt", []string{"a.txt", "a (1).txt"}, "a (2).txt"},
		{"a.txt", []string{"a.txt", "a (1).txt", "a (2).txt"}, "a (3).txt"},
		{"a.txt", []string{"a.txt", "a (2).txt"}, "a (1).txt"},
		{"archive.tar.gz", []string{"archive.tar.gz"}, "archive (1).tar.gz"},
		{"x.TAR.XZ", []string{"x.TAR.XZ"}, "x (1).TAR.XZ"},
		{"my.holiday.jpg", []string{"my.holiday.jpg"}, "my.holiday (1).jpg"},
		{".bashrc", []string{".bashrc", ".bashrc (1)"}, ".bashrc (2)"},
		{".config.json", []string{".config.json"}, ".config (1).json"},
		{"README", []string{"README"}, "README (1)"},
		{"sub/dir/a.txt", []string{"sub/dir/a.txt"}, "sub/dir/a (1).txt"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.rel, len(tc.existing)), func(t *testing.T) {
			d, dir := openDest(t)
			want := map[string]string{}
			for _, name := range tc.existing {
				writeFile(t, dir, name, "old "+name)
				want[name] = "old " + name
			}
			if saved := receive(t, d, tc.rel, []byte("new")); saved != tc.want {
				t.Errorf("saved as %q, want %q", saved, tc.want)
			}
			want[tc.want] = "new"
			assertTree(t, dir, want)
		})
	}
}

func TestFinalizeNameTakenByFolderOrSymlink(t *testing.T) {
	d, dir := openDest(t)
	outside := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A dangling symlink: following it would create a file outside.
	symlink(t, filepath.Join(outside, "evil.txt"), filepath.Join(dir, "evil.txt"))

	if saved := receive(t, d, "d.txt", []byte("1")); saved != "d (1).txt" {
		t.Errorf("saved as %q, want %q", saved, "d (1).txt")
	}
	if saved := receive(t, d, "evil.txt", []byte("2")); saved != "evil (1).txt" {
		t.Errorf("saved as %q, want %q", saved, "evil (1).txt")
	}
	assertTree(t, dir, map[string]string{
		"d (1).txt":    "1",
		"evil (1).txt": "2",
		"evil.txt":     "-> " + filepath.Join(outside, "evil.txt"),
	})
	assertTree(t, outside, map[string]string{})
}

// A file that appears under the final name after every check Finalize could
// make, right before the file is put in place, is still never overwritten:
// by the no-replace rename, and by the link where that rename is missing.
func TestFinalizeRace(t *testing.T) {
	for _, viaLink := range []bool{false, true} {
		t.Run(map[bool]string{false: "rename", true: "link"}[viaLink], func(t *testing.T) {
			d, dir := openDest(t)
			p, err := d.CreatePartial("a.txt")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.WriteAt([]byte("ours"), 0); err != nil {
				t.Fatal(err)
			}
			// First, a racer that was there before Finalize started.
			writeFile(t, dir, "a.txt", "racer 0")
			// Then one that creates each candidate name just before we put
			// the file there.
			raced := 0
			race := func(newname string) {
				if raced < 2 {
					f, err := os.OpenFile(filepath.Join(dir, newname), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
					if err == nil {
						raced++
						fmt.Fprint(f, "racer ", raced)
						f.Close()
					}
				}
			}
			realRename, realLink := d.rename, d.link
			d.rename = func(oldname, newname string) error {
				if viaLink {
					return errNoAtomicRename
				}
				race(newname)
				return realRename(oldname, newname)
			}
			d.link = func(oldname, newname string) error {
				if !viaLink {
					t.Errorf("link(%q, %q) called although the rename works", oldname, newname)
				}
				race(newname)
				return realLink(oldname, newname)
			}
			saved, err := d.Finalize(p, "a.txt", 4)
			if err != nil {
				t.Fatal(err)
			}
			if saved != "a (3).txt" {
				t.Errorf("saved as %q, want %q", saved, "a (3).txt")
			}
			assertTree(t, dir, map[string]string{
				"a.txt": "racer 0", "a (1).txt": "racer 1", "a (2).txt": "racer 2", "a (3).txt": "ours",
			})
		})
	}
}

// The no-replace rename refuses every kind of taken name (a file, a folder,
// a dangling symlink) with fs.ErrExist and leaves both names as they were;
// a free name gets the file, with no second name left behind.
func TestRenameNoReplace(t *testing.T) {
	d, dir := openDest(t)
	if err := d.rename("x", "y"); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no rename without replacing on this platform or file system: %v", err)
	}
	writeFile(t, dir, "src", "ours")
	writeFile(t, dir, "file", "theirs")
	if err := os.Mkdir(filepath.Join(dir, "folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	taken := []string{"file", "folder"}
	want := map[string]string{"file": "theirs", "sub/moved": "ours"}
	// A dangling symlink too, where symlinks can be made (Windows needs
	// developer mode).
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")); err == nil {
		taken = append(taken, "dangling")
		want["dangling"] = "-> " + filepath.Join(dir, "nowhere")
	}
	for _, taken := range taken {
		if err := d.rename("src", taken); !errors.Is(err, fs.ErrExist) {
			t.Errorf("rename onto %s: %v, want fs.ErrExist", taken, err)
		}
	}
	if err := d.rename("missing", "free"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("rename of a missing file: %v, want fs.ErrNotExist", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := d.rename("src", filepath.Join("sub", "moved")); err != nil {
		t.Fatal(err)
	}
	assertTree(t, dir, want)
	if fi, err := os.Stat(filepath.Join(dir, "sub", "moved")); err != nil || linkCount(fi) != 1 {
		t.Errorf("renamed file: %v, %d links; want 1", err, linkCount(fi))
	}
}

// Where hard links are unsupported (and so is the no-replace rename),
// Finalize renames after a check.
func TestFinalizeWithoutHardLinks(t *testing.T) {
	d, dir := openDest(t)
	d.rename = func(string, string) error { return errNoAtomicRename }
	calls := 0
	d.link = func(oldname, newname string) error {
		calls++
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errors.ErrUnsupported}
	}
	writeFile(t, dir, "a.txt", "old")
	if saved := receive(t, d, "a.txt", []byte("new")); saved != "a (1).txt" {
		t.Errorf("saved as %q, want %q", saved, "a (1).txt")
	}
	if calls == 0 {
		t.Error("the injected link was never called")
	}
	assertTree(t, dir, map[string]string{"a.txt": "old", "a (1).txt": "new"})

	// Any other link error is reported, and the partial stays for a retry.
	d.link = func(string, string) error { return errBoom }
	p, err := d.CreatePartial("b.txt")
	if err != nil {
		t.Fatal(err)
	}
	if saved, err := d.Finalize(p, "b.txt", 0); !errors.Is(err, errBoom) || saved != "" {
		t.Errorf("Finalize with a failing link = %q, %v; want \"\", %v", saved, err, errBoom)
	}
	assertTree(t, dir, map[string]string{"a.txt": "old", "a (1).txt": "new", "b.txt.partial": ""})

	// Any other rename error is reported the same way, without a link.
	d.rename = func(string, string) error { return errBoom }
	d.link = func(string, string) error { t.Error("link after a failed rename"); return errBoom }
	if saved, err := d.Finalize(p, "b.txt", 0); !errors.Is(err, errBoom) || saved != "" {
		t.Errorf("Finalize with a failing rename = %q, %v; want \"\", %v", saved, err, errBoom)
	}
	assertTree(t, dir, map[string]string{"a.txt": "old", "a (1).txt": "new", "b.txt.partial": ""})
}

// Where hard links and the no-replace rename are both missing (FAT, exFAT,
// some FUSE file systems), two files that end at the same moment under the
// same name (on FAT "A.txt" and "a.txt" are one name), of one transfer or
// of two into one folder, each keep a name of their own: the
// check-then-rename of one never runs between the check and the rename of
// the other, which then replaced it (both were reported saved, one was
// gone).
func TestFinalizeWithoutHardLinksConcurrent(t *testing.T) {
	for _, twoTransfers := range []bool{false, true} {
		t.Run(map[bool]string{false: "one transfer", true: "two transfers"}[twoTransfers], func(t *testing.T) {
			d, dir := openDest(t)
			other := d
			if twoTransfers {
				var err error
				if other, err = Open(dir); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { other.Close() })
			}
			for _, d := range []*Dest{d, other} {
				d.rename = func(string, string) error { return errNoAtomicRename }
				d.link = func(oldname, newname string) error {
					return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errors.ErrUnsupported}
				}
			}
			partial := func(d *Dest, content string) *Partial {
				p, err := d.CreatePartial(content + ".txt")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := p.WriteAt([]byte(content), 0); err != nil {
					t.Fatal(err)
				}
				return p
			}
			first, second := partial(d, "first"), partial(other, "second")
			replace := d.replace
			inSecond := make(chan struct{})
			var secondSaved string
			secondDone := make(chan struct{})
			d.replace = func(oldname, newname string) error {
				if strings.HasPrefix(oldname, "second") {
					close(inSecond) // it found the name free too
					return replace(oldname, newname)
				}
				// The first file has checked that x.txt is free: the second
				// one ends now. It must not get past its own check before
				// this rename.
				go func() {
					defer close(secondDone)
					var err error
					if secondSaved, err = other.Finalize(second, "x.txt", 6); err != nil {
						t.Error(err)
					}
				}()
				select {
				case <-inSecond:
				case <-time.After(200 * time.Millisecond): // waiting for the first, as it must
				}
				return replace(oldname, newname)
			}
			if twoTransfers {
				other.replace = func(oldname, newname string) error {
					close(inSecond)
					return other.root.Rename(oldname, newname)
				}
			}
			saved, err := d.Finalize(first, "x.txt", 5)
			if err != nil {
				t.Fatal(err)
			}
			<-secondDone
			if saved != "x.txt" || secondSaved != "x (1).txt" {
				t.Errorf("saved as %q and %q, want x.txt and x (1).txt", saved, secondSaved)
			}
			assertTree(t, dir, map[string]string{"x.txt": "first", "x (1).txt": "second"})
		})
	}
}

// A finalized file has one name: the rename took the partial's away.
func TestFinalizeLeavesOneName(t *testing.T) {
	d, dir := openDest(t)
	d.link = func(oldname, newname string) error {
		t.Errorf("link(%q, %q): Finalize linked instead of renaming", oldname, newname)
		return errBoom
	}
	if err := os.Mkdir(filepath.Join(dir, "f"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"a.txt", "f/b.txt", "f/g/c.txt"} {
		receive(t, d, rel, []byte(rel))
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if n := linkCount(fi); n != 1 {
			t.Errorf("%s has %d links, want 1", rel, n)
		}
	}
	assertTree(t, dir, map[string]string{"a.txt": "a.txt", "f/b.txt": "f/b.txt", "f/g/c.txt": "f/g/c.txt"})
}

var errBoom = errors.New("boom")

func TestSymlinkOutsideCannotBeUsed(t *testing.T) {
	d, dir := openDest(t)
	outside := t.TempDir()
	symlink(t, outside, filepath.Join(dir, "out"))                               // absolute, to a folder outside
	symlink(t, filepath.Join(outside, "p"), filepath.Join(dir, "p.txt.partial")) // a partial pointing outside
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "real", filepath.Join(dir, "in")) // relative, to a folder inside

	// Folders named like a symlink are received next to it, never through it.
	if saved := receive(t, d, "out/x.txt", []byte("x")); saved != "out (1)/x.txt" {
		t.Errorf("saved as %q, want %q", saved, "out (1)/x.txt")
	}
	if saved := receive(t, d, "in/y.txt", []byte("y")); saved != "in (1)/y.txt" {
		t.Errorf("saved as %q, want %q", saved, "in (1)/y.txt")
	}
	// A partial name taken by a symlink is never followed: the new partial
	// gets a name of its own, and reopening the symlink is refused.
	p, err := d.CreatePartial("p.txt")
	if err != nil || p.Name() != "p (1).txt.partial" {
		t.Errorf("CreatePartial beside a symlinked partial = %v, %v; want p (1).txt.partial", p, err)
	}
	if err == nil {
		d.Discard(p)
	}
	if _, err := d.OpenPartial("p.txt.partial", ""); !errors.Is(err, ErrNotRegular) {
		t.Errorf("OpenPartial of a symlink: %v, want ErrNotRegular", err)
	}
	assertTree(t, outside, map[string]string{})
	assertTree(t, dir, map[string]string{
		"out":           "-> " + outside,
		"in":            "-> real",
		"p.txt.partial": "-> " + filepath.Join(outside, "p"),
		"out (1)/x.txt": "x",
		"in (1)/y.txt":  "y",
	})

	// And os.Root itself refuses a path through the link, should a folder
	// ever be resolved that way.
	if _, err := d.root.Create(filepath.Join("out", "z")); err == nil {
		t.Error("os.Root created a file through a symlink pointing outside")
	}
	assertTree(t, outside, map[string]string{})
}

func TestFolderClashesWithFile(t *testing.T) {
	d, dir := openDest(t)
	writeFile(t, dir, "docs", "a file called docs")
	writeFile(t, dir, "pics (1)", "also a file")
	writeFile(t, dir, "pics", "a file called pics")

	pp, err := d.PartialPath("docs/a.txt")
	if err != nil || pp != "docs (1)/a.txt.partial" {
		t.Errorf("PartialPath = %q, %v; want %q", pp, err, "docs (1)/a.txt.partial")
	}
	p, err := d.CreatePartial("docs/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != pp {
		t.Errorf("partial name %q, PartialPath said %q", p.Name(), pp)
	}
	if _, err := p.WriteAt([]byte("a"), 0); err != nil {
		t.Fatal(err)
	}
	if saved, err := d.Finalize(p, "docs/a.txt", 1); err != nil || saved != "docs (1)/a.txt" {
		t.Errorf("Finalize = %q, %v; want %q", saved, err, "docs (1)/a.txt")
	}
	// Every file of the folder lands in the same renamed folder.
	if saved := receive(t, d, "docs/sub/b.txt", []byte("b")); saved != "docs (1)/sub/b.txt" {
		t.Errorf("saved as %q, want %q", saved, "docs (1)/sub/b.txt")
	}
	if saved := receive(t, d, "pics/c.jpg", []byte("c")); saved != "pics (2)/c.jpg" {
		t.Errorf("saved as %q, want %q", saved, "pics (2)/c.jpg")
	}
	assertTree(t, dir, map[string]string{
		"docs":               "a file called docs",
		"pics":               "a file called pics",
		"pics (1)":           "also a file",
		"docs (1)/a.txt":     "a",
		"docs (1)/sub/b.txt": "b",
		"pics (2)/c.jpg":     "c",
	})
}

func TestPartialsAreNeverShared(t *testing.T) {
	d, _ := openDest(t)
	p, err := d.CreatePartial("a/b.txt")
	if err != nil {
		t.Fatal(err)
	}
	// A second transfer of the same name gets a partial of its own.
	q, err := d.CreatePartial("a/b.txt")
	if err != nil || q.Name() == p.Name() {
		t.Fatalf("second CreatePartial = %v, %v; want a new partial beside %s", q, err, p.Name())
	}
	// Reopening an open partial is refused, also under a name differing in
	// case where the file system makes it the same file.
	if _, err := d.OpenPartial(p.Name(), ""); !errors.Is(err, ErrInUse) {
		t.Errorf("OpenPartial while open: %v, want ErrInUse", err)
	}
	if r, err := d.OpenPartial("a/B.TXT.partial", ""); err == nil {
		t.Errorf("OpenPartial of a name never created opened %s", r.Name())
	} else if !errors.Is(err, ErrInUse) && !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenPartial(a/B.TXT.partial): %v", err)
	}
	d.Discard(q)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := d.OpenPartial(p.Name(), "")
	if err != nil {
		t.Fatalf("OpenPartial after Close: %v", err)
	}
	if _, err := d.Finalize(r, "a/b.txt", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.OpenPartial(p.Name(), ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenPartial after Finalize: %v, want ErrNotExist", err)
	}
	if p, err = d.CreatePartial("a/b.txt"); err != nil || p.Name() != "a/b.txt.partial" {
		t.Fatalf("CreatePartial after Finalize = %v, %v", p, err)
	}
	d.Discard(p)
	for _, bad := range []string{"a/b.txt", "../x.partial", "a/con.txt.partial", ""} {
		if _, err := d.OpenPartial(bad, ""); err == nil {
			t.Errorf("OpenPartial(%q) succeeded", bad)
		}
	}
}

func TestPartialReuse(t *testing.T) {
	d, dir := openDest(t)
	p, err := d.CreatePartial("dir/f.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt([]byte("hello world"), 0); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if pp, err := d.PartialPath("dir/f.bin"); err != nil || pp != "dir/f.bin.partial" || p.Name() != pp {
		t.Errorf("PartialPath = %q, %v; partial %q", pp, err, p.Name())
	}

	p, err = d.OpenPartial(p.Name(), "") // a resumed transfer
	if err != nil {
		t.Fatal(err)
	}
	if size, err := p.Size(); err != nil || size != 11 {
		t.Errorf("reused partial size = %d, %v; want 11", size, err)
	}
	if err := p.Truncate(5); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := p.ReadAt(buf, 0); err != nil || string(buf) != "hello" {
		t.Errorf("ReadAt = %q, %v", buf, err)
	}
	if _, err := p.WriteAt([]byte("!"), 5); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	if saved, err := d.Finalize(p, "dir/f.bin", 6); err != nil || saved != "dir/f.bin" {
		t.Fatalf("Finalize = %q, %v", saved, err)
	}
	assertTree(t, dir, map[string]string{"dir/f.bin": "hello!"})

	// A folder where the partial would be is left alone.
	if err := os.Mkdir(filepath.Join(dir, "g.partial"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := d.CreatePartial("g"); err != nil || p.Name() != "g (1).partial" {
		t.Errorf("CreatePartial beside a folder = %v, %v; want g (1).partial", p, err)
	} else {
		d.Discard(p)
	}
	if _, err := d.OpenPartial("g.partial", ""); !errors.Is(err, ErrNotRegular) {
		t.Errorf("OpenPartial of a folder: %v, want ErrNotRegular", err)
	}
}

// A partial only ever holds what this transfer wrote, and a final file
// exactly the declared size: a stale, longer partial of the same name (left
// by another device's transfer) is neither reused nor carried into the file.
func TestStalePartialNeverReused(t *testing.T) {
	d, dir := openDest(t)
	writeFile(t, dir, "stale/report.txt.partial", strings.Repeat("A", 12288))
	p, err := d.CreatePartial("stale/report.txt")
	if err != nil {
		t.Fatal(err)
	}
	if size, _ := p.Size(); size != 0 || p.Name() == "stale/report.txt.partial" {
		t.Fatalf("new partial %s has %d bytes; want a fresh, empty file", p.Name(), size)
	}
	if _, err := p.WriteAt([]byte("seventeen bytes!!"), 0); err != nil {
		t.Fatal(err)
	}
	if saved, err := d.Finalize(p, "stale/report.txt", 17); err != nil || saved != "stale/report.txt" {
		t.Fatalf("Finalize = %q, %v", saved, err)
	}
	assertTree(t, dir, map[string]string{
		"stale/report.txt.partial": strings.Repeat("A", 12288),
		"stale/report.txt":         "seventeen bytes!!",
	})
	// Finalize cuts whatever lies beyond the declared size.
	q, err := d.OpenPartial("stale/report.txt.partial", "")
	if err != nil {
		t.Fatal(err)
	}
	if saved, err := d.Finalize(q, "other.txt", 4); err != nil || saved != "other.txt" {
		t.Fatalf("Finalize = %q, %v", saved, err)
	}
	assertTree(t, dir, map[string]string{
		"stale/report.txt": "seventeen bytes!!",
		"other.txt":        "AAAA",
	})
}

// A hard link planted under a partial's name never receives peer bytes: the
// linked file outside the destination stays as it was.
func TestHardLinkedPartialRefused(t *testing.T) {
	d, dir := openDest(t)
	outside := filepath.Join(t.TempDir(), "secret")
	writeFile(t, filepath.Dir(outside), "secret", "do not touch")
	if err := os.Link(outside, filepath.Join(dir, "x.txt.partial")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	p, err := d.CreatePartial("x.txt")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() == "x.txt.partial" {
		t.Fatal("CreatePartial reused the planted link")
	}
	if _, err := p.WriteAt([]byte("peer"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Finalize(p, "x.txt", 4); err != nil {
		t.Fatal(err)
	}
	if _, err := d.OpenPartial("x.txt.partial", ""); !errors.Is(err, ErrLinked) {
		t.Errorf("OpenPartial of a hard link: %v, want ErrLinked", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "do not touch" {
		t.Errorf("the file outside now holds %q", b)
	}
}

// A folder moved out of the destination while files arrive in it is not
// followed through a cached handle: later files land inside, under the
// folder's name, and a partial that moved away fails instead of landing
// outside.
func TestMovedFolderNotFollowed(t *testing.T) {
	d, dir := openDest(t)
	away := filepath.Join(t.TempDir(), "moved")
	if saved := receive(t, d, "album/1.jpg", []byte("one")); saved != "album/1.jpg" {
		t.Fatalf("saved as %q", saved)
	}
	p, err := d.CreatePartial("album/2.jpg")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt([]byte("two"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "album"), away); err != nil {
		t.Fatal(err)
	}
	if saved, err := d.Finalize(p, "album/2.jpg", 3); err == nil {
		t.Errorf("a partial moved out of the destination was finalized as %q", saved)
	}
	if saved := receive(t, d, "album/3.jpg", []byte("three")); saved != "album/3.jpg" {
		t.Errorf("saved as %q", saved)
	}
	assertTree(t, dir, map[string]string{"album/3.jpg": "three"})
	assertTree(t, away, map[string]string{"1.jpg": "one", "2.jpg.partial": "two"})
}

// Issue #27 (5): a partial whose folder was moved out of the destination
// gets no more bytes there (a write through its open descriptor would
// follow the folder), whether the folder's name is then free or taken by a
// new folder; nor does it get its final name there. The file inside the
// destination under the folder's name gets written as usual.
func TestMovedFolderGetsNoWrites(t *testing.T) {
	for _, recreate := range []bool{false, true} {
		t.Run(fmt.Sprintf("recreated %v", recreate), func(t *testing.T) {
			d, dir := openDest(t)
			away := filepath.Join(t.TempDir(), "moved")
			p, err := d.CreatePartial("album/deep/2.jpg")
			if err != nil {
				t.Fatal(err)
			}
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
			if _, err := p.WriteAt([]byte("more"), 3); !errors.Is(err, ErrMovedOut) {
				t.Errorf("a write into a folder moved away: %v, want ErrMovedOut", err)
			}
			if err := p.Reserve(context.Background(), 4<<20); !errors.Is(err, ErrMovedOut) { // large enough to preallocate
				t.Errorf("a reserve in a folder moved away: %v, want ErrMovedOut", err)
			}
			if saved, err := d.Finalize(p, "album/deep/2.jpg", 7); !errors.Is(err, ErrMovedOut) {
				t.Errorf("a partial moved out of the destination: finalized as %q, %v; want ErrMovedOut", saved, err)
			}
			assertTree(t, away, map[string]string{"deep/2.jpg.partial": "two"})
			if saved := receive(t, d, "album/deep/3.jpg", []byte("three")); saved != "album/deep/3.jpg" {
				t.Errorf("saved as %q", saved)
			}
			assertTree(t, dir, map[string]string{"album/deep/3.jpg": "three"})
		})
	}
}

func TestDiscardLeavesNothing(t *testing.T) {
	d, dir := openDest(t)
	p, err := d.CreatePartial("a/b/c.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt([]byte("half a file"), 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Discard(p); err != nil {
		t.Fatal(err)
	}
	if err := d.Discard(p); err != nil {
		t.Errorf("second Discard: %v", err)
	}
	// The folders created for it may stay (another file may be arriving in
	// them); no file does, final-named or partial.
	assertTree(t, dir, map[string]string{})
	if pp, _ := d.PartialPath("a/b/c.txt"); pp == "" {
		t.Error("PartialPath returned nothing")
	} else if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(pp))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("partial still there: %v", err)
	}
}

func TestBadNamesRefused(t *testing.T) {
	d, dir := openDest(t)
	bad := []string{"../x", "/etc/passwd", "a/../../x", `../x\y`, `a\b/../../x`, "a\x1bb", "\u202etxt.exe",
		strings.Repeat(strings.Repeat("n", 200)+"/", 21) + "x", // 4221 bytes: too long a path
		strings.Repeat("n", MaxElementBytes+1) + "\x1b"}        // not cut to drop its fault
	if portableHere { // what only Windows keeps out of names
		bad = append(bad, "con.txt", "a:b", "what?.txt", "trail.")
	}
	for _, rel := range bad {
		if _, err := d.CreatePartial(rel); !errors.Is(err, ErrBadName) {
			t.Errorf("CreatePartial(%q) = %v, want ErrBadName", rel, err)
		}
		if _, err := d.PartialPath(rel); !errors.Is(err, ErrBadName) {
			t.Errorf("PartialPath(%q) = %v, want ErrBadName", rel, err)
		}
	}
	p, err := d.CreatePartial("ok.txt")
	if err != nil {
		t.Fatal(err)
	}
	if saved, err := d.Finalize(p, "../ok.txt", 0); !errors.Is(err, ErrBadName) || saved != "" {
		t.Errorf("Finalize to ../ok.txt = %q, %v; want ErrBadName", saved, err)
	}
	if err := d.Discard(p); err != nil {
		t.Fatal(err)
	}
	assertTree(t, dir, map[string]string{})
	assertTree(t, filepath.Dir(dir), map[string]string{})
}

// TestWindowsOnlyRulesStayOnWindows: elsewhere, a name that only Windows
// keeps out ("Meeting: notes.md" from a Mac, "aux.c" in a source tree) is
// received under that very name.
func TestWindowsOnlyRulesStayOnWindows(t *testing.T) {
	if portableHere {
		t.Skip("Windows keeps these names out")
	}
	d, dir := openDest(t)
	want := map[string]string{}
	for _, rel := range []string{"Meeting: notes.md", "what?.txt", `say "hi" <now> | later*`, "src/aux.c", "CON", "trail.", "ends in space "} {
		if saved := receive(t, d, rel, []byte(rel)); saved != rel {
			t.Fatalf("%q saved as %q", rel, saved)
		}
		want[rel] = rel
	}
	assertTree(t, dir, want)
}

// TestBackslashSavedAsUnderscore: a name with a backslash (legal on Linux
// and macOS, a folder separator on Windows) is saved, on every system, with
// "_" for each: "a\b.txt" as "a_b.txt", and "..\x" as the one name ".._x",
// inside the destination.
func TestBackslashSavedAsUnderscore(t *testing.T) {
	d, dir := openDest(t)
	want := map[string]string{}
	for _, c := range []struct{ rel, saved string }{
		{`a\b.txt`, "a_b.txt"},
		{`..\x`, ".._x"},
		{`\\server\share`, "__server_share"},
		{`trip\day 1/IMG\1.jpg`, "trip_day 1/IMG_1.jpg"},
	} {
		if saved := receive(t, d, c.rel, []byte(c.rel)); saved != c.saved {
			t.Fatalf("%q saved as %q, want %q", c.rel, saved, c.saved)
		}
		want[c.saved] = c.rel
	}
	assertTree(t, dir, want)
	above := map[string]string{}
	for name, data := range want {
		above["Downloads/"+name] = data
	}
	assertTree(t, filepath.Dir(dir), above)
}

// Many files finalized to the same name at once all survive, each under its
// own name.
func TestConcurrentFinalize(t *testing.T) {
	d, dir := openDest(t)
	const n = 8
	var wg sync.WaitGroup
	saved := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		p, err := d.CreatePartial(fmt.Sprintf("src%d", i))
		if err != nil {
			t.Fatal(err)
		}
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
	if names[0] != "same/name (1).txt" || names[n-1] != "same/name.txt" || len(names) != n {
		t.Errorf("saved as %v", names)
	}
}

func TestNumbered(t *testing.T) {
	long := strings.Repeat("x", 250)
	tests := []struct {
		name string
		n    int
		file bool
		want string
	}{
		{"a.txt", 0, true, "a.txt"},
		{"a.txt", 1, true, "a (1).txt"},
		{"a.txt", 12, false, "a.txt (12)"},
		{"archive.tar.gz", 2, true, "archive (2).tar.gz"},
		{".tar.gz", 1, true, ".tar (1).gz"},
		{".bashrc", 1, true, ".bashrc (1)"},
		{"noext", 3, true, "noext (3)"},
		{"trail...", 1, true, "trail... (1)"}, // not "trail.. (1)."
		{"v1.2.", 1, true, "v1.2. (1)"},
		{long + ".txt", 1, true, strings.Repeat("x", 255-4-4) + " (1).txt"},
		{long + "." + long, 1, true, long + ". (1)"},
		{strings.Repeat("é", 127), 10, true, strings.Repeat("é", 125) + " (10)"},
	}
	for _, tc := range tests {
		got := numbered(tc.name, tc.n, tc.file)
		if got != tc.want {
			t.Errorf("numbered(%q, %d, %v) = %q, want %q", tc.name, tc.n, tc.file, got, tc.want)
		}
		if len(got) > MaxElementBytes || !utf8.ValidString(got) {
			t.Errorf("numbered(%q, %d, %v) = %q: %d bytes, valid UTF-8 %v", tc.name, tc.n, tc.file, got, len(got), utf8.ValidString(got))
		}
	}
}

func TestOpenAndMisuse(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, filepath.Dir(file), "file", "x")
	if _, err := Open(file); err == nil {
		t.Error("Open on a file: no error")
	}
	if _, err := Open(filepath.Join(file, "sub")); err == nil {
		t.Error("Open below a file: no error")
	}

	d, dir := openDest(t)
	if d.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", d.Dir(), dir)
	}
	p, err := d.CreatePartial("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Discard(p); err != nil {
		t.Fatal(err)
	}
	// A partial the caller closed already can still be finalized.
	if p, err = d.CreatePartial("closed.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt([]byte("c"), 0); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if saved, err := d.Finalize(p, "closed.txt", 1); err != nil || saved != "closed.txt" {
		t.Errorf("Finalize after Close = %q, %v", saved, err)
	}
	// Finalizing a discarded partial fails and creates nothing.
	p, err = d.CreatePartial("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Discard(p); err != nil {
		t.Fatal(err)
	}
	if saved, err := d.Finalize(p, "a.txt", 4); err == nil || saved != "" {
		t.Errorf("Finalize after Discard = %q, %v; want an error", saved, err)
	}
	assertTree(t, dir, map[string]string{"closed.txt": "c"})
}

// The folder cache stays bounded however many folders a transfer names, and
// every reference a file takes is given back when it is finalized or
// discarded, so no descriptor outlives its use.
func TestFolderCacheBounded(t *testing.T) {
	d, dir := openDest(t)
	want := map[string]string{}
	for i := range 3 * maxFolders {
		rel := fmt.Sprintf("f%d/sub/x.txt", i)
		if i%7 == 0 {
			p, err := d.CreatePartial(rel)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Discard(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		receive(t, d, rel, []byte("x"))
		want[rel] = "x"
	}
	assertTree(t, dir, want)
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.folders) > maxFolders {
		t.Errorf("%d folders cached, bound %d", len(d.folders), maxFolders)
	}
	for k, fo := range d.folders {
		if fo.refs != 0 {
			t.Errorf("folder %s still has %d references", k, fo.refs)
		}
	}
	if len(d.gone) != 0 {
		t.Errorf("%d dropped folders still open", len(d.gone))
	}
}

// A folder moved out of the destination, two levels above the partial,
// while it is open: the folders cached below it are dropped and released,
// and the next file of the same folder lands inside.
func TestMovedAncestorDropsCachedFolders(t *testing.T) {
	d, dir := openDest(t)
	p, err := d.CreatePartial("a/b/c/1.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "a"), filepath.Join(t.TempDir(), "away")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt([]byte("1"), 0); !errors.Is(err, ErrMovedOut) {
		t.Errorf("write after the move: %v, want ErrMovedOut", err)
	}
	if saved := receive(t, d, "a/b/c/2.txt", []byte("2")); saved != "a/b/c/2.txt" {
		t.Errorf("saved as %q", saved)
	}
	if err := d.Discard(p); err != nil {
		t.Fatal(err)
	}
	assertTree(t, dir, map[string]string{"a/b/c/2.txt": "2"})
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.gone) != 0 {
		t.Errorf("%d dropped folders still open after the partial let go", len(d.gone))
	}
}

// Finalize skips the truncate only when the partial's length is known to
// be the declared size: a fresh partial written past it, short of it,
// reserved or truncated is still cut (or extended) to exactly that size.
func TestFinalizeExactSize(t *testing.T) {
	d, dir := openDest(t)
	for _, c := range []struct {
		name  string
		write func(p *Partial) error
		size  int64
		want  string
	}{
		{"exact", func(p *Partial) error { _, err := p.WriteAt([]byte("12345"), 0); return err }, 5, "12345"},
		{"past", func(p *Partial) error { _, err := p.WriteAt([]byte("1234567"), 0); return err }, 5, "12345"},
		{"short", func(p *Partial) error { _, err := p.WriteAt([]byte("123"), 0); return err }, 5, "123\x00\x00"},
		{"empty", func(p *Partial) error { return nil }, 0, ""},
		{"truncated", func(p *Partial) error {
			if _, err := p.WriteAt([]byte("12345"), 0); err != nil {
				return err
			}
			return p.Truncate(9)
		}, 5, "12345"},
	} {
		p, err := d.CreatePartial(c.name + "/f")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.write(p); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Finalize(p, c.name+"/f", c.size); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, c.name, "f")); err != nil || string(b) != c.want {
			t.Errorf("%s: final file %q, %v; want %q", c.name, b, err, c.want)
		}
	}
}

// Finalize under another name than the partial was created for (or a
// reopened partial, which has none) validates and resolves that name: a
// bad one is refused, a good one lands in its own folder.
func TestFinalizeOtherName(t *testing.T) {
	d, dir := openDest(t)
	p, err := d.CreatePartial("a/x.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "../x", "a/../../x"} {
		if saved, err := d.Finalize(p, bad, 1); !errors.Is(err, ErrBadName) {
			t.Errorf("Finalize(%q) = %q, %v; want ErrBadName", bad, saved, err)
		}
	}
	if saved, err := d.Finalize(p, "b/y.txt", 1); err != nil || saved != "b/y.txt" {
		t.Fatalf("Finalize under another name: %q, %v", saved, err)
	}
	q, err := d.CreatePartial("c/z.txt")
	if err != nil {
		t.Fatal(err)
	}
	name := q.Name()
	q.Close()
	r, err := d.OpenPartial(name, "")
	if err != nil {
		t.Fatal(err)
	}
	if saved, err := d.Finalize(r, "", 0); !errors.Is(err, ErrBadName) {
		t.Errorf("a reopened partial finalized as %q: %q, %v; want ErrBadName", "", saved, err)
	}
	if saved, err := d.Finalize(r, "c/z.txt", 0); err != nil || saved != "c/z.txt" {
		t.Fatalf("reopened partial: %q, %v", saved, err)
	}
	assertTree(t, dir, map[string]string{"b/y.txt": "x", "c/z.txt": ""})
}

func TestMakeFolder(t *testing.T) {
	d, dir := openDest(t)
	writeFile(t, dir, "docs", "a file called docs")
	writeFile(t, dir, "kept/old.txt", "was here")
	outside := t.TempDir()
	symlink(t, outside, filepath.Join(dir, "link"))

	for _, c := range []struct{ rel, want string }{
		{"empty", "empty"},
		{"empty", "empty"}, // again: the same folder, not "empty (1)"
		{"a/b/c", "a/b/c"},
		{"a/b", "a/b"},
		{"docs/empty", "docs (1)/empty"}, // a file's name: the folder is numbered
		{"kept/new", "kept/new"},         // a folder's name: merged
		{"link/x", "link (1)/x"},         // never through a symlink
	} {
		got, err := d.MakeFolder(c.rel)
		if err != nil || got != c.want {
			t.Errorf("MakeFolder(%q) = %q, %v; want %q", c.rel, got, err, c.want)
			continue
		}
		if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(got))); err != nil || !fi.IsDir() {
			t.Errorf("MakeFolder(%q): %s is not a folder: %v", c.rel, got, err)
		}
	}
	// A file later received into a folder made so lands in it.
	if saved := receive(t, d, "docs/empty/f.txt", []byte("f")); saved != "docs (1)/empty/f.txt" {
		t.Errorf("saved as %q, want %q", saved, "docs (1)/empty/f.txt")
	}
	for _, bad := range []string{"", "/abs", "../up", "a/../b", "a\x00b"} {
		if got, err := d.MakeFolder(bad); !errors.Is(err, ErrBadName) {
			t.Errorf("MakeFolder(%q) = %q, %v; want ErrBadName", bad, got, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("something was made outside the destination: %v", ents)
	}
	assertTree(t, dir, map[string]string{
		"docs":                 "a file called docs",
		"kept/old.txt":         "was here",
		"docs (1)/empty/f.txt": "f",
		"link":                 "-> " + outside,
	})
}

// A name of 248-255 bytes is valid, though it leaves no room for the
// partial's suffix: it arrives in a partial whose stem is shortened, found
// again by the name the partial reports (resume), and is saved under its
// own name; a second file of that name is numbered within 255 bytes, and
// two long names that share their first 247 bytes keep partials apart.
func TestLongNamesArrive(t *testing.T) {
	d, dir := openDest(t)
	long := []struct{ what, rel string }{
		{"ascii", strings.Repeat("n", 250) + ".jpeg"},       // 255 bytes
		{"two-byte", strings.Repeat("é", 124)},              // 248 bytes
		{"three-byte", "photos/" + strings.Repeat("日", 85)}, // 255 bytes in a folder
		{"twin", strings.Repeat("t", 251) + "a.md"},         // 255 bytes
		{"twin, second", strings.Repeat("t", 251) + "b.md"}, // the same first 251 bytes
	}
	want := map[string]string{}
	var parts []*Partial
	for _, l := range long {
		what, rel := l.what, l.rel
		p, err := d.CreatePartial(rel)
		if err != nil {
			t.Fatalf("%s: CreatePartial: %v", what, err)
		}
		name := p.Name()
		base := name[strings.LastIndexByte(name, '/')+1:]
		if len(base) > MaxElementBytes || !strings.HasSuffix(name, PartialSuffix) || !utf8.ValidString(name) {
			t.Errorf("%s: partial %q (%d bytes)", what, name, len(base))
		}
		if pp, err := d.PartialPath(rel); err != nil || len(pp) == 0 {
			t.Errorf("%s: PartialPath = %q, %v", what, pp, err)
		}
		if _, err := p.WriteAt([]byte(what), 0); err != nil {
			t.Fatal(err)
		}
		p.Close()
		// As a resume finds it again.
		if p, err = d.OpenPartial(name, ""); err != nil {
			t.Fatalf("%s: OpenPartial(%q): %v", what, name, err)
		}
		parts = append(parts, p)
		want[rel] = what
	}
	for i, l := range long {
		if saved, err := d.Finalize(parts[i], l.rel, int64(len(l.what))); err != nil || saved != l.rel {
			t.Errorf("%s: saved as %q, %v", l.what, saved, err)
		}
	}
	again := receive(t, d, long[0].rel, []byte("again"))
	if wantName := strings.Repeat("n", 246) + " (1).jpeg"; again != wantName {
		t.Errorf("the same name again saved as %q, want %q", again, wantName)
	}
	want[again] = "again"
	assertTree(t, dir, want)
}

// TestMadeFoldersAndRemoveFolder: CreatePartial says which folders it made
// (not those that were there), and RemoveFolder takes away only an empty
// folder: one with a file in it, a file, a symlink and a path outside stay.
func TestMadeFoldersAndRemoveFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "Trip"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p, err := d.CreatePartial("Trip/day 1/night/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.MadeFolders(), "|"); got != "Trip/day 1|Trip/day 1/night" {
		t.Fatalf("made %q, want the two new folders, not Trip", got)
	}
	q, err := d.CreatePartial("Trip/day 1/b.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(q.MadeFolders()) != 0 {
		t.Errorf("a file in folders already made says it made %q", q.MadeFolders())
	}
	if err := d.Discard(p); err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveFolder("Trip/day 1"); err == nil {
		t.Error("a folder with a folder and a partial in it was removed")
	}
	if err := d.RemoveFolder("Trip/day 1/night"); err != nil {
		t.Errorf("the empty folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "Trip", "day 1", "night")); !os.IsNotExist(err) {
		t.Errorf("the empty folder is still there: %v", err)
	}
	// Its partial finished: the folder holds a file and stays.
	if _, err := d.Finalize(q, "Trip/day 1/b.txt", 0); err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveFolder("Trip/day 1"); err == nil {
		t.Error("a folder with a file in it was removed")
	}
	os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "empty"), 0o755)
	os.Symlink(filepath.Join(dir, "empty"), filepath.Join(dir, "link"))
	for _, rel := range []string{"file", "link", "../" + filepath.Base(dir), "", ".", "Trip/.."} {
		if err := d.RemoveFolder(rel); err == nil {
			t.Errorf("RemoveFolder(%q) removed something", rel)
		}
	}
	for _, name := range []string{"file", "link", "empty", "Trip/day 1/b.txt"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A file a peer named like a partial ("a.txt.partial") is received as any
// other, and a partial's name kept by a transfer's resume state never
// reopens it: OpenPartial checks the file is the partial it created.
func TestFileNamedLikeAPartial(t *testing.T) {
	d, dir := openDest(t)
	p, err := d.CreatePartial("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	name, id := p.Name(), p.Identity()
	if id == "" {
		t.Skip("no file identity on this platform")
	}
	p.Close()
	if r, err := d.OpenPartial(name, id); err != nil {
		t.Fatalf("the same partial: %v", err)
	} else {
		r.Close()
	}
	// Its user deletes the partial; a file of that name arrives later.
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
		t.Fatal(err)
	}
	if saved := receive(t, d, "a.txt.partial", []byte("precious")); saved != "a.txt.partial" {
		t.Fatalf("saved as %q", saved)
	}
	if r, err := d.OpenPartial(name, id); !errors.Is(err, ErrNotThePartial) {
		if err == nil {
			r.Close()
		}
		t.Fatalf("the state's partial reopened the received file: %v", err)
	}
	assertTree(t, dir, map[string]string{"a.txt.partial": "precious"})
	// Beside a partial of the same name, it waits under its own.
	q, err := d.CreatePartial("b")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Discard(q)
	if saved := receive(t, d, "b.partial", []byte("b")); saved != "b (1).partial" {
		t.Errorf("saved beside b's partial as %q, want %q", saved, "b (1).partial")
	}
}

// Renamed finds the file a partial became under its name or a numbered
// one, by the partial's identity, and no other file of that size.
func TestRenamedFindsThePartialByIdentity(t *testing.T) {
	d, dir := openDest(t)
	if saved := receive(t, d, "r/a.txt", []byte("other")); saved != "r/a.txt" {
		t.Fatalf("saved as %q", saved)
	}
	p, err := d.CreatePartial("r/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	id := p.Identity()
	if id == "" {
		t.Skip("no file identity on this platform")
	}
	if _, ok := d.Renamed("r/a.txt", id, 5); ok {
		t.Fatal("found a file before the partial got a name")
	}
	if _, err := p.WriteAt([]byte("ours!"), 0); err != nil {
		t.Fatal(err)
	}
	if saved, err := d.Finalize(p, "r/a.txt", 5); err != nil || saved != "r/a (1).txt" {
		t.Fatalf("Finalize = %q, %v", saved, err)
	}
	if as, ok := d.Renamed("r/a.txt", id, 5); !ok || as != "r/a (1).txt" {
		t.Errorf("Renamed = %q, %v; want r/a (1).txt", as, ok)
	}
	if _, ok := d.Renamed("r/a.txt", id, 6); ok {
		t.Error("found it at another size")
	}
	if _, ok := d.Renamed("r/a.txt", "b1.1", 5); ok {
		t.Error("found a file of another identity")
	}
	assertTree(t, dir, map[string]string{"r/a.txt": "other", "r/a (1).txt": "ours!"})
}
