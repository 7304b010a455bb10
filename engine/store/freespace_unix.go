//go:build linux || darwin || freebsd || dragonfly

package store

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// FreeSpace returns the number of bytes an unprivileged user may still write
// on the file system that holds dir (blocks available, not blocks free:
// root's reserve does not count), or an error matching
// errors.ErrUnsupported where the file system does not say (freeSpace). A
// folder not made yet is measured where it will be made (madeIn).
func FreeSpace(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(madeIn(dir), &st); err != nil {
		return -1, fmt.Errorf("store: free space on %q: %w", dir, err)
	}
	free, err := freeSpace(&st)
	if err != nil {
		return -1, fmt.Errorf("store: free space on %q: %w", dir, err)
	}
	return free, nil
}

// freeSpace is FreeSpace from the file system's statfs(2). One that reports
// no blocks at all does not measure its space: a FUSE file system that
// answers no statfs gets libfuse's default of zeros (fusefat: "0 B free" on
// a stick with 60 MB free), and its free space is unknown, not none, so
// that the space check accepts blind and a full disk fails on its write,
// as where statfs itself fails.
func freeSpace(st *unix.Statfs_t) (int64, error) {
	if st.Blocks == 0 {
		return -1, fmt.Errorf("the file system reports no size: %w", errors.ErrUnsupported)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// FreeEntries returns how many more files and folders the file system that
// holds dir can make (its free inodes), or an error matching
// errors.ErrUnsupported where it sets no such limit (Btrfs reports none).
// A folder not made yet is measured where it will be made (madeIn).
func FreeEntries(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(madeIn(dir), &st); err != nil {
		return -1, fmt.Errorf("store: free entries on %q: %w", dir, err)
	}
	if st.Files == 0 {
		return -1, fmt.Errorf("store: free entries on %q: %w", dir, errors.ErrUnsupported)
	}
	return int64(st.Ffree), nil
}
