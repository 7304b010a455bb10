package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// FATStick mounts a new FAT32 image of 64 MB, as a USB stick would be, and
// returns its folder, unmounted when t ends: the kernel's vfat where it has
// one, else fusefat (this machine's kernel has none). It skips t where it
// cannot mount one (it needs root, mkfs.vfat, and vfat or fusefat).
func FATStick(t testing.TB) string {
	t.Helper()
	img, mnt := stickImage(t, "a FAT stick", "mkfs.vfat", "-F", "32")
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

// ExFATStick mounts a new exFAT image of 64 MB, as a stick formatted for
// large files would be, and returns its folder, unmounted when t ends: the
// kernel's exfat where it has one, else exfat-fuse on a loop device (which
// mounts as "fuseblk", so that its type does not say FAT). Like every
// exFAT, it ignores letter case. It skips t where it cannot mount one (it
// needs root, mkfs.exfat, and exfat or exfat-fuse).
func ExFATStick(t testing.TB) string {
	t.Helper()
	img, mnt := stickImage(t, "an exFAT stick", "mkfs.exfat")
	if err := exec.Command("mount", "-t", "exfat", "-o", "loop", img, mnt).Run(); err == nil {
		t.Cleanup(func() {
			if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
				t.Errorf("umount: %v: %s", err, out)
			}
		})
		return mnt
	}
	fuse, err := exec.LookPath("mount.exfat-fuse")
	if err != nil {
		t.Skip("no exfat in this kernel and no exfat-fuse")
	}
	out, err := exec.Command("losetup", "-f", "--show", img).Output() // exfat-fuse needs a block device
	if err != nil {
		t.Skipf("losetup: %v", err)
	}
	dev := strings.TrimSpace(string(out))
	if out, err := exec.Command(fuse, dev, mnt).CombinedOutput(); err != nil {
		exec.Command("losetup", "-d", dev).Run()
		t.Skipf("exfat-fuse: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount: %v: %s", err, out)
		}
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d: %v: %s", err, out)
		}
	})
	return mnt
}

// stickImage makes a 64 MB image formatted by mkfs (with args) and a
// folder to mount it on, both removed when t ends. It skips t without
// root, which mounting needs, or without mkfs.
func stickImage(t testing.TB, what, mkfs string, args ...string) (img, mnt string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("mounting %s needs root", what)
	}
	path, err := exec.LookPath(mkfs)
	if err != nil {
		t.Skipf("no %s", mkfs)
	}
	dir := t.TempDir()
	img, mnt = filepath.Join(dir, "stick.img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(path, append(args, img)...).CombinedOutput(); err != nil {
		t.Skipf("%s: %v: %s", mkfs, err, out)
	}
	return img, mnt
}
