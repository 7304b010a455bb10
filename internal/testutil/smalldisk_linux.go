package testutil

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// SmallDisk mounts a tmpfs with options (e.g. "size=1m,nr_inodes=64") on a
// new temporary folder and returns it, unmounted when t ends: a disk a
// test can fill. It skips t where mounting is not allowed (not root).
func SmallDisk(t testing.TB, options string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small disk needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("ferry-test", dir, "tmpfs", 0, options); err != nil {
		t.Skipf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
