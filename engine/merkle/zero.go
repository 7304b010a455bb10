package merkle

import "sync"

// zeroPiece is what ZeroLeaf hashes a chunk of zeros from, a piece at a time.
var zeroPiece [64 << 10]byte

// zeroLeaves caches the leaves of chunks of zeros by length: a receiver
// needs the leaf of a whole chunk of zeros for each chunk a sender says
// holds only zeros (a sparse file's holes), and that of the file's last,
// shorter chunk. Bounded: the lengths a peer may choose are many (any chunk
// size of an offer, any last chunk), so beyond maxZeroLeaves lengths a leaf
// is computed and not kept.
var zeroLeaves struct {
	mu sync.Mutex // guards m
	m  map[int]Hash
}

const maxZeroLeaves = 64

// ZeroLeaf returns the leaf of a chunk of n zero bytes, as Leaf of them
// would, without a buffer of n bytes.
func ZeroLeaf(n int) Hash {
	zeroLeaves.mu.Lock()
	leaf, ok := zeroLeaves.m[n]
	zeroLeaves.mu.Unlock()
	if ok {
		return leaf
	}
	h := NewHasher().h
	h.Write([]byte{0})
	for left := n; left > 0; {
		k := min(left, len(zeroPiece))
		h.Write(zeroPiece[:k])
		left -= k
	}
	h.Sum(leaf[:0])
	zeroLeaves.mu.Lock()
	if zeroLeaves.m == nil {
		zeroLeaves.m = map[int]Hash{}
	}
	if len(zeroLeaves.m) < maxZeroLeaves {
		zeroLeaves.m[n] = leaf
	}
	zeroLeaves.mu.Unlock()
	return leaf
}
