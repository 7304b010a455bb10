//go:build !windows

package fileio

import "os"

// MarkSparse marks f a sparse file where a file must be marked so before
// growing it leaves holes (Windows); nothing here, where growing a file
// (Truncate) leaves the new range unallocated on file systems with holes.
func MarkSparse(f *os.File) {}
