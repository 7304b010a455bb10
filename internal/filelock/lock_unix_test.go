//go:build unix

package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A lock Lock holds keeps every other open of the file out (another
// process's, as another descriptor of this one), until it is let go.
func TestLockKeepsOthersOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	try := func() error { return syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }
	if err := try(); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("while held: another open took the lock (%v)", err)
	}
	unlock()
	if err := try(); err != nil {
		t.Fatalf("once let go: %v", err)
	}
}
