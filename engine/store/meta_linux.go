package store

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setTimes sets the open file fd's times to the nanosecond: utimensat with
// the descriptor and no path, as glibc's futimens (x/sys has no call for
// it; its Futimes goes through /proc, twice the cost: 4 against 2 µs here,
// for each of 10^5 files of a tree).
func setTimes(fd int, atime, mtime time.Time) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
