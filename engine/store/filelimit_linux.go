package store

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Magic numbers of statfs(2) on Linux.
const (
	msdosMagic = 0x4d44     // the kernel's vfat and msdos
	fuseMagic  = 0x65735546 // any FUSE file system
)

// MaxFileSize is the largest file the file system that holds dir can
// take (see FileLimit): read from its statfs magic (the kernel's vfat),
// and for a FUSE file system from the mount table (fusefat). A folder not
// made yet is measured where it will be made (madeIn).
func MaxFileSize(dir string) FileLimit {
	d := madeIn(dir)
	var st unix.Statfs_t
	if unix.Statfs(d, &st) != nil {
		return FileLimit{}
	}
	switch st.Type {
	case msdosMagic:
		return fsLimit("vfat")
	case fuseMagic:
		var s unix.Stat_t
		if unix.Stat(d, &s) != nil {
			return FileLimit{}
		}
		f, err := os.Open("/proc/self/mountinfo")
		if err != nil {
			return FileLimit{}
		}
		defer f.Close()
		return fsLimit(mountType(bufio.NewScanner(f), unix.Major(s.Dev), unix.Minor(s.Dev)))
	}
	return FileLimit{}
}

// mountType is the file system type (such as "fuse.fusefat") of the mount
// of device major:minor in a mountinfo table (proc_pid_mountinfo(5):
// "36 35 0:45 / /mnt rw,relatime - fuse.fusefat /dev/sdb1 rw"); "" when
// none is listed.
func mountType(sc *bufio.Scanner, major, minor uint32) string {
	dev := fmt.Sprintf("%d:%d", major, minor)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[2] != dev {
			continue
		}
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) {
				return fields[i+1]
			}
		}
	}
	return ""
}
