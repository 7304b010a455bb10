// Package pack compresses chunks for the wire where the link, not the
// CPU, is what a transfer waits on, and decompresses them on the way in
// within the bounds of the chunk they stand for.
//
// It uses zstd at its fastest level (github.com/klauspost/compress/zstd:
// pure Go, no cgo, already in the module graph through quic-go's
// dependencies). On this project's VM that level packs Go source at
// about 240 MB/s per core into a quarter of its size and unpacks it at
// about 830 MB/s; data that does not compress (photos, video, archives)
// is given up on at several GB/s. So it pays on Wi-Fi and slower links
// and costs on a fast local one: Gate decides, session by session.
package pack

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Mode says when a sender packs chunks.
type Mode int

const (
	// Auto packs while the link is what the sender waits on and slower
	// than packing (Gate).
	Auto Mode = iota
	// Always packs every chunk that compresses (tests, benchmarks).
	Always
	// Never packs nothing.
	Never
)

// ParseMode reads a mode as a user or a test spells it: "auto" (or ""),
// "always", "never".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "auto":
		return Auto, nil
	case "always", "on":
		return Always, nil
	case "never", "off":
		return Never, nil
	}
	return Auto, fmt.Errorf("compression %q: want auto, always or never", s)
}

// MinLen is the smallest chunk worth packing: below it the frame's own
// bytes eat what little is saved.
const MinLen = 256

// ErrUnpack is a packed payload that is not the chunk it claims to be:
// not zstd, or not exactly the chunk's length once unpacked.
var ErrUnpack = errors.New("packed chunk does not unpack to its length")

// Codec packs and unpacks chunks; one serves every session of an engine,
// its encoders and decoders shared (at most one each per CPU). Its zero
// value is ready; nothing is allocated until it is used, and it needs no
// Close: used whole-chunk only (EncodeAll, DecodeAll), zstd starts no
// goroutine (TestCodecStartsNoGoroutine) and the collector takes it.
type Codec struct {
	encOnce sync.Once
	enc     *zstd.Encoder
	encErr  error
	decOnce sync.Once
	dec     *zstd.Decoder
	decErr  error
	// MaxLen bounds what a payload may unpack to (0: 4 MiB).
	MaxLen int
}

func (c *Codec) encoder() (*zstd.Encoder, error) {
	c.encOnce.Do(func() {
		c.enc, c.encErr = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithEncoderCRC(false), // every chunk is verified by its BLAKE3 leaf
			zstd.WithWindowSize(c.maxLen()),
			zstd.WithZeroFrames(true),
		)
	})
	return c.enc, c.encErr
}

func (c *Codec) decoder() (*zstd.Decoder, error) {
	c.decOnce.Do(func() {
		c.dec, c.decErr = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(c.maxLen())),
			zstd.WithDecoderMaxWindow(uint64(c.maxLen())),
			zstd.WithDecodeAllCapLimit(true), // never more than dst's room
		)
	})
	return c.dec, c.decErr
}

func (c *Codec) maxLen() int {
	if c.MaxLen > 0 {
		return c.MaxLen
	}
	return 4 << 20
}

// Pack compresses src into dst's room (dst[:0]) and returns the packed
// bytes, or ok false when src is shorter than MinLen or does not shrink
// by at least an eighth (it then travels as it is).
func (c *Codec) Pack(dst, src []byte) (packed []byte, ok bool) {
	if len(src) < MinLen || len(src) > c.maxLen() {
		return nil, false
	}
	enc, err := c.encoder()
	if err != nil {
		return nil, false
	}
	out := enc.EncodeAll(src, dst[:0])
	if len(out) > len(src)-len(src)/8 {
		return nil, false
	}
	return out, true
}

// Unpack decompresses src into dst, which must be exactly the chunk's
// length: anything else (not zstd, shorter, longer) is ErrUnpack, and
// nothing beyond dst is ever written or allocated for the output.
func (c *Codec) Unpack(dst, src []byte) error {
	if len(dst) == 0 || len(dst) > c.maxLen() {
		return fmt.Errorf("%w: a chunk of %d bytes", ErrUnpack, len(dst))
	}
	dec, err := c.decoder()
	if err != nil {
		return err
	}
	out, err := dec.DecodeAll(src, dst[:0:len(dst)])
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnpack, err)
	}
	if len(out) != len(dst) {
		return fmt.Errorf("%w: %d bytes, want %d", ErrUnpack, len(out), len(dst))
	}
	if &out[0] != &dst[0] {
		copy(dst, out) // not reached with the cap limit; kept exact anyway
	}
	return nil
}
