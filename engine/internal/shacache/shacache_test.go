package shacache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
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

// TestCacheFileHostile: a cache file that is damaged or planted loses
// nothing but the cache; entries that are not hashes are dropped.
func TestCacheFileHostile(t *testing.T) {
	good := `[{"dev":1,"ino":2,"size":3,"mtime":4,"sha256":"` + sumOf("x") + `","used":1}`
	for _, tc := range []struct {
		name, body string
		keep       int
		err        bool
	}{
		{"empty list", `[]`, 0, false},
		{"one good", good + `]`, 1, false},
		{"truncated", good, 0, true},
		{"not json", "\x00\xff", 0, true},
		{"object", `{"a":1}`, 0, true},
		{"short sum", `[{"dev":1,"ino":2,"size":3,"sha256":"abcd"}]`, 0, false},
		{"upper-case junk", `[{"dev":1,"ino":2,"size":3,"sha256":"` + strings.Repeat("Z", 64) + `"}]`, 0, false},
		{"negative size", `[{"dev":1,"ino":2,"size":-3,"sha256":"` + sumOf("x") + `"}]`, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.json")
			os.WriteFile(path, []byte(tc.body), 0o600)
			c, err := Open(path, 0)
			if (err != nil) != tc.err || c == nil || c.Len() != tc.keep {
				t.Fatalf("err %v, cache %v", err, c)
			}
			if tc.err {
				if b, err := os.ReadFile(path + ".bad"); err != nil || string(b) != tc.body {
					t.Fatalf("the damaged file was not set aside: %v", err)
				}
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
