package store

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// TestFinalizeKeepsTheSameFile: a file already under the partial's name
// that SetSame's check says holds the partial's bytes is kept, untouched,
// and the partial goes (nothing saved twice); one that differs, one of
// another size, a symlink to the same bytes and a copy of a name the
// offer holds twice are numbered as before, and the check reads only a
// regular file of the partial's size. Until 2026-12-07 every one was
// numbered: a folder sent twice held "a.jpg" and "a (1).jpg" of each
// file. Both kinds of partial: with a name, and (Linux) without one.
func TestFinalizeKeepsTheSameFile(t *testing.T) {
	for _, whole := range []bool{false, true} {
		for _, tc := range []struct {
			name    string
			there   string // what is under the name before: content, or "-> target"
			copy    bool   // the partial is the offer's second copy of its name
			read    bool   // the check is asked
			same    bool   // what the check says
			savedAs string
		}{
			{name: "the same", there: "new bytes", read: true, same: true, savedAs: "p/a.txt"},
			{name: "other bytes of its size", there: "old bytes", read: true, savedAs: "p/a (1).txt"},
			{name: "another size", there: "old", savedAs: "p/a (1).txt"},
			{name: "a symlink to the same", there: "-> ../same.txt", savedAs: "p/a (1).txt"},
			{name: "a copy", there: "new bytes", copy: true, savedAs: "p/a (2).txt"},
		} {
			t.Run(fmt.Sprintf("%s/whole=%v", tc.name, whole), func(t *testing.T) {
				d, dir := openDest(t)
				want := map[string]string{}
				if target, ok := bytes.CutPrefix([]byte(tc.there), []byte("-> ")); ok {
					writeFile(t, dir, "same.txt", "new bytes")
					want["same.txt"] = "new bytes"
					writeFile(t, dir, "p/.keep", "")
					want["p/.keep"] = ""
					symlink(t, string(target), filepath.Join(dir, "p", "a.txt"))
				} else {
					writeFile(t, dir, "p/a.txt", tc.there)
				}
				want["p/a.txt"] = tc.there
				before, err := os.Lstat(filepath.Join(dir, "p", "a.txt"))
				if err != nil {
					t.Fatal(err)
				}
				var p *Partial
				if whole {
					p = createWhole(t, d, "p/a.txt")
				} else if p, err = d.CreatePartial("p/a.txt"); err != nil {
					t.Fatal(err)
				}
				data := []byte("new bytes")
				if _, err := p.WriteAt(data, 0); err != nil {
					t.Fatal(err)
				}
				if tc.copy {
					p.SetCopy(1)
				}
				asked := false
				p.SetSame(func(f *os.File) bool {
					asked = true
					got, err := io.ReadAll(f)
					if err != nil || string(got) != tc.there {
						t.Errorf("the check read %q (%v), want the file under the name, %q", got, err, tc.there)
					}
					return tc.same
				})
				saved, err := d.Finalize(p, "p/a.txt", int64(len(data)))
				if err != nil || saved != tc.savedAs {
					t.Fatalf("saved as %q (%v), want %q", saved, err, tc.savedAs)
				}
				if asked != tc.read {
					t.Errorf("the check asked: %v, want %v", asked, tc.read)
				}
				if saved != "p/a.txt" {
					want[saved] = "new bytes"
				}
				assertTree(t, dir, want) // the partial gone too
				after, err := os.Lstat(filepath.Join(dir, "p", "a.txt"))
				if err != nil || !os.SameFile(before, after) {
					t.Errorf("the file under the name was replaced (%v)", err)
				}
			})
		}
	}
}

// TestSameFileOfAnotherSpellingIsNotKept: where the folder ignores case (FAT
// and exFAT sticks, a Mac's or Windows's temporary folder), a file of the
// same bytes under another spelling of the name is another file: the one
// received is numbered beside it, and only a file spelled exactly so is
// kept in its place.
func TestSameFileOfAnotherSpellingIsNotKept(t *testing.T) {
	for _, c := range []struct {
		fs    string
		stick func(testing.TB) string
	}{{"FAT32", testutil.FATStick}, {"exFAT", testutil.ExFATStick}, {"temp", foldingTemp}} {
		t.Run(c.fs, func(t *testing.T) {
			d, dir := openStick(t, c.stick)
			data := []byte("the same bytes")
			writeFile(t, dir, "p/Photo.JPG", string(data))
			for _, tc := range []struct{ rel, want string }{
				{"p/photo.jpg", "p/photo (1).jpg"},
				{"p/Photo.JPG", "p/Photo.JPG"},
			} {
				p, err := d.CreatePartial(tc.rel)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := p.WriteAt(data, 0); err != nil {
					t.Fatal(err)
				}
				p.SetSame(func(f *os.File) bool {
					got, err := io.ReadAll(f)
					return err == nil && bytes.Equal(got, data)
				})
				if saved, err := d.Finalize(p, tc.rel, int64(len(data))); err != nil || saved != tc.want {
					t.Errorf("%s: saved as %q (%v), want %q", tc.rel, saved, err, tc.want)
				}
			}
			assertTree(t, dir, map[string]string{"p/Photo.JPG": string(data), "p/photo (1).jpg": string(data)})
		})
	}
}

// TestOpenSame: the file OpenSame opens, for a sender to send only what
// differs from it, is the one Finalize would keep: a regular file of the
// size under the name, in the folder the name's folders are now; never
// through a symlink, nor a file where a folder of the path is, nor one of
// another size. Nothing is created.
func TestOpenSame(t *testing.T) {
	d, dir := openDest(t)
	writeFile(t, dir, "p/a.txt", "new bytes")
	writeFile(t, dir, "same.txt", "new bytes")
	symlink(t, "../same.txt", filepath.Join(dir, "p", "link.txt"))
	writeFile(t, dir, "f", "a file where a folder is asked for")
	for _, tc := range []struct {
		rel     string
		size    int64
		savedAs string // "" for none
	}{
		{"p/a.txt", 9, "p/a.txt"},
		{"p/a.txt", 8, ""},
		{"p/link.txt", 9, ""},
		{"p/none.txt", 9, ""},
		{"q/a.txt", 9, ""},
		{"f/a.txt", 9, ""},
		{"../same.txt", 9, ""},
	} {
		f, savedAs, err := d.OpenSame(tc.rel, tc.size)
		if tc.savedAs == "" {
			if err == nil {
				f.Close()
				t.Errorf("OpenSame(%q, %d) opened %q", tc.rel, tc.size, savedAs)
			}
			continue
		}
		if err != nil {
			t.Errorf("OpenSame(%q, %d): %v", tc.rel, tc.size, err)
			continue
		}
		b, err := io.ReadAll(f)
		f.Close()
		if savedAs != tc.savedAs || err != nil || string(b) != "new bytes" {
			t.Errorf("OpenSame(%q, %d) = %q holding %q (%v)", tc.rel, tc.size, savedAs, b, err)
		}
	}
	for _, gone := range []string{"q", "f (1)"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("%s was created", gone)
		}
	}
}

// BenchmarkOpenSame is what a receiver pays, per offered file, to find
// whether it holds a file under the name (the engine's decision on an
// offer from a trusted device, wire.Same): a file not there in a folder
// that is, and a file whose folder is not there. Through os.Root's path
// walk for each folder it was 34 µs and 7 µs here (2026-12-07).
//
//	go test -run X -bench OpenSame -benchtime 20000x ./engine/store
func BenchmarkOpenSame(b *testing.B) {
	for _, folders := range []bool{true, false} {
		b.Run(fmt.Sprintf("folders=%v", folders), func(b *testing.B) {
			dir := b.TempDir()
			d, err := Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			for i := range 100 {
				if folders {
					if err := os.MkdirAll(filepath.Join(dir, "t", fmt.Sprint("d", i), "sub"), 0o755); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if f, _, err := d.OpenSame(fmt.Sprintf("t/d%d/sub/f%d.txt", i%100, i), 10); err == nil {
					f.Close()
					b.Fatal("a file that is not there was opened")
				}
			}
		})
	}
}

// TestFinalizeKeepsTheSameNumberedCopy: a file changed and sent again
// arrived as "a (1).txt" beside the first "a.txt"; sent a third time
// unchanged, it finds "a (1).txt" holding its bytes and keeps it, where
// until 2026-12-07 it arrived once more as "a (2).txt". Only a numbered
// file of the same bytes is kept; one of other bytes is passed by.
func TestFinalizeKeepsTheSameNumberedCopy(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run(fmt.Sprintf("whole=%v", whole), func(t *testing.T) {
			d, dir := openDest(t)
			want := map[string]string{"p/a.txt": "old bytes", "p/a (1).txt": "new bytes", "p/a (2).txt": "odd bytes"}
			for name, content := range want {
				writeFile(t, dir, name, content)
			}
			var p *Partial
			var err error
			if whole {
				p = createWhole(t, d, "p/a.txt")
			} else if p, err = d.CreatePartial("p/a.txt"); err != nil {
				t.Fatal(err)
			}
			if _, err := p.WriteAt([]byte("odd bytes"), 0); err != nil {
				t.Fatal(err)
			}
			var asked []string
			p.SetSame(func(f *os.File) bool {
				got, _ := io.ReadAll(f)
				asked = append(asked, string(got))
				return string(got) == "odd bytes"
			})
			saved, err := d.Finalize(p, "p/a.txt", 9)
			if err != nil || saved != "p/a (2).txt" || !p.Kept() {
				t.Fatalf("saved as %q (%v), kept %v; want the numbered copy of the same bytes kept", saved, err, p.Kept())
			}
			if fmt.Sprint(asked) != "[old bytes new bytes odd bytes]" {
				t.Errorf("the check was asked of %q, want each name taken in turn", asked)
			}
			assertTree(t, dir, want) // the partial gone, nothing written
		})
	}
}
