package localsend

import (
	"context"
	"io"
	"runtime/trace"
	"sync"
	"sync/atomic"

	"github.com/ferrydrop/ferry/internal/directio"
)

// An upload's body is copied into its sink in pieces: an HTTPS body reads
// a TLS record (16 KiB) at a time, and the reader hands on what it read in
// whole uploadPiece multiples (aligned, as a direct write needs: package
// fileio), or the rest when its buffer is full or the body ends. Reading
// and writing run side by side, one goroutine reading (and decrypting)
// while another writes, in order.
//
// The sender waits for the answer to each upload, and the answer waits for
// the last write (the file is saved before it is answered): the writes
// still to do when the body ends are a drain no read overlaps (the trace
// region traceDrain). So the reader runs at most uploadLag pieces ahead of
// the writer. Handing on whole 1 MiB buffers, as this did for direct
// writes (which return only once the device has the bytes), a 2 MiB
// upload's last MiB or more was written after its body ended, most of
// what it waited for beyond a plain upload into the page cache, and the
// writes copied from buffers long out of the CPU's caches
// (docs/localsend.md, "Many small files"). LocalSend uploads are written
// through the page cache (fileio.Cached), where a write is a copy.

const (
	// uploadBuffer is the size of one shared buffer.
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
	// uploadPiece is what the reader hands on at least (but for a
	// buffer's or the body's last bytes): the write that can be left when
	// the body ends. Each write costs the sink a few system calls (its
	// checks that the file is still inside the destination), so not less.
	uploadPiece = 128 << 10
	// uploadLag is how many pieces may wait for the writer beside the one
	// being written: the reader waits rather than run further ahead, so
	// what is left when the body ends is at most uploadLag+1 pieces, and
	// the bytes are written while they are still in the CPU's caches.
	uploadLag = 1
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

// piece is part of a buffer for the writer: b[lo:hi]; last gives b back.
type piece struct {
	b      []byte
	lo, hi int
	last   bool
}

// copy copies src to w, reading ahead while w writes; it returns the bytes
// w took and the first error of either side (io.EOF is not one). The reads
// fill a buffer and hand it on in pieces of whole uploadPiece multiples as
// they arrive, and the rest when it is full or the body ends. The wait for
// the last writes is traced (traceDrain).
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
	full := make(chan piece, uploadLag)
	var (
		n      int64
		werr   error
		failed atomic.Bool
		done   = make(chan struct{})
	)
	go func() {
		defer close(done)
		for p := range full {
			if werr == nil && p.hi > p.lo {
				k, err := w.Write(p.b[p.lo:p.hi])
				n += int64(k)
				if err != nil {
					werr = err
					failed.Store(true)
				}
			}
			if p.last {
				free <- p.b[:cap(p.b)]
			}
		}
	}()
	var rerr error
	for end := false; !end && !failed.Load(); {
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
		filled, sent := 0, 0
		for filled < len(buf) && !failed.Load() {
			m, err := src.Read(buf[filled:])
			filled += m
			if err != nil {
				if err != io.EOF {
					rerr = err
				}
				end = true
				break
			}
			if k := (filled - sent) / uploadPiece * uploadPiece; k > 0 && filled < len(buf) {
				full <- piece{b: buf, lo: sent, hi: sent + k}
				sent += k
			}
		}
		full <- piece{b: buf, lo: sent, hi: filled, last: true}
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
