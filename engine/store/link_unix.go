//go:build unix

package store

import (
	"errors"
	"syscall"
)

// linkUnsupported reports whether a failed link(2) means the file system has
// no hard links (vfat/exFAT give EPERM, some FUSE and network file systems
// ENOTSUP/EOPNOTSUPP/ENOSYS), so Finalize must fall back to a rename.
func linkUnsupported(err error) bool {
	return errors.Is(err, errors.ErrUnsupported) ||
		errors.Is(err, syscall.EPERM) ||
		errors.Is(err, syscall.ENOTSUP) ||
		errors.Is(err, syscall.EOPNOTSUPP) ||
		errors.Is(err, syscall.ENOSYS)
}
