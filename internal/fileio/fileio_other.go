//go:build !linux

package fileio

import (
	"errors"
	"os"
)

// Elsewhere there is no preallocation, write-behind or residency check here:
// files are written and read as usual (directio has no direct I/O either).
// Holes are punched where the platform has a call for it (punchHole: a
// Mac's F_PUNCHHOLE, Windows' FSCTL_SET_ZERO_DATA), else zeros are written.
var platformOps = sysOps{
	fallocate:      func(*os.File, int64) error { return errors.ErrUnsupported },
	startWriteback: func(*os.File, int64, int64) {},
	dropCached:     func(*os.File, int64, int64) {},
	punchHole:      punchHole,
}

func isNoSpace(error) bool { return false }

type unknownResidency struct{}

func newResidency(*os.File) residency { return unknownResidency{} }

func (unknownResidency) cachedShare(int64, int64) (float64, bool) { return 0, false }
func (unknownResidency) close()                                   {}

// LeavesHoles reports whether a Writer leaves chunks of zeros as holes in
// files of the folder dir: it punches one into a block written in a file it
// makes there and removes; never where the platform has no call for holes.
func LeavesHoles(dir string) bool {
	if punchHole == nil {
		return false
	}
	f, err := os.CreateTemp(dir, ".ferry-hole-probe-*")
	if err != nil {
		return false
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.WriteAt(zeros[:holeMin], 0); err != nil {
		return false
	}
	return punchHole(f, 0, holeMin) == nil
}
