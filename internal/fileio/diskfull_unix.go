//go:build unix

package fileio

import (
	"errors"

	"golang.org/x/sys/unix"
)

// DiskFull says why err is a write that found no room ("the disk is
// full", "the disk quota is used up"), or "" when it is not one.
func DiskFull(err error) string {
	switch {
	case errors.Is(err, unix.ENOSPC):
		return "the disk is full"
	case errors.Is(err, unix.EDQUOT):
		return "the disk quota is used up"
	}
	return ""
}

// TooLarge reports whether err is a write or an allocation past the
// largest file the file system takes (FAT's 4 GiB less a byte) or this
// process may write (RLIMIT_FSIZE): EFBIG.
func TooLarge(err error) bool { return errors.Is(err, unix.EFBIG) }
