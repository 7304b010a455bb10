package engine

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
)

// leafCache keeps the sender's leaves of multi-chunk files while a transfer
// is unfinished (<config>/resume/send-<manifest>.log, journal format), so that
// resuming does not re-read the chunks the receiver already holds. The
// manifest ID covers every file's size and mtime, so a changed file never
// meets old leaves; a file rewritten in place with its mtime restored would,
// and is then caught only by chunks that do travel.
type leafCache struct {
	path   string
	j      *journal
	mu     sync.Mutex // guards leaves
	leaves map[[2]int]merkle.Hash
}

// openLeafCache loads the cache of manifest (when resuming) and opens it for
// appending; on any error the transfer simply goes without a cache.
func (e *Engine) openLeafCache(manifest string, resuming bool) *leafCache {
	if manifest == "" {
		return nil
	}
	path := filepath.Join(e.resumeDir(), "send-"+manifest+".log")
	c := &leafCache{path: path, leaves: map[[2]int]merkle.Hash{}}
	if resuming {
		recs, _ := readJournal(path)
		for _, r := range recs {
			if r.typ == recChunk {
				c.leaves[[2]int{int(r.file), int(r.chunk)}] = r.leaf
			}
		}
	}
	if err := os.MkdirAll(e.resumeDir(), 0o700); err != nil {
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

func (c *leafCache) leaf(file, chunk int) (merkle.Hash, bool) {
	if c == nil {
		return merkle.Hash{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.leaves[[2]int{file, chunk}]
	return l, ok
}

func (c *leafCache) add(file, chunk int, leaf merkle.Hash) {
	if c == nil || c.j == nil {
		return
	}
	c.j.chunk(uint32(file), uint32(chunk), 0, leaf)
}

// close ends an attempt; a finished transfer needs its cache no more.
func (c *leafCache) close(finished bool) {
	if c == nil {
		return
	}
	if c.j != nil {
		c.j.close()
	}
	if finished {
		os.Remove(c.path)
	}
}

// cleanLeafCaches removes sender caches not touched for longer than maxAge.
func (e *Engine) cleanLeafCaches(maxAge time.Duration) {
	entries, _ := os.ReadDir(e.resumeDir())
	for _, de := range entries {
		if !strings.HasPrefix(de.Name(), "send-") {
			continue
		}
		if info, err := de.Info(); err == nil && time.Since(info.ModTime()) > maxAge {
			os.Remove(filepath.Join(e.resumeDir(), de.Name()))
		}
	}
}
