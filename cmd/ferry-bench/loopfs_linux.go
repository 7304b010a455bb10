package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// onTmpfs reports whether dir is on a tmpfs (memory, no discard).
func onTmpfs(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Type == 0x01021994 // TMPFS_MAGIC
}

// dropCache drops f's clean pages from the page cache.
func dropCache(f *os.File) error { return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED) }
