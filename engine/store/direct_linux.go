//go:build linux

package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// openDirect opens a second, O_DIRECT descriptor on the file f has open,
// through /proc/self/fd so it is the very same inode whatever its name is
// now. Writes through it skip the page cache.
func openDirect(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var fd uintptr
	if err := rc.Control(func(u uintptr) { fd = u }); err != nil {
		return nil, err
	}
	return os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", fd), os.O_WRONLY|syscall.O_DIRECT, 0)
}

// directUnsupported reports whether a failed direct write means the file
// system does not take O_DIRECT (or not with this alignment).
func directUnsupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP)
}
