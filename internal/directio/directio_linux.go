package directio

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// reopen goes through /proc/self/fd, which names the open inode itself.
func reopen(f *os.File, flag int) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var fd uintptr
	if err := rc.Control(func(u uintptr) { fd = u }); err != nil {
		return nil, err
	}
	return os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", fd), flag|syscall.O_DIRECT, 0)
}

func refused(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP)
}
