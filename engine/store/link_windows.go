//go:build windows

package store

import (
	"errors"

	"golang.org/x/sys/windows"
)

// linkUnsupported reports whether a failed CreateHardLink means the volume
// has no hard links (FAT/exFAT give ERROR_INVALID_FUNCTION, some network
// shares ERROR_NOT_SUPPORTED), so Finalize must fall back to a rename.
func linkUnsupported(err error) bool {
	return errors.Is(err, errors.ErrUnsupported) ||
		errors.Is(err, windows.ERROR_INVALID_FUNCTION) ||
		errors.Is(err, windows.ERROR_NOT_SUPPORTED)
}
