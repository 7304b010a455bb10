package store

import (
	"errors"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// renameat renames oldDir/oldBase to newDir/newBase with renameat2's
// RENAME_NOREPLACE: the kernel checks that the new name is free and renames
// in one step. A file system that does not know the flag (EINVAL; vfat
// before Linux 6.x, some FUSE and network file systems) is reported as
// unsupported.
func renameat(oldDir *os.File, oldBase string, newDir *os.File, newBase string) error {
	err := unix.Renameat2(int(oldDir.Fd()), oldBase, int(newDir.Fd()), newBase, unix.RENAME_NOREPLACE)
	runtime.KeepAlive(oldDir)
	runtime.KeepAlive(newDir)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errNoAtomicRename
	}
	return err
}
