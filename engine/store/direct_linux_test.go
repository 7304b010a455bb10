package store

import (
	"syscall"
	"testing"

	"github.com/ferrydrop/ferry/internal/directio"
)

// On ext4 (this project's CI), aligned chunk writes must really skip the
// page cache: the fallback must not hide a broken direct path.
func TestDirectWritesUsedOnExt4(t *testing.T) {
	d, dir := openDest(t)
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Type != 0xEF53 {
		t.Skipf("%s is not on ext4", dir)
	}
	p, err := d.CreatePartial("x")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.WriteAt(directio.Buffer(1<<20), 0); err != nil {
		t.Fatal(err)
	}
	if _, direct := p.w.Stats(); direct != 1<<20 {
		t.Fatal("an aligned write on ext4 did not use O_DIRECT")
	}
}
