//go:build unix

package atomicfile

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

// A pipe is refused before it is opened: its open would wait for a
// writer that may never come.
func TestReadRefusesAPipe(t *testing.T) {
	name := filepath.Join(t.TempDir(), "state.json")
	if err := syscall.Mkfifo(name, 0o600); err != nil {
		t.Skip(err)
	}
	if _, fi, err := Read(name, 1<<20); !errors.Is(err, ErrNotRegular) || fi == nil {
		t.Fatalf("a pipe: %v", err)
	}
}
