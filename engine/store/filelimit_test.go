package store

import (
	"os"
	"runtime"
	"testing"
)

// TestFileLimit: FAT, by any of its names, holds files up to 4 GiB less a
// byte, and says so in a sentence; other file systems set no limit.
func TestFileLimit(t *testing.T) {
	for _, c := range []struct {
		name string
		max  int64
		fs   string
	}{
		{"FAT32", FATMax, "FAT32"}, {"FAT", FATMax, "FAT"}, {"FAT16", FATMax, "FAT16"},
		{"vfat", FATMax, "FAT32"}, {"msdos", FATMax, "FAT32"}, {"fuse.fusefat", FATMax, "FAT32"},
		{"exFAT", 0, ""}, {"exfat", 0, ""}, {"NTFS", 0, ""}, {"ext4", 0, ""}, {"fuse.exfat-fuse", 0, ""}, {"", 0, ""},
	} {
		if l := fsLimit(c.name); l.Max != c.max || l.FS != c.fs {
			t.Errorf("fsLimit(%q) = %+v, want %d %q", c.name, l, c.max, c.fs)
		}
	}
	l := fsLimit("FAT32")
	if l.Refuses(FATMax) || !l.Refuses(FATMax+1) || (FileLimit{}).Refuses(1<<62) {
		t.Errorf("Refuses: %v %v %v", l.Refuses(FATMax), l.Refuses(FATMax+1), (FileLimit{}).Refuses(1<<62))
	}
	if got, want := l.Reason(5<<30), "the download folder is on a FAT32 drive, which holds files of up to 4.3 GB (this one is 5.4 GB)"; got != want {
		t.Errorf("Reason = %q, want %q", got, want)
	}
}

// TestFATNames: names on FAT and exFAT, by any of their types' names,
// follow Windows's rules; on other file systems not.
func TestFATNames(t *testing.T) {
	for name, want := range map[string]bool{
		"vfat": true, "msdos": true, "FAT32": true, "FAT": true, "exFAT": true, "exfat": true,
		"fuse.fusefat": true, "fuse.exfat": true,
		"ext4": false, "NTFS": false, "apfs": false, "fuseblk": false, "": false,
	} {
		if got := fatNames(name); got != want {
			t.Errorf("fatNames(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestAskNames: only a FUSE driver of a block device (exfat-fuse,
// ntfs-3g) leaves its folder to be asked whether it keeps Windows's rules;
// a folder that takes a name Windows refuses does not, and keeps no trace
// of being asked.
func TestAskNames(t *testing.T) {
	for name, want := range map[string]bool{"fuseblk": true, "fuse.fusefat": false, "fuse": false, "ext4": false, "vfat": false, "": false} {
		if got := askNames(name); got != want {
			t.Errorf("askNames(%q) = %v, want %v", name, got, want)
		}
	}
	if runtime.GOOS == "windows" {
		t.Skip("Windows refuses the name itself")
	}
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if refusesWindowsNames(root) {
		t.Error("a temporary folder refuses a name with ?")
	}
	if names, err := os.ReadDir(dir); err != nil || len(names) != 0 {
		t.Errorf("the folder holds %v (%v), want nothing", names, err)
	}
}
