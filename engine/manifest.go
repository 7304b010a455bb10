package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ferrydrop/ferry/engine/internal/resume"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/filekind"
)

// localFile is one file of an outgoing transfer: what we offer, and where we read it.
type localFile struct {
	wire.FileEntry
	// root is the given path the file is under, shared by every file under
	// it: an absolute copy of each path beside the offered one was about
	// 40 % of a sender's list (issue 30, docs/benchmarks/trees.md).
	root *givenPath
	// ctime is the file's change time where the platform has one (else
	// 0): part of its identity for resume (manifestID), not offered.
	ctime int64
	// holey: it may hold holes (treeEntry.holey), which its offer says
	// (wire.FileEntry.Holes, sender.entries).
	holey bool
}

// givenPath is a path a send was given: dir is the absolute folder it is
// in, name its name there, as the name it is offered under (its name, or
// "name (1)" where an earlier given path has that name).
type givenPath struct{ dir, name, as string }

// local is the file's path under root.dir on this machine: its offered
// path, under its given path's own name.
func (f *localFile) local() string {
	if r := f.root; r.as != r.name {
		return r.name + f.Path[len(r.as):]
	}
	return f.Path
}

// src is where the file is read on this machine.
func (f *localFile) src() string { return filepath.Join(f.root.dir, filepath.FromSlash(f.local())) }

// manifest is what a send offers from the paths it was given.
type manifest struct {
	files []localFile
	// folders are the empty folders among them (none below them, no file
	// in them), as offered paths: "photos/2024/empty". Their parents are
	// implied, as a file's are.
	folders []string
	// renamed are the given paths offered under a name of their own,
	// another given path having theirs.
	renamed []RenamedPath
}

// RenamedPath is a given path that a send offers under another name,
// since an earlier given path has its name: two "report.pdf" from two
// folders arrive as "report.pdf" and "report (1).pdf".
type RenamedPath struct {
	Path string `json:"path"` // as given, absolute
	As   string `json:"as"`   // the name it is offered under
}

// SkippedInfo is what the given folders hold that a transfer does not
// carry: Ferry sends regular files only, each with its folders.
type SkippedInfo struct {
	// Symlinks inside the folders: not followed, not sent.
	Symlinks int `json:"symlinks,omitempty"`
	// EmptyFolders: the empty folders of a send that has no file to carry
	// them (ErrNothingToSend says so), or of a send to a LocalSend device
	// (FilesOnly). Beside files they are sent (manifest.folders), to Ferry
	// receivers that take them (wire.FeatureFolders).
	EmptyFolders int `json:"empty_folders,omitempty"`
	// FilesOnly: the receiver takes files only (a LocalSend device), which
	// is why empty folders are not sent.
	FilesOnly bool `json:"files_only,omitempty"`
	// Other: devices, sockets, pipes.
	Other int `json:"other,omitempty"`
	// Unreadable: folders inside that could not be opened or listed (no
	// permission); nothing in them is sent.
	Unreadable int `json:"unreadable_folders,omitempty"`
	// TooDeep: files, and empty folders, whose path in the offer would be
	// longer (store.MaxPathBytes) or deeper (store.MaxDepth) than any
	// receiver takes: a path over 4096 bytes is no valid offer at all, and
	// this system could not open it by its path to read it either.
	TooDeep int `json:"too_deep,omitempty"`
	// Examples are the first few skipped paths, as given; an unreadable
	// folder's with its cause in parentheses ("photos/private (permission
	// denied)").
	Examples []string `json:"examples,omitempty"`
}

// maxSkippedExamples bounds SkippedInfo.Examples.
const maxSkippedExamples = 5

// Count is how many entries were skipped in all.
func (s *SkippedInfo) Count() int {
	return s.Symlinks + s.EmptyFolders + s.Other + s.Unreadable + s.TooDeep
}

// Summary says what was skipped, in the words the CLI and the app show:
// "2 symbolic links (not followed), 1 empty folder"; "" when nothing was.
func (s *SkippedInfo) Summary() string {
	var parts []string
	plural := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, strconv.Itoa(n)+" "+many)
		}
	}
	plural(s.Symlinks, "symbolic link (not followed)", "symbolic links (not followed)")
	if s.FilesOnly {
		plural(s.EmptyFolders, "empty folder (LocalSend takes files only)", "empty folders (LocalSend takes files only)")
	} else {
		plural(s.EmptyFolders, "empty folder", "empty folders")
	}
	plural(s.Other, "device, socket or pipe", "devices, sockets or pipes")
	plural(s.Unreadable, "folder that could not be read", "folders that could not be read")
	plural(s.TooDeep, "file or folder nested too deep (its path over 4096 bytes or 64 levels)",
		"files or folders nested too deep (their paths over 4096 bytes or 64 levels)")
	return strings.Join(parts, ", ")
}

func (s *SkippedInfo) note(path string) {
	if len(s.Examples) < maxSkippedExamples {
		s.Examples = append(s.Examples, path)
	}
}

// buildManifestSkipping walks paths: a file is offered under its base
// name, a folder keeps its structure under its own name (either numbered
// where an earlier given path has that name). Symbolic links
// are not followed inside folders (they could point anywhere, even back up
// the tree); what it leaves out, it says.
func buildManifestSkipping(paths []string) (manifest, SkippedInfo, error) {
	var skipped SkippedInfo
	m, err := walkManifest(context.Background(), paths, &skipped)
	return m, skipped, err
}

// Contents is what a send of some paths would offer: its files, their
// bytes, its empty folders, and what it would leave out.
type Contents struct {
	Files        int
	Bytes        int64
	EmptyFolders int
	Skipped      SkippedInfo
}

// Survey walks paths as a send does and says what it would offer, or the
// error the send would end with (ErrNothingToSend with what they hold, a
// path that cannot be read, more files than one transfer carries): the
// app's send sheet shows it before anything is sent. It stops early with
// ctx's error.
func Survey(ctx context.Context, paths []string) (Contents, error) {
	var c Contents
	m, err := walkManifest(ctx, paths, &c.Skipped)
	if err != nil {
		return Contents{}, err
	}
	c.Files, c.EmptyFolders = len(m.files), len(m.folders)
	for _, f := range m.files {
		c.Bytes += f.Size
	}
	return c, nil
}

// walkManifest is buildManifestSkipping's walk; it stops with ctx's error
// when ctx ends (checked every surveyCheck entries).
func walkManifest(ctx context.Context, paths []string, skipped *SkippedInfo) (manifest, error) {
	if err := ctx.Err(); err != nil {
		return manifest{}, err
	}
	visited := 0
	var files fileList
	var folders []string
	var renamed []RenamedPath
	add := func(root *givenPath, rel string, e treeEntry) {
		files.add(localFile{
			FileEntry: wire.FileEntry{Path: rel, Size: e.size, Mode: uint32(e.perm), MTime: e.mtime},
			root:      root,
			ctime:     e.ctime,
			holey:     e.holey,
		})
	}
	// Offered paths can only collide between given paths of the same name
	// (within one folder every path is unique): a given path whose name an
	// earlier one has is offered as "name (1)", as the receiver names a
	// file whose name is taken, and one given twice is sent once.
	taken := map[string]bool{}
	for _, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			taken[filepath.Base(abs)] = true
		}
	}
	given := map[string]bool{} // absolute paths
	offered := map[string]bool{}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return manifest{}, fmt.Errorf("%s: %w", p, err)
		}
		info, err := os.Stat(abs)
		if err != nil {
			return manifest{}, fmt.Errorf("cannot read %s: %w", p, withoutPath(err)) // os.Stat names the path again
		}
		if given[abs] {
			continue
		}
		given[abs] = true
		root := &givenPath{dir: filepath.Dir(abs), name: filepath.Base(abs)}
		root.as = root.name
		for n := 1; offered[root.as]; n++ {
			if root.as = store.Numbered(root.name, n, info.Mode().IsRegular()); taken[root.as] {
				root.as = root.name // another given path's own name
			}
		}
		offered[root.as] = true
		if root.as != root.name {
			renamed = append(renamed, RenamedPath{Path: abs, As: root.as})
		}
		base := root.as
		if info.Mode().IsRegular() {
			e := treeEntry{size: info.Size(), perm: info.Mode().Perm(), mtime: info.ModTime().UnixNano(), ctime: changeTime(abs),
				holey: store.MayHoldHoles(info)}
			add(root, base, e)
			continue
		}
		if !info.IsDir() {
			return manifest{}, fmt.Errorf("%s is %s, not a file or folder", p, filekind.Special(info.Mode()))
		}
		// filled[dir] is whether a file is sent from under dir (relative).
		filled := map[string]bool{}
		var dirs []string
		src := func(rel string) string { return filepath.Join(abs, filepath.FromSlash(rel)) }
		err = walkTree(abs, func(e treeEntry) error {
			if visited++; visited%surveyCheck == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			switch {
			case e.unreadable != nil:
				if n := len(dirs); n > 0 && dirs[n-1] == e.rel {
					dirs = dirs[:n-1] // filepath.WalkDir visits a folder before it lists it
				}
				skipped.Unreadable++
				skipped.note(src(e.rel) + " (" + pathCause(e.unreadable) + ")")
				return nil
			case e.typ.IsDir():
				dirs = append(dirs, e.rel)
				return nil // folders are implied by their files
			case e.typ&fs.ModeSymlink != 0:
				skipped.Symlinks++
				skipped.note(src(e.rel))
				return nil
			case !e.typ.IsRegular():
				skipped.Other++
				skipped.note(src(e.rel))
				return nil
			}
			// Its folders hold a file, though it is left out: none of them
			// is offered as empty (and counted again).
			for dir := path.Dir(e.rel); !filled[dir]; dir = path.Dir(dir) {
				filled[dir] = true
				if dir == "." {
					break
				}
			}
			if tooDeep(path.Join(base, e.rel)) {
				skipped.TooDeep++
				skipped.note(src(e.rel))
				return nil
			}
			add(root, path.Join(base, e.rel), e)
			return nil
		})
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return manifest{}, err // ended, not unreadable
			}
			return manifest{}, fmt.Errorf("cannot read %s: %w", p, err)
		}
		// The empty folders to offer are those without an empty folder
		// below them: making one makes its parents. dirs is in the walk's
		// order, a folder before what is below it.
		var empty []string
		for _, d := range dirs {
			if d == "" {
				d = "."
			}
			if filled[d] {
				continue
			}
			if n := len(empty); n > 0 && (empty[n-1] == "." || strings.HasPrefix(d, empty[n-1]+"/")) {
				empty[n-1] = d // the one above was not the last
			} else {
				empty = append(empty, d)
			}
		}
		for _, d := range empty {
			if offered := path.Join(base, d); !tooDeep(offered) {
				folders = append(folders, offered)
				continue
			}
			skipped.TooDeep++
			skipped.note(src(d))
		}
	}
	if files.n == 0 {
		skipped.EmptyFolders = len(folders)
		if skipped.Count() > 0 {
			return manifest{}, fmt.Errorf("%w; they hold only %s", ErrNothingToSend, skipped.Summary())
		}
		return manifest{}, ErrNothingToSend
	}
	if files.n > wire.MaxFiles {
		return manifest{}, fmt.Errorf("%d files is more than one transfer can carry (%d): send them in parts", files.n, wire.MaxFiles)
	}
	if len(folders) > wire.MaxFolders {
		return manifest{}, fmt.Errorf("%d empty folders is more than one transfer can carry (%d): send them in parts", len(folders), wire.MaxFolders)
	}
	return manifest{files: files.list(), folders: folders, renamed: renamed}, nil
}

// surveyCheck is how many entries a walk visits between two looks at its
// context.
const surveyCheck = 1024

// tooDeep says whether offered, a path of a send's offer, is longer or
// deeper than a receiver takes (store.ValidatePath's limits): such a file
// is left out and said, as a symbolic link is, rather than ending the
// whole send with a protocol error ("offer files: file 1 path too long").
func tooDeep(offered string) bool {
	return len(offered) > store.MaxPathBytes || strings.Count(offered, "/")+1 > store.MaxDepth
}

// fileList collects the walk's files in blocks and joins them once at the
// end. Appending to one slice copied it each time it grew, by a quarter
// once it is large: about five times the final list in copies and fresh
// memory, 2-4 % of a sender's CPU on workload D (docs/benchmarks/trees.md).
type fileList struct {
	blocks [][]localFile // full blocks, in order
	cur    []localFile   // the block being filled
	n      int           // entries in all
}

// Blocks start small (a send of a few files stays small) and double up
// to maxListBlock entries.
const minListBlock, maxListBlock = 64, 8192

func (l *fileList) add(f localFile) {
	if len(l.cur) == cap(l.cur) {
		size := minListBlock
		if l.cur != nil {
			l.blocks = append(l.blocks, l.cur)
			size = min(2*cap(l.cur), maxListBlock)
		}
		l.cur = make([]localFile, 0, size)
	}
	l.cur = append(l.cur, f)
	l.n++
}

// list returns every entry in the order added.
func (l *fileList) list() []localFile {
	if len(l.blocks) == 0 {
		return l.cur
	}
	all := make([]localFile, 0, l.n)
	for _, b := range l.blocks {
		all = append(all, b...)
	}
	return append(all, l.cur...)
}

// manifestID identifies a file set (paths, sizes, mtimes, change times,
// chunk size), the empty folders and the text offered with it, so a
// receiver can match a new offer against partial data of an earlier one.
//
// A file's change time (Unix ctime) counts where it differs from its mtime:
// a file rewritten in place and its mtime set back (touch -r, VeraCrypt's
// containers) keeps its size and mtime, and its resume kept the first
// attempt's bytes and fetched the rest of the new content, which the
// sender's cached leaves of the old bytes made verify. Every write sets
// both times to the same instant, so a file written and left alone hashes
// as before ctime counted (the IDs of transfers under way across an
// upgrade stay), and any later change to it (a write, the mtime set back,
// a rename, chmod, a hard link, an extended attribute) sets ctime apart
// from mtime: its next offer is another one, which starts afresh. Renaming
// a folder above it leaves it alone.
func manifestID(files []localFile, folders []string, chunkSize int, text string) string {
	return manifestIDOf(files, folders, chunkSize, text, true)
}

// manifestIDByMTime is the ID Ferry gave the same offer before change
// times counted (46e1bc5, 2026-12-05), for a transfer it left unfinished
// (begunBefore); the same as manifestID where no file's change time
// differs from its mtime.
func manifestIDByMTime(files []localFile, folders []string, chunkSize int, text string) string {
	return manifestIDOf(files, folders, chunkSize, text, false)
}

// begunBefore is the ID of the offer of files as a Ferry of before change
// times counted gave it, when that Ferry left a transfer of it unfinished
// and none of the files changed since: its leaf cache is there under that
// ID (and none under id), written after every file's last change. The
// receiver keeps what it holds of that transfer under that ID, so the
// offer goes under it: under id it was another offer, which sent
// everything again and saved the files saved before a second time as
// "name (1)" (the files of a tar archive, cp -p or rsync -t, whose mtime
// was set, have a change time apart from it). A file changed since
// (rewritten with its mtime set back: what 46e1bc5 is about) has a later
// change time, and the offer goes under id. "" when there is none.
func begunBefore(d *resume.Dir, id string, files []localFile, folders []string, chunkSize int, text string) string {
	if !slices.ContainsFunc(files, func(f localFile) bool { return f.ctime != 0 && f.ctime != f.MTime }) {
		return "" // the same ID either way
	}
	if _, ok := d.LeafCacheWritten(id); ok {
		return "" // continued under id already
	}
	old := manifestIDByMTime(files, folders, chunkSize, text)
	at, ok := d.LeafCacheWritten(old)
	if !ok {
		return ""
	}
	for _, f := range files {
		if f.ctime > at.UnixNano() {
			return ""
		}
	}
	return old
}

func manifestIDOf(files []localFile, folders []string, chunkSize int, text string, ctimes bool) string {
	h := sha256.New()
	if text != "" {
		// Offers of the same files with different texts are different transfers.
		t := sha256.Sum256([]byte(text))
		h.Write([]byte("text\x00"))
		h.Write(t[:])
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(chunkSize))
	h.Write(b[:])
	idx := make([]int, len(files))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(i, j int) int { return strings.Compare(files[i].Path, files[j].Path) })
	// One buffer for every entry: converting each name to write it cost an
	// allocation per file (a tenth of a second on 10^5 files under load).
	var buf []byte
	for _, i := range idx {
		f := files[i]
		buf = append(buf[:0], f.Path...)
		buf = append(buf, 0)
		buf = binary.BigEndian.AppendUint64(buf, uint64(f.Size))
		buf = binary.BigEndian.AppendUint64(buf, uint64(f.MTime))
		if ctimes && f.ctime != 0 && f.ctime != f.MTime {
			// After a NUL, which no path starts with: no other file set
			// hashes to these bytes.
			buf = append(buf, 0)
			buf = binary.BigEndian.AppendUint64(buf, uint64(f.ctime))
		}
		h.Write(buf)
	}
	if len(folders) > 0 {
		// Without folders the ID is what it was before they travelled.
		sorted := slices.Clone(folders)
		slices.Sort(sorted)
		for _, f := range sorted {
			h.Write([]byte("folder\x00"))
			h.Write([]byte(f))
			h.Write([]byte{0})
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// withoutPath is what went wrong with a path, without the path (a
// PathError's own cause: "permission denied"), for a sentence that names
// the path once itself.
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// pathCause is withoutPath's words.
func pathCause(err error) string { return withoutPath(err).Error() }
