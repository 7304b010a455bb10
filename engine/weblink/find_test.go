package weblink

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// indexFolders finds each folder once, with its first row and its count,
// where its files come in several runs (a walk lists "A/a/x" before
// "A/b"), and the files shared by themselves as one.
func TestIndexFolders(t *testing.T) {
	names := []string{
		"loose.txt",        // 0: shared by itself
		"A/1.txt",          // 1: A
		"A/a/x.txt",        // 2: A/a
		"A/a/deep/y.txt",   // 3: A/a/deep
		"A/a/z.txt",        // 4: A/a again
		"A/b.txt",          // 5: A again
		"A b/c.txt",        // 6: "A b", not inside A
		"other.txt",        // 7: by itself again
		"A (1)/1.txt",      // 8: another folder shared as A
		"A (1)/A/1.txt",    // 9
		"A (1)/A/a/x.txt",  // 10
		"A (1)/A/a/x2.txt", // 11
		"A (1)/A/1b.txt",   // 12: "A (1)/A" again
	}
	sh := &share{}
	for _, n := range names {
		sh.files = append(sh.files, shared{name: n})
	}
	sh.indexFolders()
	want := []folderRun{{0, 2}, {1, 2}, {2, 2}, {3, 1}, {6, 1}, {8, 1}, {9, 2}, {10, 2}}
	if !slices.Equal(sh.folders, want) {
		t.Fatalf("folders %v, want %v", sh.folders, want)
	}
	for i, k := range sh.rowFolder {
		if got, want := dirOf(names[sh.folders[k].first]), dirOf(names[i]); got != want {
			t.Errorf("row %d (%s) is in folder %q", i, names[i], got)
		}
	}
}

// shareOfFolders shares a folder "Photos" of n files in folders of per
// files each ("Photos/2019-03/IMG_0001.png" ...) for the tests of the
// search and the folder list.
func shareOfFolders(t *testing.T, s *Server, n, per int, opts ShareOptions) (*Link, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "Photos")
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("20%02d-%02d", 19+i/per/12, 1+i/per%12))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("IMG_%04d.png", i)), []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.Share(context.Background(), []string{dir}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l, dir
}

var rowName = regexp.MustCompile(`<a href="f/[^"]*" download>([^<]*)</a>`)

// rowNames are the names of the file rows of a share page.
func rowNames(b []byte) []string {
	var out []string
	for _, m := range rowName.FindAllSubmatch(b, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// A share page finds files by a text in their path (?q=, any letter case),
// in pages of the same size, the search carried from page to page, and
// lists the folders (?folders=1), each linked to the page of every file
// where its first file is. Before, ?q= and ?folders= were ignored: page 1
// of every file, and no way to a file but paging through all of them.
func TestShareSearchAndFolders(t *testing.T) {
	s := startServer(t, Options{})
	l, _ := shareOfFolders(t, s, 1000, 40, ShareOptions{}) // 25 folders of 40, 5 pages
	page := func(query string, code int) []byte {
		t.Helper()
		res, b := get(t, &http.Client{}, base(s)+l.Path()+"?"+query)
		if res.StatusCode != code {
			t.Fatalf("?%s: %d, want %d\n%.2000s", query, res.StatusCode, code, b)
		}
		return b
	}
	// Any letter case, and a folder's name finds its files.
	b := page("q=img_010", 200)
	if got := rowNames(b); !slices.Equal(got, []string{"IMG_0100.png", "IMG_0101.png", "IMG_0102.png", "IMG_0103.png", "IMG_0104.png", "IMG_0105.png", "IMG_0106.png", "IMG_0107.png", "IMG_0108.png", "IMG_0109.png"}) {
		t.Fatalf("q=img_010 found %q", got)
	}
	if !bytes.Contains(b, []byte("10 files found for \u201cimg_010\u201d")) {
		t.Fatalf("q=img_010 does not say what it found:\n%s", b)
	}
	// The heading links to the folder's first page among every file.
	if !bytes.Contains(b, []byte(`<h2><a href="./#r80">Photos/2019-03</a></h2>`)) {
		t.Fatalf("q=img_010: no link to its folder's page:\n%s", b)
	}
	b = page("q=PHOTOS%2F2019-02", 200)
	if got := rowNames(b); len(got) != 40 || got[0] != "IMG_0040.png" {
		t.Fatalf("q=PHOTOS/2019-02 found %d: %q", len(got), got)
	}
	// Results in pages, the search kept.
	b = page("q=.png&page=3", 200)
	if got := rowNames(b); len(got) != 200 || got[0] != "IMG_0400.png" {
		t.Fatalf("q=.png&page=3 lists %d from %q", len(got), got[0])
	}
	for _, want := range []string{`href="?q=.png&amp;page=4" rel="next"`, `href="?q=.png" rel="first"`, `<input type="hidden" name="q" value=".png">`, "Files found 401 to 600 · page 3 of 5"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("q=.png&page=3 lacks %s", want)
		}
	}
	b = page("q=.png&page=9", 404)
	if got := rowNames(b); len(got) != 200 || got[0] != "IMG_0800.png" || !bytes.Contains(b, []byte("There is no page 9: the files found fill 5 pages. This is the last.")) {
		t.Fatalf("q=.png&page=9 lists %d from %q:\n%.3000s", len(got), got, b)
	}
	// Nothing found; markup in a search is text.
	b = page("q=%3Cb%3Enothing", 200)
	if len(rowNames(b)) != 0 || !bytes.Contains(b, []byte("No file or folder has \u201c&lt;b&gt;nothing\u201d in its name.")) || bytes.Contains(b, []byte("<b>")) {
		t.Fatalf("q=<b>nothing:\n%s", b)
	}
	// A search that cannot be one: every file, saying why.
	b = page("q=a&q=b", 200)
	if got := rowNames(b); len(got) != 200 || !bytes.Contains(b, []byte("That search could not be read. These are all the files.")) {
		t.Fatalf("q=a&q=b lists %d", len(got))
	}
	// The folders, each with the page of its first file.
	b = page("folders=1", 200)
	for _, want := range []string{
		`<a href="./#r0">Photos/2019-01</a><span class="size">40 files</span>`,
		`<a href="?page=2#r200">Photos/2019-06</a>`,
		`<a href="?page=3#r480">Photos/2020-01</a>`,
		`<a href="?page=5#r960">Photos/2021-01</a>`,
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the folder list lacks %s:\n%.4000s", want, b)
		}
	}
	// The anchor is there.
	if b = page("page=2", 200); !bytes.Contains(b, []byte(`<li class="folder" id="r200"><h2>Photos/2019-06</h2>`)) {
		t.Errorf("page 2 has no anchor for Photos/2019-06")
	}
	// A folder that goes on from the page before links to its first page.
	if b = page("page=3", 200); !bytes.Contains(b, []byte(`<li class="folder" id="r400"><h2>Photos/2019-11</h2>`)) {
		t.Errorf("page 3 begins otherwise:\n%.3000s", b)
	}
}

// A folder that goes on from the page before is headed at the top of the
// next with a link to the page where it begins.
func TestFolderGoingOnLinksToItsFirstPage(t *testing.T) {
	s := startServer(t, Options{})
	l, _ := shareOfFolders(t, s, 450, 300, ShareOptions{}) // 300 in 2019-01, 150 in 2019-02
	_, b := get(t, &http.Client{}, base(s)+l.Path()+"?page=2")
	if !bytes.Contains(b, []byte(`<li class="folder" id="r200"><h2><a href="./#r0">Photos/2019-01</a></h2>`)) {
		t.Fatalf("page 2 does not link its first folder to page 1:\n%.3000s", b)
	}
	if !bytes.Contains(b, []byte(`<li class="folder" id="r300"><h2>Photos/2019-02</h2>`)) {
		t.Fatalf("page 2 links the folder that begins on it:\n%.3000s", b)
	}
}
