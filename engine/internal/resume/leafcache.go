package resume

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
)

// LeafCache keeps the sender's leaves of multi-chunk files while a transfer
// is unfinished (<dir>/send-<manifest>.log, journal format), so that resuming
// does not re-read the chunks the receiver already holds. The manifest ID
// covers every file's size, mtime and (where the platform has one) change
// time, so a changed file never meets old leaves, not even one rewritten
// in place with its mtime set back (except on Windows, where the change
// time is not read). A nil *LeafCache is valid and caches nothing.
type LeafCache struct {
	path   string
	j      *Journal
	mu     sync.Mutex // guards leaves
	leaves map[[2]int]merkle.Hash
}

// LeafCache loads the cache of manifest (when resuming) and opens it for
// appending; on any error the transfer simply goes without a cache.
func (d *Dir) LeafCache(manifest string, resuming bool) *LeafCache {
	if manifest == "" {
		return nil
	}
	path := filepath.Join(d.path, "send-"+manifest+".log")
	c := &LeafCache{path: path, leaves: map[[2]int]merkle.Hash{}}
	if resuming {
		recs, _ := readJournal(path)
		for _, r := range recs {
			if r.typ == recChunk {
				c.leaves[[2]int{int(r.file), int(r.chunk)}] = r.leaf
			}
		}
	}
	if err := os.MkdirAll(d.path, 0o700); err != nil {
		return c
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return c
	}
	if !resuming {
		f.Truncate(0)
	}
	c.j = newJournal(f)
	return c
}

// LeafCacheWritten reports when the leaf cache of manifest was last
// written, and whether there is one: a sender's unfinished transfer of
// that offer.
func (d *Dir) LeafCacheWritten(manifest string) (time.Time, bool) {
	if d == nil || manifest == "" {
		return time.Time{}, false
	}
	st, err := os.Stat(filepath.Join(d.path, "send-"+manifest+".log"))
	if err != nil {
		return time.Time{}, false
	}
	return st.ModTime(), true
}

// Leaf returns a cached leaf.
func (c *LeafCache) Leaf(file, chunk int) (merkle.Hash, bool) {
	if c == nil {
		return merkle.Hash{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.leaves[[2]int{file, chunk}]
	return l, ok
}

// Add records a leaf for a later attempt.
func (c *LeafCache) Add(file, chunk int, leaf merkle.Hash) {
	if c == nil || c.j == nil {
		return
	}
	c.j.Chunk(uint32(file), uint32(chunk), 0, leaf)
}

// Close ends an attempt; a finished transfer needs its cache no more.
func (c *LeafCache) Close(finished bool) {
	if c == nil {
		return
	}
	if c.j != nil {
		c.j.Close()
	}
	if finished {
		os.Remove(c.path)
	}
}

// leafCaches lists the leaf caches. paths.
func (d *Dir) leafCaches() []string {
	entries, _ := os.ReadDir(d.path)
	var out []string
	for _, de := range entries {
		if strings.HasPrefix(de.Name(), "send-") {
			out = append(out, filepath.Join(d.path, de.Name()))
		}
	}
	return out
}

// CleanLeafCaches removes sender caches not touched for longer than maxAge.
func (d *Dir) CleanLeafCaches(maxAge time.Duration) {
	for _, p := range d.leafCaches() {
		if info, err := os.Stat(p); err == nil && d.now().Sub(info.ModTime()) > maxAge {
			os.Remove(p)
		}
	}
}
