//go:build !linux && !darwin && !windows

package store

import "os"

// renameat: the BSDs and the rest have no rename that refuses to replace its
// target (FreeBSD's renameat has no flags), so Finalize links the new name
// and removes the partial's, which works on their file systems.
func renameat(oldDir *os.File, oldBase string, newDir *os.File, newBase string) error {
	return errNoAtomicRename
}
