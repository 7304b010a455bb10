//go:build !unix

package fileio

import "os"

// Small is a file opened for reading with OpenSmall (an os.File here; the
// unix version is a bare descriptor).
type Small struct{ *os.File }

// OpenSmall opens the file name for reading (os.Open here; the unix version
// skips the os.File and Go's poller, for a file read in one or a few reads).
func OpenSmall(name string) (*Small, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return &Small{f}, nil
}
