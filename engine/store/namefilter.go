package store

import (
	"hash/maphash"
	"strings"
)

// A NameFilter holds the keys (SameNameKey) of paths in a fixed number of
// bits, a Bloom filter: it may say it holds a path it was not given (in
// Twins's, of 4 MiB, TestNameFilter's figures), never that it does not
// hold one it was given. Twins keeps in one the offer's names that read as
// numbered past the paths it holds, so that a number given here never
// takes one of them (Dest.AvoidAll); a path it holds wrongly only costs a
// number skipped.
type NameFilter struct {
	seed maphash.Seed
	bits []uint64
}

// filterHashes is how many bits each path sets.
const filterHashes = 4

// newNameFilter returns an empty filter of size bytes (at least 64).
func newNameFilter(seed maphash.Seed, size int) *NameFilter {
	return &NameFilter{seed: seed, bits: make([]uint64, max(size/8, 8))}
}

// add takes the path rel (slash-separated).
func (f *NameFilter) add(rel string) {
	w, bits := f.sums(rel)
	f.bits[w] |= bits
}

// holds reports whether rel may be a path added.
func (f *NameFilter) holds(rel string) bool {
	if f == nil {
		return false
	}
	w, bits := f.sums(rel)
	return f.bits[w]&bits == bits
}

// sums are the word of the filter rel's key sets bits in and those bits
// (filterHashes of them, all in one word: one memory access, not four).
// A path of plain names (plainName) is hashed in upper case as it is
// read, its key, as Twins.hash does: SameNameKey allocates a string for
// each (docs/hostile.md).
func (f *NameFilter) sums(rel string) (word int, bits uint64) {
	var h maphash.Hash
	h.SetSeed(f.seed)
	if plainPath(rel) {
		var buf [128]byte
		for len(rel) > 0 {
			n := copy(buf[:], rel)
			for i, c := range buf[:n] {
				if 'a' <= c && c <= 'z' {
					buf[i] = c - ('a' - 'A')
				}
			}
			h.Write(buf[:n])
			rel = rel[n:]
		}
	} else {
		h.WriteString(SameNameKey(rel))
	}
	sum := h.Sum64()
	word = int((sum & 0xffffffff) % uint64(len(f.bits)))
	for i := range filterHashes {
		bits |= 1 << (sum >> (32 + 6*i) & 63)
	}
	return word, bits
}

// plainPath reports whether each name of rel is plain (plainName), and so
// SameNameKey(rel) is rel in upper case.
func plainPath(rel string) bool {
	for {
		name, rest, more := strings.Cut(rel, "/")
		if !plainName(name) {
			return false
		}
		if !more {
			return true
		}
		rel = rest
	}
}
