package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/ferrydrop/ferry/engine/internal/manifeststore"
	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
)

// A file sent again (a folder sent once more, a few of its files added or
// changed) finds the receiver holding most of it already, under its name.
// Between devices that speak wire.FeatureSame, and from a sender the
// receiver trusts, only what differs travels:
//
//   - the receiver's decision names the accepted files it holds a file of
//     under their name, at their size (wire.Decision.Same: a look at the
//     name, nothing read);
//   - it then reads those files, in the offer's order, and sends the leaves
//     of their chunks (wire.Same) as it goes;
//   - the sender waits for a chunk's leaf before it sends the chunk, reads
//     and hashes the chunk as always, and sends it only when its leaf
//     differs; the chunks it did not send it names in a same frame
//     (wire.SameChunk) right before the file's root;
//   - the receiver keeps its file when every chunk is the same (nothing is
//     written: the file is "kept", as store.Partial.SetSame keeps one), and
//     otherwise copies the chunks named from its file into the new one,
//     each checked against its leaf, which it asks for again when the file
//     changed meanwhile. The root verifies the whole as ever.
//
// Nothing is overwritten: a file that differs is saved beside it, numbered.
// The sender learns the leaves of a file here, so a device not trusted is
// never sent them (docs/hostile.md).

// maxSameFiles bounds the files one decision names as held (each costs
// both sides a note and its leaves until it is resolved, about 100 bytes
// for a file of one chunk): beyond it a tree sent again travels whole, and
// the receiver still keeps each file of the same bytes (store.Partial.SetSame).
const maxSameFiles = 1 << 17

// sameMinSize is the smallest file a decision names as held: the bytes of
// a smaller one cost less to send, on any LAN, than comparing it does (a
// message of its leaf, a read on each side: 13-16 µs a file on this
// project's VM, where a 100-byte file of 20,000 took 40-70 µs in all).
// It travels, and a file of the same bytes is still kept.
const sameMinSize = 4 << 10

// sameHeld is what the receiver holds of one file under its name: the
// leaves of its chunks, in order, as they arrive (wire.Same). Guarded by
// the sender's mu.
type sameHeld struct {
	leaves []merkle.Hash
	done   bool // no more come
	// changed is closed, and replaced, as leaves arrive (waitSame).
	changed chan struct{}
}

// acceptSame takes the files the receiver's decision says it holds under
// their names (wire.Decision.Same): each must be one it accepted, and none
// one it holds part of from an earlier attempt (resume).
func (tx *sender) acceptSame(d *wire.Decision) error {
	if len(d.Same) == 0 {
		return nil
	}
	if !tx.peerSame {
		return fmt.Errorf("%w: a decision naming files held, from a receiver that did not say it sends them", wire.ErrProtocol)
	}
	if len(d.Same) > (len(tx.files)+7)/8 {
		return fmt.Errorf("%w: a same bitmap of %d bytes for %d files", wire.ErrProtocol, len(d.Same), len(tx.files))
	}
	tx.same = map[int]*sameHeld{}
	for i := range len(d.Same) * 8 {
		if !d.SameHolds(i) {
			continue
		}
		if i >= len(tx.files) || tx.sending[i] != fileSendable || tx.haves[uint32(i)] != nil {
			return fmt.Errorf("%w: the receiver says it holds file %d, which it did not accept whole", wire.ErrProtocol, i)
		}
		if len(tx.same) == maxSameFiles {
			return fmt.Errorf("%w: the receiver says it holds more than %d files", wire.ErrProtocol, maxSameFiles)
		}
		tx.same[i] = &sameHeld{changed: make(chan struct{})}
	}
	return nil
}

// heldLeaves takes a wire.Same from the receiver: the next leaves of a
// file its decision named, in order, until one is done.
func (tx *sender) heldLeaves(m *wire.Same) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	sh := tx.same[int(m.File)]
	if sh == nil && tx.same != nil && int(m.File) < len(tx.sending) && tx.sending[m.File] == fileSettled {
		return nil // resolved before its leaves were all read (given up, say): they go unused
	}
	if sh == nil || sh.done {
		return fmt.Errorf("%w: leaves of file %d, which the receiver did not say it holds (or said it was done with)", wire.ErrProtocol, m.File)
	}
	if int(m.Start) != len(sh.leaves) || int(m.Start)+m.Count() > tx.chunks(int(m.File)) {
		return fmt.Errorf("%w: leaves %d to %d of file %d, after %d of its %d", wire.ErrProtocol,
			m.Start, int(m.Start)+m.Count(), m.File, len(sh.leaves), tx.chunks(int(m.File)))
	}
	for i := range m.Count() {
		sh.leaves = append(sh.leaves, m.Leaf(i))
	}
	sh.done = m.Done
	close(sh.changed)
	sh.changed = make(chan struct{})
	return nil
}

// waitSame waits, for a file the receiver holds under its name, until its
// leaf of chunk ci came, or it said it has no more. What w holds goes out
// first: the receiver may be waiting for it.
func (tx *sender) waitSame(ctx context.Context, fi, ci int, w *bufio.Writer) error {
	if tx.same == nil { // none named: made before the workers start, never after
		return nil
	}
	flushed := false
	for {
		tx.mu.Lock()
		sh := tx.same[fi]
		if sh == nil || sh.done || ci < len(sh.leaves) {
			tx.mu.Unlock()
			return nil
		}
		changed := sh.changed
		tx.mu.Unlock()
		if !flushed {
			if err := w.Flush(); err != nil {
				return err
			}
			flushed = true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sameAs reports whether the receiver holds chunk ci of file fi as it is
// here: its leaf is leaf.
func (tx *sender) sameAs(fi, ci int, leaf merkle.Hash) bool {
	if tx.same == nil {
		return false
	}
	tx.mu.Lock()
	defer tx.mu.Unlock()
	sh := tx.same[fi]
	return sh != nil && ci < len(sh.leaves) && sh.leaves[ci] == leaf
}

// markSame marks chunk ci (of chunks) as not sent, held by the receiver,
// and reports whether it was not marked before. Called with tx.mu held.
func (fl *fileLeaves) markSame(ci, chunks int) bool {
	if fl.same == nil {
		fl.same = make([]byte, (chunks+7)/8)
	}
	if fl.same[ci/8]&(1<<(ci%8)) != 0 {
		return false
	}
	fl.same[ci/8] |= 1 << (ci % 8)
	return true
}

// bitmapRuns returns the runs of chunks set in bits (of chunks).
func bitmapRuns(bits []byte, chunks int) []wire.ZeroRun {
	if bits == nil {
		return nil
	}
	var runs []wire.ZeroRun
	for c := 0; c < chunks; c++ {
		if bits[c/8]&(1<<(c%8)) == 0 {
			continue
		}
		start := c
		for c+1 < chunks && bits[(c+1)/8]&(1<<((c+1)%8)) != 0 {
			c++
		}
		runs = append(runs, wire.ZeroRun{Start: uint32(start), Count: uint32(c - start + 1)})
	}
	return runs
}

// sendSameRuns writes file fi's same frames: the runs of its chunks not
// sent because the receiver holds them, as many frames as they need.
func (tx *sender) sendSameRuns(w *bufio.Writer, fi int, runs []wire.ZeroRun, buf []byte) error {
	for fit := wire.ZeroRunsFit(tx.chunkSize); len(runs) > 0; {
		part := runs[:min(len(runs), fit)]
		runs = runs[len(part):]
		wire.DataHeader{File: uint32(fi), Chunk: wire.SameChunk, Length: uint32(len(part) * wire.ZeroRunLen)}.Put(buf)
		if _, err := w.Write(buf[:wire.DataHeaderLen]); err != nil {
			return err
		}
		if _, err := w.Write(wire.AppendZeroRuns(buf[:0], part)); err != nil {
			return err
		}
	}
	return nil
}

// sameHere is what the receiver sent of one file it holds under the name
// of an offered one: the leaves of its chunks (wire.Same), in order.
// Guarded by the receiver's mu.
type sameHere struct {
	leaves []merkle.Hash
}

// sameCandidates returns the bitmap of the accepted files this side holds
// a file of under their names, at their sizes (wire.Decision.Same), and
// notes them (rx.same), for a sender that takes their leaves and that this
// device trusts; nil for none. A file resumed from an earlier attempt, an
// one under sameMinSize, and one whose name the offer holds more than once
// are left out. Only names are looked at here; the files are read after the
// decision went out (sendSameLeaves).
func (rx *receiver) sameCandidates(ctx context.Context) []byte {
	if !rx.peerSame || rx.c == nil || !rx.e.isTrusted(rx.c.PeerID().Peer()) || len(rx.Accepted) == 0 {
		return nil
	}
	rx.twins.Do(func() { rx.makeTwins(ctx) }) // rx.copies
	resumed := map[uint32]bool{}
	for _, h := range rx.haves {
		resumed[h.File] = true
	}
	for _, f := range rx.preDone {
		resumed[f.idx] = true
	}
	var bits []byte
	var order []uint32
	k := 0 // rx.Accepted and the list are both in the offer's order
	// Its error (the walk ended early, or the list could not be read
	// further) leaves the files past it to travel whole.
	_ = rx.list.Each(func(i int, e manifeststore.Entry) error {
		if ctx.Err() != nil || len(order) == maxSameFiles {
			return errSameEnough
		}
		for k < len(rx.Accepted) && rx.Accepted[k] < i {
			k++
		}
		if k == len(rx.Accepted) {
			return errSameEnough
		}
		idx := uint32(i)
		if _, copied := rx.copies[idx]; rx.Accepted[k] != i || copied || resumed[idx] || e.Size < sameMinSize {
			return nil
		}
		file, _, err := rx.Dest.OpenSame(e.Path, e.Size)
		if err != nil {
			return nil
		}
		file.Close()
		if bits == nil {
			bits = make([]byte, (rx.list.Len()+7)/8)
		}
		bits[i/8] |= 1 << (i % 8)
		order = append(order, idx)
		return nil
	})
	if len(order) == 0 {
		return nil
	}
	// Under mu: a data stream may be open already (a sender that does
	// not wait for the decision), and setSame reads them.
	rx.mu.Lock()
	rx.same = make(map[uint32]*sameHere, len(order))
	for _, idx := range order {
		rx.same[idx] = &sameHere{}
	}
	rx.sameOrder = order
	rx.mu.Unlock()
	return bits
}

// errSameEnough ends sameCandidates' walk of the offer.
var errSameEnough = errors.New("enough files looked at")

// sendSameLeaves reads, in the offer's order, each file the decision said
// this side holds under an offered name, and sends the leaves of its
// chunks as it goes (wire.Same, at most wire.MaxSameLeaves each), the last
// one done: none more when the file cannot be read (any more).
func (rx *receiver) sendSameLeaves(ctx context.Context) error {
	buf := make([]byte, rx.offer.ChunkSize) // not the session's quota: it is one buffer, for the session's length
	hasher := merkle.NewHasher()
	for _, idx := range rx.sameOrder {
		e, err := rx.entry(idx)
		if err != nil {
			return err
		}
		if err := rx.sendLeavesOf(ctx, idx, e, buf, hasher); err != nil {
			return nilIfDone(ctx, err)
		}
	}
	return nil
}

// sendLeavesOf sends the leaves of file idx as it is here (sendSameLeaves).
func (rx *receiver) sendLeavesOf(ctx context.Context, idx uint32, e wire.FileEntry, buf []byte, hasher *merkle.Hasher) error {
	chunks := merkle.Chunks(e.Size, rx.offer.ChunkSize)
	m := &wire.Same{File: idx}
	file, _, err := rx.Dest.OpenSame(e.Path, e.Size)
	if err == nil {
		defer file.Close()
	}
	for c := 0; err == nil && c < chunks; c++ {
		if err = ctx.Err(); err != nil {
			return err
		}
		n := merkle.ChunkLen(e.Size, rx.offer.ChunkSize, c)
		if _, err = file.ReadAt(buf[:n], int64(c)*int64(rx.offer.ChunkSize)); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
			break
		}
		err = nil
		leaf := hasher.Leaf(buf[:n])
		// Noted before it is sent: a same frame names only what was. (A
		// file resolved meanwhile, given up, has no note any more.)
		rx.mu.Lock()
		if sh := rx.same[idx]; sh != nil {
			sh.leaves = append(sh.leaves, leaf)
		}
		rx.mu.Unlock()
		rx.touch() // reading here is the session working, though no data comes meanwhile
		rx.work()
		m.Leaves = append(m.Leaves, leaf[:]...)
		if c == chunks-1 {
			break
		}
		if m.Count() == wire.MaxSameLeaves {
			if err := rx.ctl.sendLazy(m); err != nil {
				return err
			}
			m = &wire.Same{File: idx, Start: m.Start + uint32(m.Count())}
		}
	}
	if err != nil {
		rx.e.log.Info("a file here under an offered name could not be read: its chunks travel", "file", e.Path, "err", err)
	}
	m.Done = true
	// Flushed with the next ones, within lazyFlushDelay: a folder of small
	// files sends its leaves in a few writes, not one each.
	return rx.ctl.sendLazy(m)
}

// samePayload checks a same frame's length (wire.SameChunk): runs, as
// many as fit in a frame.
func (rx *receiver) samePayload(h wire.DataHeader) error {
	if h.Length == 0 || int(h.Length) > wire.ZeroRunsFit(rx.offer.ChunkSize)*wire.ZeroRunLen {
		return fmt.Errorf("%w: a same frame with %d bytes of payload", wire.ErrProtocol, h.Length)
	}
	return nil
}

// setSame takes a same frame of file f: runs of its chunks that the file
// here under its name holds, which the sender did not send. Each must be
// a chunk whose leaf this side sent. When they are all of its chunks and
// none landed, the file here is kept as it is (keepSame, once the root
// came); otherwise each chunk not landed yet is copied from it into the
// new file, checked against its leaf like any chunk that arrives.
func (rx *receiver) setSame(ctx context.Context, f *rxFile, runs []wire.ZeroRun) error {
	rx.mu.Lock()
	sh := rx.same[f.idx]
	named := 0
	for _, r := range runs {
		if sh == nil || int(r.Start)+int(r.Count) > len(sh.leaves) {
			rx.mu.Unlock()
			return fmt.Errorf("%w: a same frame names chunks %d to %d of file %d, whose leaves this device did not send",
				wire.ErrProtocol, r.Start, r.Start+r.Count-1, f.idx)
		}
		named += int(r.Count)
	}
	if f.resolved || f.keepSame {
		rx.mu.Unlock()
		return nil
	}
	if named == f.tree.Len() && f.tree.Missing() == f.tree.Len() && f.part == nil && !f.hasRoot {
		for c, leaf := range sh.leaves {
			f.tree.Set(c, leaf)
		}
		f.keepSame = true
		rx.mu.Unlock()
		rx.Bytes.Add(f.entry.Size)
		rx.Kept.Add(f.entry.Size)
		return nil
	}
	leaves := sh.leaves
	rx.mu.Unlock()
	return rx.copySame(ctx, f, runs, leaves)
}

// copySame copies the chunks runs name from the file here under f's name
// into f, each landed as if it had arrived with the leaf this side sent
// for it (landChunk): one that no longer hashes to it, or that cannot be
// read, is asked for again (wire.NeedChunk).
func (rx *receiver) copySame(ctx context.Context, f *rxFile, runs []wire.ZeroRun, leaves []merkle.Hash) error {
	file, _, openErr := rx.Dest.OpenSame(f.entry.Path, f.entry.Size)
	if openErr == nil {
		defer file.Close()
	}
	hasher := merkle.NewHasher()
	for _, r := range runs {
		for c := r.Start; c < r.Start+r.Count; c++ {
			rx.mu.Lock()
			landed := f.resolved || f.tree.Has(int(c))
			rx.mu.Unlock()
			if landed {
				continue
			}
			if openErr != nil {
				if err := rx.ctl.send(&wire.NeedChunk{File: f.idx, Chunk: c}); err != nil {
					return err
				}
				continue
			}
			n := merkle.ChunkLen(f.entry.Size, rx.offer.ChunkSize, int(c))
			buf, err := rx.quota.Get(ctx, rx.offer.ChunkSize)
			if err != nil {
				return nilIfDone(ctx, err)
			}
			if _, err := file.ReadAt(buf[:n], int64(c)*int64(rx.offer.ChunkSize)); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
				rx.quota.Put(buf)
				if err := rx.ctl.send(&wire.NeedChunk{File: f.idx, Chunk: c}); err != nil {
					return err
				}
				continue
			}
			h := wire.DataHeader{File: f.idx, Chunk: c, Length: uint32(n), Leaf: leaves[c]}
			err = rx.landChunk(ctx, f, h, buf[:n], crc32.Checksum(buf[:n], castagnoli), hasher)
			rx.quota.Put(buf)
			if err != nil {
				return err
			}
			rx.mu.Lock()
			kept := f.tree.Has(int(c)) && f.tree.Leaf(int(c)) == leaves[c]
			rx.mu.Unlock()
			if kept {
				rx.Kept.Add(int64(n))
			}
		}
	}
	return nil
}

// keepSame ends a file whose every chunk the file here under its name
// holds (setSame): once the root verifies its leaves, the file here is
// read once more against them, and kept when it still holds them. When it
// changed meanwhile, every chunk is asked for again and the file is saved
// as any other (beside it, numbered).
func (rx *receiver) keepSame(ctx context.Context, f *rxFile) {
	root, _ := f.tree.Root()
	if root != f.root {
		rx.Kept.Add(-f.entry.Size) // counted as its same frame came: none of it is kept
		rx.resolve(f, false, "", wire.CodeVerifyFailed, "the file's BLAKE3 root does not match the sender's")
		return
	}
	file, savedAs, err := rx.Dest.OpenSame(f.entry.Path, f.entry.Size)
	if err == nil {
		same := rx.holdsFile(ctx, file, f)
		file.Close()
		if same {
			rx.mu.Lock()
			f.kept = true
			rx.mu.Unlock()
			rx.resolve(f, true, savedAs, "", "")
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	rx.e.log.Info("a file here changed as it was found the same as one sent: fetching it", "file", f.entry.Path)
	rx.mu.Lock()
	f.keepSame, f.finalizing = false, false
	f.tree = merkle.NewTree(f.tree.Len())
	rx.mu.Unlock()
	rx.Bytes.Add(-f.entry.Size)
	rx.Kept.Add(-f.entry.Size)
	for c := range f.tree.Len() {
		if err := rx.ctl.send(&wire.NeedChunk{File: f.idx, Chunk: uint32(c)}); err != nil {
			rx.t.cancel(err)
			return
		}
	}
}
