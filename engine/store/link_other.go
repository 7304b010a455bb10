//go:build !unix && !windows

package store

// linkUnsupported: on the remaining platforms (plan9, js, wasip1) hard links
// are missing or unreliable, so any link failure other than "exists" falls
// back to check-then-rename.
func linkUnsupported(err error) bool { return true }
