//go:build unix

package store

import (
	"io/fs"
	"syscall"
)

// Allocated is the disk the file fi describes takes: its allocated blocks
// (a preallocated partial takes its whole size before its data arrives; a
// sparse file less than its size).
func Allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}
