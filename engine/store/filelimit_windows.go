package store

import (
	"golang.org/x/sys/windows"
)

// fsType is the name of the file system of the volume that holds dir
// ("FAT32", "FAT", "exFAT", "NTFS"), "" when it cannot be read. A folder
// not made yet is measured where it will be made (madeIn).
func fsType(dir string) string {
	p, err := windows.UTF16PtrFromString(madeIn(dir))
	if err != nil {
		return ""
	}
	var root [windows.MAX_PATH + 1]uint16
	if windows.GetVolumePathName(p, &root[0], uint32(len(root))) != nil {
		return ""
	}
	var name [windows.MAX_PATH + 1]uint16
	if windows.GetVolumeInformation(&root[0], nil, 0, nil, nil, nil, &name[0], uint32(len(name))) != nil {
		return ""
	}
	return windows.UTF16ToString(name[:])
}
