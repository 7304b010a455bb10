package localsend

import (
	"io"
	"sync"
	"sync/atomic"
)

// An upload's body is copied into its sink in pieces of uploadPiece bytes,
// read and written by the upload's own goroutine, one after the other, as
// a plain server's io.Copy does: an HTTPS body reads a TLS record (16 KiB)
// at a time, and each piece collects a few of them for one write.
//
// The sink writes through the page cache (fileio.Cached), where a write is
// a copy, and the connection's socket buffer already lets the sender run
// ahead of the reads; a goroutine writing beside the reads only added what
// was left to write when the body ended, which the sender waits for (its
// answer follows the saved file), hand-offs, and writes from buffers long
// out of the CPU's caches. Until 2026-12-02 the next 1 MiB buffers were
// read while one was written, for the direct writes of the time, which
// returned only once the device had the bytes; a 2 MiB upload then waited
// for its last MiB to be written after its body ended (docs/localsend.md,
// "Many small files").

// uploadPiece is what one write hands the sink (but an upload's last):
// each write also costs the sink a few system calls (its checks that the
// file is still inside the destination), so not much less. It is all an
// upload holds while it runs, so a sender that stalls halfway holds it
// and no more.
const uploadPiece = 128 << 10

// uploadBuffers lends the uploads their buffers, one each, reused. The
// zero value is ready to use.
type uploadBuffers struct {
	pool sync.Pool    // of *[]byte
	lent atomic.Int64 // buffers lent now
}

// out is how many buffers are lent now.
func (u *uploadBuffers) out() int { return int(u.lent.Load()) }

func (u *uploadBuffers) get() *[]byte {
	u.lent.Add(1)
	if b, ok := u.pool.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, uploadPiece)
	return &b
}

func (u *uploadBuffers) put(b *[]byte) {
	u.pool.Put(b)
	u.lent.Add(-1)
}

// copy copies src to w in pieces of uploadPiece bytes (the last one
// shorter), each written once it is read; it returns the bytes w took and
// the first error of either side (io.EOF is not one).
func (u *uploadBuffers) copy(w io.Writer, src io.Reader) (int64, error) {
	b := u.get()
	defer u.put(b)
	buf := *b
	var n int64
	for {
		m, rerr := io.ReadFull(src, buf)
		if m > 0 {
			k, err := w.Write(buf[:m])
			n += int64(k)
			if err != nil {
				return n, err
			}
		}
		switch rerr {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			return n, nil
		default:
			return n, rerr
		}
	}
}
