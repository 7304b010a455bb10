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
