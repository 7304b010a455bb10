package store

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
)

// A destination's file system may hold smaller files than a peer offers:
// FAT (a USB stick, an SD card formatted as most are) keeps a file's size
// in 32 bits, so it holds files up to 4 GiB less a byte; a file over that
// failed once written ("Not saved: operation not permitted." on a fusefat
// stick, EFBIG from the kernel's vfat), after its bytes crossed the
// network. MaxFileSize reads the limit from the file system, so that such
// a file is refused with the offer, before anyone is asked, and the rest
// arrives. Where the limit cannot be read (a FUSE file system other than
// fusefat, a system other than Linux, a Mac or Windows), there is none
// here, and the write's EFBIG says it (fileio.TooLarge).

// FATMax is the largest file FAT12, FAT16 and FAT32 hold: 4 GiB less a byte.
const FATMax = 1<<32 - 1

// FileLimit is the largest file a destination's file system holds, where
// it holds less than a peer may offer. The zero FileLimit sets none.
type FileLimit struct {
	Max int64  // the largest file, in bytes; 0: no limit known
	FS  string // the file system as users know it: "FAT32"
}

// Refuses reports whether a file of size bytes is over the limit.
func (l FileLimit) Refuses(size int64) bool { return l.Max > 0 && size > l.Max }

// Reason says why a file of size bytes is refused, for both sides (the
// folder stays here): "the download folder is on a FAT32 drive, which
// holds files of up to 4.3 GB (this one is 5.4 GB)".
func (l FileLimit) Reason(size int64) string {
	return fmt.Sprintf("%s (this one is %s)", l.Words(), HumanBytes(size))
}

// Words say the limit, for both sides: "the download folder is on a FAT32
// drive, which holds files of up to 4.3 GB".
func (l FileLimit) Words() string {
	return fmt.Sprintf("the download folder is on a %s drive, which holds files of up to %s", l.FS, HumanBytes(l.Max))
}

// MaxFileSize is the largest file the file system that holds dir takes
// (see FileLimit), read from its type (fsType: on Linux the kernel's vfat
// by its statfs magic, a FUSE mount by its type in the mount table; a
// Mac's msdos; a Windows volume's FAT32 or FAT). A folder not made yet is
// measured where it will be made.
func MaxFileSize(dir string) FileLimit { return fsLimit(fsType(dir)) }

// fsLimit is the limit of a file system of the given name (as Windows
// names it, or a Linux or Mac driver's name): FAT's for FAT12, FAT16,
// FAT32, vfat, msdos and fusefat; none for any other.
func fsLimit(name string) FileLimit {
	switch strings.ToLower(name) {
	case "fat", "fat12", "fat16":
		return FileLimit{Max: FATMax, FS: strings.ToUpper(name)}
	case "fat32", "vfat", "msdos", "fuse.fusefat":
		return FileLimit{Max: FATMax, FS: "FAT32"}
	}
	return FileLimit{}
}

// fatNames reports a file system of the given type whose names follow
// Windows's rules (FAT's and exFAT's, on any system): names are saved
// there as on Windows (Dest.windowsNames).
func fatNames(fsType string) bool {
	switch strings.ToLower(fsType) {
	case "vfat", "msdos", "fat", "fat12", "fat16", "fat32", "exfat", "fuse.fusefat", "fuse.exfat":
		return true
	}
	return false
}

// askNames reports a file system type that does not say whose names it
// keeps: "fuseblk", a FUSE driver of a block device, which is how
// exfat-fuse mounts an exFAT stick (and ntfs-3g an NTFS disk). Its folder
// is asked (refusesWindowsNames).
func askNames(fsType string) bool { return fsType == "fuseblk" }

// refusesWindowsNames reports whether the folder of root refuses a name
// that Windows refuses, as FAT's and exFAT's drivers do (exfat-fuse:
// ENOENT for `?`), so that names are saved there as on Windows: exfat-fuse
// keeps a final dot or space and a device name ("notes.", "CON"), which
// Windows cannot open. It creates a file of such a name, which is removed
// at once where it is taken (ntfs-3g, whose names stay as they are).
func refusesWindowsNames(root *os.Root) bool {
	name := fmt.Sprintf(".ferry-names-%d-%d?", os.Getpid(), rand.Uint32())
	f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		f.Close()
		root.Remove(name)
		return false
	}
	return nameRefusedErr(err) && !errors.Is(err, fs.ErrExist)
}

// inOrderOnly reports a file system that loses writes past a file's end
// (Dest.inOrder): fusefat refuses some (EPERM) and misplaces others, where
// the kernel's vfat fills the gap with zeros.
func inOrderOnly(fsType string) bool { return strings.ToLower(fsType) == "fuse.fusefat" }
