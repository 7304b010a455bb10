//go:build windows

package filelock

import (
	"os"

	"golang.org/x/sys/windows"
)

// Lock waits for an exclusive lock on path (created if need be) and
// returns what drops it. Windows drops it too when the process ends,
// however it ends, so a crash leaves no stale lock.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	var ol windows.Overlapped
	if err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing the handle drops the lock
}

// lockFile takes an exclusive lock on f, waiting for it when wait is set;
// without wait, ok is false while another holds it.
func lockFile(f *os.File, wait bool) (ok bool, err error) {
	flags := uint32(windows.LOCKFILE_EXCLUSIVE_LOCK)
	if !wait {
		flags |= windows.LOCKFILE_FAIL_IMMEDIATELY
	}
	var ol windows.Overlapped
	err = windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, &ol)
	if err == windows.ERROR_LOCK_VIOLATION {
		return false, nil
	}
	return err == nil, err
}
