package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/ferrydrop/ferry/internal/directio"
	"github.com/ferrydrop/ferry/internal/fileio"
)

// ErrNotRegular means a partial file's name is taken by something that is
// not a regular file (a folder, symlink, device, ...), so it cannot be
// reused for receiving.
var ErrNotRegular = errors.New("partial is not a regular file")

// ErrInUse means the partial file for a name is already open through this
// Dest, possibly under a name differing only in letter case on a
// case-insensitive file system ("a.txt" and "A.TXT" on Windows or macOS).
// Receive the second file after the first is finalized or discarded.
var ErrInUse = errors.New("partial is already open")

// ErrTooManyCopies means maxNumbered numbered names ("name (1).ext", ...)
// were all taken.
var ErrTooManyCopies = errors.New("too many files with the same name")

// ErrMovedOut means the folder a file was being received into was moved
// out of the destination (or replaced) since the file was created there:
// nothing more is written into it, and the file is not finished there.
var ErrMovedOut = errors.New("its folder was moved out of the destination")

// ErrGone means the destination folder itself was deleted, or moved or
// renamed away, since it was opened: a file received into it cannot be
// given its name there.
var ErrGone = errors.New("the destination folder was deleted or moved away")

// Gone reports whether the destination folder is no longer at the path it
// was opened by (deleted, moved or renamed away, or replaced): whatever is
// received into it from then on is lost with it.
func (d *Dest) Gone() bool {
	now, err := os.Stat(d.dir)
	return errors.Is(err, fs.ErrNotExist) || err == nil && !os.SameFile(now, d.top.id)
}

// maxNumbered bounds the "name (n).ext" search so that a hostile or odd
// destination cannot make Finalize spin.
const maxNumbered = 10000

// Dest is a destination folder that received files are written into. All
// access goes through an os.Root, so no name, symlink or race can make it
// touch anything outside the folder. A Dest is safe for concurrent use.
//
// Folder clashes: a peer's folder element is merged into an existing real
// directory of the same name, spelled the same (where letter case is
// ignored, a folder "A" is not the folder "a": spelling.go). If the name is
// taken by anything else (a file, a symlink — even one pointing inside the
// folder —, a device, a folder of another case), the folder
// is received as "name (1)", "name (2)", ... instead: the first numbered
// name that is a real directory or free. The rule depends only on what is on
// disk, so CreatePartial, PartialPath and Finalize agree on it without
// keeping state, and a resumed transfer finds its partials again.
type Dest struct {
	dir  string
	root *os.Root
	// link is Root.Link; tests replace it to exercise the fallback used
	// where hard links are unsupported.
	link func(oldname, newname string) error
	// rename is renameNoReplace; tests replace it to race it or to
	// exercise the link fallback.
	rename func(oldname, newname string) error
	// replace is Root.Rename, which replaces its target: place's last
	// resort. Tests replace it to race it.
	replace func(oldname, newname string) error
	// fsRefuses, when set, stands in for a file system that refuses some
	// names (vfat, exFAT: see windowsName): the error it would give for a
	// file or folder created under name, nil for a name it takes. Tests
	// set it; nil here, where the file system itself says.
	fsRefuses func(name string) error
	// windowsNames: the file system is FAT's or exFAT's (fatNames, or
	// where its type does not say, refusesWindowsNames), whose
	// rules are Windows's, so names are saved as on Windows (LocalName's
	// Windows rules): the kernel's vfat and exfat drop a final dot
	// silently ("notes." saved as "notes"), which the report did not say,
	// and fusefat kept names a Windows device cannot open.
	windowsNames bool
	// inOrder: the file system loses writes past a file's end (fusefat,
	// inOrderOnly), so a partial is filled with zeros to its size, in
	// order, before its chunks are written (Reserve, Sparse).
	inOrder bool

	// SyncOnFinalize fsyncs every file before it gets its final name. Off by
	// default, like rsync and scp: a per-file fsync costs more than the
	// transfer of a small file, and resume re-checks partial data by CRC32C
	// instead of trusting that it reached the disk.
	SyncOnFinalize bool

	ioMode    atomic.Int32 // a fileio.Mode: see SetBufferedIO, SetIOMode
	noUnnamed atomic.Bool  // CreateWhole found that files cannot be created without a name here

	// top is the destination itself as a folder (never out of the cache).
	top *folder

	mu sync.Mutex // guards the fields below
	// open holds the open partials, to detect two names sharing one file.
	open map[*Partial]fs.FileInfo
	// folders caches the folders inside the destination by path (see
	// folder and Dest.acquire); gone holds those dropped from it while
	// still in use.
	folders map[string]*folder
	gone    map[*folder]struct{}
	// dirs caches resolveFolder: offered folder (slash path) -> the folder
	// its files go to, used while that folder is still inside the
	// destination (folder.inside, one system call). Resolving element by
	// element from the top cost a walk per element (os.Root opens every
	// element of a path): for a file 8 folders deep, 80 system calls.
	dirs map[string]string
	// kept holds the names Reserve and Avoid keep, by twinKey.
	kept map[string]keptName
	// copies holds what the copies of a name the offer holds more than
	// once were saved as, by the name here (localName): copies.go.
	copies map[string]*copyNames
	// avoidAll holds the names AvoidAll keeps.
	avoidAll *NameFilter
}

// placeMu serialises place's check-then-rename fallback in every Dest of
// the process (a transfer's, or two transfers' into one folder), so that
// two files of ours ending under one name (on FAT "A.txt" and "a.txt")
// never both see it free and the second replaces the first.
var placeMu sync.Mutex

// maxCachedDirs bounds Dest.dirs (an offer names its folders; a hostile
// one could name a million).
const maxCachedDirs = 4096

// SetBufferedIO makes partials created from then on write everything
// through the page cache. By default whole aligned chunks are direct writes
// (Linux O_DIRECT; a file system that refuses gets ordinary writes) and the
// rest goes through the cache with write-behind: see package fileio.
func (d *Dest) SetBufferedIO(on bool) {
	if on {
		d.SetIOMode(fileio.Buffered)
	} else {
		d.SetIOMode(fileio.Auto)
	}
}

// SetIOMode sets how partials created from then on write (package fileio's
// modes; SetBufferedIO's two are Auto and Buffered).
func (d *Dest) SetIOMode(m fileio.Mode) { d.ioMode.Store(int32(m)) }

func (d *Dest) writeMode() fileio.Mode { return fileio.Mode(d.ioMode.Load()) }

// linkNames is Root.Link through the folder cache.
func (d *Dest) linkNames(oldname, newname string) error {
	if filepath.Dir(oldname) == filepath.Dir(newname) {
		fo, o := d.in(oldname)
		defer d.release(fo)
		if fo != d.top {
			root, err := fo.rootOf()
			if err != nil {
				return err
			}
			return root.Link(o, filepath.Base(newname))
		}
	}
	return d.root.Link(oldname, newname)
}

// removeName is Root.Remove through the folder cache.
func (d *Dest) removeName(name string) error {
	fo, n := d.in(name)
	defer d.release(fo)
	root, err := fo.rootOf()
	if err != nil {
		return err
	}
	return root.Remove(n)
}

// Open opens dir as a destination, creating it (and its parents) if it does
// not exist. Close the Dest when done.
func Open(dir string) (*Dest, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: open %q: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("store: open %q: %w", dir, err)
	}
	top, err := newFolder(root, ".", 0)
	if err != nil {
		return nil, fmt.Errorf("store: open %q: %w", dir, err)
	}
	fst := fsType(dir)
	d := &Dest{dir: dir, root: root, open: map[*Partial]fs.FileInfo{}, top: top,
		folders: map[string]*folder{}, gone: map[*folder]struct{}{}, windowsNames: fatNames(fst) || askNames(fst) && refusesWindowsNames(root),
		inOrder: inOrderOnly(fst)}
	d.link = d.linkNames
	d.rename = d.renameNoReplace
	d.replace = root.Rename
	return d, nil
}

// Dir returns the destination folder as given to Open, e.g. for CheckSpace.
func (d *Dest) Dir() string { return d.dir }

// Close releases the destination folder. Open Partials stay usable for
// writing but cannot be finalized or discarded through a closed Dest.
func (d *Dest) Close() error {
	d.mu.Lock()
	for k, fo := range d.folders {
		fo.close()
		delete(d.folders, k)
	}
	for fo := range d.gone {
		fo.close()
		delete(d.gone, fo)
	}
	d.mu.Unlock()
	d.top.dir.Close()
	if err := d.root.Close(); err != nil {
		return fmt.Errorf("store: close %q: %w", d.dir, err)
	}
	return nil
}

// Partial is a file being received, stored as "<name>.partial" next to where
// it will end up. Its methods are those of os.File; WriteAt and ReadAt may be
// called from several goroutines at once.
type Partial struct {
	f    *os.File
	name string // OS-form path relative to the root, ending in PartialSuffix
	d    *Dest
	id   fs.FileInfo // the file's identity, to find it at name (inside)
	fo   *folder     // the folder it is in (a reference, given back by letGo)
	base string      // its name in fo
	rel  string      // the path CreatePartial was given, validated ("" if reopened)
	file string      // rel's last element
	made []string    // the folders CreatePartial made for it, top first (OS form)
	// unnamed: created without a name (CreateWhole), which Finalize gives
	// it; name and base are empty and id is nil.
	unnamed bool

	let sync.Once // gives back the reference to fo

	identOnce sync.Once
	ident     string // Identity

	meta Meta // what Finalize gives it (SetMeta)
	copy int  // 1 + its place among the copies of its name (SetCopy), 0 for none
	// same tells whether a file already under its name holds its bytes
	// (SetSame); nil when nothing does.
	same func(*os.File) bool
	// kept: Finalize kept the file already under its name in its place.
	kept bool

	// length is the file's length while it is known without asking the
	// file system (a fresh partial written only through WriteAt: the end
	// of its furthest write), else -1. Finalize then needs no truncate.
	length atomic.Int64

	w *fileio.Writer // how bytes reach the file (SetBufferedIO)

	// raw holds a file created without a name (Linux) by its bare
	// descriptor while nothing needs an os.File around it (f and w are nil
	// until then; see rawFile); nil for every other partial, whose f and w
	// never change.
	raw *rawFile

	closeOnce sync.Once
	closeErr  error
}

// rawFile is a partial's bare descriptor. A small file of a tree is
// written, named and closed through it alone (fileio.WriteSmall): no
// os.NewFile (an fcntl and a finalizer) and none of the poller's
// bookkeeping when it closes, which for 10^5 small files are a few percent
// of the receiver's CPU (docs/benchmarks/trees.md). Anything else (a larger
// write, Reserve, ReadAt, Truncate, Sync, Size) wraps it in an os.File and
// a fileio.Writer first, once, and goes through those from then on.
type rawFile struct {
	mode fileio.Mode // the Writer's, when one is made

	// mu is held for reading while fd is used, and for writing to wrap or
	// close it, so that no use of the number can follow its close (and
	// reach another file that reused it).
	mu     sync.RWMutex
	fd     int
	closed bool // guarded by mu: fd is closed (never wrapped)
}

// use returns the partial's os.File and Writer, wrapping a bare descriptor
// first (rawFile).
func (p *Partial) use() (*os.File, *fileio.Writer, error) {
	r := p.raw
	if r == nil {
		return p.f, p.w, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.f == nil {
		if r.closed {
			return nil, nil, os.ErrClosed
		}
		p.f = os.NewFile(uintptr(r.fd), "")
		p.w = fileio.NewWriter(p.f, r.mode)
	}
	return p.f, p.w, nil
}

// writeRaw writes b at off through the bare descriptor when the partial
// has one and the write keeps the file below directio.Min (see
// fileio.WriteSmall); ok is false when it did not write.
func (p *Partial) writeRaw(b []byte, off int64) (n int, err error, ok bool) {
	r := p.raw
	if r == nil || off < 0 || off+int64(len(b)) >= directio.Min {
		return 0, nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	switch {
	case p.f != nil:
		return 0, nil, false // wrapped: through the Writer from now on
	case r.closed:
		return 0, os.ErrClosed, true
	}
	n, err = fileio.WriteSmall(r.fd, b, off)
	return n, err, true
}

// Name returns the partial's slash-separated path relative to the
// destination, e.g. "photos/a.jpg.partial"; empty for a partial without a
// name (CreateWhole).
func (p *Partial) Name() string { return filepath.ToSlash(p.name) }

// WriteAt writes b at offset off (see os.File.WriteAt). Unless the Dest
// does buffered I/O (SetBufferedIO), a large write whose buffer, offset and
// length are aligned (directio.Aligned; see directio.Buffer) skips the page
// cache. Writes from several goroutines at once are fine: those that can run
// side by side do (direct writes inside the Reserved size), the others are
// serialised.
func (p *Partial) WriteAt(b []byte, off int64) (int, error) {
	if err := p.inside(); err != nil {
		return 0, err
	}
	n, err, ok := p.writeRaw(b, off)
	if !ok {
		_, w, uerr := p.use()
		if uerr != nil {
			return 0, uerr
		}
		n, err = w.WriteAt(b, off)
	}
	for end := off + int64(n); ; {
		old := p.length.Load()
		if old < 0 || old >= end || p.length.CompareAndSwap(old, end) {
			break
		}
	}
	return n, err
}

// inside fails with ErrMovedOut unless the partial is still the file of
// its name in its folder and that folder is still inside the destination
// (folder.inside): a local process that moves the folder out of the
// destination (or replaces it) takes the open file along, and a write
// through the open descriptor would land there. (A partial directly in the
// destination cannot leave it that way; nor can a partial without a name,
// which is in no folder.) Two system calls at any depth.
func (p *Partial) inside() error {
	if p.fo == p.d.top || p.unnamed {
		return nil
	}
	if p.fo.holds(p.base, p.id) && p.fo.inside(p.d) {
		return nil
	}
	return fmt.Errorf("store: %s: %w", filepath.ToSlash(filepath.Dir(p.name)), ErrMovedOut)
}

// letGo gives back the partial's reference to its folder, once.
func (p *Partial) letGo() { p.let.Do(func() { p.d.release(p.fo) }) }

// Reserve preallocates the partial's first size bytes (the size the sender
// declared) where the file system can, so that chunks written by several
// streams at once do not contend and the file is laid out in few extents.
// Small files are left as they are. An error matching fileio.ErrNoSpace
// means the disk is full; any other failure to preallocate is not an error.
// Where the partial is filled with zeros instead (Dest.inOrder), ending ctx
// stops the fill within a write (see fill).
func (p *Partial) Reserve(ctx context.Context, size int64) error {
	if p.d.inOrder {
		return p.fill(ctx, size)
	}
	if !fileio.Reserves(size) {
		return nil // touches nothing, so needs no check
	}
	if err := p.inside(); err != nil {
		return err
	}
	p.length.Store(-1) // preallocation may set it
	_, w, err := p.use()
	if err != nil {
		return err
	}
	return w.Reserve(size)
}

// Sparse gives the partial its size (the size the sender declared) without
// allocating it: its chunks of zeros are then left as holes inside that
// size (fileio.Writer.WriteAt) and only its data takes disk. For a file the
// sender holds holes in (wire.FileEntry.Holes), where the space check
// counted its data alone (KeepsHoles) and Reserve would allocate the whole
// size; and for an upload written in order (LocalSend, a browser), whose
// writes would otherwise all extend the file, so that none of its zeros
// could be a hole (SparseUpload). Where the partial is filled with zeros
// instead (Dest.inOrder), ending ctx stops the fill within a write (see
// fill).
func (p *Partial) Sparse(ctx context.Context, size int64) error {
	if p.d.inOrder {
		return p.fill(ctx, size)
	}
	if err := p.inside(); err != nil {
		return err
	}
	f, _, err := p.use()
	if err != nil {
		return err
	}
	fileio.MarkSparse(f) // Windows: else growing it allocates the holes
	return p.Truncate(size)
}

// fill writes zeros from the partial's end to size, in order, on a file
// system that loses writes past a file's end (Dest.inOrder): the chunks,
// which several streams write side by side in any order, then all land
// inside the file. fusefat, which mounts FAT sticks where the kernel has no
// vfat, refuses such a write (EPERM) or puts it elsewhere: files arrived
// wrong while reported verified (docs/hostile.md). It costs writing each
// file twice, there alone. A file of one sector (512 bytes) is left as it
// is: it is written in one write, and fusefat loses a write over the zeros
// of a file that small (seen: 100, 511 and 512 bytes read back as zeros).
// fusefat is slow (docs/hostile.md: a few MB/s on a small stick), so the
// fill of a large file takes minutes: ctx is checked before each write of
// at most a MiB, and its end stops the fill with ctx's cause, the partial
// part filled (to be discarded, or filled on from its end).
func (p *Partial) fill(ctx context.Context, size int64) error {
	if size <= 512 {
		return nil
	}
	if err := p.inside(); err != nil {
		return err
	}
	p.length.Store(-1)
	f, _, err := p.use()
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	zeros := make([]byte, min(size, 1<<20))
	for off := fi.Size(); off < size; {
		if ctx.Err() != nil {
			return fmt.Errorf("store: fill %q: %w", p.Name(), context.Cause(ctx))
		}
		n, err := f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off)
		if err != nil {
			return err
		}
		off += int64(n)
	}
	return nil
}

// SparseUpload is Sparse for an upload of size bytes written in order
// (LocalSend, a browser), when it is large enough for its holes to matter
// (fileio.Reserves: 2 MiB): a smaller one is left as it is, a system call
// fewer per small file. Best effort: an error leaves the partial as it was,
// and its zeros are written. Where partials are filled instead
// (Dest.inOrder: fusefat) it is left as it is too: each of the upload's
// writes is at the file's end, which fusefat takes, and the fill wrote the
// file twice while the upload's creation (a browser's, LocalSend's
// request) waited for it, uncancelled (a minute for a file of gigabytes).
func (p *Partial) SparseUpload(size int64) {
	if fileio.Reserves(size) && !p.d.inOrder {
		_ = p.Sparse(context.Background(), size)
	}
}

// HoleChunks lists the chunks of the partial's first size bytes (cut in
// chunks of chunk bytes, the last one shorter) that lie wholly in its holes
// and inside its current length, so read as zeros (fileio.HoleChunks): a
// resume need not read them back. nil where the file system cannot tell.
func (p *Partial) HoleChunks(size int64, chunk int) []fileio.ChunkRun {
	f, _, err := p.use()
	if err != nil || chunk <= 0 {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	if fi.Size() < size {
		size = fi.Size() / int64(chunk) * int64(chunk) // a chunk past the end reads short
	}
	return fileio.HoleChunks(f, size, chunk, math.MaxInt)
}

// ReadAt reads into b from offset off (see os.File.ReadAt), e.g. to re-hash
// what a previous attempt wrote before resuming.
func (p *Partial) ReadAt(b []byte, off int64) (int, error) {
	f, _, err := p.use()
	if err != nil {
		return 0, err
	}
	return f.ReadAt(b, off)
}

// Truncate sets the partial's size, e.g. to cut it back to the last verified
// chunk before resuming.
func (p *Partial) Truncate(size int64) error {
	p.length.Store(-1)
	f, _, err := p.use()
	if err != nil {
		return err
	}
	return resize(f, size)
}

// resize gives f the size size. A file of that size already is left as it
// is: a partial reopened to resume, whose length is not known, is most often
// whole, and fusefat (which mounts FAT sticks where the kernel has no vfat)
// refuses every truncate with EPERM, even to the size a file has, so a
// resume there failed at its end ("the file could not be saved: operation
// not permitted").
func resize(f *os.File, size int64) error {
	if fi, err := f.Stat(); err == nil && fi.Size() == size {
		return nil
	}
	return f.Truncate(size)
}

// Size returns the partial's current size: how much a reused partial holds.
func (p *Partial) Size() (int64, error) {
	f, _, err := p.use()
	if err != nil {
		return 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Sync commits the partial's contents to stable storage.
func (p *Partial) Sync() error {
	f, _, err := p.use()
	if err != nil {
		return err
	}
	return f.Sync()
}

// Close closes the partial file and keeps it on disk for a later resume.
// Closing twice is harmless.
func (p *Partial) Close() error {
	p.closeOnce.Do(func() {
		p.d.mu.Lock()
		delete(p.d.open, p)
		p.d.mu.Unlock()
		if r := p.raw; r != nil {
			r.mu.Lock()
			wrapped := p.f != nil
			if !wrapped {
				r.closed = true
				p.closeErr = closeFD(r.fd)
			}
			r.mu.Unlock()
			if !wrapped {
				return
			}
		}
		p.w.Close()
		p.closeErr = p.f.Close()
	})
	return p.closeErr
}

// split validates rel, a peer's path, and returns its folders (slash-
// separated, "" for none: a substring of rel, so that a file in a known
// folder costs no allocation) and its file name, as they are saved here
// (LocalName: a backslash as "_"; on Windows, or on a FAT or exFAT
// file system, what only Windows refuses changed).
func (d *Dest) split(rel string) (dir string, base string, err error) {
	rel = d.localName(rel) // the name it is saved under here
	if err := ValidateHere(rel); err != nil {
		return "", "", err
	}
	i := strings.LastIndexByte(rel, '/')
	base = rel[i+1:]
	if i < 0 {
		return "", base, nil
	}
	return rel[:i], base, nil
}

// localName is LocalName(rel), with Windows's rules where the file system
// is FAT's or exFAT's (windowsNames).
func (d *Dest) localName(rel string) string {
	rel = LocalName(rel)
	if d.windowsNames {
		rel = localName(rel, true)
	}
	return rel
}

// CreatePartial validates rel, creates its folders inside the destination
// and creates a new, empty partial for it: "<rel>.partial", or "<stem>
// (n)<ext>.partial" when that name is taken. It never opens an existing file:
// a partial left by another transfer (another device, another offer) or
// planted by a local user (a hard link to a file outside the folder, a
// symlink, a FIFO) is left alone, so peer bytes only ever land in a file this
// call created. Partial.Name tells where the partial is, so that the
// transfer's resume state can find it again with OpenPartial.
func (d *Dest) CreatePartial(rel string) (*Partial, error) {
	dirs, base, err := d.split(rel)
	if err != nil {
		return nil, err
	}
	var made []string
	fo, err := d.resolveFolderMade(dirs, &made)
	if err != nil {
		return nil, fmt.Errorf("store: create %q: %w", rel, err)
	}
	retried := false // under the name Windows takes, the file system having refused base
	for n := 0; n < maxNumbered; n++ {
		subName := partialName(base, n)
		// O_EXCL: created here and now, never an existing file or a
		// symlink's target.
		f, err := d.create(fo, subName)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if alt, ok := windowsName(base, err); ok && !retried {
			base, n, retried = alt, -1, true
			continue
		}
		if err != nil {
			d.release(fo)
			return nil, fmt.Errorf("store: create %q: %w", rel, err)
		}
		p, err := d.adopt(f, filepath.Join(fo.path, subName), true)
		if err == nil {
			p.fo, p.base, p.rel, p.file, p.made = fo, subName, rel, base, made
			// The folder may have moved between its resolution and the
			// create (the file itself was just made there, by that name).
			if !fo.inside(d) {
				err = fmt.Errorf("%s: %w", filepath.ToSlash(fo.path), ErrMovedOut)
				p.Close()
			}
		}
		if err != nil {
			f.Close()
			if root, rerr := fo.rootOf(); rerr == nil {
				root.Remove(subName)
			}
			d.release(fo)
			return nil, fmt.Errorf("store: create %q: %w", rel, err)
		}
		return p, nil
	}
	d.release(fo)
	return nil, fmt.Errorf("store: create %q: %w", rel, ErrTooManyCopies)
}

// MadeFolders are the folders CreatePartial created for p (none existed by
// those names), top first, slash-separated and relative to the
// destination: what to take away again (RemoveFolder) when p is discarded
// and nothing else came into them.
func (p *Partial) MadeFolders() []string {
	out := make([]string, len(p.made))
	for i, m := range p.made {
		out[i] = filepath.ToSlash(m)
	}
	return out
}

// RemoveFolder removes the folder rel (slash-separated, relative to the
// destination) if it is empty; anything else in its place (a file, a
// symlink, a folder with something in it) is left alone and reported.
func (d *Dest) RemoveFolder(rel string) error {
	osRel := filepath.FromSlash(rel)
	dir, base := filepath.Split(osRel)
	if base == "" || base == "." || base == ".." || !filepath.IsLocal(osRel) {
		return fmt.Errorf("store: remove folder %q: not a folder inside the destination", rel)
	}
	fo, err := d.acquire(filepath.Clean(dir))
	if err != nil {
		return fmt.Errorf("store: remove folder %q: %w", rel, err)
	}
	defer d.release(fo)
	// Forgotten first: a descriptor held open on it would keep Windows
	// from removing it, and the caches may name it.
	d.drop(osRel)
	d.mu.Lock()
	d.dirs = nil
	d.mu.Unlock()
	if err := fo.rmdir(base); err != nil {
		return fmt.Errorf("store: remove folder %q: %w", rel, err)
	}
	return nil
}

// OpenPartial reopens a partial that an earlier attempt at the same transfer
// created (name as returned by Partial.Name, identity by Partial.Identity),
// to resume into it or discard it. It refuses anything that is not a plain
// regular file with a single link, so a partial swapped for a hard link or
// a symlink by a local user since is never written through, and a file
// that is not the one identity names (ErrNotThePartial; "" checks none):
// a finished file saved under the name since is never touched.
func (d *Dest) OpenPartial(name, identity string) (*Partial, error) {
	rel, ok := strings.CutSuffix(name, PartialSuffix)
	if !ok {
		return nil, fmt.Errorf("store: reopen %q: %w", name, ErrNotPartial)
	}
	if _, _, err := d.split(rel); err != nil {
		return nil, fmt.Errorf("store: reopen %q: %w", name, err)
	}
	osName := filepath.FromSlash(name)
	// Where the folders are now: a folder moved away by a local process is
	// not followed.
	fo, err := d.acquire(filepath.Dir(osName))
	if err != nil {
		return nil, fmt.Errorf("store: reopen %q: %w", name, err)
	}
	p, err := d.reopen(fo, osName)
	if err != nil {
		d.release(fo)
		return nil, fmt.Errorf("store: reopen %q: %w", name, err)
	}
	if err := checkIdentity(p, identity); err != nil {
		p.Close()
		p.letGo()
		return nil, fmt.Errorf("store: reopen: %w", err)
	}
	return p, nil
}

// reopen opens the partial osName in its folder fo for OpenPartial.
func (d *Dest) reopen(fo *folder, osName string) (*Partial, error) {
	subName := osName
	if fo != d.top {
		subName = filepath.Base(osName)
	}
	root, err := fo.rootOf()
	if err != nil {
		return nil, err
	}
	// Refuse before opening, so a FIFO or device is never opened at all...
	fi, err := root.Lstat(subName)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%v: %w", fi.Mode().Type(), ErrNotRegular)
	}
	f, err := root.OpenFile(subName, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	// ...and check that what was opened is what was looked at.
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		f.Close()
		return nil, fmt.Errorf("the file changed while it was opened: %w", ErrNotRegular)
	}
	p, err := d.adopt(f, osName, false)
	if err != nil {
		f.Close()
		return nil, err
	}
	p.fo, p.base = fo, subName
	return p, nil
}

// ErrNotPartial means a name given to OpenPartial is not a partial's name.
var ErrNotPartial = errors.New("not a partial file's name")

// ErrLinked means a partial file has more than one name (a hard link): its
// bytes would also appear elsewhere, possibly outside the destination.
var ErrLinked = errors.New("partial has other hard links")

// adopt checks an opened partial (a regular file with one link, empty when
// fresh) and registers it as open.
func (d *Dest) adopt(f *os.File, name string, fresh bool) (*Partial, error) {
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is %v: %w", filepath.ToSlash(name), fi.Mode().Type(), ErrNotRegular)
	case linkCount(fi) > 1:
		return nil, fmt.Errorf("%s: %w", filepath.ToSlash(name), ErrLinked)
	case fresh && fi.Size() != 0:
		return nil, fmt.Errorf("%s is not empty after creation: %w", filepath.ToSlash(name), ErrNotRegular)
	}
	p := &Partial{f: f, name: name, d: d, id: fi, w: fileio.NewWriter(f, d.writeMode())}
	if !fresh {
		p.length.Store(-1) // whatever an earlier attempt left
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// The file system decides which names are the same file, so compare
	// identities rather than names.
	for _, other := range d.open {
		if other != nil && os.SameFile(fi, other) { // nil: unnamed, another file
			return nil, fmt.Errorf("%s: %w", filepath.ToSlash(name), ErrInUse)
		}
	}
	d.open[p] = fi
	return p, nil
}

// PartialPath returns the slash-separated path, relative to the
// destination, of the first name CreatePartial(rel) tries, without creating
// anything. (CreatePartial picks another name when that one is taken: keep
// Partial.Name to find a partial again.)
func (d *Dest) PartialPath(rel string) (string, error) {
	dirs, base, err := d.split(rel)
	if err != nil {
		return "", err
	}
	dir, err := d.resolveDir(dirs)
	if err != nil {
		return "", fmt.Errorf("store: partial path %q: %w", rel, err)
	}
	return filepath.ToSlash(filepath.Join(dir, partialName(base, 0))), nil
}

// Discard closes p and removes it from disk: a failed or cancelled transfer
// that will not be resumed leaves no file behind. Folders created for it stay,
// as other files may be arriving in them.
func (d *Dest) Discard(p *Partial) error {
	p.Close() // a close error does not matter: the file is going away
	defer p.letGo()
	if p.unnamed {
		return nil // closed, it is gone
	}
	if err := d.removeName(p.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: discard %q: %w", p.Name(), err)
	}
	return nil
}

// finalFolder is the folder a partial gets its final name in, held (give
// it back with release): the one it was created in when the name is the
// one it was created for (checked then, and by inside since), else rel's
// folders resolved again.
func (d *Dest) finalFolder(p *Partial, created bool, dirs string) (*folder, error) {
	if created {
		return d.keep(p.fo), nil
	}
	return d.resolveFolder(dirs)
}

// Finalize cuts p to size (the size the sender declared: a partial never
// carries bytes beyond it into a final file), closes it (synced first when
// SyncOnFinalize is set) and gives it its final name rel (validated like
// CreatePartial's), without ever overwriting anything: if rel is taken by a
// file, folder or symlink, the file is saved as "name (1).ext", "name
// (2).ext", ... ("archive (1).tar.gz", ".bashrc (1)"). It returns the
// slash-separated path actually used, relative to the destination. A partial
// whose folder was moved out of the destination meanwhile is not followed
// there: Finalize fails instead.
//
// If savedAs is not empty the file is saved under that name, even when err
// reports that the partial could not be removed afterwards. If it is empty,
// the partial stays on disk, closed: Discard it, or reopen it with
// OpenPartial to retry.
func (d *Dest) Finalize(p *Partial, rel string, size int64) (savedAs string, err error) {
	if p.unnamed {
		return d.finalizeUnnamed(p, rel, size)
	}
	var dirs string
	base := p.file
	created := p.rel != "" && rel == p.rel // the name it was created for, validated then
	if !created {
		if dirs, base, err = d.split(rel); err != nil {
			return "", err
		}
	}
	if size < 0 {
		return "", fmt.Errorf("store: finalize %q: negative size %d", rel, size)
	}
	if p.length.Load() != size {
		if err := p.inside(); err != nil { // before the truncate, which writes too
			return "", fmt.Errorf("store: finalize %q: %w", rel, err)
		}
		if err := d.truncate(p, size); err != nil {
			return "", fmt.Errorf("store: finalize %q: %w", rel, err)
		}
	}
	if p.meta != (Meta{}) {
		if err := p.inside(); err != nil { // the partial by its name may be set
			return "", fmt.Errorf("store: finalize %q: %w", rel, err)
		}
		p.applyMeta() // every byte written: nothing moves its time after
	}
	if err := d.syncClose(p); err != nil {
		return "", fmt.Errorf("store: finalize %q: %w", rel, err)
	}
	if err := p.inside(); err != nil {
		return "", fmt.Errorf("store: finalize %q: %w", rel, err)
	}
	// The name it was created for goes in the folder it was created in,
	// which inside just checked (resolveFolder would return it again).
	to, err := d.finalFolder(p, created, dirs)
	if err != nil {
		return "", fmt.Errorf("store: finalize %q: %w", rel, err)
	}
	defer d.release(to)
	known := "" // a name in to, to ask whether it ignores case
	if p.fo == to {
		known = p.base
	}
	copies := d.slots(p, rel)
	defer copies.done()
	retried := false // under the name Windows takes, the file system having refused base
	for n := 0; n < maxNumbered; n++ {
		if n == 0 && d.yieldsIn(rel, to, known) {
			continue // another file's name where case is ignored (Reserve)
		}
		if n > 0 && d.avoids(rel, numbered(base, n, true)) {
			continue // another of the offer's names (Avoid)
		}
		if twinTaken(to, numbered(base, n, true)) || copies.skip(to, numbered(base, n, true)) {
			continue
		}
		name := filepath.Join(to.path, numbered(base, n, true))
		linked, err := d.placeNew(p.name, name)
		if errors.Is(err, fs.ErrExist) {
			if !retried && d.holdsSame(p, to, numbered(base, n, true), size) {
				// The file is there already: the partial goes.
				savedAs, p.kept = keptSame(to, numbered(base, n, true)), true
				p.letGo()
				if err := d.removeName(p.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return savedAs, fmt.Errorf("store: finalize %q: the same file is there as %q but could not remove the partial: %w", rel, savedAs, err)
				}
				return savedAs, nil
			}
			continue
		}
		if alt, ok := windowsName(base, err); ok && !retried {
			base, n, retried, copies.slot = alt, -1, true, 0
			continue
		}
		if err != nil {
			if d.Gone() {
				err = ErrGone // not "rename a.partial a: no such file or directory"
			}
			return "", fmt.Errorf("store: finalize %q: %w", rel, err)
		}
		savedAs = filepath.ToSlash(name)
		copies.saved(savedAs)
		p.letGo()
		if linked {
			if err := d.removeName(p.name); err != nil {
				return savedAs, fmt.Errorf("store: finalize %q: saved as %q but could not remove the partial: %w", rel, savedAs, err)
			}
		}
		return savedAs, nil
	}
	return "", fmt.Errorf("store: finalize %q: %w", rel, ErrTooManyCopies)
}

// truncate sets p's size, through its open descriptor or, once closed, a
// fresh one.
func (d *Dest) truncate(p *Partial, size int64) error {
	err := resize(p.f, size)
	if !errors.Is(err, os.ErrClosed) {
		return err
	}
	root, err := p.fo.rootOf()
	if err != nil {
		return err
	}
	f, err := root.OpenFile(p.base, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = resize(f, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncClose commits p to stable storage when SyncOnFinalize asks for it (a
// final name then never points at data that is not on disk yet), and closes it, because Windows
// cannot rename an open file. A partial the caller closed already is synced
// through a fresh handle.
func (d *Dest) syncClose(p *Partial) error {
	if !d.SyncOnFinalize {
		return p.Close()
	}
	err := p.f.Sync()
	if errors.Is(err, os.ErrClosed) {
		var f *os.File
		if f, err = d.root.OpenFile(p.name, os.O_RDWR, 0); err == nil {
			err = f.Sync()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	return err
}

// place gives the file at oldname the name newname, failing with an error
// matching fs.ErrExist if newname is taken. linked reports whether oldname
// still exists (and must be removed) afterwards.
func (d *Dest) place(oldname, newname string) (linked bool, err error) {
	// A rename that refuses to replace: the partial's name goes in the same
	// step, so no second name can be left behind, and a file that a racing
	// process creates between our checks is never overwritten.
	err = d.rename(oldname, newname)
	if err == nil || !errors.Is(err, errors.ErrUnsupported) {
		return false, err
	}
	// link(2) creates newname or fails if anything — even a dangling
	// symlink — has that name, atomically; the partial's name is removed
	// afterwards.
	err = d.link(oldname, newname)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrExist) || !linkUnsupported(err) {
		return false, err
	}
	// Fallback for file systems without hard links (FAT/exFAT, some network
	// shares): check, then rename. Rename replaces an existing target, so a
	// file created by another process in the instant between the Lstat and
	// the Rename would be overwritten. That window is unavoidable through
	// os.Root and exists only on such file systems; our own files close it
	// with placeMu.
	placeMu.Lock()
	defer placeMu.Unlock()
	if _, err := d.root.Lstat(newname); err == nil {
		return false, &fs.PathError{Op: "finalize", Path: newname, Err: fs.ErrExist}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return false, d.replace(oldname, newname)
}

// MakeFolder creates the peer's folder rel (slash-separated, validated and
// named here as a file's path is: LocalName) and the folders above it, by the folder-clash rule
// (see Dest): a folder of the name is kept, and files received into it
// later merge with what it holds; a name taken by anything else makes it
// "name (1)". It returns where the folder is, relative to the destination
// (slash-separated).
func (d *Dest) MakeFolder(rel string) (string, error) {
	at, _, err := d.MakeFolderMade(rel)
	return at, err
}

// MakeFolderMade is MakeFolder, also returning how many folders it created
// (none existed by those names): 0 when the folder was there, at most one
// per element of rel. A receive link bounds the folders it makes by this.
func (d *Dest) MakeFolderMade(rel string) (string, int, error) {
	rel = d.localName(rel)
	if err := ValidateHere(rel); err != nil {
		return "", 0, err
	}
	var made []string
	fo, err := d.resolveFolderMade(rel, &made)
	if err != nil {
		return "", len(made), fmt.Errorf("store: create %q: %w", rel, err)
	}
	at := filepath.ToSlash(fo.path)
	d.release(fo)
	return at, len(made), nil
}

// resolveDir maps a peer's folders (slash-separated, as split returns
// them) to an OS-form path inside the root, applying the folder-clash rule
// documented on Dest, without creating anything (PartialPath): the folder
// resolveFolder would use, or the first name it would create.
func (d *Dest) resolveDir(peerDir string) (string, error) {
	if peerDir == "" {
		return "", nil
	}
	d.mu.Lock()
	dir, ok := d.dirs[peerDir]
	d.mu.Unlock()
	if ok {
		if fi, err := d.root.Lstat(dir); err == nil && fi.IsDir() {
			return dir, nil
		}
	}
	dir = ""
	for pos := 0; pos < len(peerDir); pos++ {
		end := len(peerDir)
		if i := strings.IndexByte(peerDir[pos:], '/'); i >= 0 {
			end = pos + i
		}
		next, err := d.resolveElem(dir, peerDir[:end], pos)
		if err != nil {
			return "", err
		}
		dir, pos = next, end
	}
	return dir, nil
}

// resolveFolder is resolveDir(peerDir) returning the folder, created if
// need be and acquired (release it). It starts from the deepest folder of
// the path resolved before whose folder is still inside the destination
// (folder.inside), and resolves the rest one element at a time inside its
// parent, held open (resolveIn): a file in a known folder costs one check,
// and each new folder a few system calls, not a walk of its whole path
// from the top.
func (d *Dest) resolveFolder(peerDir string) (*folder, error) {
	return d.resolveFolderMade(peerDir, nil)
}

// resolveFolderMade is resolveFolder, adding to made (when not nil) each
// folder it created, top first (OS form, relative to the destination).
func (d *Dest) resolveFolderMade(peerDir string, made *[]string) (*folder, error) {
	return d.resolveFolderHow(peerDir, made, true)
}

// findFolder is resolveFolder creating nothing: a folder of the path that
// is not there yet is ErrNoFolder (OpenSame).
func (d *Dest) findFolder(peerDir string) (*folder, error) {
	return d.resolveFolderHow(peerDir, nil, false)
}

// ErrNoFolder: a folder of a path is not there (yet).
var ErrNoFolder = fmt.Errorf("no such folder here: %w", fs.ErrNotExist)

// resolveFolderHow is resolveFolderMade, creating what is not there when
// create is set, and otherwise failing with ErrNoFolder.
func (d *Dest) resolveFolderHow(peerDir string, made *[]string, create bool) (*folder, error) {
	fo, known := d.top, 0 // known: the bytes of peerDir resolved
	for cut := len(peerDir); cut > 0; cut = strings.LastIndexByte(peerDir[:cut], '/') {
		d.mu.Lock()
		dir, ok := d.dirs[peerDir[:cut]]
		d.mu.Unlock()
		if !ok {
			continue
		}
		if f, err := d.acquire(dir); err == nil {
			fo, known = f, cut
			break
		}
	}
	for pos := known; pos < len(peerDir); {
		if peerDir[pos] == '/' {
			pos++
		}
		end := len(peerDir)
		if i := strings.IndexByte(peerDir[pos:], '/'); i >= 0 {
			end = pos + i
		}
		next, err := d.resolveIn(fo, peerDir[:end], pos, made, create)
		d.release(fo)
		if err != nil {
			return nil, err
		}
		fo = next
		d.mu.Lock()
		if d.dirs == nil || len(d.dirs) >= maxCachedDirs {
			d.dirs = map[string]string{}
		}
		d.dirs[strings.Clone(peerDir[:end])] = fo.path // not a substring that keeps a whole path alive
		d.mu.Unlock()
		pos = end
	}
	return fo, nil
}

// resolveIn applies the folder-clash rule (see Dest) to the peer's folder
// peer[at:], one element, inside parent (the folder of peer[:at]),
// creating the folder if needed when create is set (and adding it to
// made, when not nil; otherwise a folder not there is ErrNoFolder), and
// returns it acquired.
func (d *Dest) resolveIn(parent *folder, peer string, at int, made *[]string, create bool) (*folder, error) {
	elem := peer[at:]
	retried := false // under the name Windows takes, the file system having refused elem
	for n := 0; n < maxNumbered; n++ {
		if n == 0 && d.folderYields(peer, func() bool { return d.foldsCase(parent, "", true) }) {
			continue // a file's name (Reserve)
		}
		name := numbered(elem, n, false)
		if n > 0 && d.avoids(peer, name) {
			continue // another of the offer's names (Avoid)
		}
		dir, err := parent.isDir(name)
		if errors.Is(err, fs.ErrNotExist) {
			// A folder saved decomposed is the folder of the name; a
			// file so is a name taken.
			if alt := decomposedTwin(name); alt != "" {
				if adir, aerr := parent.isDir(alt); aerr == nil {
					name, dir, err = alt, adir, nil
				}
			}
		}
		if err == nil && !dir {
			continue // never descend into a file, symlink or device
		}
		if err == nil {
			// Where case is ignored, "a" finds "A": another folder
			// (spelling.go).
			if ok, serr := parent.spelled(name); serr != nil {
				err = serr
			} else if !ok {
				continue
			}
		}
		if errors.Is(err, fs.ErrNotExist) && !create {
			return nil, ErrNoFolder
		}
		if errors.Is(err, fs.ErrNotExist) {
			err = d.mkdir(parent, name)
			if err == nil && made != nil {
				*made = append(*made, filepath.Join(parent.path, name))
			}
			if errors.Is(err, fs.ErrExist) {
				// Someone created it first; if it is a folder of the
				// name, share it.
				if dir, err = parent.isDir(name); err != nil || !dir {
					continue
				}
				if ok, serr := parent.spelled(name); serr != nil {
					err = serr
				} else if !ok {
					continue
				}
			}
		}
		if alt, ok := windowsName(elem, err); ok && !retried {
			elem, n, retried = alt, -1, true
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("folder %q: %w", elem, err)
		}
		return d.acquireIn(parent, name)
	}
	return nil, fmt.Errorf("folder %q: %w", elem, ErrTooManyCopies)
}

// resolveElem is resolveIn for resolveDir: the folder peer[at:] inside
// parent (OS form), without creating it.
func (d *Dest) resolveElem(parent, peer string, at int) (string, error) {
	elem := peer[at:]
	for n := 0; n < maxNumbered; n++ {
		if n == 0 && d.folderYields(peer, func() bool { return foldsCaseIn(d.root, parent, "", false) }) {
			continue // a file's name (Reserve)
		}
		if n > 0 && d.avoids(peer, numbered(elem, n, false)) {
			continue // another of the offer's names (Avoid)
		}
		name := filepath.Join(parent, numbered(elem, n, false))
		fi, err := d.root.Lstat(name)
		if err == nil && fi.IsDir() {
			ok, serr := spelledAt(d.root, parent, numbered(elem, n, false))
			if serr != nil {
				return "", serr
			}
			if ok {
				return name, nil
			}
			continue // "A" where case is ignored: another folder
		}
		if err == nil {
			continue // never descend into a file, symlink or device
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("folder %q: %w", elem, ErrTooManyCopies)
}

// Numbered is name numbered n, as a name that is taken here is made free
// (numbered): a sender uses it for given paths of the same name.
func Numbered(name string, n int, file bool) string { return numbered(name, n, file) }

// numbered returns name for n == 0 and otherwise "stem (n)ext", where for
// files ext is the extension ("a (1).txt", "archive (1).tar.gz", ".bashrc (1)")
// and for folders is empty. The stem is shortened, on a rune boundary, so
// the result stays within MaxElementBytes.
func numbered(name string, n int, file bool) string {
	return numberedWithin(name, n, file, MaxElementBytes)
}

// partialName is the name of file name's partial, numbered n (numbered):
// "<name>.partial", its stem shortened where that would be longer than a
// name may be (a name of 248-255 bytes is valid, and its partial still
// needs its suffix). The partial's own name is only ever found again
// through the resume state, which records it.
func partialName(name string, n int) string {
	return numberedWithin(name, n, true, MaxElementBytes-len(PartialSuffix)) + PartialSuffix
}

// numberedWithin is numbered in at most limit bytes: the stem is cut at a
// character boundary, the number and the extension are kept.
func numberedWithin(name string, n int, file bool, limit int) string {
	if n == 0 && len(name) <= limit {
		return name
	}
	stem, ext := name, ""
	if file {
		ext = filepath.Ext(name)
		stem = name[:len(name)-len(ext)]
		if e2 := filepath.Ext(stem); strings.EqualFold(e2, ".tar") && len(e2) < len(stem) {
			stem, ext = stem[:len(stem)-len(e2)], e2+ext
		}
		if stem == "" || ext == "." { // a dotfile such as ".bashrc", or "trail..." (no extension after its dot), is all stem
			stem, ext = name, ""
		}
	}
	suffix := ""
	if n > 0 {
		suffix = " (" + strconv.Itoa(n) + ")"
	}
	budget := limit - len(suffix) - len(ext)
	if budget < 1 {
		stem, ext = name, ""
		budget = limit - len(suffix)
	}
	if len(stem) > budget {
		cut := budget
		for cut > 0 && !utf8.RuneStart(stem[cut]) {
			cut--
		}
		stem = stem[:clusterCut(stem, cut)]
	}
	return stem + suffix + ext
}

// clusterCut is where to cut s, at most at cut (a character boundary), so
// that no character is parted from what it is drawn with: an accent from
// its letter ("e" and a combining acute, as a Mac names files), a Hangul
// syllable's jamo, an emoji from its skin tone or variation selector, one
// of a ZWJ sequence's emoji (a family) from the next, one flag's two
// regional indicators. A name cut there ends in a whole letter or emoji,
// never in a joiner that would join it to its extension. cut itself when
// s holds no whole cluster before it (hundreds of marks on one letter).
func clusterCut(s string, cut int) int {
	for c := cut; c > 0; {
		r, _ := utf8.DecodeRuneInString(s[c:])
		p, size := utf8.DecodeLastRuneInString(s[:c])
		switch {
		case c < len(s) && (extendsCluster(r) || !norm.NFC.PropertiesString(s[c:]).BoundaryBefore()),
			p == zwj || p == zwnj,
			isRegional(r) && isRegional(p) && regionalRun(s[:c])%2 == 1:
			c -= size
			continue
		}
		return c
	}
	return cut
}

// The joiners: a ZWJ joins emoji into one (a family, "👨\u200d👩\u200d👧")
// and shapes letters of some scripts, a ZWNJ keeps letters of Persian or
// an Indic script apart where they would join.
const (
	zwj  = '\u200d'
	zwnj = '\u200c'
)

// extendsCluster reports a character drawn with the one before it: a
// combining mark, a joiner, a variation selector, an emoji's skin tone
// (modifier) or a tag of a subdivision flag.
func extendsCluster(r rune) bool {
	return unicode.Is(unicode.M, r) || r == zwj || r == zwnj ||
		(r >= 0xfe00 && r <= 0xfe0f) || (r >= 0xe0100 && r <= 0xe01ef) ||
		(r >= 0x1f3fb && r <= 0x1f3ff) || (r >= 0xe0020 && r <= 0xe007f)
}

// isRegional reports a regional indicator: two make a flag ("🇫🇷").
func isRegional(r rune) bool { return r >= 0x1f1e6 && r <= 0x1f1ff }

// regionalRun is how many regional indicators s ends with.
func regionalRun(s string) int {
	n := 0
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if !isRegional(r) {
			break
		}
		n++
		s = s[:len(s)-size]
	}
	return n
}
