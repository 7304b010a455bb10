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

	mu  sync.Mutex // guards the fields below
	gen int        // which open the fields below are of
	h   hash.Hash  // the whole read's hash, set once it read size bytes
	n   int64
}

// open opens the file for its upload; each open starts the hash again.
func (f *fileHash) open() (io.ReadCloser, error) {
	file, err := os.Open(f.src)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.gen++
	f.h, f.n = nil, 0
	gen := f.gen
	f.mu.Unlock()
	if f.size < readAheadFrom {
		return &inlineHashReader{file: file, src: io.LimitReader(file, f.size), f: f, gen: gen, h: sha256.New()}, nil
	}
	r := &hashingReader{
		blocks: make(chan []byte, hashDepth),
		free:   make(chan []byte, hashDepth),
		stop:   make(chan struct{}),
	}
	for range hashDepth {
		r.free <- hashBlocks.get()
	}
	go r.readAhead(file, f, gen)
	return r, nil
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

// hashingReader reads a file ahead of its upload and hashes it on its own
// goroutine, so the hashing runs beside the upload's encryption and system
// calls rather than between them (docs/localsend.md, "Figures").
type hashingReader struct {
	blocks chan []byte // read and hashed, in order; closed at the end
	free   chan []byte
	err    error // why blocks was closed; read after it was
	cur    []byte
	held   []byte // the block cur is in

	stop     chan struct{}
	stopOnce sync.Once
}

const (
	hashBlock = 256 << 10
	hashDepth = 3
	// readAheadFrom is the size from which a file is read ahead: a send
	// of many small files runs several uploads at once, which keep the
	// cores busy already, and reading each ahead cost more than it gave
	// (500 x 2 MiB: 657 against 731 MB/s; 1 GiB: 857 against 683).
	readAheadFrom = 16 << 20
)

// inlineHashReader hashes a small file as the upload reads it.
type inlineHashReader struct {
	file *os.File
	src  io.Reader
	f    *fileHash
	gen  int
	h    hash.Hash
	n    int64
}

func (r *inlineHashReader) Read(b []byte) (int, error) {
	m, err := r.src.Read(b)
	if m > 0 {
		r.h.Write(b[:m])
		r.n += int64(m)
	}
	// The upload stops reading at the offered size, so the sum is ready
	// then, not only at an EOF it may never ask for.
	if err == io.EOF || r.n == r.f.size {
		r.f.mu.Lock()
		if r.f.gen == r.gen {
			r.f.h, r.f.n = r.h, r.n
		}
		r.f.mu.Unlock()
	}
	return m, err
}

func (r *inlineHashReader) Close() error { return r.file.Close() }

// hashBlocks keeps the readers' blocks for the next file: a send of many
// small files otherwise allocated (and faulted in) 768 KiB per file.
var hashBlocks blockPool

type blockPool struct{ p sync.Pool }

func (b *blockPool) get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, hashBlock)
}

func (b *blockPool) put(v []byte) {
	v = v[:cap(v)]
	b.p.Put(&v)
}

func (r *hashingReader) readAhead(file *os.File, f *fileHash, gen int) {
	defer close(r.blocks)
	defer file.Close()
	src := io.LimitReader(file, f.size)
	h := sha256.New()
	var n int64
	for {
		var buf []byte
		select {
		case buf = <-r.free:
		case <-r.stop:
			r.err = os.ErrClosed
			return
		}
		m, err := io.ReadFull(src, buf)
		if m > 0 {
			h.Write(buf[:m])
			n += int64(m)
			select {
			case r.blocks <- buf[:m]:
			case <-r.stop:
				r.err = os.ErrClosed
				return
			}
		} else {
			r.free <- buf // there is room: free holds every block
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			f.mu.Lock()
			if f.gen == gen {
				f.h, f.n = h, n
			}
			f.mu.Unlock()
			r.err = io.EOF
			return
		}
		if err != nil {
			r.err = err
			return
		}
	}
}

func (r *hashingReader) Read(b []byte) (int, error) {
	select {
	case <-r.stop:
		return 0, os.ErrClosed
	default:
	}
	if len(r.cur) == 0 {
		if r.held != nil {
			r.free <- r.held[:cap(r.held)]
			r.held = nil
		}
		select {
		case blk, ok := <-r.blocks:
			if !ok {
				// The reading ahead ended and this side holds no block:
				// all of them are back in free, for the next file. (A
				// reader closed before its end leaves them to the
				// collector: Close may run beside a Read.)
				for len(r.free) > 0 {
					hashBlocks.put(<-r.free)
				}
				return 0, r.err
			}
			r.cur, r.held = blk, blk
		case <-r.stop:
			return 0, os.ErrClosed
		}
	}
	n := copy(b, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// Close stops the reading ahead; a Read blocked in another goroutine
// returns.
func (r *hashingReader) Close() error {
	r.stopOnce.Do(func() { close(r.stop) })
	return nil
}
