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
	var st unix.Statx_t
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.Statx(int(fd), "", unix.AT_EMPTY_PATH, unix.STATX_INO|unix.STATX_BTIME, &st)
	}); err != nil {
		return "", err
	}
	if serr != nil {
		return "", serr
	}
	if st.Mask&unix.STATX_BTIME != 0 {
		return fmt.Sprintf("b%x.%09d", st.Btime.Sec, st.Btime.Nsec), nil
	}
	return fmt.Sprintf("i%x", st.Ino), nil
}
