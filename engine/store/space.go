package store

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ferrydrop/ferry/internal/fileio"
)

// ErrNoSpace means the destination does not have room for an offer. Errors
// returned by CheckSpace for that reason are *SpaceError and match it.
var ErrNoSpace = errors.New("not enough space")

// SpaceError says an offer does not fit on the destination: too few bytes
// free, or too few files left to make (inodes). Its message is a sentence
// meant for the user.
type SpaceError struct {
	Dir  string // the destination folder that was checked
	Need int64  // bytes of disk the offer needs (whole blocks)
	Free int64  // bytes free on Dir's file system
	// Data is the offer's bytes of data, when Need counts more for its
	// files' whole blocks (0 otherwise).
	Data int64
	// Entries and FreeEntries are the files and folders to make and how
	// many more the file system can make, when those are what is short.
	Entries, FreeEntries int64
}

// Error returns e.g. "Not enough space on /home: 3.2 GB needed, 1.1 GB free".
func (e *SpaceError) Error() string {
	return "Not enough space on " + e.Dir + ": " + e.Figures()
}

// Figures is the error without the folder, for the sending side: "3.2 GB
// needed, 1.1 GB free" or "1,000,000 files and folders to make, room for
// 400,000 more".
func (e *SpaceError) Figures() string {
	if e.Entries > 0 {
		return fmt.Sprintf("%s files and folders to make, room for %s more", Count(e.Entries), Count(e.FreeEntries))
	}
	s := HumanBytes(e.Need) + " needed, " + HumanBytes(e.Free) + " free"
	if e.Data > 0 {
		s += " (" + HumanBytes(e.Data) + " of files, in whole blocks of 4 KiB)"
	}
	return s
}

func (e *SpaceError) Unwrap() error { return ErrNoSpace }

// Block is the unit of disk the space check counts a file in: 4 KiB, the
// block of ext4, APFS and NTFS as formatted by default. A file of one byte
// takes a whole one, so a million of them take 4 GB, not 1 MB.
const Block = 4096

// OnDisk is the disk a file of size bytes takes: its bytes in whole
// blocks (an empty file takes none, only its entry).
func OnDisk(size int64) int64 {
	if size <= 0 {
		return 0
	}
	if size > math.MaxInt64-Block {
		return math.MaxInt64
	}
	return (size + Block - 1) / Block * Block
}

// Room is what a set of files and folders takes on the disk they go to.
// The zero Room takes nothing; add to it with File (or FileAt, which
// counts the folders of the file's path too) and Folders.
type Room struct {
	Disk    int64 // bytes of disk, in whole blocks (saturates, never wraps)
	Data    int64 // the files' bytes
	Entries int64 // files and folders to make: an inode each
	// dir is the folder of the last file FileAt counted, whose folders
	// are counted already.
	dir string
}

// File counts a file of size bytes.
func (r *Room) File(size int64) {
	r.Disk = addSat(r.Disk, OnDisk(size))
	r.Data = addSat(r.Data, max(size, 0))
	r.Entries++
}

// FileAt counts a file of size bytes at rel (relative, slash-separated)
// and the folders its path makes ("a/b/c/x" makes three) that the previous
// file FileAt counted did not: in an offer's order, where a folder's files
// come together (a walk's, depth first, or sorted by path), each folder
// once, with no set of them held. Files of one folder apart count it again,
// which asks too much room, never too little.
func (r *Room) FileAt(rel string, size int64) {
	r.File(size)
	dir := ""
	if i := strings.LastIndexByte(rel, '/'); i > 0 {
		dir = rel[:i]
	}
	if n := depth(dir) - sharedFolders(dir, r.dir); n > 0 {
		r.Folders(int64(n))
	}
	r.dir = dir
}

// depth is how many folders dir names ("" none, "a/b" two).
func depth(dir string) int {
	if dir == "" {
		return 0
	}
	return strings.Count(dir, "/") + 1
}

// sharedFolders is how many folders a and b start with alike ("a/b/c"
// and "a/b/d": two).
func sharedFolders(a, b string) int {
	n := 0
	for a != "" && b != "" {
		ea, ra, _ := strings.Cut(a, "/")
		eb, rb, _ := strings.Cut(b, "/")
		if ea != eb {
			break
		}
		n++
		a, b = ra, rb
	}
	return n
}

// Folders counts n empty folders, a block each (a directory's own block
// on ext4, APFS and NTFS).
func (r *Room) Folders(n int64) {
	if n <= 0 {
		return
	}
	if n > math.MaxInt64/Block {
		r.Disk = math.MaxInt64
	} else {
		r.Disk = addSat(r.Disk, n*Block)
	}
	r.Entries = addSat(r.Entries, n)
}

// KeepsHoles reports whether files received into dir keep their holes: a
// chunk of zeros inside a partial's size is left as a hole, not written
// (fileio.Writer.WriteAt; Linux, on file systems that punch holes). Where
// it does, a file the sender holds holes in takes only its data
// (wire.FileEntry.Holes), and the space check counts that; elsewhere its
// zeros are written and its whole size counts.
func KeepsHoles(dir string) bool { return fileio.LeavesHoles(madeIn(dir)) }

// madeIn is dir, or, when dir does not exist yet, the nearest folder above
// it that does: a download folder not made yet (~/Downloads on a fresh
// account) is made there with the first files (Open), so that is the file
// system they fill. Measuring dir itself failed, and the space check let
// every offer in.
func madeIn(dir string) string {
	for d := dir; ; {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return dir
		}
		d = up
	}
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// CheckRoom returns a *SpaceError (matching ErrNoSpace) if the file system
// holding dir has less disk free than r takes, or fewer files left to make
// where it counts them (ext4 and most others; Btrfs and NTFS have no such
// limit); or FreeSpace's error if the free space cannot be measured (on
// unsupported platforms that matches errors.ErrUnsupported: the caller
// decides whether to accept blind).
func CheckRoom(dir string, r Room) error {
	free, err := FreeSpace(dir)
	if err != nil {
		return err
	}
	if r.Disk > free {
		se := &SpaceError{Dir: dir, Need: r.Disk, Free: free}
		if r.Disk-r.Data > r.Data/10 {
			se.Data = r.Data // the blocks make the difference: say so
		}
		return se
	}
	if entries, err := FreeEntries(dir); err == nil && r.Entries > entries {
		return &SpaceError{Dir: dir, Need: r.Disk, Free: free, Entries: r.Entries, FreeEntries: entries}
	}
	return nil
}

// CheckSpace is CheckRoom for need bytes of disk and nothing else.
func CheckSpace(dir string, need int64) error {
	return CheckRoom(dir, Room{Disk: need, Data: need})
}

// Count formats n with thousands separators: "1,000,000".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// HumanBytes formats n with SI units and one decimal: "999 B", "1.5 kB",
// "3.2 GB".
func HumanBytes(n int64) string {
	if n < 0 {
		// -n overflows for MinInt64; format via uint64.
		return "-" + humanBytes(uint64(-(n+1))+1)
	}
	return humanBytes(uint64(n))
}

func humanBytes(n uint64) string {
	if n < 1000 {
		return strconv.FormatUint(n, 10) + " B"
	}
	const units = "kMGTPE"
	v := float64(n) / 1000
	i := 0
	// Move up while the value would round to 1000.0 or more, so 999,999 B
	// reads "1.0 MB", not "1000.0 kB".
	for v >= 999.95 && i < len(units)-1 {
		v /= 1000
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + string(units[i]) + "B"
}
