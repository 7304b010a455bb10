// Package directio reads and writes file data without the page cache where
// the platform and file system allow it (Linux O_DIRECT), for the large,
// aligned chunk I/O of a transfer, and falls back to ordinary I/O
// everywhere else. When to use it is package fileio's decision.
package directio

import (
	"os"
	"unsafe"
)

// Align is the alignment of buffer, offset and length that direct I/O needs;
// Min is the smallest transfer worth it (below, the device round trip costs
// more than the copy it saves).
const (
	Align = 4096
	Min   = 256 << 10
)

// Aligned reports whether b at off can be read or written directly.
func Aligned(b []byte, off int64) bool {
	return len(b) >= Min && off%Align == 0 && len(b)%Align == 0 &&
		uintptr(unsafe.Pointer(unsafe.SliceData(b)))%Align == 0
}

// Buffer returns a zeroed buffer of n bytes whose start is Align-aligned.
func Buffer(n int) []byte {
	b := make([]byte, n+Align)
	skip := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) % Align)
	if skip != 0 {
		skip = Align - skip
	}
	return b[skip : skip+n : skip+n]
}

// Reopen opens a second descriptor on the file f has open, for direct I/O
// (flag is os.O_RDONLY or os.O_WRONLY). It is the very same inode whatever
// its name is now. It fails with errors.ErrUnsupported where there is no
// direct I/O.
func Reopen(f *os.File, flag int) (*os.File, error) { return reopen(f, flag) }

// Refused reports whether a failed direct read or write means the file
// system does not do direct I/O (at least not with this alignment), so the
// caller should fall back to ordinary I/O.
func Refused(err error) bool { return refused(err) }
