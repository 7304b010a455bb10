package localsend

import (
	"context"
	"io"
	"runtime/trace"
	"sync"
	"sync/atomic"

	"github.com/ferrydrop/ferry/internal/directio"
)

// An upload's body is copied into its sink in whole buffers: an HTTPS body
// reads a TLS record (16 KiB) at a time, and a sink handed those writes
// each at once gets short, unaligned writes, which the store puts through
// the page cache with write-behind; a full, aligned buffer at an aligned
// offset is one direct write (package fileio). A direct write returns only
// once the device has the bytes, so reading and writing run side by side:
// one goroutine fills buffers while another writes the full ones, in
// order. Without that, an upload (the official app sends one file at a
// time) waited for the disk between its reads and ran at 0.60 of a plain
// upload into the page cache (docs/localsend.md, "Figures").
//
// The sender waits for the answer to each upload, and the answer waits for
// the last write (the file is saved before it is answered): the write of
// whatever is still unwritten when the body ends is a drain no read
// overlaps (the trace region traceDrain). It is most of what a small
// upload waits for beyond a plain upload into the page cache; smaller
// pieces for small uploads shortened it but cost more CPU than they saved
// (docs/localsend.md, "Figures").

const (
	// uploadBuffer is the size of one shared buffer: one direct write.
	uploadBuffer = 1 << 20
	// uploadDepth is the most buffers one upload holds: one being
	// written, the others being filled.
	uploadDepth = 3
	// uploadBufferMemory bounds the shared buffers of all uploads
	// together. An upload never waits for one: it takes them as it needs
	// them while any is free, and one that finds none copies through a
	// small buffer of its own (ownBuffer), without reading ahead, as all
	// uploads did before. So senders that stall halfway hold at most this
	// much more than that, and keep no one else from uploading.
	uploadBufferMemory = 48 << 20
	// ownBuffer is the buffer of an upload that found no shared one.
	ownBuffer = 256 << 10
)

// uploadBuffers hands out the uploads' shared buffers within
// uploadBufferMemory. The zero value is ready to use.
type uploadBuffers struct {
	once  sync.Once
	slots chan struct{} // one per buffer handed out
	pool  sync.Pool     // of *[]byte, aligned for direct I/O
}

func (u *uploadBuffers) init() {
	u.once.Do(func() { u.slots = make(chan struct{}, uploadBufferMemory/uploadBuffer) })
}

// out is how many shared buffers are handed out.
func (u *uploadBuffers) out() int {
	u.init()
	return len(u.slots)
}

// take gets a shared buffer when one is free.
func (u *uploadBuffers) take() ([]byte, bool) {
	u.init()
	select {
	case u.slots <- struct{}{}:
	default:
		return nil, false
	}
	if b, ok := u.pool.Get().(*[]byte); ok {
		return *b, true
	}
	return directio.Buffer(uploadBuffer), true
}

func (u *uploadBuffers) give(b []byte) {
	b = b[:cap(b)]
	u.pool.Put(&b)
	<-u.slots
}

// copy copies src to w in whole buffers, reading ahead while w writes; it
// returns the bytes w took and the first error of either side (io.EOF
// is not one). The wait for the last writes is traced (traceDrain).
func (u *uploadBuffers) copy(ctx context.Context, w io.Writer, src io.Reader) (int64, error) {
	free := make(chan []byte, uploadDepth)
	shared := 0 // shared buffers this upload holds
	if b, ok := u.take(); ok {
		free <- b
		shared++
	} else {
		free <- directio.Buffer(ownBuffer)
	}
	held := 1
	full := make(chan []byte, uploadDepth)
	var (
		n      int64
		werr   error
		failed atomic.Bool
		done   = make(chan struct{})
	)
	go func() {
		defer close(done)
		for b := range full {
			if werr == nil {
				k, err := w.Write(b)
				n += int64(k)
				if err != nil {
					werr = err
					failed.Store(true)
				}
			}
			free <- b[:cap(b)]
		}
	}()
	var rerr error
	for !failed.Load() {
		var buf []byte
		select {
		case buf = <-free:
		default:
			// All held buffers are full or being written: read ahead into
			// another shared one, if one is free, or wait for ours.
			if shared > 0 && held < uploadDepth {
				if b, ok := u.take(); ok {
					buf = b
					shared++
					held++
				}
			}
			if buf == nil {
				buf = <-free
			}
		}
		m, err := io.ReadFull(src, buf)
		if m > 0 {
			full <- buf[:m]
		} else {
			free <- buf
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			rerr = err
			break
		}
	}
	close(full)
	drain := trace.StartRegion(ctx, traceDrain)
	<-done
	drain.End()
	for range held {
		if b := <-free; cap(b) == uploadBuffer {
			u.give(b)
		}
	}
	if werr != nil {
		return n, werr
	}
	return n, rerr
}
