package directio

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// On ext4 (this project's CI) direct I/O must really happen: the fallback
// must not hide a broken direct path.
func TestDirectUsedOnExt4(t *testing.T) {
	dir := t.TempDir()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Type != 0xEF53 {
		t.Skipf("%s is not on ext4", dir)
	}
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := New(f, os.O_WRONLY, true)
	defer d.Close()
	if _, err := d.WriteAt(Buffer(Min), 0); err != nil {
		t.Fatal(err)
	}
	if !d.Direct() {
		t.Fatal("an aligned write on ext4 did not use O_DIRECT")
	}
}
