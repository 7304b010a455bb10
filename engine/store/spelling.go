package store

import (
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A folder that ignores letter case finds "a" when it holds "A": FAT and
// exFAT on every system, a Mac's APFS and HFS+ as formatted by default,
// Windows's NTFS, an ext4 folder with casefold (chattr +F). There an
// offer's folders "p/A" and "p/a", two folders where they were sent from,
// were merged into the first one made, and every file of the second was
// reported where it was not ("p/a/y.txt", saved in "p/A"; "p/a/x (1).txt"
// beside the other "x.txt"). A peer's folder merges only into a folder of
// exactly its name (its composed or decomposed spelling, which look the
// same, counting as it): one that differs in letter case is a name taken,
// and the folder arrives as "a (1)", its files reported saved there. Which
// folders ignore case is not known by their file system's type (APFS can
// be formatted either way, casefold is set per folder): the folder is
// asked, for each name that merges, whether the name in the other case
// finds something too, and only then listed for the name's own spelling.
// It is asked on every system alike, and writes nothing.

// otherCase is name with its letters in the other case, upper case where
// that changes it, else lower case; "" when no letter of name has a case
// ("2024", "写真"), whose spelling a file system's case cannot change.
func otherCase(name string) string {
	if u := strings.ToUpper(name); u != name {
		return u
	}
	if l := strings.ToLower(name); l != name {
		return l
	}
	return ""
}

// spelled reports whether the folder that name finds in fo (isDir said it
// is one) is named name, letter case and all, or a spelling of it that
// looks the same (composed or decomposed): where name in the other case
// finds nothing, fo tells cases apart and it is; else fo is listed. The
// listing is kept for the next name, and read again when it lacks one (a
// folder made since): a tree sent again merges each of its folders, and
// listing a folder's parent for each would cost the square of a folder's
// count of folders.
func (fo *folder) spelled(name string) (bool, error) {
	other := otherCase(name)
	if other == "" {
		return true, nil
	}
	if _, err := fo.isDir(other); err != nil {
		return true, nil // none, or not a name here: the cases are told apart
	}
	want := composed(name)
	fo.listingMu.Lock()
	defer fo.listingMu.Unlock()
	if _, ok := fo.listing[want]; ok {
		return true, nil
	}
	root, err := fo.rootOf()
	if err != nil {
		return false, err
	}
	names, err := listing(root, ".")
	if err != nil {
		return false, err
	}
	fo.listing = nil
	if len(names) <= maxListed {
		fo.listing = names
	}
	_, ok := names[want]
	return ok, nil
}

// maxListed bounds the names a folder's kept listing holds (spelled).
const maxListed = 1 << 16

// spelledAt is spelled for the folder dir (OS form, relative to root) and
// name in it, through root alone and keeping nothing (resolveElem).
func spelledAt(root *os.Root, dir, name string) (bool, error) {
	other := otherCase(name)
	if other == "" {
		return true, nil
	}
	if _, err := root.Lstat(filepath.Join(dir, other)); err != nil {
		return true, nil
	}
	names, err := listing(root, dir)
	if err != nil {
		return false, err
	}
	_, ok := names[composed(name)]
	return ok, nil
}

// listing is the names the folder dir of root lists, composed (a spelling
// decomposed looks the same). A fresh descriptor reads it: the folder's
// own is shared, and reading moves its offset.
func listing(root *os.Root, dir string) (map[string]struct{}, error) {
	if dir == "" {
		dir = "."
	}
	f, err := root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names := map[string]struct{}{}
	for {
		batch, err := f.Readdirnames(256)
		for _, n := range batch {
			names[composed(n)] = struct{}{}
		}
		if err == io.EOF {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// FolderTwins finds an offer's folders that are one folder where letter
// case is ignored, "p/A" and "p/a" (SameNameKey), from its files' paths
// taken in the offer's order (Add). Where the download folder ignores case
// the folder of the first spelling made keeps its name and the other
// arrives as "p/a (1)" (resolveElem): made as files land, that was
// whichever folder's file landed first, which the streams decide, so one
// transfer saved "p/a/y.txt" as "p/a (1)/y.txt" and the next, the same,
// "p/A/x.txt" as "p/A (1)/x.txt". Making the first spelling of each (Firsts)
// before any file lands gives the offer's first its name every time, and
// a resume finds it so. Where case is told apart the folder is one its
// files would make anyway. It holds each folder's path once, up to
// maxTwinBytes of them: a folder first seen beyond that is not compared
// (it arrives as before: the first to land keeps its name).
type FolderTwins struct {
	seen  map[string]*twin // by SameNameKey of the folder's path
	order []*twin          // as first seen
	prev  string           // the folder of the path added last
	held  int              // bytes of path held in seen
}

type twin struct {
	first string // the first spelling seen
	twins bool   // another spelling was seen
}

// maxTwinBytes bounds the folder paths a FolderTwins holds (an offer of a
// million folders would hold them all).
const maxTwinBytes = 8 << 20

// Add takes the path of the offer's next file (slash-separated, as sent).
func (t *FolderTwins) Add(rel string) {
	dir := ""
	if i := strings.LastIndexByte(rel, '/'); i > 0 {
		dir = rel[:i]
	}
	if dir == t.prev {
		return // most files: the folder of the one before
	}
	if t.seen == nil {
		t.seen = map[string]*twin{}
	}
	// Each folder of dir's path that the previous path's did not name.
	shared := sharedFolders(dir, t.prev)
	t.prev = dir
	for i, n := 0, 0; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		if n++; n <= shared {
			continue
		}
		p := dir[:i]
		k := SameNameKey(p)
		if w, ok := t.seen[k]; ok {
			w.twins = w.twins || composed(w.first) != composed(p)
			continue
		}
		if t.held += len(k) + len(p); t.held > maxTwinBytes {
			t.held -= len(k) + len(p)
			continue
		}
		w := &twin{first: p}
		t.seen[k] = w
		t.order = append(t.order, w)
	}
}

// Firsts is the first spelling of each folder added in more than one
// spelling, in the order first seen (a folder before those in it).
func (t *FolderTwins) Firsts() []string {
	var out []string
	for _, w := range t.order {
		if w.twins {
			out = append(out, w.first)
		}
	}
	return out
}
