package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// A write to a full disk is told apart, as it reaches the caller (wrapped
// in the *PathError of os); other errors are not.
func TestDiskFull(t *testing.T) {
	disk := testutil.SmallDisk(t, "size=64k")
	err := os.WriteFile(filepath.Join(disk, "big"), make([]byte, 1<<20), 0o644)
	if got := DiskFull(err); got != "the disk is full" {
		t.Errorf("DiskFull(%v) = %q, want the disk is full", err, got)
	}
	_, err = os.Open(filepath.Join(disk, "missing"))
	if got := DiskFull(err); got != "" {
		t.Errorf("DiskFull(%v) = %q, want nothing", err, got)
	}
	if got := DiskFull(errors.New("no space left on device")); got != "" {
		t.Errorf("DiskFull of an error that only says so = %q, want nothing", got)
	}
}
