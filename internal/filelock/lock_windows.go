//go:build windows

package filelock

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

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

// openRemovable opens path for Hold (created if need be) sharing delete,
// which os.OpenFile does not: without it DeleteFile fails with a sharing
// violation while any handle is open, so a holder could not remove its
// lock file before letting go (TestHoldFollowsARemovedFile). Removed while
// open, the file is gone from the folder at once where the system deletes
// with POSIX semantics (NTFS on Windows 10 1809 and later); elsewhere (FAT,
// older systems, Wine) its name stays, "delete pending", until its last
// handle closes, and opening it fails with STATUS_DELETE_PENDING: a holder
// or waiter of it closes its handle soon (Hold finds the file removed), so
// the open is tried again for a while.
func openRemovable(path string) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	const share = windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE
	giveUp := time.Now().Add(deletePendingWait)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		h, pending, err := createShared(p, share)
		if err == nil {
			return os.NewFile(uintptr(h), path), nil
		}
		if !pending {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		if time.Now().After(giveUp) {
			return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (still being removed after %v)", err, deletePendingWait)}
		}
		time.Sleep(wait)
	}
}

// deletePendingWait bounds how long openRemovable waits for a lock file
// being removed to go: its handles close as soon as their holders see it.
const deletePendingWait = 10 * time.Second

// rtlGetLastNtStatus is ntdll's RtlGetLastNtStatus, which x/sys/windows
// does not wrap: the NT status behind the thread's last error, which tells
// a file being removed (STATUS_DELETE_PENDING) from one this user may not
// open, both ERROR_ACCESS_DENIED.
var rtlGetLastNtStatus = windows.NewLazySystemDLL("ntdll.dll").NewProc("RtlGetLastNtStatus")

// createShared opens or creates the file at p with share; pending says
// that it failed because the file is being removed.
func createShared(p *uint16, share uint32) (h windows.Handle, pending bool, err error) {
	// The status is the thread's: read on the thread that made the call.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err = windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE, share, nil,
		windows.OPEN_ALWAYS, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err == nil || !errors.Is(err, windows.ERROR_ACCESS_DENIED) || rtlGetLastNtStatus.Find() != nil {
		return h, false, err
	}
	status, _, _ := rtlGetLastNtStatus.Call()
	return h, windows.NTStatus(status) == windows.STATUS_DELETE_PENDING, err
}
