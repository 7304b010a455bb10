package store

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// fileIdentity: the birth time, which statx gives where the file system
// keeps it (ext4, xfs, btrfs, tmpfs, vfat); else the file number.
func fileIdentity(f *os.File) (string, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", err
	}
	var id string
	var serr error
	if err := rc.Control(func(fd uintptr) { id, serr = fdIdentity(int(fd)) }); err != nil {
		return "", err
	}
	return id, serr
}

// fdIdentity is fileIdentity of an open descriptor.
func fdIdentity(fd int) (string, error) {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return "", err
	}
	if st.Mask&unix.STATX_BTIME != 0 {
		return fmt.Sprintf("b%x.%09d", st.Btime.Sec, st.Btime.Nsec), nil
	}
	return fmt.Sprintf("i%x", st.Ino), nil
}
