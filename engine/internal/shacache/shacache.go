// Package shacache remembers the SHA-256 of files this device sent, keyed
// by the file's identity (device and inode), size and modification time,
// so that a later send of the same unchanged file can give LocalSend's
// optional per-file sha256 without reading the file twice. The hash is
// taken while the file is uploaded; a file whose identity, size or time
// changed is a new key, and the old entry ages out.
//
// The cache is a hint for the receiver's check, not a proof: a file
// rewritten in place within one mtime tick with the same size keeps its
// key, and the receiver then refuses it (422) instead of storing wrong
// bytes silently.
package shacache

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/ferrydrop/ferry/internal/atomicfile"
)

// Key is a file's identity, size and modification time.
type Key struct {
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime"` // nanoseconds since the epoch
}

// KeyOf is the key of the file fi describes; false where the platform
// gives no file identity (the cache is then not used).
func KeyOf(fi fs.FileInfo) (Key, bool) {
	dev, ino, ok := identity(fi)
	if !ok || !fi.Mode().IsRegular() {
		return Key{}, false
	}
	return Key{Dev: dev, Ino: ino, Size: fi.Size(), MTime: fi.ModTime().UnixNano()}, true
}

// DefaultMax bounds the entries kept (about 150 bytes each on disk).
const DefaultMax = 20000

// maxFileBytes bounds the cache file read back.
const maxFileBytes = 16 << 20

// entry is one remembered hash; Used orders eviction.
type entry struct {
	Key
	SHA256 string `json:"sha256"`
	Used   uint64 `json:"used"`
}

// Cache is the hashes of files, kept in one file. Its methods are safe
// from any goroutine.
type Cache struct {
	path string
	max  int

	mu      sync.Mutex // guards the fields below
	entries map[Key]*entry
	clock   uint64
	dirty   bool
}

// Open reads the cache at path (none yet: empty). A cache file that is
// damaged (it does not parse, it is cut short, an entry is not a hash of
// a file) is set aside as path+".bad" (".bad-2", ".bad-3" next to earlier
// ones; past those it is removed), and the cache keeps the entries
// that read whole before the damage, which the next Flush writes back:
// Open then returns the cache with an error that says so. The cache is
// only a hint, and the user's files are untouched either way.
func Open(path string, limit int) (*Cache, error) {
	if limit <= 0 {
		limit = DefaultMax
	}
	c := &Cache{path: path, max: limit, entries: map[Key]*entry{}}
	b, _, err := atomicfile.Read(path, maxFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c, nil
	case err != nil:
		return nil, fmt.Errorf("sha256 cache: %w", err)
	}
	list, bad := parse(b)
	// Used orders eviction, and the clock goes on from the largest: a
	// count near the largest a uint64 holds wrapped it to 0, so that what
	// was used next was evicted first. Numbered again, 1 to len(list).
	slices.SortStableFunc(list, func(a, b entry) int { return uintCmp(a.Used, b.Used) })
	for _, e := range list {
		c.clock++
		e.Used = c.clock
		c.entries[e.Key] = &e
	}
	c.evictLocked()
	if bad != nil {
		c.dirty = true // the entries kept are written back
		return c, fmt.Errorf("sha256 cache: %s is damaged (%s, %d entries kept): %w", path, setAside(path), len(c.entries), bad)
	}
	return c, nil
}

// keepBad is how many damaged cache files are kept (.bad, .bad-2, .bad-3):
// the first ones, for whoever looks into why; each is at most maxFileBytes.
const keepBad = 3

// setAside moves the damaged cache file at path out of the way of the
// next Flush, never over one set aside before, and says where it went. With
// keepBad kept already it is removed (it is a hint, and the ones kept say
// as much).
func setAside(path string) string {
	as, err := atomicfile.SetAside(path, ".bad", keepBad)
	switch {
	case err == nil:
		return "set aside as " + as
	case errors.Is(err, atomicfile.ErrAsideFull):
		if rerr := os.Remove(path); rerr != nil {
			return fmt.Sprintf("not set aside, %v, nor removed: %v", err, rerr)
		}
		return fmt.Sprintf("removed: %v", err)
	}
	return fmt.Sprintf("not set aside: %v", err)
}

// parse reads a cache file: its entries, up to the first that does not
// parse, without those that are not a hash of a file, and why it is
// damaged, if it is.
func parse(b []byte) (list []entry, bad error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	switch t, err := dec.Token(); {
	case err != nil:
		return nil, err
	case t == nil: // null: none
	case t != json.Delim('['):
		return nil, fmt.Errorf("a list was expected, not %v", t)
	default:
		for i := 1; dec.More(); i++ {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return list, err
			}
			var e entry
			if err := json.Unmarshal(raw, &e); err != nil {
				bad = cmp.Or(bad, fmt.Errorf("entry %d: %w", i, err))
				continue
			}
			if !validSum(e.SHA256) || e.Size < 0 {
				bad = cmp.Or(bad, fmt.Errorf("entry %d is not a hash of a file", i))
				continue
			}
			list = append(list, e)
		}
		if _, err := dec.Token(); err != nil {
			return list, err
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return list, cmp.Or(err, errors.New("more after the list"))
	}
	return list, bad
}

func validSum(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 32
}

// Get is the SHA-256 (lower-case hex) of the file of key k, if known.
func (c *Cache) Get(k Key) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return "", false
	}
	c.clock++
	e.Used = c.clock
	c.dirty = true
	return e.SHA256, true
}

// Put remembers the SHA-256 of the file of key k.
func (c *Cache) Put(k Key, sum string) {
	if !validSum(sum) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	c.entries[k] = &entry{Key: k, SHA256: sum, Used: c.clock}
	c.dirty = true
	c.evictLocked()
}

// Len is the number of entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// evictLocked drops the least recently used entries beyond max.
func (c *Cache) evictLocked() {
	if len(c.entries) <= c.max {
		return
	}
	all := make([]*entry, 0, len(c.entries))
	for _, e := range c.entries {
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b *entry) int { return uintCmp(a.Used, b.Used) })
	for _, e := range all[:len(all)-c.max] {
		delete(c.entries, e.Key)
	}
}

func uintCmp(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Flush writes the cache when it changed (temp, fsync, rename).
func (c *Cache) Flush() error {
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return nil
	}
	list := make([]entry, 0, len(c.entries))
	for _, e := range c.entries {
		list = append(list, *e)
	}
	c.dirty = false
	c.mu.Unlock()
	slices.SortFunc(list, func(a, b entry) int { return uintCmp(a.Used, b.Used) })
	b, err := json.Marshal(list)
	if err != nil {
		return fmt.Errorf("sha256 cache: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return fmt.Errorf("sha256 cache: %w", err)
	}
	if err := atomicfile.Write(c.path, b, 0o600); err != nil {
		c.mu.Lock()
		c.dirty = true
		c.mu.Unlock()
		return fmt.Errorf("sha256 cache: %w", err)
	}
	return nil
}
