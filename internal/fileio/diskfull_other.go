//go:build !unix && !windows

package fileio

// DiskFull returns "": this platform's errors are not told apart here.
func DiskFull(err error) string { return "" }
