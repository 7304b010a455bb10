package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestGone: a destination deleted, or moved away and replaced by another
// folder of its name, is Gone, and a file finished into it fails with
// ErrGone rather than the rename's "no such file or directory".
func TestGone(t *testing.T) {
	for _, c := range []struct {
		name string
		do   func(dir string) error
	}{
		{"deleted", os.RemoveAll},
		{"moved away and replaced", func(dir string) error {
			if err := os.Rename(dir, dir+".old"); err != nil {
				return err
			}
			return os.Mkdir(dir, 0o755)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "dl")
			d, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			p, err := d.CreatePartial("a.txt")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.WriteAt([]byte("abc"), 0); err != nil {
				t.Fatal(err)
			}
			if d.Gone() {
				t.Fatal("Gone before anything happened")
			}
			if err := c.do(dir); err != nil {
				t.Fatal(err)
			}
			if !d.Gone() {
				t.Fatal("not Gone")
			}
			if _, err := d.Finalize(p, "a.txt", 3); c.name == "deleted" && !errors.Is(err, ErrGone) {
				t.Fatalf("finalize into a deleted folder: %v, want ErrGone", err)
			}
		})
	}
}
