//go:build unix && !linux

package store

import (
	"time"

	"golang.org/x/sys/unix"
)

// setTimes sets the open file fd's times (futimes: to the microsecond).
func setTimes(fd int, atime, mtime time.Time) error {
	return unix.Futimes(fd, []unix.Timeval{unix.NsecToTimeval(atime.UnixNano()), unix.NsecToTimeval(mtime.UnixNano())})
}
