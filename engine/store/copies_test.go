package store

import (
	"fmt"
	"hash/maphash"
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

// An offer's names that read as numbered past what Twins holds (MaxBytes,
// lowered here to a few paths) are kept from numbering too
// (NumberedBeyond, Dest.AvoidAll): with "p/a.txt" and a folder "p/b"
// taken by files already there, the offer's "p/a.txt" arrives as "p/a
// (3).txt" past its "p/a (1).txt" and "p/A (2).TXT", and its folder "p/b"
// as "p/b (2)" past its empty "p/b (1)". Past the bound a number took
// them ("p/a (1).txt", "p/b (1)").
func TestNumberedNamesPastTheBoundAreKept(t *testing.T) {
	tw := Twins{MaxBytes: 300}
	tw.Add("p/a.txt")
	tw.Add("p/b/x")
	for i := range 10 {
		tw.Add(fmt.Sprintf("q/f%d", i))
	}
	tw.Add("p/a (1).txt")
	tw.Add("p/A (2).TXT")
	tw.AddFolder("p/b (1)")
	if n := tw.Numbered(); len(n) != 0 {
		t.Fatalf("numbered %q within the bound, want none: the bound is not reached", n)
	}
	d, dir := openDest(t)
	if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.txt", "b"} {
		if err := os.WriteFile(filepath.Join(dir, "p", name), []byte("there before"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d.AvoidAll(tw.NumberedBeyond())
	if got := receive(t, d, "p/a.txt", []byte("offered")); got != "p/a (3).txt" {
		t.Errorf("p/a.txt saved as %q, want %q", got, "p/a (3).txt")
	}
	if got := receive(t, d, "p/b/x", []byte("offered")); got != "p/b (2)/x" {
		t.Errorf("p/b/x saved as %q, want %q", got, "p/b (2)/x")
	}
	for _, free := range []string{"p/a (1).txt", "p/a (2).txt", "p/b (1)"} {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(free))); err == nil {
			t.Errorf("%s taken, want it left to the offer's", free)
		}
	}
}

// TestNameFilter: a NameFilter of Twins's size (half of maxTwinBytes)
// holds each of a million paths given it, in any case, and holds few it
// was not given: fewer than 1 in 500 (about 1 in 1,300 measured).
func TestNameFilter(t *testing.T) {
	const n = 1_000_000
	f := newNameFilter(maphash.MakeSeed(), maxTwinBytes/2)
	for i := range n {
		f.add(fmt.Sprintf("photos/album %d/IMG (%d).JPG", i/50, i%50))
	}
	f.add("p/caf\u00e9 (1).txt")
	for _, p := range []string{"photos/album 7/IMG (3).JPG", "PHOTOS/Album 19999/img (49).jpg", "p/CAFE\u0301 (1).TXT"} {
		if !f.holds(p) {
			t.Errorf("%q not held", p)
		}
	}
	wrong := 0
	for i := range n {
		if f.holds(fmt.Sprintf("photos/album %d/IMG (%d).JPG", i/50, 50+i%50)) {
			wrong++
		}
	}
	t.Logf("%d of %d paths not given held", wrong, n)
	if wrong > n/500 {
		t.Errorf("%d of %d paths not given held, want fewer than 1 in 500", wrong, n)
	}
	var none *NameFilter
	if none.holds("a") {
		t.Error("no filter holds a path")
	}
}
