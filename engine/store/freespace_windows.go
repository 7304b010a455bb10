//go:build windows

package store

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows"
)

// FreeSpace returns the number of bytes the current user may still write on
// the volume that holds dir (quotas included). A folder not made yet is
// measured where it will be made (madeIn).
func FreeSpace(dir string) (int64, error) {
	p, err := windows.UTF16PtrFromString(madeIn(dir))
	if err != nil {
		return -1, fmt.Errorf("store: free space on %q: %w", dir, err)
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return -1, fmt.Errorf("store: free space on %q: %w", dir, err)
	}
	return int64(avail), nil
}

// FreeEntries returns an error matching errors.ErrUnsupported: NTFS sets
// no limit on how many files a volume holds that a space check could meet.
func FreeEntries(dir string) (int64, error) {
	return -1, fmt.Errorf("store: free entries on %q: %w", dir, errors.ErrUnsupported)
}
