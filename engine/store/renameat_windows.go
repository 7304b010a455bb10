package store

import (
	"errors"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/windows"
)

// fileRenameInformation is FILE_RENAME_INFORMATION (ntifs.h) with room for
// a name of MAX_PATH UTF-16 units, as Go's own os.Root rename declares it.
type fileRenameInformation struct {
	ReplaceIfExists bool
	RootDirectory   windows.Handle
	FileNameLength  uint32
	FileName        [windows.MAX_PATH]uint16
}

// renameat renames oldDir\oldBase to newDir\newBase without replacing an
// existing file: the file is opened relative to its folder's handle (not
// following a reparse point), then renamed relative to the new folder's
// handle with ReplaceIfExists false, which fails with
// STATUS_OBJECT_NAME_COLLISION (ERROR_ALREADY_EXISTS, matching fs.ErrExist)
// if the name is taken. This is the rename MoveFileEx does without
// MOVEFILE_REPLACE_EXISTING; FAT and exFAT support it too.
func renameat(oldDir *os.File, oldBase string, newDir *os.File, newBase string) error {
	name, err := windows.NewNTUnicodeString(oldBase)
	if err != nil {
		return err
	}
	oa := windows.OBJECT_ATTRIBUTES{RootDirectory: windows.Handle(oldDir.Fd()), ObjectName: name}
	oa.Length = uint32(unsafe.Sizeof(oa))
	var h windows.Handle
	err = windows.NtCreateFile(&h, windows.DELETE|windows.SYNCHRONIZE, &oa, &windows.IO_STATUS_BLOCK{}, nil, 0,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, windows.FILE_OPEN,
		windows.FILE_OPEN_REPARSE_POINT|windows.FILE_NON_DIRECTORY_FILE|windows.FILE_SYNCHRONOUS_IO_NONALERT, 0, 0)
	runtime.KeepAlive(oldDir)
	if err != nil {
		return ntError(err)
	}
	defer windows.CloseHandle(h)

	p16, err := windows.UTF16FromString(newBase)
	if err != nil {
		return err
	}
	info := fileRenameInformation{ReplaceIfExists: false, RootDirectory: windows.Handle(newDir.Fd())}
	if len(p16) > len(info.FileName) {
		return windows.ERROR_FILENAME_EXCED_RANGE
	}
	copy(info.FileName[:], p16)
	info.FileNameLength = uint32((len(p16) - 1) * 2)
	err = windows.NtSetInformationFile(h, &windows.IO_STATUS_BLOCK{}, (*byte)(unsafe.Pointer(&info)),
		uint32(unsafe.Sizeof(info)), windows.FileRenameInformation)
	runtime.KeepAlive(newDir)
	if err != nil {
		return ntError(err)
	}
	return nil
}

// ntError turns an NTSTATUS into the Win32 error it stands for, so that
// errors.Is matches fs.ErrExist and fs.ErrNotExist; a volume that cannot
// rename this way is reported as unsupported.
func ntError(err error) error {
	var st windows.NTStatus
	if !errors.As(err, &st) {
		return err
	}
	switch st {
	case windows.STATUS_NOT_SUPPORTED, windows.STATUS_NOT_IMPLEMENTED, windows.STATUS_INVALID_DEVICE_REQUEST:
		return errNoAtomicRename
	}
	return st.Errno()
}
