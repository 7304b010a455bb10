package store

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// folder is a folder inside the destination, held open so that the several
// operations on each file in it need not walk its path again: os.Root opens
// every element of a path, so a file 8 folders deep cost about 80 system
// calls per check, and with a check before every write, create, finalize
// and rename a received file cost some 60 system calls where 6 do the work.
// Its File is the folder's descriptor, which creates, names and checks the
// files of a tree (openat, linkat, renameat, the check that it is still
// inside the destination); its Root does the rest (rootOf).
type folder struct {
	path  string      // OS form, relative to the destination; "." is the destination
	depth int         // elements in path
	up    string      // the path from it up to the destination ("../.."), for inside
	id    fs.FileInfo // the folder's identity when opened; nil where nothing needs it (openIn)
	dir   *os.File

	// root is the same folder as an os.Root: opened with it, or where a
	// folder is opened by its descriptor alone (openIn on Linux), only once
	// something needs it (rootOf); rootOnce guards it from then on.
	rootOnce sync.Once
	root     *os.Root
	rootErr  error

	refs int  // guarded by Dest.mu: Partials and operations using it
	gone bool // guarded by Dest.mu: out of the cache, closed when refs reach 0

	// listing is what spelled last read of the folder (its names,
	// composed), nil until then or when it held over maxListed names.
	listingMu sync.Mutex
	listing   map[string]struct{}
}

// upTo returns the relative path from a folder depth elements deep up to
// the destination: "..", "../..", ...
func upTo(depth int) string {
	if depth <= 0 {
		return "."
	}
	return strings.Repeat("../", depth-1) + ".."
}

// rootOf returns fo as an os.Root, opening it on first use where fo was
// opened without one.
func (fo *folder) rootOf() (*os.Root, error) {
	fo.rootOnce.Do(func() {
		if fo.root == nil {
			fo.root, fo.rootErr = rootFromDir(fo.dir)
		}
	})
	return fo.root, fo.rootErr
}

func (fo *folder) close() {
	fo.dir.Close()
	fo.rootOnce.Do(func() { fo.rootErr = os.ErrClosed }) // no Root opened from now on
	if fo.root != nil {
		fo.root.Close()
	}
}

// maxFolders bounds the folder cache (each entry holds two descriptors).
// Folders no Partial or operation uses are closed to make room; those in
// use stay open, so the cache exceeds the bound only by what is in use.
const maxFolders = 128

// openFolder opens dir (OS form, relative to the destination) from the
// destination's Root, which walks its current path.
func (d *Dest) openFolder(dir string) (*folder, error) {
	r, err := d.root.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return newFolder(r, dir, strings.Count(dir, string(filepath.Separator))+1)
}

// newFolder makes a folder of the Root r opened on path; it closes r if
// that fails.
func newFolder(r *os.Root, path string, depth int) (*folder, error) {
	f, err := r.Open(".")
	if err != nil {
		r.Close()
		return nil, err
	}
	id, err := f.Stat()
	if err != nil {
		f.Close()
		r.Close()
		return nil, err
	}
	return &folder{path: path, depth: depth, up: upTo(depth), id: id, root: r, dir: f}, nil
}

// acquire returns the folder dir (OS form, relative to the destination;
// "." or "" for the destination itself) with a reference that the caller
// gives back with release. A cached folder is used only while it is still
// inside the destination (folder.inside): one that a local process moved
// out (or that was replaced) is dropped with every cached folder below it,
// and dir is opened again from the destination's Root, so nothing follows a
// folder out of the destination.
func (d *Dest) acquire(dir string) (*folder, error) {
	if dir == "." || dir == "" {
		return d.top, nil
	}
	d.mu.Lock()
	fo := d.folders[dir]
	if fo != nil {
		fo.refs++
	}
	d.mu.Unlock()
	if fo != nil {
		if fo.inside(d) {
			return fo, nil
		}
		d.drop(dir)
		d.release(fo)
	}
	fo, err := d.openFolder(dir)
	if err != nil {
		return nil, err
	}
	return d.cache(fo), nil
}

// acquireIn is acquire for the folder name (one element) inside parent, a
// folder held open and just checked: it is opened from there (one openat
// that follows no symlink), not by walking its path from the top.
func (d *Dest) acquireIn(parent *folder, name string) (*folder, error) {
	dir := filepath.Join(parent.path, name)
	d.mu.Lock()
	cached := d.folders[dir] != nil
	d.mu.Unlock()
	if cached {
		return d.acquire(dir)
	}
	fo, err := parent.openIn(name, dir)
	if err != nil {
		return nil, err
	}
	return d.cache(fo), nil
}

// cache puts a folder just opened into the cache with one reference, or
// returns (with a reference) the one a concurrent call put there first. To
// stay within maxFolders it closes a folder nobody uses.
func (d *Dest) cache(fo *folder) *folder {
	fo.refs = 1
	d.mu.Lock()
	defer d.mu.Unlock()
	if old := d.folders[fo.path]; old != nil {
		old.refs++
		fo.close()
		return old
	}
	if len(d.folders) >= maxFolders {
		for k, other := range d.folders {
			if other.refs == 0 {
				delete(d.folders, k)
				other.close()
				break
			}
		}
	}
	d.folders[fo.path] = fo
	return fo
}

// hold is acquire without the check that a cached folder is still inside
// the destination, for an operation that follows one (Finalize checks the
// partial's folder and resolves the target's just before renaming).
func (d *Dest) hold(dir string) (*folder, error) {
	if dir == "." || dir == "" {
		return d.top, nil
	}
	d.mu.Lock()
	fo := d.folders[dir]
	if fo != nil {
		fo.refs++
	}
	d.mu.Unlock()
	if fo != nil {
		return fo, nil
	}
	return d.acquire(dir)
}

// keep takes another reference to fo, of which the caller holds one.
func (d *Dest) keep(fo *folder) *folder {
	if fo != d.top {
		d.mu.Lock()
		fo.refs++
		d.mu.Unlock()
	}
	return fo
}

// release gives back a reference taken by acquire.
func (d *Dest) release(fo *folder) {
	if fo == nil || fo == d.top {
		return
	}
	d.mu.Lock()
	fo.refs--
	last := fo.gone && fo.refs == 0
	if last {
		delete(d.gone, fo)
	}
	d.mu.Unlock()
	if last {
		fo.close()
	}
}

// drop takes folder dir and every cached folder below it out of the cache:
// they moved away together. Those in use close when released.
func (d *Dest) drop(dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, fo := range d.folders {
		if k != dir && !strings.HasPrefix(k, dir+string(filepath.Separator)) {
			continue
		}
		delete(d.folders, k)
		if fo.refs == 0 {
			fo.close()
			continue
		}
		fo.gone = true
		d.gone[fo] = struct{}{}
	}
}

// in returns the folder that holds name (OS form, relative to the
// destination) and name relative to it, with a reference to release. When
// the folder cannot be opened it returns the destination and name itself,
// so that the operation fails (or succeeds) as it would from the Root.
func (d *Dest) in(name string) (*folder, string) {
	fo, err := d.acquire(filepath.Dir(name))
	if err != nil {
		return d.top, name
	}
	if fo == d.top {
		return fo, name
	}
	return fo, filepath.Base(name)
}

// openInRoot is openIn through fo's Root (OpenRoot, which follows no
// symlink out of it), for where a folder cannot be opened by its
// descriptor alone.
func (fo *folder) openInRoot(name, path string) (*folder, error) {
	root, err := fo.rootOf()
	if err != nil {
		return nil, err
	}
	r, err := root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	return newFolder(r, path, fo.depth+1)
}
