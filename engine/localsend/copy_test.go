package localsend

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// recorder keeps what it is written, and the size of each write.
type recorder struct {
	bytes.Buffer
	sizes []int
}

func (r *recorder) Write(b []byte) (int, error) {
	r.sizes = append(r.sizes, len(b))
	return r.Buffer.Write(b)
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + i>>11)
	}
	return b
}

func TestCopyIsExactInWholeBuffers(t *testing.T) {
	for _, n := range []int{0, 1, uploadBuffer - 1, uploadBuffer, uploadBuffer + 1, 3*uploadBuffer + 5, 7 * uploadBuffer} {
		var u uploadBuffers
		src := pattern(n)
		var w recorder
		got, err := u.copy(context.Background(), &w, iotestHalfReader{bytes.NewReader(src)})
		if err != nil || got != int64(n) || !bytes.Equal(w.Bytes(), src) {
			t.Fatalf("%d bytes: copied %d, %v, equal %v", n, got, err, bytes.Equal(w.Bytes(), src))
		}
		for i, s := range w.sizes {
			if s != uploadBuffer && i != len(w.sizes)-1 {
				t.Fatalf("%d bytes: write %d of %d was %d bytes, want whole buffers but the last", n, i, len(w.sizes), s)
			}
		}
		if u.out() != 0 {
			t.Fatalf("%d bytes: %d buffers not given back", n, u.out())
		}
	}
}

// iotestHalfReader returns at most 16 KiB per Read, as a TLS body does.
type iotestHalfReader struct{ r io.Reader }

func (h iotestHalfReader) Read(b []byte) (int, error) { return h.r.Read(b[:min(len(b), 16<<10)]) }

// counter is an endless source that counts what was read.
type counter struct{ n atomic.Int64 }

func (c *counter) Read(b []byte) (int, error) {
	c.n.Add(int64(len(b)))
	return len(b), nil
}

// The next buffers are read while one is being written: a direct write
// waits for the device, and an upload that read only after each write
// waited for it between reads.
func TestCopyReadsWhileItWrites(t *testing.T) {
	var u uploadBuffers
	src := &counter{}
	var writes int
	w := writerFunc(func(b []byte) (int, error) {
		writes++
		if writes == 1 {
			deadline := time.Now().Add(10 * time.Second)
			for src.n.Load() < int64(uploadDepth)*uploadBuffer {
				if time.Now().After(deadline) {
					return 0, errors.New("nothing was read while the first buffer was written")
				}
				time.Sleep(time.Millisecond)
			}
		}
		if writes == 4 {
			return 0, errStop
		}
		return len(b), nil
	})
	n, err := u.copy(context.Background(), w, src)
	if !errors.Is(err, errStop) {
		t.Fatalf("copy ended with %v after %d bytes, want the writer's error", err, n)
	}
	if n != 3*uploadBuffer {
		t.Fatalf("the writer took %d bytes, want %d", n, 3*uploadBuffer)
	}
	// A failed write stops the reading: at most the buffers in hand more.
	if r := src.n.Load(); r > int64(4+uploadDepth)*uploadBuffer {
		t.Fatalf("%d bytes read after the writer failed at %d", r, 4*uploadBuffer)
	}
	if u.out() != 0 {
		t.Fatalf("%d buffers not given back", u.out())
	}
}

var errStop = errors.New("disk full")

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

type failingReader struct{ after int }

func (f *failingReader) Read(b []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("connection reset")
	}
	n := min(len(b), f.after)
	f.after -= n
	return n, nil
}

func TestCopyReturnsTheReadError(t *testing.T) {
	var u uploadBuffers
	var w recorder
	n, err := u.copy(context.Background(), &w, &failingReader{after: uploadBuffer + 10})
	if err == nil || err.Error() != "connection reset" {
		t.Fatalf("copy ended with %v, want the reader's error", err)
	}
	if n != uploadBuffer+10 || w.Len() != uploadBuffer+10 {
		t.Fatalf("the writer took %d (%d) bytes, want what was read before the error", n, w.Len())
	}
}

// All uploads together hold at most uploadBufferMemory of shared buffers,
// and none waits for one: an upload that finds none free copies through a
// small one of its own, without reading ahead.
func TestCopyBuffersAreBounded(t *testing.T) {
	var u uploadBuffers
	var held [][]byte
	for {
		b, ok := u.take()
		if !ok {
			break
		}
		held = append(held, b)
	}
	if len(held) != uploadBufferMemory/uploadBuffer {
		t.Fatalf("%d buffers handed out, want %d", len(held), uploadBufferMemory/uploadBuffer)
	}
	src := pattern(5*uploadBuffer + 3)
	var w recorder
	if n, err := u.copy(context.Background(), &w, iotestHalfReader{bytes.NewReader(src)}); err != nil || n != int64(len(src)) || !bytes.Equal(w.Bytes(), src) {
		t.Fatalf("an upload with no shared buffer free: %d, %v", n, err)
	}
	for i, s := range w.sizes {
		if s != ownBuffer && i != len(w.sizes)-1 {
			t.Fatalf("write %d was %d bytes, want the upload's own %d", i, s, ownBuffer)
		}
	}
	if u.out() != len(held) {
		t.Fatalf("%d buffers out, want the %d held", u.out(), len(held))
	}
	// One free: the upload takes it and reads ahead into no other.
	u.give(held[0])
	held = held[1:]
	w = recorder{}
	if n, err := u.copy(context.Background(), &w, bytes.NewReader(src)); err != nil || n != int64(len(src)) || !bytes.Equal(w.Bytes(), src) {
		t.Fatalf("an upload with one shared buffer free: %d, %v", n, err)
	}
	if u.out() != len(held) {
		t.Fatalf("%d buffers out, want the %d held", u.out(), len(held))
	}
	for _, b := range held {
		u.give(b)
	}
}

// A sender that stalls halfway holds the buffers it filled and no more:
// many of them leave the shared buffers to others, and nobody waits.
func TestStalledUploadsHoldFewBuffers(t *testing.T) {
	var u uploadBuffers
	const stalled = 40
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range stalled {
		pr, pw := io.Pipe()
		wg.Add(1)
		go func() {
			defer wg.Done()
			u.copy(context.Background(), io.Discard, pr)
		}()
		go func() {
			pw.Write([]byte("half"))
			<-release
			pw.Close()
		}()
	}
	testutil.WaitFor(t, "the stalled uploads to take their buffers", func() bool { return u.out() >= stalled })
	if n := u.out(); n != stalled {
		t.Fatalf("%d stalled uploads hold %d shared buffers, want one each", stalled, n)
	}
	src := pattern(4 * uploadBuffer)
	var w recorder
	if n, err := u.copy(context.Background(), &w, bytes.NewReader(src)); err != nil || n != int64(len(src)) || !bytes.Equal(w.Bytes(), src) {
		t.Fatalf("an upload beside stalled ones: %d, %v", n, err)
	}
	close(release)
	wg.Wait()
	if u.out() != 0 {
		t.Fatalf("%d buffers not given back", u.out())
	}
}
