//go:build linux || darwin || freebsd || dragonfly

package store

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// A file system that reports no blocks at all (a FUSE file system that
// answers no statfs: libfuse's zeros; fusefat) has an unknown free space,
// not none: every offer to a folder on one was refused, "10.5 MB needed,
// 0 B free", on a stick with 60 MB free. One that reports its blocks and
// none free is full.
func TestFileSystemWithoutASizeHasUnknownFreeSpace(t *testing.T) {
	var unsized unix.Statfs_t
	unsized.Bsize = 512
	if free, err := freeSpace(&unsized); !errors.Is(err, errors.ErrUnsupported) || free != -1 {
		t.Errorf("no blocks reported: %d, %v; want -1 and ErrUnsupported", free, err)
	}
	var full unix.Statfs_t
	full.Bsize, full.Blocks = 4096, 1000
	if free, err := freeSpace(&full); err != nil || free != 0 {
		t.Errorf("full: %d, %v; want 0", free, err)
	}
	var some unix.Statfs_t
	some.Bsize, some.Blocks, some.Bavail = 4096, 1000, 10
	if free, err := freeSpace(&some); err != nil || free != 40960 {
		t.Errorf("10 blocks free: %d, %v; want 40960", free, err)
	}
}
