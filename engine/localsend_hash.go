package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/ferrydrop/ferry/engine/internal/shacache"
)

// LocalSend's per-file sha256 is optional and comes in the offer, before
// the bytes: hashing every file first would read it twice (figures in
// docs/localsend.md). So a send hashes each file while it uploads it and
// remembers the sum by the file's identity, size and modification time
// (package shacache, <config>/localsend/sha256-cache.json); the next send
// of the same unchanged file gives the sum, and the receiver checks it.

// shaCacheFile is the cache under the config dir.
const shaCacheFile = "localsend/sha256-cache.json"

// lsHashCache opens the engine's cache once.
type lsHashCache struct {
	once  sync.Once
	cache *shacache.Cache // nil when it cannot be used
}

// hashes is the engine's sha256 cache; nil when it cannot be opened (the
// sums are then left out, which the protocol allows).
func (e *Engine) hashes() *shacache.Cache {
	e.shaCache.once.Do(func() {
		c, err := shacache.Open(filepath.Join(e.opts.ConfigDir, shaCacheFile), 0)
		if err != nil {
			e.log.Warn("localsend: the sha256 cache", "err", err)
		}
		e.shaCache.cache = c
	})
	return e.shaCache.cache
}

// fileHash hashes one file as it is uploaded, to remember its sum.
type fileHash struct {
	key  shacache.Key
	src  string
	size int64

	mu sync.Mutex // guards the fields below
	h  hash.Hash
	n  int64
}

// open opens the file for its upload; each open starts the hash again.
func (f *fileHash) open() (io.ReadCloser, error) {
	rc, err := os.Open(f.src)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.h, f.n = sha256.New(), 0
	f.mu.Unlock()
	return &hashingReader{rc: rc, f: f}, nil
}

// sum is the hex SHA-256 of the file when its whole size was read, and
// the file is still the one hashed (identity, size and time unchanged).
func (f *fileHash) sum() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.h == nil || f.n != f.size {
		return "", false
	}
	fi, err := os.Stat(f.src)
	if err != nil {
		return "", false
	}
	if k, ok := shacache.KeyOf(fi); !ok || k != f.key {
		return "", false
	}
	return hex.EncodeToString(f.h.Sum(nil)), true
}

type hashingReader struct {
	rc io.ReadCloser
	f  *fileHash
}

func (r *hashingReader) Read(b []byte) (int, error) {
	n, err := r.rc.Read(b)
	if n > 0 {
		r.f.mu.Lock()
		r.f.h.Write(b[:n])
		r.f.n += int64(n)
		r.f.mu.Unlock()
	}
	return n, err
}

func (r *hashingReader) Close() error { return r.rc.Close() }
