//go:build !unix && !windows

package fileio

// DiskFull returns "": this platform's errors are not told apart here.
func DiskFull(err error) string { return "" }

// TooLarge returns false: this platform's errors are not told apart here.
func TooLarge(err error) bool { return false }
