package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadIsBounded(t *testing.T) {
	name := filepath.Join(t.TempDir(), "state.json")
	if err := Write(name, []byte(strings.Repeat("x", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, fi, err := Read(name, 100); err != nil || len(b) != 100 || fi.Size() != 100 {
		t.Fatalf("a file of its limit: %d bytes, %v", len(b), err)
	}
	if b, fi, err := Read(name, 99); !errors.Is(err, ErrTooLarge) || b != nil || fi == nil {
		t.Fatalf("a file over its limit: %d bytes, %v", len(b), err)
	}
	if _, _, err := Read(filepath.Join(t.TempDir(), "none"), 1); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no file: %v", err)
	}
	if _, _, err := Read(t.TempDir(), 1); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a folder: %v", err)
	}
}
