//go:build unix

package store

import "io/fs"

// MayHoldHoles says whether the regular file fi describes may hold holes,
// so that a send looks for them (fileio.HoleBytes): it takes fewer blocks
// than its size (or is compressed, or its data inline).
func MayHoldHoles(fi fs.FileInfo) bool { return Allocated(fi) < fi.Size() }
