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
	exfatMagic = 0x2011bab0 // the kernel's exfat
	fuseMagic  = 0x65735546 // any FUSE file system
)

// fsType is the type of the file system that holds dir, as far as the
// limits and names here care: "vfat" (the kernel's vfat or msdos, by
// statfs magic), "exfat", a FUSE mount's type in the mount table
// ("fuse.fusefat"); "" for any other. A folder not made yet is measured
// where it will be made (madeIn).
func fsType(dir string) string {
	d := madeIn(dir)
	var st unix.Statfs_t
	if unix.Statfs(d, &st) != nil {
		return ""
	}
	switch st.Type {
	case msdosMagic:
		return "vfat"
	case exfatMagic:
		return "exfat"
	case fuseMagic:
		var s unix.Stat_t
		if unix.Stat(d, &s) != nil {
			return ""
		}
		f, err := os.Open("/proc/self/mountinfo")
		if err != nil {
			return ""
		}
		defer f.Close()
		return mountType(bufio.NewScanner(f), unix.Major(s.Dev), unix.Minor(s.Dev))
	}
	return ""
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
