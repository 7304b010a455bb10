package fileio

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// HoleBytes is how many of the first size bytes of f lie in chunks of chunk
// bytes (the last one shorter) that hold no data at all, as NTFS's
// allocated ranges (FSCTL_QUERY_ALLOCATED_RANGES) tell them: a file not
// marked sparse is allocated whole, so only a sparse file has holes. A
// chunk with any data in it is counted as data, whole. 0 where the file
// system cannot tell (FAT, exFAT) or on any error: then all of it is data.
//
// Vetted and cross-compiled here, run on a Windows runner (ci.yml's
// windows job: TestZeroChunksLeaveHolesOnMacAndWindows); its paging is
// tested everywhere (rangesAfter).
func HoleBytes(f *os.File, size int64, chunk int) int64 {
	return holeBytes(rangesAfter(allocatedRanges(f), size), size, chunk)
}

// HoleChunks lists the chunks of f's first size bytes, cut in chunks of
// chunk bytes (the last one shorter), that hold no data at all, as
// HoleBytes counts them: runs of chunk indexes, in order, at most max of
// them (the first ones; the chunks beyond are left out, as if they held
// data). nil where the file system cannot tell, or on any error.
func HoleChunks(f *os.File, size int64, chunk int, max int) []ChunkRun {
	return holeChunks(rangesAfter(allocatedRanges(f), size), size, chunk, max)
}

// allocatedRanges asks Windows for f's allocated ranges.
func allocatedRanges(f *os.File) queryRanges {
	return func(off, length int64, out []allocatedRange) (int, bool, error) {
		rc, err := f.SyscallConn()
		if err != nil {
			return 0, false, err
		}
		in := allocatedRange{offset: off, length: length}
		var ret uint32
		var qerr error
		if err := rc.Control(func(fd uintptr) {
			qerr = windows.DeviceIoControl(windows.Handle(fd), windows.FSCTL_QUERY_ALLOCATED_RANGES,
				(*byte)(unsafe.Pointer(&in)), uint32(unsafe.Sizeof(in)),
				(*byte)(unsafe.Pointer(&out[0])), uint32(len(out))*uint32(unsafe.Sizeof(out[0])), &ret, nil)
		}); err != nil {
			return 0, false, err
		}
		more := errors.Is(qerr, windows.ERROR_MORE_DATA)
		if qerr != nil && !more {
			return 0, false, qerr
		}
		return int(ret / uint32(unsafe.Sizeof(out[0]))), more, nil
	}
}
