//go:build unix

package instance

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

const lockName = "ferry.lock"

// lockFile takes an exclusive flock on path, which the kernel drops when the
// process ends however it ends.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("instance: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrRunning
		}
		return nil, fmt.Errorf("instance: lock: %w", err)
	}
	return f, nil
}

func unlockFile(f *os.File) error {
	// Closing the descriptor drops the flock.
	return f.Close()
}
