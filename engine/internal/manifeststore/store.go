// Package manifeststore keeps the file list of an incoming offer (its
// manifest) in bounded memory: the first entries in memory, the rest spilled
// to a file on disk, within a disk budget per peer and in all (issue 30). A
// receiver then takes a tree of 10^6 files with a few megabytes of memory,
// where holding every entry cost about 1 KiB per file
// (docs/benchmarks/trees.md), and the bound against a hostile manifest is a
// budget of disk per peer, not a count of files a user can hit.
//
// A Store is written once, in order (Append, as the manifest's parts
// arrive), then read by index (Get) or in order (Each). It is not safe for
// concurrent use while written; once written, reads are safe from several
// goroutines. The spill file is the receiver's own, written and read by
// this package only: a peer never sees it, but a damaged one (a full disk,
// a truncated write) is an error, never a wrong entry.
package manifeststore

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"slices"
	"sync"
)

// Entry is one file of a manifest, with the fields Ferry's wire carries
// (wire.FileEntry; the package depends on no protocol, so that the
// protocol-free core can read lists through List).
type Entry struct {
	Path  string
	Size  int64
	Mode  uint32
	MTime int64
	Holes int64 // bytes in chunks of holes (wire.FileEntry.Holes)
}

// entryOverhead is what an entry held in memory costs beyond its name: the
// FileEntry itself (a string header, four 8-byte fields) and the slice's
// share.
const entryOverhead = 56

// blockEntries is how many spilled entries one index entry (8 bytes of
// memory) covers; Get reads and decodes one block.
const blockEntries = 64

// ErrDiskBudget is returned (wrapped in a *BudgetError) when a manifest
// would take more disk than its peer's budget leaves.
var ErrDiskBudget = errors.New("manifest over the disk budget")

// BudgetError says which budget a manifest would exceed, with the figures.
type BudgetError struct {
	Peer  string
	Limit int64 // the budget that is full, in bytes
	All   bool  // the budget for all peers (else the peer's own)
}

func (e *BudgetError) Error() string {
	who := "peer " + e.Peer
	if e.All {
		who = "all peers"
	}
	return fmt.Sprintf("%v: the file lists of %s take more than %d bytes of disk", ErrDiskBudget, who, e.Limit)
}

func (e *BudgetError) Unwrap() error { return ErrDiskBudget }

// Budget is the disk the spilled manifests may take: per peer, and in all.
// One Budget serves every Store of an engine.
type Budget struct {
	perPeer, all int64

	mu    sync.Mutex // guards the fields below
	used  map[string]int64
	total int64
}

// NewBudget returns a budget of perPeer bytes for each peer and all bytes
// for every peer together.
func NewBudget(perPeer, all int64) *Budget {
	return &Budget{perPeer: perPeer, all: all, used: map[string]int64{}}
}

// take charges n bytes to peer, or says which budget is full.
func (b *Budget) take(peer string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used[peer]+n > b.perPeer {
		return &BudgetError{Peer: peer, Limit: b.perPeer}
	}
	if b.total+n > b.all {
		return &BudgetError{Peer: peer, Limit: b.all, All: true}
	}
	b.used[peer] += n
	b.total += n
	return nil
}

// give returns n bytes of peer's.
func (b *Budget) give(peer string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used[peer] -= n
	b.total -= n
	if b.used[peer] <= 0 {
		delete(b.used, peer)
	}
}

// Used is what peer's spilled manifests take now, and what all take.
func (b *Budget) Used(peer string) (own, all int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used[peer], b.total
}

// Options say where a Store spills and how much it keeps in memory.
type Options struct {
	// Dir is the folder for the spill file (created if missing). The file
	// is removed at once on systems that allow it (it lives until Close),
	// else at Close.
	Dir string
	// Memory is how many bytes of entries (names included) stay in memory
	// before the rest is spilled; 0 spills from the first entry.
	Memory int64
	// Budget is charged for what is spilled, as Peer's; required.
	Budget *Budget
	Peer   string
}

// Store is one manifest, in memory up to Options.Memory and on disk beyond.
type Store struct {
	opts Options

	mem      []Entry // the first entries
	memBytes int64
	n        int // entries in all

	f       *os.File      // the spill file, nil until the first spilled entry
	w       *bufio.Writer // appends to f
	written int64         // bytes appended to f (charged to the budget)
	blocks  []int64       // offset in f of every blockEntries-th spilled entry
	sealed  bool          // the writer is flushed: reads may start
	closed  bool

	rec []byte // Append's scratch record

	mu    sync.Mutex // guards the fields below
	cache [cacheBlocks]cachedBlock
	uses  uint64 // stamps the cache's uses, for its LRU
	reads int    // blocks read from disk (tests)
	buf   []byte
}

// cacheBlocks is how many blocks Get keeps: a receiver reads the entries of
// the files in flight (up to hundreds, arriving and finishing at different
// indexes), and a single block read again for nearly every file (an
// oddity seen in docs/benchmarks/trees.md).
const cacheBlocks = 8

// cachedBlock is one block's entries in Get's cache.
type cachedBlock struct {
	blk     int // -1 for none
	used    uint64
	entries []Entry
}

// New returns an empty store.
func New(opts Options) (*Store, error) {
	if opts.Budget == nil {
		return nil, errors.New("manifeststore: no budget")
	}
	s := &Store{opts: opts}
	for i := range s.cache {
		s.cache[i].blk = -1
	}
	return s, nil
}

// Len is the number of entries appended.
func (s *Store) Len() int { return s.n }

// MemoryBytes is about what the store holds in memory: the entries kept,
// the block index and the read cache.
func (s *Store) MemoryBytes() int64 {
	n := s.memBytes
	if s.f != nil {
		n += int64(cap(s.blocks))*8 + int64(cacheBlocks*blockEntries*entryOverhead) + int64(cap(s.buf)) + 64<<10 // and the writer's buffer
	}
	return n
}

// DiskBytes is what the spill file takes (charged to the budget).
func (s *Store) DiskBytes() int64 { return s.written }

// Append adds the next entry. An entry past the memory bound is spilled;
// one the disk budget cannot take is refused with a *BudgetError and the
// store keeps what it had.
func (s *Store) Append(e Entry) error {
	if s.closed || s.sealed {
		return errors.New("manifeststore: append after the store was read or closed")
	}
	cost := int64(len(e.Path)) + entryOverhead
	if s.f == nil && s.memBytes+cost <= s.opts.Memory {
		s.mem = append(s.mem, e)
		s.memBytes += cost
		s.n++
		return nil
	}
	s.rec = appendRecord(s.rec[:0], e)
	rec := s.rec
	if err := s.opts.Budget.take(s.opts.Peer, int64(len(rec))); err != nil {
		return err
	}
	if err := s.spill(rec); err != nil {
		s.opts.Budget.give(s.opts.Peer, int64(len(rec)))
		return err
	}
	s.n++
	return nil
}

// spill appends one encoded record to the spill file.
func (s *Store) spill(rec []byte) error {
	if s.f == nil {
		if err := os.MkdirAll(s.opts.Dir, 0o700); err != nil {
			return fmt.Errorf("manifest spill: %w", err)
		}
		f, err := os.CreateTemp(s.opts.Dir, "manifest-*.spill")
		if err != nil {
			return fmt.Errorf("manifest spill: %w", err)
		}
		// Unlinked now where the system allows it: nothing is left behind
		// if the process dies; the open file lives until Close.
		_ = os.Remove(f.Name())
		s.f, s.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	if (s.n-len(s.mem))%blockEntries == 0 {
		s.blocks = append(s.blocks, s.written)
	}
	if _, err := s.w.Write(rec); err != nil {
		return fmt.Errorf("manifest spill: %w", err)
	}
	s.written += int64(len(rec))
	return nil
}

// seal flushes what was appended: the first read does it.
func (s *Store) seal() error {
	if s.sealed {
		return nil
	}
	s.sealed = true
	if s.w != nil {
		if err := s.w.Flush(); err != nil {
			return fmt.Errorf("manifest spill: %w", err)
		}
	}
	return nil
}

// Get returns entry i. Reading a spilled entry reads its block (64
// entries) from disk once; reads in order cost one disk read per block.
func (s *Store) Get(i int) (Entry, error) {
	if i < 0 || i >= s.n {
		return Entry{}, fmt.Errorf("manifeststore: entry %d of %d", i, s.n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, errors.New("manifeststore: read after Close")
	}
	if i < len(s.mem) {
		return s.mem[i], nil
	}
	if err := s.seal(); err != nil {
		return Entry{}, err
	}
	k := i - len(s.mem)
	blk := k / blockEntries
	s.uses++
	c := &s.cache[0]
	for j := range s.cache {
		if s.cache[j].blk == blk {
			c = &s.cache[j]
			break
		}
		if s.cache[j].used < c.used {
			c = &s.cache[j] // the least recently used so far
		}
	}
	if c.blk != blk {
		if err := s.readBlock(blk, c); err != nil {
			return Entry{}, err
		}
	}
	c.used = s.uses
	return c.entries[k%blockEntries], nil
}

// blockEnd is where block blk ends in the spill file.
func (s *Store) blockEnd(blk int) int64 {
	if blk+1 < len(s.blocks) {
		return s.blocks[blk+1]
	}
	return s.written
}

// blockLen is the number of entries in block blk.
func (s *Store) blockLen(blk int) int {
	return min(blockEntries, s.n-len(s.mem)-blk*blockEntries)
}

// readBlock reads and decodes block blk into c.
func (s *Store) readBlock(blk int, c *cachedBlock) error {
	if s.closed {
		return errors.New("manifeststore: read after Close")
	}
	start, end := s.blocks[blk], s.blockEnd(blk)
	if n := int(end - start); cap(s.buf) < n {
		s.buf = make([]byte, n)
	}
	buf := s.buf[:end-start]
	s.reads++
	if _, err := s.f.ReadAt(buf, start); err != nil {
		return fmt.Errorf("manifest spill: block %d: %w", blk, err)
	}
	c.blk, c.entries = -1, c.entries[:0]
	if err := decodeSpan(buf, s.blockLen(blk), func(e Entry) error {
		c.entries = append(c.entries, e)
		return nil
	}); err != nil {
		return fmt.Errorf("manifest spill: block %d: %w", blk, err)
	}
	c.blk = blk
	return nil
}

// decodeSpan decodes the n records buf holds, all of it, into f.
func decodeSpan(buf []byte, n int, f func(Entry) error) error {
	for k := range n {
		e, m, err := decodeRecord(buf)
		if err != nil {
			return fmt.Errorf("entry %d: %w", k, err)
		}
		if err := f(e); err != nil {
			return err
		}
		buf = buf[m:]
	}
	if len(buf) != 0 {
		return fmt.Errorf("%d bytes left over", len(buf))
	}
	return nil
}

// Each calls f with every entry in order, reading the spill file once; an
// error from f stops it and is returned.
func (s *Store) Each(f func(i int, e Entry) error) error {
	if s.closed {
		return errors.New("manifeststore: read after Close")
	}
	for i, e := range s.mem {
		if err := f(i, e); err != nil {
			return err
		}
	}
	if s.f == nil {
		return nil
	}
	s.mu.Lock()
	err := s.seal()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	// Whole blocks at a time, up to 64 KiB (or one block) per read, each
	// decoded from memory.
	var buf []byte
	i := len(s.mem)
	for blk := 0; blk < len(s.blocks); {
		last, n := blk+1, s.blockLen(blk)
		for last < len(s.blocks) && s.blockEnd(last)-s.blocks[blk] <= 64<<10 {
			n += s.blockLen(last)
			last++
		}
		start, end := s.blocks[blk], s.blockEnd(last-1)
		if cap(buf) < int(end-start) {
			buf = make([]byte, end-start)
		}
		buf = buf[:end-start]
		if _, err := s.f.ReadAt(buf, start); err != nil {
			return fmt.Errorf("manifest spill: blocks %d-%d: %w", blk, last-1, err)
		}
		var errF error
		if err := decodeSpan(buf, n, func(e Entry) error {
			if errF = f(i, e); errF != nil {
				return errF
			}
			i++
			return nil
		}); err != nil {
			if errF != nil {
				return errF
			}
			return fmt.Errorf("manifest spill: blocks %d-%d: %w", blk, last-1, err)
		}
		blk = last
	}
	return nil
}

// Close removes the spill file and gives its disk back to the budget.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.mem, s.cache, s.blocks, s.buf = nil, [cacheBlocks]cachedBlock{}, nil, nil
	if s.f == nil {
		return nil
	}
	name := s.f.Name()
	err := s.f.Close()
	_ = os.Remove(name) // where it could not be removed while open
	s.opts.Budget.give(s.opts.Peer, s.written)
	return err
}

// A record is the entry's fields as varints, the name last:
// uvarint(len(path)) path varint(size) uvarint(mode) varint(mtime)
// varint(holes).

func appendRecord(b []byte, e Entry) []byte {
	b = binary.AppendUvarint(b, uint64(len(e.Path)))
	b = append(b, e.Path...)
	b = binary.AppendVarint(b, e.Size)
	b = binary.AppendUvarint(b, uint64(e.Mode))
	b = binary.AppendVarint(b, e.MTime)
	return binary.AppendVarint(b, e.Holes)
}

// errDamaged: the spill file does not hold what was written to it.
var errDamaged = errors.New("damaged record")

// maxRecordPath bounds a name read back: what the wire allows (store.MaxPathBytes).
const maxRecordPath = 4096

func decodeRecord(b []byte) (Entry, int, error) {
	var e Entry
	off := 0
	n, k := binary.Uvarint(b)
	if k <= 0 || n > maxRecordPath || uint64(len(b)-k) < n {
		return e, 0, errDamaged
	}
	off += k
	e.Path = string(b[off : off+int(n)])
	off += int(n)
	size, k := binary.Varint(b[off:])
	if k <= 0 {
		return e, 0, errDamaged
	}
	off += k
	mode, k := binary.Uvarint(b[off:])
	if k <= 0 || mode > 1<<32-1 {
		return e, 0, errDamaged
	}
	off += k
	mtime, k := binary.Varint(b[off:])
	if k <= 0 {
		return e, 0, errDamaged
	}
	off += k
	holes, k := binary.Varint(b[off:])
	if k <= 0 {
		return e, 0, errDamaged
	}
	off += k
	e.Size, e.Mode, e.MTime, e.Holes = size, uint32(mode), mtime, holes
	return e, off, nil
}

// List is a file list read by index or in order: a *Store is one (of
// Entry), and so is a slice wrapped in the same methods.
type List[E any] interface {
	Len() int
	Get(i int) (E, error)
	Each(f func(i int, e E) error) error
}

// Duplicates returns, in order, the indexes of entries of l whose name an
// earlier entry already has (the second of two is the duplicate). It holds
// 16 bytes per entry while it runs, not the names: a hash of each, sorted,
// with every equal pair of hashes checked against the names themselves.
func Duplicates[E any](l List[E], name func(E) string) ([]int, error) {
	h := NewNameHashes(l.Len())
	if err := l.Each(func(i int, e E) error {
		h.Add(i, name(e))
		return nil
	}); err != nil {
		return nil, err
	}
	return DuplicatesOf(h, l, name)
}

// NameHashes collects a hash of every name of a list as another pass reads
// it (Add), so that DuplicatesOf does not read the list once more.
type NameHashes struct {
	seed maphash.Seed
	hs   []hashed
}

type hashed struct {
	h uint64
	i uint32
}

// NewNameHashes returns an empty collector for n names.
func NewNameHashes(n int) *NameHashes {
	return &NameHashes{seed: maphash.MakeSeed(), hs: make([]hashed, 0, n)}
}

// Add takes the name of entry i; entries come in order, each once.
func (h *NameHashes) Add(i int, name string) {
	h.hs = append(h.hs, hashed{maphash.String(h.seed, name), uint32(i)})
}

// DuplicatesOf is Duplicates from the hashes h took of every entry of l:
// it reads again only the entries whose hash another shares.
func DuplicatesOf[E any](h *NameHashes, l List[E], name func(E) string) ([]int, error) {
	return CopiesBeyond(h, l, name, 1)
}

// CopiesBeyond is DuplicatesOf for a list that may name a thing up to keep
// times: it returns, in order, the entries of each name past its first keep.
func CopiesBeyond[E any](h *NameHashes, l List[E], name func(E) string, keep int) ([]int, error) {
	if len(h.hs) != l.Len() {
		return nil, fmt.Errorf("manifeststore: %d names hashed of %d", len(h.hs), l.Len())
	}
	hs := h.hs
	slices.SortFunc(hs, func(a, b hashed) int {
		if c := cmp.Compare(a.h, b.h); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	var dups []int
	for lo := 0; lo < len(hs); {
		hi := lo + 1
		for hi < len(hs) && hs[hi].h == hs[lo].h {
			hi++
		}
		// hs[lo:hi] share a hash: usually one name, rarely a collision.
		var names []string
		var seen []int // how many of names[k] so far
		for _, x := range hs[lo:hi] {
			if hi-lo <= keep {
				break
			}
			e, err := l.Get(int(x.i))
			if err != nil {
				return nil, err
			}
			n := name(e)
			if k := slices.Index(names, n); k >= 0 {
				if seen[k]++; seen[k] > keep {
					dups = append(dups, int(x.i))
				}
				continue
			}
			names, seen = append(names, n), append(seen, 1)
		}
		lo = hi
	}
	slices.Sort(dups)
	return dups, nil
}
