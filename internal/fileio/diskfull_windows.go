//go:build windows

package fileio

import (
	"errors"

	"golang.org/x/sys/windows"
)

// DiskFull says why err is a write that found no room ("the disk is
// full", "the disk quota is used up"), or "" when it is not one.
func DiskFull(err error) string {
	switch {
	case errors.Is(err, windows.ERROR_DISK_FULL), errors.Is(err, windows.ERROR_HANDLE_DISK_FULL):
		return "the disk is full"
	case errors.Is(err, windows.ERROR_DISK_QUOTA_EXCEEDED):
		return "the disk quota is used up"
	}
	return ""
}

// TooLarge reports whether err is a write or an allocation past the
// largest file the volume takes (FAT32's 4 GiB less a byte).
func TooLarge(err error) bool { return errors.Is(err, windows.ERROR_FILE_TOO_LARGE) }
