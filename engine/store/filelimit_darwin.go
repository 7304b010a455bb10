package store

import (
	"golang.org/x/sys/unix"
)

// fsType is the name of the driver of the file system that holds dir
// ("msdos", a Mac's FAT; "exfat"; "apfs"), "" when it cannot be read. A
// folder not made yet is measured where it will be made (madeIn).
func fsType(dir string) string {
	var st unix.Statfs_t
	if unix.Statfs(madeIn(dir), &st) != nil {
		return ""
	}
	return unix.ByteSliceToString(st.Fstypename[:])
}
