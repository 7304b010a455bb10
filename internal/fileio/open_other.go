//go:build !unix

package fileio

import "os"

// Open opens the file name for reading (os.Open; the unix version skips
// Go's poller).
func Open(name string) (*os.File, error) { return os.Open(name) }
