//go:build !(linux || darwin || windows)

package store

// MaxFileSize sets no limit on this system (see FileLimit): where a
// destination's file system holds smaller files than offered, its write's
// EFBIG says so.
func MaxFileSize(dir string) FileLimit { return FileLimit{} }
