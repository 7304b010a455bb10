package store

import (
	"os"
	"path/filepath"
	"testing"
)

// The copies of a name an earlier attempt saved (CopySaved) keep their
// places: with the offer's first copy of "p/a.txt" saved as "p/a.txt"
// before, its third is "p/a (2).txt" and its second "p/a (1).txt", in
// either order; without it, "p/a.txt" is another file's and the third took
// "p/a (3).txt".
func TestCopiesKeepTheirPlacesAcrossAttempts(t *testing.T) {
	for _, order := range [][]int{{2, 1}, {1, 2}} {
		d, dir := openDest(t)
		if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "p", "a.txt"), []byte("copy 0"), 0o644); err != nil {
			t.Fatal(err)
		}
		d.CopySaved("p/a.txt", "p/a.txt")
		for _, k := range order {
			p, err := d.CreatePartial("p/a.txt")
			if err != nil {
				t.Fatal(err)
			}
			p.SetCopy(k)
			if _, err := p.WriteAt([]byte{byte('0' + k)}, 0); err != nil {
				t.Fatal(err)
			}
			want := []string{"", "p/a (1).txt", "p/a (2).txt"}[k]
			if got, err := d.Finalize(p, "p/a.txt", 1); err != nil || got != want {
				t.Errorf("order %v: copy %d saved as %q (%v), want %q", order, k, got, err, want)
			}
		}
	}
}
