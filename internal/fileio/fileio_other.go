//go:build !linux

package fileio

import (
	"errors"
	"os"
)

// Elsewhere there is no preallocation, write-behind or residency check here:
// files are written and read as usual (directio has no direct I/O either).
var platformOps = sysOps{
	fallocate:      func(*os.File, int64) error { return errors.ErrUnsupported },
	startWriteback: func(*os.File, int64, int64) {},
	dropCached:     func(*os.File, int64, int64) {},
}

func isNoSpace(error) bool { return false }

type unknownResidency struct{}

func newResidency(*os.File) residency { return unknownResidency{} }

func (unknownResidency) cachedShare(int64, int64) (float64, bool) { return 0, false }
func (unknownResidency) close()                                   {}

// LeavesHoles reports whether a Writer leaves chunks of zeros as holes in
// files of the folder dir: never here, where zeros are written.
func LeavesHoles(dir string) bool { return false }
