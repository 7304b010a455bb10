package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// FATStick mounts a new FAT32 image of 64 MB, as a USB stick would be, and
// returns its folder, unmounted when t ends: the kernel's vfat where it has
// one, else fusefat (this machine's kernel has none). It skips t where it
// cannot mount one (it needs root, mkfs.vfat, and vfat or fusefat).
func FATStick(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a FAT stick needs root")
	}
	mkfs, err := exec.LookPath("mkfs.vfat")
	if err != nil {
		t.Skip("no mkfs.vfat")
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "fat.img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-F", "32", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.vfat: %v: %s", err, out)
	}
	unmount := []string{"umount", mnt}
	if err := exec.Command("mount", "-t", "vfat", "-o", "loop", img, mnt).Run(); err != nil {
		fusefat, ferr := exec.LookPath("fusefat")
		if ferr != nil {
			t.Skipf("no vfat in this kernel (%v) and no fusefat", err)
		}
		if out, err := exec.Command(fusefat, "-o", "rw+", img, mnt).CombinedOutput(); err != nil {
			t.Skipf("fusefat: %v: %s", err, out)
		}
		if _, err := exec.LookPath("fusermount"); err == nil {
			unmount = []string{"fusermount", "-u", mnt}
		}
	}
	t.Cleanup(func() {
		if out, err := exec.Command(unmount[0], unmount[1:]...).CombinedOutput(); err != nil {
			t.Errorf("%v: %v: %s", unmount, err, out)
		}
	})
	return mnt
}
