//go:build unix

package shacache

import (
	"io/fs"
	"syscall"
)

// identity is the device and inode of the file fi describes.
func identity(fi fs.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true //nolint:unconvert // Dev is 32 bits on some platforms
}
