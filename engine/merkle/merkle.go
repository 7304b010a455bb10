// Package merkle computes Ferry's file roots: a BLAKE3 hash per chunk (a leaf)
// combined into a binary Merkle tree. Leaves can be computed in any order, as
// chunks land, so a receiver verifies a file without reading it back.
//
// Leaves and inner nodes are domain-separated (a 0x00 or 0x01 prefix, as in
// RFC 6962) so that an inner node can never be passed off as a leaf.
package merkle

import (
	"errors"
	"fmt"

	"github.com/zeebo/blake3"
)

// Hash is a leaf or a root.
type Hash [32]byte

// Hasher computes leaves; reuse one per goroutine to avoid allocation.
type Hasher struct{ h *blake3.Hasher }

// NewHasher returns a leaf hasher.
func NewHasher() *Hasher { return &Hasher{h: blake3.New()} }

// Leaf returns the leaf hash of one chunk's bytes.
func (h *Hasher) Leaf(data []byte) Hash {
	h.h.Reset()
	h.h.Write([]byte{0})
	h.h.Write(data)
	var out Hash
	h.h.Sum(out[:0])
	return out
}

// Leaf is a convenience for one-off leaf hashes.
func Leaf(data []byte) Hash { return NewHasher().Leaf(data) }

func node(l, r Hash) Hash {
	var buf [65]byte
	buf[0] = 1
	copy(buf[1:], l[:])
	copy(buf[33:], r[:])
	return blake3.Sum256(buf[:])
}

// Root combines leaves (in chunk order) into the root. The root of no leaves
// (an empty file) is the leaf of no bytes; an odd node is promoted unchanged.
func Root(leaves []Hash) Hash {
	if len(leaves) == 0 {
		return Leaf(nil)
	}
	if len(leaves) == 1 {
		return leaves[0] // no copy to reduce: a file of one chunk
	}
	level := append([]Hash(nil), leaves...)
	for len(level) > 1 {
		next := level[:0]
		for i := 0; i < len(level); i += 2 {
			if i+1 == len(level) {
				next = append(next, level[i])
				continue
			}
			next = append(next, node(level[i], level[i+1]))
		}
		level = next
	}
	return level[0]
}

// Chunks returns how many chunks a file of size bytes has (an empty file has one, empty, chunk).
func Chunks(size int64, chunkSize int) int {
	if size <= 0 {
		return 1
	}
	return int((size-1)/int64(chunkSize) + 1) // size+chunkSize-1 overflows near the largest size
}

// ChunkLen returns the length of chunk i of a file of size bytes.
func ChunkLen(size int64, chunkSize int, i int) int {
	off := int64(i) * int64(chunkSize)
	if off >= size {
		return 0
	}
	return int(min(int64(chunkSize), size-off))
}

// ErrIncomplete is returned by Tree.Root while leaves are missing.
var ErrIncomplete = errors.New("merkle: leaves missing")

// Tree collects the leaves of one file as they arrive, in any order.
type Tree struct {
	leaves []Hash
	have   []bool
	n      int
	// The storage of a tree of at most one leaf (most files of a tree of
	// small files): one allocation per file instead of three.
	leaf1 [1]Hash
	have1 [1]bool
}

// NewTree returns a tree expecting n leaves.
func NewTree(n int) *Tree {
	if n <= 1 {
		t := &Tree{}
		t.leaves, t.have = t.leaf1[:n], t.have1[:n]
		return t
	}
	return &Tree{leaves: make([]Hash, n), have: make([]bool, n)}
}

// Set records leaf i. Setting a leaf twice replaces it.
func (t *Tree) Set(i int, h Hash) error {
	if i < 0 || i >= len(t.leaves) {
		return fmt.Errorf("merkle: leaf %d out of range [0,%d)", i, len(t.leaves))
	}
	if !t.have[i] {
		t.have[i] = true
		t.n++
	}
	t.leaves[i] = h
	return nil
}

// Has reports whether leaf i is present.
func (t *Tree) Has(i int) bool { return i >= 0 && i < len(t.have) && t.have[i] }

// Leaf returns leaf i (zero when absent).
func (t *Tree) Leaf(i int) Hash { return t.leaves[i] }

// Missing returns how many leaves are still absent.
func (t *Tree) Missing() int { return len(t.leaves) - t.n }

// Len is the number of leaves the tree expects.
func (t *Tree) Len() int { return len(t.leaves) }

// Root returns the root once every leaf is present.
func (t *Tree) Root() (Hash, error) {
	if t.Missing() != 0 {
		return Hash{}, ErrIncomplete
	}
	return Root(t.leaves), nil
}
