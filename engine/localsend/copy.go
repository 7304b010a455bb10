package localsend

import (
	"context"
	"io"
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

const (
	// uploadBuffer is the size of one buffer: one direct write.
	uploadBuffer = 1 << 20
	// uploadDepth is the most buffers one upload holds: one being
	// written, the others being filled.
	uploadDepth = 3
	// uploadBufferMemory bounds the buffers of all uploads together; an
	// upload that finds none free waits for one, and one that finds only
	// one copies without reading ahead.
	uploadBufferMemory = 48 << 20
)

// uploadBuffers hands out the uploads' buffers within uploadBufferMemory.
// The zero value is ready to use.
type uploadBuffers struct {
	once  sync.Once
	slots chan struct{} // one per buffer handed out
	pool  sync.Pool     // of *[]byte, aligned for direct I/O
}

func (u *uploadBuffers) init() {
	u.once.Do(func() { u.slots = make(chan struct{}, uploadBufferMemory/uploadBuffer) })
}

// take gets a buffer: waiting for one when wait is set (until ctx ends),
// otherwise only when one is free at once.
func (u *uploadBuffers) take(ctx context.Context, wait bool) ([]byte, bool) {
	u.init()
	if wait {
		select {
		case u.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, false
		}
	} else {
		select {
		case u.slots <- struct{}{}:
		default:
			return nil, false
		}
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
// is not one).
func (u *uploadBuffers) copy(ctx context.Context, w io.Writer, src io.Reader) (int64, error) {
	first, ok := u.take(ctx, true)
	if !ok {
		return 0, ctx.Err()
	}
	free := make(chan []byte, uploadDepth)
	free <- first
	held := 1
	for held < uploadDepth {
		b, ok := u.take(ctx, false)
		if !ok {
			break
		}
		free <- b
		held++
	}
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
		buf := <-free
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
	<-done
	for range held {
		u.give(<-free)
	}
	if werr != nil {
		return n, werr
	}
	return n, rerr
}
