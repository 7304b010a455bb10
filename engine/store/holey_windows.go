package store

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/windows"
)

// MayHoldHoles says whether the regular file fi describes may hold holes,
// so that a send looks for them (fileio.HoleBytes): it is marked sparse
// (FILE_ATTRIBUTE_SPARSE_FILE), as NTFS keeps holes in no other file.
func MayHoldHoles(fi fs.FileInfo) bool {
	if d, ok := fi.Sys().(*syscall.Win32FileAttributeData); ok {
		return d.FileAttributes&windows.FILE_ATTRIBUTE_SPARSE_FILE != 0
	}
	return false
}
