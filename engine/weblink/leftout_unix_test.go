//go:build unix

package weblink

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// What a shared folder holds that a link does not serve (symbolic links,
// pipes) is counted, with examples, for the sharer to be told: it was
// left out without a word.
func TestShareSaysWhatItLeavesOut(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "d/a.txt", 10)
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "d", "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "d", "pipe"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	s := startServer(t, Options{})
	l, err := s.Share(context.Background(), []string{filepath.Join(dir, "d")}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lo := l.LeftOut()
	if lo.Symlinks != 1 || lo.Other != 1 || !slices.Contains(lo.Examples, "d/link") || !slices.Contains(lo.Examples, "d/pipe") {
		t.Fatalf("left out %+v", lo)
	}
}
