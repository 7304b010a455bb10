//go:build !(linux || darwin || freebsd || dragonfly || windows)

package store

import (
	"errors"
	"fmt"
)

// FreeSpace is not implemented on this platform: it returns -1 and an error
// matching errors.ErrUnsupported.
func FreeSpace(dir string) (int64, error) {
	return -1, fmt.Errorf("store: free space on %q: %w", dir, errors.ErrUnsupported)
}

// FreeEntries returns an error matching errors.ErrUnsupported: this
// platform's limit is not read.
func FreeEntries(dir string) (int64, error) {
	return -1, fmt.Errorf("store: free entries on %q: %w", dir, errors.ErrUnsupported)
}
