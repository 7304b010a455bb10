//go:build unix && !linux

package store

import (
	"time"

	"golang.org/x/sys/unix"
)

// setTimes sets the open file fd's times (futimes: to the microsecond).
func setTimes(fd int, atime, mtime time.Time) error {
	// From seconds and the rest, not UnixNano (which wraps past 2262).
	tv := func(t time.Time) unix.Timeval {
		v := unix.NsecToTimeval(int64(t.Nanosecond()))
		v.Sec = t.Unix()
		return v
	}
	return unix.Futimes(fd, []unix.Timeval{tv(atime), tv(mtime)})
}
