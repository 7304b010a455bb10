package store

import (
	"errors"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// renameat renames oldDir/oldBase to newDir/newBase with renameatx_np's
// RENAME_EXCL (macOS 10.12 and later): it fails with EEXIST if the new name
// is taken. A file system that cannot do it (ENOTSUP, e.g. some network
// shares) is reported as unsupported.
func renameat(oldDir *os.File, oldBase string, newDir *os.File, newBase string) error {
	err := unix.RenameatxNp(int(oldDir.Fd()), oldBase, int(newDir.Fd()), newBase, unix.RENAME_EXCL)
	runtime.KeepAlive(oldDir)
	runtime.KeepAlive(newDir)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return errNoAtomicRename
	}
	return err
}
