package store

import (
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// setTimes sets the open file fd's times to the nanosecond, through its
// entry in /proc (utimensat takes no descriptor alone; futimes is what
// glibc does the same way, to the microsecond).
func setTimes(fd int, atime, mtime time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	return unix.UtimesNanoAt(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), ts, 0)
}
