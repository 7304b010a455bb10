package engine

// Chunks travel compressed to a receiver that takes them
// (wire.FeaturePacked), where the link is what a send waits on and slower
// than compressing (package pack: zstd at its fastest, a Gate per
// session). A chunk is packed after its leaf is taken from its bytes as
// read, and unpacked before anything else sees it on the receiving side:
// the leaf, the CRC32C, the resume state and the file are the chunk's own
// bytes, whatever crossed the wire.

import (
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/pack"
	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
)

// packStream is one data stream's share of packing: the buffer chunks are
// packed into, the last chunk that did not shrink, and how long the
// stream's writes waited on the link.
type packStream struct {
	gate     *pack.Gate
	codec    *pack.Codec
	buf      []byte
	badFile  int // the file of the last chunk that did not shrink (-1: none)
	badChunk int
	blocked  time.Duration // the stream's writes so far (blockedWriter)
}

// packRetry: after a chunk of a file did not shrink, the file's next
// chunks travel as they are until this many chunks later (a photo, a
// video, an archive: tried again now and then, for a file that is
// compressed in parts only).
const packRetry = 16

// packsTo says whether a send to the address remote ("host:port") may
// pack its chunks: not when the engine is told never, nor in auto to a
// receiver on this machine (loopback): there is no link to spare, and the
// receiver's work is on the CPUs that would pack.
func (e *Engine) packsTo(remote string) bool {
	switch e.packMode {
	case pack.Never:
		return false
	case pack.Always:
		return true
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsLoopback()
}

func (tx *sender) newPackStream() *packStream {
	return &packStream{gate: tx.gate, codec: &tx.e.codec, badFile: -1}
}

// worth says whether chunk ci of file fi is worth trying to pack now.
func (ps *packStream) worth(fi, ci int) bool {
	return ps.gate.Packing() && (fi != ps.badFile || ci >= ps.badChunk+packRetry)
}

// pack packs data (chunk ci of file fi), returning the packed bytes, or
// ok false when it travels as it is.
func (ps *packStream) pack(fi, ci int, data []byte) (packed []byte, took time.Duration, ok bool) {
	start := time.Now()
	if ps.buf == nil {
		// Made once the stream first packs: a session that never does (a
		// fast link) holds no buffer for it. Room for a chunk that does
		// not shrink, so it is never made again.
		ps.buf = make([]byte, 0, len(data)+len(data)/64+1024)
	}
	packed, ok = ps.codec.Pack(ps.buf, data)
	if !ok {
		ps.badFile, ps.badChunk = fi, ci
	}
	return packed, time.Since(start), ok
}

// blockedWriter times the writes to a data stream: behind a bufio.Writer,
// the writes of whole buffers, which wait while the link is full.
type blockedWriter struct {
	w  io.Writer
	ps *packStream
}

func (b blockedWriter) Write(p []byte) (int, error) {
	start := time.Now()
	n, err := b.w.Write(p)
	b.ps.blocked += time.Since(start)
	return n, err
}

// readPacked reads a packed chunk's payload (h.Length bytes, fewer than
// the chunk's) into p, the chunk's buffer from the session's quota, and
// unpacks it there, returning the chunk's CRC32C. A payload that does not
// unpack to exactly the chunk is wire.ErrProtocol. Unpacking needs a
// second buffer, taken only for the unpacking itself (the engine's
// unpackSlots, one per CPU), never while the payload comes off the link.
func (rx *receiver) readPacked(r io.Reader, h wire.DataHeader, p []byte) (uint32, error) {
	if _, err := io.ReadFull(r, p[:h.Length]); err != nil {
		return 0, err
	}
	scratch := <-rx.e.unpackSlots
	if cap(scratch) < len(p) {
		scratch = make([]byte, len(p), max(len(p), rx.offer.ChunkSize))
	}
	err := rx.e.codec.Unpack(scratch[:len(p)], p[:h.Length])
	if err == nil {
		copy(p, scratch[:len(p)])
	}
	rx.e.unpackSlots <- scratch
	if err != nil {
		return 0, fmt.Errorf("%w: chunk %d of file %d: %v", wire.ErrProtocol, h.Chunk, h.File, err)
	}
	return crc32.Checksum(p, castagnoli), nil
}

// newUnpackSlots returns the slots readPacked unpacks in: one per CPU,
// each a buffer made at its first use.
func newUnpackSlots() chan []byte {
	slots := make(chan []byte, runtime.GOMAXPROCS(0))
	for range cap(slots) {
		slots <- nil
	}
	return slots
}

// packedFrame checks a packed frame's header: only to a receiver that
// takes them, only for a chunk of the file, and smaller than the chunk.
func (rx *receiver) packedFrame(h wire.DataHeader, size int64) error {
	if !rx.e.speaks(wire.FeaturePacked) {
		return fmt.Errorf("%w: a packed frame, which this receiver does not take", wire.ErrProtocol)
	}
	if h.Chunk >= wire.SameChunk {
		return fmt.Errorf("%w: a packed root, zeros or same frame", wire.ErrProtocol)
	}
	want := merkle.ChunkLen(size, rx.offer.ChunkSize, int(h.Chunk))
	if int(h.Chunk) >= merkle.Chunks(size, rx.offer.ChunkSize) || h.Length == 0 || int(h.Length) >= want {
		return fmt.Errorf("%w: packed chunk %d of file %d has %d bytes; the chunk has %d", wire.ErrProtocol, h.Chunk, h.File, h.Length, want)
	}
	return nil
}
