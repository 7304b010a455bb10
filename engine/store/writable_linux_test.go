package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Writable says why a folder on a read-only mount cannot take files, even
// to root (whom permission bits do not stop), and lets an ordinary folder
// and one not made yet pass. Needs root to mount a tmpfs: it skips without.
func TestWritable(t *testing.T) {
	dir := t.TempDir()
	if err := Writable(dir); err != nil {
		t.Errorf("an ordinary folder: %v", err)
	}
	if err := Writable(filepath.Join(dir, "not", "yet")); err != nil {
		t.Errorf("a folder not made yet: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	err := Writable(mnt)
	if !errors.Is(err, ErrNotWritable) || !errors.Is(err, syscall.EROFS) ||
		err.Error() != "the download folder cannot be written (read-only file system)" {
		t.Errorf("a read-only mount: %v", err)
	}
}
