package fileio

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fpunchhole is a Mac's fpunchhole_t (<sys/fcntl.h>), F_PUNCHHOLE's
// argument.
type fpunchhole struct {
	flags    uint32 // unused, 0
	reserved uint32
	offset   int64
	length   int64
}

// fcntlPunchHole gives back the blocks of [off, off+n) with fcntl(F_PUNCHHOLE)
// (macOS 10.12 and later, APFS), keeping the file's size; the range must
// be whole blocks of the file system (EINVAL otherwise: the zeros are then
// written). errors.ErrUnsupported where the file system cannot (HFS+).
//
// Vetted and cross-compiled here (GOOS=darwin go vet), never run: this
// project has no Mac runner (docs/compatibility.md, "Sparse files").
func fcntlPunchHole(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var perr error
	if err := rc.Control(func(fd uintptr) {
		arg := fpunchhole{offset: off, length: n}
		_, _, errno := unix.Syscall(unix.SYS_FCNTL, fd, unix.F_PUNCHHOLE, uintptr(unsafe.Pointer(&arg)))
		if errno != 0 {
			perr = errno
		}
	}); err != nil {
		return err
	}
	if errors.Is(perr, unix.ENOTSUP) || errors.Is(perr, unix.EOPNOTSUPP) || errors.Is(perr, unix.ENOSYS) {
		return errors.ErrUnsupported
	}
	return perr
}

// punchHole is the platform's call for holes (platformOps.punchHole).
var punchHole = fcntlPunchHole
