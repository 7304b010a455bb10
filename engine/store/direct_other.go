//go:build !linux

package store

import (
	"errors"
	"os"
)

// openDirect: direct writes are only implemented on Linux (O_DIRECT); other
// platforms write through the page cache.
func openDirect(*os.File) (*os.File, error) { return nil, errors.ErrUnsupported }

func directUnsupported(error) bool { return true }
