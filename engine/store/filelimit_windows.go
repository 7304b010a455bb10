package store

import (
	"golang.org/x/sys/windows"
)

// MaxFileSize is the largest file the volume that holds dir can take (see
// FileLimit): read from its file system's name ("FAT32", "FAT"). A folder
// not made yet is measured where it will be made (madeIn).
func MaxFileSize(dir string) FileLimit {
	p, err := windows.UTF16PtrFromString(madeIn(dir))
	if err != nil {
		return FileLimit{}
	}
	var root [windows.MAX_PATH + 1]uint16
	if windows.GetVolumePathName(p, &root[0], uint32(len(root))) != nil {
		return FileLimit{}
	}
	var name [windows.MAX_PATH + 1]uint16
	if windows.GetVolumeInformation(&root[0], nil, 0, nil, nil, nil, &name[0], uint32(len(name))) != nil {
		return FileLimit{}
	}
	return fsLimit(windows.UTF16ToString(name[:]))
}
