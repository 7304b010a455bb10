//go:build !unix && !windows

package store

import "io/fs"

// MayHoldHoles says whether the regular file fi describes may hold holes:
// never here, where holes are not looked for.
func MayHoldHoles(fs.FileInfo) bool { return false }
