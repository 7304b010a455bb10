package fileio

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// fileZeroData is FILE_ZERO_DATA_INFORMATION, FSCTL_SET_ZERO_DATA's input.
type fileZeroData struct {
	offset, beyondFinalZero int64
}

// zeroDataPunchHole gives back the blocks of [off, off+n), keeping the file's size:
// it marks the file sparse (FSCTL_SET_SPARSE, which a file keeps) and zeroes
// the range (FSCTL_SET_ZERO_DATA), which in a sparse file deallocates the
// whole allocation units inside it (NTFS, ReFS). errors.ErrUnsupported
// where the file system has no sparse files (FAT, exFAT).
//
// Vetted and cross-compiled here (GOOS=windows go vet), never run: Wine
// does not keep NTFS's allocation (docs/compatibility.md, "Sparse files").
func zeroDataPunchHole(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var perr error
	if err := rc.Control(func(fd uintptr) {
		h := windows.Handle(fd)
		var ret uint32
		if perr = windows.DeviceIoControl(h, windows.FSCTL_SET_SPARSE, nil, 0, nil, 0, &ret, nil); perr != nil {
			return
		}
		in := fileZeroData{offset: off, beyondFinalZero: off + n}
		perr = windows.DeviceIoControl(h, windows.FSCTL_SET_ZERO_DATA, (*byte)(unsafe.Pointer(&in)), uint32(unsafe.Sizeof(in)), nil, 0, &ret, nil)
	}); err != nil {
		return err
	}
	if errors.Is(perr, windows.ERROR_INVALID_FUNCTION) || errors.Is(perr, windows.ERROR_NOT_SUPPORTED) {
		return errors.ErrUnsupported
	}
	return perr
}

// MarkSparse marks f a sparse file, so that growing it (Truncate) leaves
// the new range unallocated, as Linux and a Mac's APFS do for every file:
// NTFS allocates it in a file not so marked. Best effort: an error leaves
// f as it was. Vetted, never run (zeroDataPunchHole).
func MarkSparse(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		var ret uint32
		windows.DeviceIoControl(windows.Handle(fd), windows.FSCTL_SET_SPARSE, nil, 0, nil, 0, &ret, nil)
	})
}

// punchHole is the platform's call for holes (platformOps.punchHole).
var punchHole = zeroDataPunchHole
