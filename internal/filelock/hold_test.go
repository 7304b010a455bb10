package filelock

import (
	"os"
	"path/filepath"
	"testing"
)

// tempDir is t.TempDir, but its removal may fail: under Wine, which lacks
// the file disposition call Go's RemoveAll uses, it does (FACTS.md), and
// these tests run there too.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "filelock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// Hold waits for a holder (another open, as another process), and when
// that holder removed the file as it let go, holds the file at the path
// anew: holding the removed one kept nothing out. On Windows the holder
// could not remove it at all: Go opens files without FILE_SHARE_DELETE,
// so DeleteFile failed with a sharing violation while the file was held
// (and held it must be, or a waiter takes it before it goes), and the
// lock files of resume.Dir piled up, one for each transfer ever resumed.
func TestHoldFollowsARemovedFile(t *testing.T) {
	path := filepath.Join(tempDir(t), "k.lock")
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
		first()
		<-held
		t.Fatalf("the held file cannot be removed: %v", err)
	}
	first()
	second := <-held
	if second == nil {
		t.FailNow()
	}
	defer second()
	other, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("the second holder holds no file at the path: %v", err)
	}
	defer other.Close()
	if ok, err := lockFile(other, false); ok || err != nil {
		t.Fatalf("the file at the path is not held (locked by another open: %v, %v)", ok, err)
	}
}

// A Hold that begins after the holder removed the file, while it still
// holds it, gets the path's file once the holder lets go. Where Windows
// keeps a removed file's name until its last handle closes ("delete
// pending": FAT, Windows before 10 1809, Wine), opening it fails meanwhile,
// and Hold waits for it to go instead of failing.
func TestHoldAfterARemovalWhileHeld(t *testing.T) {
	path := filepath.Join(tempDir(t), "k.lock")
	first, err := Hold(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		first()
		t.Fatalf("the held file cannot be removed: %v", err)
	}
	held := make(chan func(), 1)
	go func() {
		unlock, err := Hold(path, nil)
		if err != nil {
			t.Error(err)
		}
		held <- unlock
	}()
	first()
	second := <-held
	if second == nil {
		t.FailNow()
	}
	defer second()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the second holder holds no file at the path: %v", err)
	}
}

// TryLock does not wait: while another open holds the file (another
// process's, as another TryLock of this one), it says so, and takes the
// lock once that one let go.
func TestTryLockSaysHeld(t *testing.T) {
	path := filepath.Join(tempDir(t), "x.lock")
	unlock, ok, err := TryLock(path)
	if err != nil || !ok {
		t.Fatalf("first: %v, %v", ok, err)
	}
	if u, ok, err := TryLock(path); err != nil || ok {
		if ok {
			u()
		}
		t.Fatalf("while held: %v, %v; want not ok", ok, err)
	}
	unlock()
	u, ok, err := TryLock(path)
	if err != nil || !ok {
		t.Fatalf("once let go: %v, %v", ok, err)
	}
	u()
}
