//go:build linux || darwin || freebsd || dragonfly

package store

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// FreeSpace returns the number of bytes an unprivileged user may still write
// on the file system that holds dir (blocks available, not blocks free:
// root's reserve does not count).
func FreeSpace(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1, fmt.Errorf("store: free space on %q: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// FreeEntries returns how many more files and folders the file system that
// holds dir can make (its free inodes), or an error matching
// errors.ErrUnsupported where it sets no such limit (Btrfs reports none).
func FreeEntries(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1, fmt.Errorf("store: free entries on %q: %w", dir, err)
	}
	if st.Files == 0 {
		return -1, fmt.Errorf("store: free entries on %q: %w", dir, errors.ErrUnsupported)
	}
	return int64(st.Ffree), nil
}
