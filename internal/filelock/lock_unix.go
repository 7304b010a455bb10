//go:build unix

package filelock

import (
	"os"
	"syscall"
)

// Lock waits for an exclusive flock on path (created if need be) and
// returns what drops it. The kernel drops it too when the process ends,
// however it ends, so a crash leaves no stale lock.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing the descriptor drops the flock
}

// lockFile takes an exclusive flock on f, waiting for it when wait is
// set; without wait, ok is false while another holds it.
func lockFile(f *os.File, wait bool) (ok bool, err error) {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err == syscall.EWOULDBLOCK {
		return false, nil
	}
	return err == nil, err
}

// openRemovable opens path for Hold (created if need be); a file open here
// can be removed by anyone at any time.
func openRemovable(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}
