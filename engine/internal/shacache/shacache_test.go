package shacache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func sumOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func keyOfFile(t *testing.T, path string) Key {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := KeyOf(fi)
	if !ok {
		t.Skip("no file identity on " + runtime.GOOS)
	}
	return k
}

func TestKeyFollowsTheFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.bin")
	if err := os.WriteFile(f, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	k1 := keyOfFile(t, f)
	// Same bytes, new time: a new key.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(f, later, later); err != nil {
		t.Fatal(err)
	}
	if k2 := keyOfFile(t, f); k2 == k1 {
		t.Fatal("a new modification time kept the key")
	}
	// A copy with the same size and time is another file.
	g := filepath.Join(dir, "b.bin")
	os.WriteFile(g, []byte("one"), 0o644)
	os.Chtimes(g, later, later)
	if keyOfFile(t, g) == keyOfFile(t, f) {
		t.Fatal("two files share a key")
	}
	if fi, _ := os.Stat(dir); func() bool { _, ok := KeyOf(fi); return ok }() {
		t.Fatal("a folder has a key")
	}
}

func TestCacheKeepsAndBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "localsend", "sha256-cache.json")
	c, err := Open(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	k := func(i int) Key { return Key{Dev: 1, Ino: uint64(i), Size: 3, MTime: 7} }
	for i := range 3 {
		c.Put(k(i), sumOf(string(rune('a'+i))))
	}
	c.Put(k(9), "not a sum") // ignored
	if _, ok := c.Get(k(0)); !ok {
		t.Fatal("entry 0 missing")
	}
	c.Put(k(3), sumOf("d")) // evicts the least recently used: 1
	if _, ok := c.Get(k(1)); ok || c.Len() != 3 {
		t.Fatalf("eviction: len %d", c.Len())
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	c2, err := Open(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2, 3} {
		if s, ok := c2.Get(k(i)); !ok || s != sumOf(string(rune('a'+i))) {
			t.Fatalf("entry %d after reopening: %q %v", i, s, ok)
		}
	}
	if _, ok := c2.Get(k(9)); ok {
		t.Fatal("an invalid sum was kept")
	}
}

// hostileFiles are cache files that are damaged or planted, and how many
// entries each keeps; they double as FuzzOpen's seeds.
var hostileFiles = []struct {
	name, body string
	keep       int
	err        bool // damaged: set aside as .bad
}{
	{"empty list", `[]`, 0, false},
	{"null", `null`, 0, false},
	{"one good", good(1, 1) + `]`, 1, false},
	{"truncated", good(1, 1), 1, true},
	{"cut inside the second", good(1, 1) + `,{"dev":1,"ino":3,"si`, 1, true},
	{"empty", ``, 0, true},
	{"not json", "\x00\xff", 0, true},
	{"object", `{"a":1}`, 0, true},
	{"more after the list", good(1, 1) + `] []`, 1, true},
	{"short sum", `[{"dev":1,"ino":2,"size":3,"sha256":"abcd"}]`, 0, true},
	{"upper-case junk", `[{"dev":1,"ino":2,"size":3,"sha256":"` + strings.Repeat("Z", 64) + `"}]`, 0, true},
	{"negative size", `[{"dev":1,"ino":2,"size":-3,"sha256":"` + sumOf("x") + `"}]`, 0, true},
	// One entry of the wrong types loses that entry, not the others.
	{"a string for a number", good(1, 1) + `,{"dev":"1","ino":3,"size":3,"sha256":"` + sumOf("x") + `"},` + good(4, 2)[1:] + `]`, 2, true},
	{"a number for the sum", good(1, 1) + `,{"dev":1,"ino":3,"size":3,"sha256":7},` + good(4, 2)[1:] + `]`, 2, true},
	{"a list for an entry", good(1, 1) + `,[1,2],` + good(4, 2)[1:] + `]`, 2, true},
	{"null for an entry", good(1, 1) + `,null]`, 1, true},
	{"a count past uint64", `[{"dev":1,"ino":2,"size":3,"sha256":"` + sumOf("x") + `","used":18446744073709551616}]`, 0, true},
	{"huge counts", `[{"dev":18446744073709551615,"ino":18446744073709551615,"size":9223372036854775807,"mtime":-9223372036854775808,"sha256":"` +
		sumOf("x") + `","used":18446744073709551615}]`, 1, false},
	{"one key twice", good(1, 1) + `,` + good(1, 2)[1:] + `]`, 1, false},
}

// good is a list's opening and one good entry (ino, used).
func good(ino, used int) string {
	return fmt.Sprintf(`[{"dev":1,"ino":%d,"size":3,"mtime":4,"sha256":"%s","used":%d}`, ino, sumOf("x"), used)
}

// TestCacheFileHostile: a cache file that is damaged or planted is set
// aside as .bad, and the cache keeps what read whole of it: an entry that
// is cut short, of the wrong types or not a hash of a file loses itself
// alone, where one made the whole file set aside and the cache start
// empty; the entries kept are written back.
func TestCacheFileHostile(t *testing.T) {
	for _, tc := range hostileFiles {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.json")
			os.WriteFile(path, []byte(tc.body), 0o600)
			c, err := Open(path, 0)
			if (err != nil) != tc.err || c == nil || c.Len() != tc.keep {
				t.Fatalf("err %v, cache %v", err, c)
			}
			if !tc.err {
				return
			}
			if b, err := os.ReadFile(path + ".bad"); err != nil || string(b) != tc.body {
				t.Fatalf("the damaged file was not set aside: %v", err)
			}
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			if c, err := Open(path, 0); err != nil || c.Len() != tc.keep {
				t.Fatalf("the entries kept were not written back: %v, %d", err, c.Len())
			}
		})
	}
	path := filepath.Join(t.TempDir(), "big.json")
	os.WriteFile(path, make([]byte, maxFileBytes+1), 0o600)
	if _, err := Open(path, 0); err == nil {
		t.Fatal("an oversized cache file was read")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none.json"), 0); errors.Is(err, fs.ErrNotExist) || err != nil {
		t.Fatalf("no file yet: %v", err)
	}
}

// TestCacheFileDamagedAgainKeepsTheFirstCopies: a cache file found damaged
// again is set aside next to the copies set aside before (.bad-2, .bad-3)
// and, with keepBad of them kept, removed, as the error says; no copy is
// replaced. Each damaged file was renamed over the one .bad before.
func TestCacheFileDamagedAgainKeepsTheFirstCopies(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	kept := map[string]string{}
	for i := 1; i <= keepBad+2; i++ {
		body := good(i, 1) // cut short
		os.WriteFile(path, []byte(body), 0o600)
		c, err := Open(path, 0)
		if err == nil || c == nil || c.Len() != 1 {
			t.Fatalf("damaged file %d: err %v, cache %v", i, err, c)
		}
		as := ".bad"
		if i > 1 {
			as += fmt.Sprint("-", i)
		}
		if i <= keepBad {
			kept[as] = body
			if !strings.Contains(err.Error(), "set aside as c.json"+as) {
				t.Errorf("damaged file %d: %v does not say where it went", i, err)
			}
		} else if !strings.Contains(err.Error(), "removed") {
			t.Errorf("damaged file %d, with %d kept: %v does not say it was removed", i, keepBad, err)
		}
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("damaged file %d is still in the cache's place: %v", i, err)
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		os.Remove(path)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != keepBad {
		t.Errorf("the folder holds %d files, want the %d kept", len(ents), keepBad)
	}
	for as, body := range kept {
		if b, err := os.ReadFile(path + as); err != nil || string(b) != body {
			t.Errorf("c.json%s holds %q, %v; want the damaged file set aside there, %q", as, b, err, body)
		}
	}
}

// A count of uses near the largest a uint64 holds (a damaged or planted
// file's) kept the clock there: the next use wrapped it to 0, and the
// entry used last was the first evicted.
func TestCacheHugeUseCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(path, []byte(`[{"dev":1,"ino":1,"size":3,"sha256":"`+sumOf("x")+`","used":18446744073709551615}]`), 0o600)
	c, err := Open(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	k := func(i int) Key { return Key{Dev: 2, Ino: uint64(i), Size: 3} }
	c.Put(k(1), sumOf("a"))
	c.Put(k(2), sumOf("b"))
	if _, ok := c.Get(k(1)); !ok {
		t.Fatal("the entry put before the last was evicted, not the one read with the huge count")
	}
	if _, ok := c.Get(Key{Dev: 1, Ino: 1, Size: 3}); ok {
		t.Fatal("the entry read with the huge count outlived two newer ones")
	}
}

// FuzzOpen reads arbitrary bytes as the cache file: Open never fails for
// them but with a cache that holds valid entries, at most its limit; a
// file it calls whole is where it was, one it calls damaged is set aside
// whole; and what it keeps is written back and read again as it was.
func FuzzOpen(f *testing.F) {
	for _, tc := range hostileFiles {
		f.Add([]byte(tc.body))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "c.json")
		os.Remove(path + ".bad")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Open(path, 4)
		if c == nil {
			t.Fatalf("no cache: %v", err)
		}
		if c.Len() > 4 {
			t.Fatalf("%d entries kept, over the limit of 4", c.Len())
		}
		moved := path
		if err != nil {
			moved = path + ".bad"
		}
		if b, rerr := os.ReadFile(moved); rerr != nil || !bytes.Equal(b, data) {
			t.Fatalf("err %v, and %s does not hold the file read: %v", err, moved, rerr)
		}
		held := maps.Clone(c.entries)
		c.dirty = true
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		again, err := Open(path, 4)
		if err != nil || again.Len() != len(held) {
			t.Fatalf("%d entries written back read as %d: %v", len(held), again.Len(), err)
		}
		for k, e := range held {
			if got, ok := again.entries[k]; !validSum(e.SHA256) || e.Size < 0 || !ok || got.SHA256 != e.SHA256 {
				t.Fatalf("entry %+v read back as %+v", e, got)
			}
		}
	})
}
