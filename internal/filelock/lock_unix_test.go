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

// Hold waits for a holder (another descriptor, as another process), and
// when that holder removed the file as it let go, holds the file at the
// path anew: holding the removed one kept nothing out.
func TestHoldFollowsARemovedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.lock")
	first, err := Hold(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	waits := make(chan struct{})
	held := make(chan func(), 1)
	go func() {
		unlock, err := Hold(path, func() { close(waits) })
		if err != nil {
			t.Error(err)
		}
		held <- unlock
	}()
	<-waits
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	first()
	second := <-held
	defer second()
	other, err := os.Open(path)
	if err != nil {
		t.Fatalf("the second holder holds no file at the path: %v", err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("the file at the path is not held (%v)", err)
	}
}
