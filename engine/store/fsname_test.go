package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// refusesLikeFAT stands in for a vfat or exFAT file system (Dest.fsRefuses),
// which refuses what Windows refuses, each driver with its own error: the
// kernel's EINVAL, exfat-fuse's ENOENT (seen: "Not saved: no such file or
// directory." for "m:n.txt" on an exFAT stick), fusefat's EPERM.
func refusesLikeFAT(errno syscall.Errno) func(name string) error {
	return func(name string) error {
		if strings.ContainsAny(name, `<>:"|?*`) || strings.HasSuffix(name, ".") || strings.HasSuffix(name, " ") {
			return errno
		}
		return nil
	}
}

// TestNamesTheFileSystemRefusesAreSavedAsWindowsWould: a file named on a
// Mac or Linux ("m:n.txt", "what?.txt", "trail.") received into a folder
// on a vfat or exFAT disk arrives under the name Windows would give it,
// reported as saved as that, as its folders do; a file that has that name
// already is not overwritten. They failed one by one with the file
// system's words ("no such file or directory" on an exFAT stick).
func TestNamesTheFileSystemRefusesAreSavedAsWindowsWould(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EINVAL, syscall.ENOENT, syscall.EPERM} {
		for _, whole := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/whole=%v", errno, whole), func(t *testing.T) {
				d, dir := openDest(t)
				d.fsRefuses = refusesLikeFAT(errno)
				writeFile(t, dir, "taken_.txt", "there before")
				want := map[string]string{"taken_.txt": "there before"}
				for _, c := range []struct{ rel, saved string }{
					{"m:n.txt", "m_n.txt"},
					{"what?.txt", "what_.txt"},
					{"trail.", "trail"},
					{"taken?.txt", "taken_ (1).txt"},
					{"a:b/c*d/x.txt", "a_b/c_d/x.txt"},
					{"a:b/plain.txt", "a_b/plain.txt"},
					{"plain.txt", "plain.txt"},
				} {
					create := d.CreatePartial
					if whole {
						create = d.CreateWhole
					}
					p, err := create(c.rel)
					if err != nil {
						t.Fatalf("create %q: %v", c.rel, err)
					}
					if _, err := p.WriteAt([]byte(c.rel), 0); err != nil {
						t.Fatal(err)
					}
					saved, err := d.Finalize(p, c.rel, int64(len(c.rel)))
					if err != nil {
						t.Fatalf("finalize %q: %v", c.rel, err)
					}
					if saved != c.saved {
						t.Errorf("%q saved as %q, want %q", c.rel, saved, c.saved)
					}
					want[c.saved] = c.rel
				}
				assertTree(t, dir, want)
			})
		}
	}
}

// A partial created by an earlier attempt (here under a name the file
// system takes) and reopened for resume gets its final name the same way.
func TestResumedPartialOfARefusedNameIsSavedAsWindowsWould(t *testing.T) {
	d, dir := openDest(t)
	p, err := d.CreatePartial("notes: draft.txt")
	if err != nil {
		t.Fatal(err)
	}
	name, id := p.Name(), p.Identity()
	if _, err := p.WriteAt([]byte("draft"), 0); err != nil {
		t.Fatal(err)
	}
	p.Close()
	p.letGo()
	d.fsRefuses = refusesLikeFAT(syscall.EINVAL) // the disk this is written to from now on
	p, err = d.OpenPartial(name, id)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := d.Finalize(p, "notes: draft.txt", 5)
	if err != nil {
		t.Fatal(err)
	}
	if saved != "notes_ draft.txt" {
		t.Errorf("saved as %q", saved)
	}
	assertTree(t, dir, map[string]string{"notes_ draft.txt": "draft"})
}

// A refusal that no other name mends is said as it came: a name Windows
// takes as it is is not tried again, nor is an error that is no refusal.
func TestWindowsNameOnlyForARefusal(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		alt  string
		ok   bool
	}{
		{"m:n.txt", syscall.EINVAL, "m_n.txt", true},
		{"m:n.txt", syscall.ENOENT, "m_n.txt", true},
		{"aux.c", syscall.EINVAL, "aux_.c", true},
		{"plain.txt", syscall.EINVAL, "", false},
		{"m:n.txt", syscall.ENOSPC, "", false},
		{"m:n.txt", syscall.EEXIST, "", false},
		{"m:n.txt", nil, "", false},
	} {
		alt, ok := windowsName(c.name, c.err)
		if alt != c.alt || ok != c.ok {
			t.Errorf("windowsName(%q, %v) = %q, %v; want %q, %v", c.name, c.err, alt, ok, c.alt, c.ok)
		}
	}
}

// A file that got the name Windows takes, its record of that lost (the
// process ended right after the rename), is found again by Renamed under
// that name, not fetched and saved a second time as "m_n (1).txt".
func TestRenamedFindsAFileSavedUnderItsWindowsName(t *testing.T) {
	d, _ := openDest(t)
	d.fsRefuses = refusesLikeFAT(syscall.EINVAL)
	p, err := d.CreatePartial("a:b/m:n.txt")
	if err != nil {
		t.Fatal(err)
	}
	id := p.Identity()
	if _, err := p.WriteAt([]byte("data"), 0); err != nil {
		t.Fatal(err)
	}
	saved, err := d.Finalize(p, "a:b/m:n.txt", 4)
	if err != nil || saved != "a_b/m_n.txt" {
		t.Fatalf("saved as %q, %v", saved, err)
	}
	if got, ok := d.Renamed("a:b/m:n.txt", id, 4); !ok || got != saved {
		t.Errorf("Renamed = %q, %v; want %q", got, ok, saved)
	}
}

// TestDecomposedTwinIsTaken: a file or folder saved decomposed (NFD: by an
// older Ferry, or copied from a Mac disk) is the name a composed one looks
// the same as: a file is not saved beside it under that name ("café.txt"
// twice in one folder) but numbered, by a partial's rename and by a whole
// file's link alike, and files of a folder of that name go into it.
func TestDecomposedTwinIsTaken(t *testing.T) {
	if !composeHere {
		t.Skip("names are kept as they came here")
	}
	d, dir := openDest(t)
	const nfd, nfdFolder = "cafe\u0301.txt", "E\u0301te\u0301"
	if err := os.WriteFile(filepath.Join(dir, nfd), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, nfdFolder), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		create func(string) (*Partial, error)
		rel    string
		want   string
	}{
		{d.CreatePartial, "caf\u00e9.txt", "caf\u00e9 (1).txt"},
		{d.CreateWhole, "cafe\u0301.txt", "caf\u00e9 (2).txt"},
		{d.CreatePartial, "\u00c9t\u00e9/x.txt", nfdFolder + "/x.txt"},
		{d.CreateWhole, "E\u0301te\u0301/y.txt", nfdFolder + "/y.txt"},
	} {
		p, err := c.create(c.rel)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.WriteAt([]byte("new"), 0); err != nil {
			t.Fatal(err)
		}
		if as, err := d.Finalize(p, c.rel, 3); err != nil || as != c.want {
			t.Errorf("%d: %q saved as %q, %v; want %q", i, c.rel, as, err, c.want)
		}
	}
	assertTree(t, dir, map[string]string{nfd: "old", "caf\u00e9 (1).txt": "new", "caf\u00e9 (2).txt": "new",
		nfdFolder + "/x.txt": "new", nfdFolder + "/y.txt": "new"})
}

// On a FAT or exFAT file system (Dest.windowsNames) a name is saved as
// Windows would save it, and so reported, without waiting for a refusal:
// the kernel's vfat and exfat take "notes." and drop its dot silently,
// so it was reported as saved as "notes." while the stick held "notes";
// fusefat kept "notes." as it is, a name a Windows device cannot open.
func TestFATNamesAreSavedAsWindowsWould(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run(fmt.Sprintf("whole=%v", whole), func(t *testing.T) {
			d, dir := openDest(t)
			d.windowsNames = true
			want := map[string]string{}
			for _, c := range []struct{ rel, saved string }{
				{"notes.", "notes"},
				{"trail ", "trail"},
				{"dots.../in.txt", "dots/in.txt"},
				{"aux.c", "aux_.c"},
				{"plain.txt", "plain.txt"},
			} {
				create := d.CreatePartial
				if whole {
					create = d.CreateWhole
				}
				p, err := create(c.rel)
				if err != nil {
					t.Fatalf("create %q: %v", c.rel, err)
				}
				if _, err := p.WriteAt([]byte(c.rel), 0); err != nil {
					t.Fatal(err)
				}
				saved, err := d.Finalize(p, c.rel, int64(len(c.rel)))
				if err != nil {
					t.Fatalf("finalize %q: %v", c.rel, err)
				}
				if saved != c.saved {
					t.Errorf("%q saved as %q, want %q", c.rel, saved, c.saved)
				}
				want[c.saved] = c.rel
			}
			if at, err := d.MakeFolder("empty."); err != nil || at != "empty" {
				t.Errorf("folder empty. made as %q, %v", at, err)
			}
			if fi, err := os.Stat(filepath.Join(dir, "empty")); err != nil || !fi.IsDir() {
				t.Errorf("folder empty: %v", err)
			}
			assertTree(t, dir, want)
		})
	}
}
