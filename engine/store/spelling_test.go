package store

import (
	"fmt"
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
			d, stick := openStick(t, c.stick)
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

// A name Reserve keeps goes to its file alone where the folder ignores
// letter case, whichever is saved first: "p/READ.ME" and a folder "p/X",
// saved before "p/Read.me" and "p/x", arrive as "p/READ (1).ME" and "p/X
// (1)" (PartialPath agrees), with the folder asked through a file made for
// it (".ferry-case-….tmp", gone after) when it holds no name to ask by;
// where case is told apart every name is kept, and nothing is made.
func TestReservedNameKeepsItsSpelling(t *testing.T) {
	for _, c := range []struct {
		fs    string
		stick func(testing.TB) string
		folds bool
	}{{"FAT32", testutil.FATStick, true}, {"exFAT", testutil.ExFATStick, true}, {"temp", foldingTemp, true}, {"cased", func(t testing.TB) string { return t.TempDir() }, false}} {
		t.Run(c.fs, func(t *testing.T) {
			d, stick := openStick(t, c.stick)
			for _, rel := range []string{"p/Read.me", "p/x", "q/y", "top"} {
				if err := d.Reserve(rel); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Reserve("../x"); err == nil {
				t.Error("Reserve(../x) kept a name")
			}
			receive := func(rel string) string {
				t.Helper()
				p, err := d.CreatePartial(rel)
				if err != nil {
					t.Fatal(err)
				}
				as, err := d.Finalize(p, rel, 0)
				if err != nil {
					t.Fatal(err)
				}
				return as
			}
			numbered := func(as, want string) string {
				if c.folds {
					return want
				}
				return as
			}
			for _, r := range []struct{ rel, want string }{
				{"TOP", "TOP (1)"}, // in the destination, empty but for the partial
				{"p/READ.ME", "p/READ (1).ME"},
				{"p/Read.me", "p/Read.me"},
				{"p/read.me", "p/read (2).me"}, // taken ("p/Read.me"; a number yields to nothing)
				{"q/Y/z", "q/Y (1)/z"},         // "q" made empty: asked with a file made for it
			} {
				if got := receive(r.rel); got != numbered(r.rel, r.want) {
					t.Errorf("%s saved as %q, want %q", r.rel, got, numbered(r.rel, r.want))
				}
			}
			if got, err := d.PartialPath("p/X/y"); err != nil || got != numbered("p/X/y.partial", "p/X (1)/y.partial") {
				t.Errorf("PartialPath(p/X/y) = %q, %v", got, err)
			}
			if got, err := d.MakeFolder("p/X"); err != nil || got != numbered("p/X", "p/X (1)") {
				t.Errorf("MakeFolder(p/X) = %q, %v", got, err)
			}
			if got := receive("p/x"); got != "p/x" {
				t.Errorf("p/x saved as %q", got)
			}
			if got := receive("p/X/w"); got != numbered("p/X/w", "p/X (1)/w") {
				t.Errorf("p/X/w saved as %q", got)
			}
			for _, dir := range []string{"", "p", "q"} {
				es, _ := os.ReadDir(filepath.Join(stick, dir))
				for _, e := range es {
					if strings.HasPrefix(e.Name(), ".ferry-case-") {
						t.Errorf("%s holds %s", dir, e.Name())
					}
				}
			}
		})
	}
}

// openStick opens a Dest on the folder that stick makes for t (a stick
// mounted, a temporary folder: stick skips t where it cannot make it) and
// closes it at the end of the test.
func openStick(t *testing.T, stick func(testing.TB) string) (*Dest, string) {
	t.Helper()
	dir := stick(t)
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, dir
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

// TestTwins finds an offer's names that are one where letter case is
// ignored, by its files' paths in the offer's order (then its empty
// folders', ending in "/"): the first spelling of each folder, a folder
// before those in it, and of each file, a file and a folder of exactly one
// name among them; the names that read as numbered, each once; and nothing
// for a peer's paths that name no such names. Its cases are FuzzTwins's
// seeds.
func TestTwins(t *testing.T) {
	for _, c := range twinCases {
		tw := addTwins(c.paths)
		if got := tw.Firsts(); !slices.Equal(got, c.want) {
			t.Errorf("%q: folders %q, want %q", c.paths, got, c.want)
		}
		if got := tw.FirstFiles(); !slices.Equal(got, c.files) {
			t.Errorf("%q: files %q, want %q", c.paths, got, c.files)
		}
		if got := tw.Numbered(); !slices.Equal(got, c.numbered) {
			t.Errorf("%q: numbered %q, want %q", c.paths, got, c.numbered)
		}
	}
}

// TestTwinCopies: the files of one path added more than once (composed
// and decomposed counting as one), each path's places among the files in
// the order added, whatever spelling of its name came first; folders are
// not counted.
func TestTwinCopies(t *testing.T) {
	tw := addTwins([]string{"p/x", "p/a", "q/", "p/x", "P/X", "p/x", "p/X", "p/X", "caf\u00e9", "cafe\u0301", "x", "x/y"})
	if got, want := tw.Copies(), [][]int{{0, 2, 4}, {5, 6}, {7, 8}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("copies %v, want %v", got, want)
	}
}

// addTwins is a Twins of paths, a path ending in "/" an empty folder's.
func addTwins(paths []string) *Twins {
	var tw Twins
	for _, p := range paths {
		if dir, ok := strings.CutSuffix(p, "/"); ok && dir != "" {
			tw.AddFolder(dir)
		} else {
			tw.Add(p)
		}
	}
	return &tw
}

// TestReadsNumbered: a name holds " (n)" wherever numbered puts it.
func TestReadsNumbered(t *testing.T) {
	for name, want := range map[string]bool{
		"a (1)": true, "Read (12).me": true, "x (1) (2).tar.gz": true, "a ( (3)": true, ".bashrc (1)": true,
		"a": false, "a (1": false, "a ()": false, "a(1)": false, "a (x)": false, "a (1x)": false, "(1)": false,
	} {
		if got := readsNumbered(name); got != want {
			t.Errorf("readsNumbered(%q) = %v", name, got)
		}
	}
	for _, name := range []string{"a", "Read.me", ".bashrc", "archive.tar.gz", "trail...", strings.Repeat("é", 200) + ".txt"} {
		for _, file := range []bool{true, false} {
			if n := numbered(name, 7, file); !readsNumbered(n) || !readsNumbered(SameNameKey(n)) {
				t.Errorf("numbered(%q, 7) = %q does not read as numbered", name, n)
			}
		}
	}
}

var twinCases = []struct {
	paths    []string
	want     []string // folders
	files    []string
	numbered []string
}{
	{[]string{"p/A/x.txt", "p/a/y.txt", "p/a/x.txt"}, []string{"p/A"}, nil, nil},
	{[]string{"p/a/y.txt", "p/A/x.txt"}, []string{"p/a"}, nil, nil},
	{[]string{"p/A/x.txt", "p/B/x.txt", "p/A/y.txt"}, nil, nil, nil},            // a folder again, one spelling
	{[]string{"P/a/1", "p/A/2", "Q/x"}, []string{"P"}, nil, nil},                // "p/A" goes in "p (1)"
	{[]string{"a/x", "b/x", "A/x", "B/y", "a/z"}, []string{"a", "b"}, nil, nil}, // apart in the offer
	{[]string{"p/A/x.txt", "p/a/X.TXT"}, []string{"p/A"}, nil, nil},             // files in two folders
	{[]string{"p/a/1", "P/B/2", "p/b/3"}, []string{"p"}, nil, nil},              // "P/B" goes in "P (1)"
	{[]string{"P/a/1", "p/b", "P/A/2"}, []string{"P", "P/a"}, nil, nil},         // a folder before those in it
	{[]string{"Été/x", "ÉTÉ/y"}, []string{"Été"}, nil, nil},
	{[]string{"e\u0301te/x", "\u00e9te/y"}, nil, nil, nil}, // decomposed and composed: one look, one folder
	{[]string{"x.txt", "X.TXT", "d/x", "D"}, []string{"d"}, []string{"x.txt"}, nil},
	{[]string{"p/Read.me", "p/READ.ME", "p/read.me"}, nil, []string{"p/Read.me"}, nil},
	{[]string{"p/x", "p/X/y"}, nil, []string{"p/x"}, nil},                               // a file, then a folder
	{[]string{"p/X/y", "p/x"}, []string{"p/X"}, nil, nil},                               // a folder, then a file
	{[]string{"x", "x/y", "x"}, nil, []string{"x"}, nil},                                // a file and a folder of exactly one name: the file first
	{[]string{"p/x/y", "p/x"}, []string{"p/x"}, nil, nil},                               // the folder first
	{[]string{"p/x", "p/x"}, nil, nil, nil},                                             // one file twice: Copies
	{[]string{"p/a/x", "p/A/y", "P/b", "p/a/", "p/B/"}, []string{"p", "p/a"}, nil, nil}, // empty folders after the files'
	{[]string{"p/Read.me", "p/READ.ME", "p/Read (1).me", "p/READ (1).ME", "p/a (2)/x", "q (3).tar.gz", "p/b (1)/"},
		nil, []string{"p/Read.me", "p/Read (1).me"}, []string{"p/Read (1).me", "p/a (2)", "q (3).tar.gz", "p/b (1)"}},
	{[]string{"p/notes (1).", "p/NOTES (1)", "p/a (1):b"}, nil, []string{"p/notes (1)."}, []string{"p/notes (1).", "p/a (1):b"}}, // not plain: as SameNameKey reads them
	{[]string{"caf\u00e9", "CAFE\u0301"}, nil, []string{"caf\u00e9"}, nil},                                                       // composed as compared
	{[]string{"写真/a", "写真/b"}, nil, nil, nil},
	{[]string{"p/con.txt", "p/CON.TXT", "p/notes.", "p/NOTES.", "p/a:b", "p/A:B"}, nil, []string{"p/con.txt", "p/notes.", "p/a:b"}, nil}, // not plain: SameNameKey
	{[]string{"", "/", "//", "a//b", "A//b/", "//0"}, []string{"a"}, []string{"/"}, nil},                                                 // refused before (ValidatePath): only no panic matters
	{nil, nil, nil, nil},
}

// FuzzTwins: whatever paths a peer sends (a line ending in "/" an empty
// folder's), each folder Twins names is a folder of one of them, each file
// one of them, named once, and another path or folder names it in another
// spelling, or in its own as the other kind (a file and a folder); each
// numbered name is a path or folder of them, named once, that reads as
// numbered as SameNameKey reads it; a name Twins hashes as it reads it
// (plainName), or a path a NameFilter does (plainPath), has that key; and
// with a bound a few paths reach, every name that reads as numbered is
// listed or held past it.
func FuzzTwins(f *testing.F) {
	for _, c := range twinCases {
		f.Add(strings.Join(c.paths, "\n"))
	}
	f.Fuzz(func(t *testing.T, list string) {
		paths := strings.Split(list, "\n")
		tw := addTwins(paths)
		folders, files := map[string]bool{}, map[string]bool{}
		for _, p := range paths {
			if dir, ok := strings.CutSuffix(p, "/"); ok && dir != "" {
				p = dir
				folders[p] = true
			} else {
				files[p] = true
			}
			base := p[strings.LastIndexByte(p, '/')+1:]
			if plainName(base) && SameNameKey(base) != strings.ToUpper(base) {
				t.Fatalf("%q is plain, but its key is %q", base, SameNameKey(base))
			}
			if plainPath(p) && SameNameKey(p) != strings.ToUpper(p) {
				t.Fatalf("%q is plain, but its key is %q", p, SameNameKey(p))
			}
			for i := range len(p) {
				if p[i] == '/' && i > 0 {
					folders[p[:i]] = true
				}
			}
		}
		named := map[string]bool{}
		kinds := []map[string]bool{folders, files}
		check := func(name string, kind int) {
			if !kinds[kind][name] || named[name] {
				t.Fatalf("%q: names %q, not a name of a path or twice", paths, name)
			}
			named[name] = true
			other := false
			for k, m := range kinds {
				for g := range m {
					other = other || twinKey(g) == twinKey(name) && (composed(g) != composed(name) || k != kind)
				}
			}
			if !other {
				t.Fatalf("%q: names %q, which no other spelling or kind of a path names", paths, name)
			}
		}
		for _, dir := range tw.Firsts() {
			check(dir, 0)
		}
		for _, f := range tw.FirstFiles() {
			check(f, 1)
		}
		var added []string // the files, in the order added
		for _, p := range paths {
			if dir, ok := strings.CutSuffix(p, "/"); !ok || dir == "" {
				added = append(added, p)
			}
		}
		copied := map[int]bool{}
		for _, places := range tw.Copies() {
			for k, at := range places {
				if len(places) < 2 || copied[at] || k > 0 && (at <= places[k-1] || composed(added[at]) != composed(added[places[0]])) {
					t.Fatalf("%q: copies %v: not one path's places, in order, each once", paths, tw.Copies())
				}
				copied[at] = true
			}
		}
		// With a bound a few paths reach, each name that reads as
		// numbered is listed, or held past it.
		small := Twins{MaxBytes: 256}
		for _, p := range paths {
			if dir, ok := strings.CutSuffix(p, "/"); ok && dir != "" {
				small.AddFolder(dir)
			} else {
				small.Add(p)
			}
		}
		for _, m := range []map[string]bool{files, folders} {
			for p := range m {
				if p == "" || !readsNumbered(SameNameKey(p[strings.LastIndexByte(p, '/')+1:])) || small.NumberedBeyond().holds(p) {
					continue
				}
				if !slices.ContainsFunc(small.Numbered(), func(q string) bool { return twinKey(q) == twinKey(p) }) {
					t.Fatalf("%q: %q reads as numbered, neither listed nor held past the bound", paths, p)
				}
			}
		}
		numbered := map[string]bool{}
		for _, p := range tw.Numbered() {
			if !files[p] && !folders[p] || numbered[p] {
				t.Fatalf("%q: numbered %q, not a name of a path or twice", paths, p)
			}
			numbered[p] = true
			if !readsNumbered(SameNameKey(p[strings.LastIndexByte(p, '/')+1:])) {
				t.Fatalf("%q: numbered %q, which does not read as numbered", paths, p)
			}
		}
	})
}

// BenchmarkTwins reads the paths of an offer of a million files in 20,000
// folders, as a receiver does once before its first file (docs/hostile.md).
func BenchmarkTwins(b *testing.B) {
	benchTwins(b, "photos/2024/album %d/IMG_%05d.JPG", func(tw *Twins) bool { return len(tw.Firsts())+len(tw.FirstFiles()) == 0 })
}

// BenchmarkTwinsNumbered is BenchmarkTwins for a million files whose names
// all read as numbered ("IMG (7).JPG"): those past what Twins holds go to
// its NameFilter, a key (SameNameKey) each, in a bounded 4 MiB.
func BenchmarkTwinsNumbered(b *testing.B) {
	benchTwins(b, "photos/2024/album %d/IMG (%d).JPG", func(tw *Twins) bool { return tw.NumberedBeyond() != nil })
}

// benchTwins reads a million paths of format (a folder's number, a
// file's) into a Twins each round, and checks it with ok.
func benchTwins(b *testing.B, format string, ok func(*Twins) bool) {
	paths := make([]string, 0, 1_000_000)
	for d := range 20_000 {
		for f := range 50 {
			paths = append(paths, fmt.Sprintf(format, d, f))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		var tw Twins
		for _, p := range paths {
			tw.Add(p)
		}
		if !ok(&tw) {
			b.Fatal("not what the paths hold")
		}
	}
}
