package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// TestOtherCase: a name's letters in the other case, none where no letter
// has one.
func TestOtherCase(t *testing.T) {
	for name, want := range map[string]string{
		"a": "A", "A": "a", "Photos": "PHOTOS", "PHOTOS": "photos", "a (1)": "A (1)",
		"café": "CAFÉ", "ÉTÉ": "été", "Ωmega": "ΩMEGA",
		"2024": "", "写真": "", "(1)": "", "_": "",
	} {
		if got := otherCase(name); got != want {
			t.Errorf("otherCase(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestListing: a folder lists a name when it holds it spelled so, or
// decomposed or composed (which look the same); not in another case.
func TestListing(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"A", norm.NFD.String("café"), "x.txt"} {
		if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	names, err := listing(root, ".")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"A": true, "a": false, "café": true, norm.NFD.String("café"): true, "CAFÉ": false, "X.TXT": false, "b": false} {
		if _, got := names[composed(name)]; got != want {
			t.Errorf("listing holds %q: %v, want %v", name, got, want)
		}
	}
}

// An offer's folders "p/A" and "p/a" are two folders on a stick that
// ignores letter case: the second arrives as "a (1)", each file reported
// where it is, nothing overwritten. They were merged into "p/A", its files
// reported in "p/a" ("p/a/y.txt", "p/a/x (1).txt") where the stick lists
// none. On a FAT32 stick (fusefat here) and an exFAT one (exfat-fuse,
// whose type, "fuseblk", does not say FAT: the folder itself is asked).
// A resume finds its partials again, and PartialPath and MakeFolder agree.
// The sticks need root and their tools, and skip without them; a Mac's or
// Windows's temporary folder (APFS, NTFS) runs it too, where it ignores
// letter case.
func TestFoldersOfAnotherCaseStayApartOnSticks(t *testing.T) {
	for _, c := range []struct {
		fs    string
		stick func(testing.TB) string
	}{{"FAT32", testutil.FATStick}, {"exFAT", testutil.ExFATStick}, {"temp", foldingTemp}} {
		t.Run(c.fs, func(t *testing.T) {
			stick := c.stick(t)
			d, err := Open(stick)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			receive := func(rel string, keep bool) string {
				t.Helper()
				p, err := d.CreatePartial(rel)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := p.WriteAt([]byte(rel), 0); err != nil {
					t.Fatal(err)
				}
				if keep { // interrupted: reopened to resume
					name, id := p.Name(), p.Identity()
					p.Close()
					if p, err = d.OpenPartial(name, id); err != nil {
						t.Fatal(err)
					}
				}
				as, err := d.Finalize(p, rel, int64(len(rel)))
				if err != nil {
					t.Fatal(err)
				}
				return as
			}
			for _, c := range []struct {
				rel, want string
				resume    bool
			}{
				{"p/A/x.txt", "p/A/x.txt", false},
				{"p/a/y.txt", "p/a (1)/y.txt", false},
				{"p/a/x.txt", "p/a (1)/x.txt", true},
				{"p/A/z.txt", "p/A/z.txt", true},
			} {
				if got := receive(c.rel, c.resume); got != c.want {
					t.Errorf("%s saved as %q, want %q", c.rel, got, c.want)
				}
			}
			// Where the resolutions are forgotten (over maxCachedDirs of
			// them), "p" is listed again for "a (1)", made since.
			d.mu.Lock()
			d.dirs = nil
			d.mu.Unlock()
			if got := receive("p/a/v.txt", false); got != "p/a (1)/v.txt" {
				t.Errorf("p/a/v.txt saved as %q, want p/a (1)/v.txt", got)
			}
			if got, err := d.PartialPath("p/a/w.txt"); err != nil || got != "p/a (1)/w.txt.partial" {
				t.Errorf("PartialPath(p/a/w.txt) = %q, %v", got, err)
			}
			if got, err := d.MakeFolder("p/a/empty"); err != nil || got != "p/a (1)/empty" {
				t.Errorf("MakeFolder(p/a/empty) = %q, %v", got, err)
			}
			for dir, want := range map[string][]string{"p": {"A", "a (1)"}, "p/A": {"x.txt", "z.txt"}, "p/a (1)": {"empty", "v.txt", "x.txt", "y.txt"}} {
				var got []string
				es, err := os.ReadDir(filepath.Join(stick, dir))
				for _, e := range es {
					got = append(got, e.Name())
				}
				if slices.Sort(got); err != nil || !slices.Equal(got, want) {
					t.Errorf("%s holds %q (%v), want %q", dir, got, err, want)
				}
			}
			for rel, want := range map[string]string{"p/A/x.txt": "p/A/x.txt", "p/a (1)/x.txt": "p/a/x.txt", "p/a (1)/y.txt": "p/a/y.txt"} {
				if b, err := os.ReadFile(filepath.Join(stick, rel)); err != nil || string(b) != want {
					t.Errorf("%s holds %q (%v), want %q", rel, b, err, want)
				}
			}
		})
	}
}

// foldingTemp is a temporary folder that ignores letter case, as a Mac's
// and Windows's are by default; it skips t where the folder tells case
// apart (Linux's).
func foldingTemp(t testing.TB) string {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "A"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "a")); err != nil {
		t.Skip("the temporary folder tells letter case apart")
	}
	if err := os.Remove(filepath.Join(dir, "A")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestFolderTwins finds an offer's folders that are one where letter case
// is ignored, by its files' paths in the offer's order: the first spelling
// of each, a folder before those in it; and nothing for a peer's paths
// that name no such folder. Its cases are FuzzFolderTwins's seeds.
func TestFolderTwins(t *testing.T) {
	for _, c := range folderTwinCases {
		var tw FolderTwins
		for _, p := range c.paths {
			tw.Add(p)
		}
		if got := tw.Firsts(); !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, want %q", c.paths, got, c.want)
		}
	}
}

var folderTwinCases = []struct {
	paths []string
	want  []string
}{
	{[]string{"p/A/x.txt", "p/a/y.txt", "p/a/x.txt"}, []string{"p/A"}},
	{[]string{"p/a/y.txt", "p/A/x.txt"}, []string{"p/a"}},
	{[]string{"p/A/x.txt", "p/B/x.txt", "p/A/y.txt"}, nil},            // a folder again, one spelling
	{[]string{"P/a/1", "p/A/2", "Q/x"}, []string{"P", "P/a"}},         // a folder before those in it
	{[]string{"a/x", "b/x", "A/x", "B/y", "a/z"}, []string{"a", "b"}}, // apart in the offer
	{[]string{"Été/x", "ÉTÉ/y"}, []string{"Été"}},
	{[]string{"e\u0301te/x", "\u00e9te/y"}, nil},  // decomposed and composed: one look, one folder
	{[]string{"x.txt", "X.TXT", "d/x", "D"}, nil}, // files are not folders
	{[]string{"写真/a", "写真/b"}, nil},
	{[]string{"", "/", "//", "a//b", "A//b/"}, []string{"a", "a/"}}, // refused before (ValidatePath): only no panic matters
	{nil, nil},
}

// FuzzFolderTwins: whatever paths a peer sends, each folder FolderTwins
// names is a folder of one of them, named once, and another path names
// that folder in another spelling.
func FuzzFolderTwins(f *testing.F) {
	for _, c := range folderTwinCases {
		f.Add(strings.Join(c.paths, "\n"))
	}
	f.Fuzz(func(t *testing.T, list string) {
		paths := strings.Split(list, "\n")
		var tw FolderTwins
		folders := map[string]bool{}
		for _, p := range paths {
			tw.Add(p)
			for i := range len(p) {
				if p[i] == '/' && i > 0 {
					folders[p[:i]] = true
				}
			}
		}
		named := map[string]bool{}
		for _, dir := range tw.Firsts() {
			if !folders[dir] || named[dir] {
				t.Fatalf("%q: names %q, not a folder of a path or twice", paths, dir)
			}
			named[dir] = true
			other := false
			for g := range folders {
				other = other || SameNameKey(g) == SameNameKey(dir) && composed(g) != composed(dir)
			}
			if !other {
				t.Fatalf("%q: names %q, which no other spelling of a path names", paths, dir)
			}
		}
	})
}
