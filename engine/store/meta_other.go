//go:build !unix && !windows

package store

// setMeta does nothing here: an open file's times are not set on this
// platform.
func setMeta(uintptr, Meta) {}
