//go:build !unix

package store

import "io/fs"

// Allocated is the disk the file fi describes takes: its size here, where
// os.Stat reports no allocated blocks (a partial is preallocated whole).
func Allocated(fi fs.FileInfo) int64 { return fi.Size() }
