//go:build linux || darwin || freebsd || dragonfly || netbsd || openbsd

package store

import "golang.org/x/sys/unix"

// writable is access(2) with W_OK on dir, retried on EINTR: its error is
// the bare errno ("read-only file system", "permission denied").
func writable(dir string) error {
	for {
		err := unix.Access(dir, unix.W_OK)
		if err != unix.EINTR {
			return err
		}
	}
}
