//go:build !(linux || darwin || windows)

package store

// fsType is "" on this system: its file systems are not told apart, so no
// limit is known (see FileLimit: where a destination holds smaller files
// than offered, its write's EFBIG says so) and names are not made
// Windows's for one.
func fsType(dir string) string { return "" }
