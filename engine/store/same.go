package store

import (
	"errors"
	"os"
	"path/filepath"
)

// Why openRead did not open a name.
var (
	errNotRegular = errors.New("not a regular file")
	errReplaced   = errors.New("replaced as it was opened")
)

// A file sent again (a folder sent once more with a few files added, the
// same photo a second time) finds its name taken by the file it was the
// last time. Finalize numbered it all the same, so a folder sent twice
// held "a.jpg" and "a (1).jpg" of every file in it, the same bytes twice.
// Given a way to tell (SetSame), Finalize keeps the file already under the
// name when it holds the partial's bytes, and drops the partial: nothing is
// saved twice, nothing is overwritten, and a file that differs is numbered
// as before. A numbered name taken is asked about too: a file changed and
// sent twice finds its first changed version as "name (1)", and keeps it.

// SetSame gives Finalize a way to tell whether a file already under the
// partial's name holds the partial's bytes: same reads it (a regular file
// of the partial's size, spelled as the name, opened for reading) and
// says whether it does. A copy of a name the offer holds more than once
// (SetCopy) is numbered whatever the folder holds.
func (p *Partial) SetSame(same func(f *os.File) bool) { p.same = same }

// Kept reports whether Finalize kept the file already under the partial's
// name, which holds its bytes, and dropped the partial (SetSame).
func (p *Partial) Kept() bool { return p.kept }

// holdsSame reports whether name in to, a name Finalize found taken as it
// tried it for p, is a regular file of size bytes spelled exactly name
// (where the folder ignores case, the other spelling is another file's)
// that p's same says holds p's bytes.
func (d *Dest) holdsSame(p *Partial, to *folder, name string, size int64) bool {
	if p.same == nil || p.copy != 0 {
		return false
	}
	f, err := to.openRead(name) // never through a symlink
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		return false
	}
	// The folder's listing, where it ignores case, is kept for the next
	// name: a folder sent again asks it of each of its files.
	if ok, err := to.spelled(name); err != nil || !ok {
		return false
	}
	return p.same(f)
}

// keptSame is the slash-separated path, relative to the destination, of
// name in to: the file kept in place of the partial (holdsSame).
func keptSame(to *folder, name string) string {
	return filepath.ToSlash(filepath.Join(to.path, name))
}

// OpenSame opens the file already under rel, an offered path, for
// reading, when it is one a same-file check would look at as rel is
// finalized (SetSame): a regular file of size bytes, spelled exactly as
// rel's name, in the folder rel's folders resolve to now (nothing is
// created), not a name another offered file keeps where case is ignored.
// It returns the file and where it is (slash-separated, relative to the
// destination), or an error when there is none such: ErrNoFolder when a
// folder of rel is not there, so that none of its files is. A sender then
// need not send what the file holds already (engine: wire.Same). The
// folders found are kept, as Finalize keeps those it resolves.
func (d *Dest) OpenSame(rel string, size int64) (*os.File, string, error) {
	dirs, base, err := d.split(rel)
	if err != nil {
		return nil, "", err
	}
	to, err := d.findFolder(dirs) // ErrNoFolder where one is not there
	if err != nil {
		return nil, "", err
	}
	defer d.release(to)
	if d.yieldsIn(rel, to, "") {
		return nil, "", errNotSame
	}
	f, err := to.openRead(base) // never through a symlink
	if err != nil {
		return nil, "", err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		f.Close()
		return nil, "", errNotSame
	}
	if ok, err := to.spelled(base); err != nil || !ok {
		f.Close()
		return nil, "", errNotSame
	}
	return f, keptSame(to, base), nil
}

// errNotSame: OpenSame found no file there that could hold the bytes.
var errNotSame = errors.New("no file of the name and size")
