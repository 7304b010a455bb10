//go:build !linux

package testutil

import "testing"

// SmallDisk skips t: mounting a small disk is done on Linux only.
func SmallDisk(t testing.TB, options string) string {
	t.Helper()
	t.Skip("a small disk is mounted on Linux only")
	return ""
}

// FATStick skips t: a FAT stick is mounted on Linux only.
func FATStick(t testing.TB) string {
	t.Helper()
	t.Skip("a FAT stick is mounted on Linux only")
	return ""
}

// ExFATStick skips t: an exFAT stick is mounted on Linux only.
func ExFATStick(t testing.TB) string {
	t.Helper()
	t.Skip("an exFAT stick is mounted on Linux only")
	return ""
}
