//go:build !linux

package store

import (
	"errors"
	"os"
)

// openIn opens the folder name (one element) in fo, path being its path
// from the destination: through fo's Root.
func (fo *folder) openIn(name, path string) (*folder, error) {
	return fo.openInRoot(name, path)
}

// rootFromDir is never needed here: every folder is opened with its Root.
func rootFromDir(*os.File) (*os.Root, error) {
	return nil, errors.ErrUnsupported
}
