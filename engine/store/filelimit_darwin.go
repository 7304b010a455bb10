package store

import (
	"golang.org/x/sys/unix"
)

// MaxFileSize is the largest file the file system that holds dir can
// take (see FileLimit): read from the name of its driver ("msdos", a Mac's
// FAT). A folder not made yet is measured where it will be made (madeIn).
func MaxFileSize(dir string) FileLimit {
	var st unix.Statfs_t
	if unix.Statfs(madeIn(dir), &st) != nil {
		return FileLimit{}
	}
	return fsLimit(unix.ByteSliceToString(st.Fstypename[:]))
}
