//go:build linux || darwin || freebsd || dragonfly

package store

import (
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
