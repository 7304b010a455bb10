package localsend

import (
	"bytes"
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

// Every write is a whole piece but the last, whatever the reads return.
func TestCopyIsExactInWholePieces(t *testing.T) {
	for _, n := range []int{0, 1, uploadPiece - 1, uploadPiece, uploadPiece + 1, 3*uploadPiece + 5, 16 * uploadPiece} {
		var u uploadBuffers
		src := pattern(n)
		var w recorder
		got, err := u.copy(&w, iotestHalfReader{bytes.NewReader(src)})
		if err != nil || got != int64(n) || !bytes.Equal(w.Bytes(), src) {
			t.Fatalf("%d bytes: copied %d, %v, equal %v", n, got, err, bytes.Equal(w.Bytes(), src))
		}
		for i, s := range w.sizes {
			if s != uploadPiece && i != len(w.sizes)-1 {
				t.Fatalf("%d bytes: write %d of %d was %d bytes, want whole pieces but the last", n, i, len(w.sizes), s)
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

var errStop = errors.New("disk full")

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }

// A piece is written as soon as it is read: what is left to write when
// the body ends (which the sender waits for) is at most a piece, not the
// 1 MiB buffers that were handed on whole before (docs/localsend.md,
// "Many small files").
func TestCopyWritesPiecesAsTheyArrive(t *testing.T) {
	var u uploadBuffers
	wrote := make(chan struct{})
	var once sync.Once
	w := writerFunc(func(b []byte) (int, error) {
		once.Do(func() { close(wrote) })
		return len(b), nil
	})
	reads := 0
	src := readerFunc(func(b []byte) (int, error) {
		reads++
		switch reads {
		case 1:
			return copy(b, pattern(uploadPiece)), nil
		case 2: // the sender waits for the first piece to be written
			select {
			case <-wrote:
				return 0, io.EOF
			case <-time.After(10 * time.Second):
				return 0, errors.New("the first piece was not written while the body went on")
			}
		}
		return 0, io.EOF
	})
	if n, err := u.copy(w, src); err != nil || n != uploadPiece {
		t.Fatalf("copied %d bytes, %v; want %d", n, err, uploadPiece)
	}
}

// Nothing more is read while a piece is being written, and a failed write
// ends the copy with the writer's error: the bytes read stay one piece.
func TestCopyReadsNoFurtherThanAPiece(t *testing.T) {
	var u uploadBuffers
	src := &counter{}
	unblock := make(chan struct{})
	w := writerFunc(func(b []byte) (int, error) {
		<-unblock
		return 0, errStop
	})
	ended := make(chan error, 1)
	go func() {
		_, err := u.copy(w, iotestHalfReader{src})
		ended <- err
	}()
	testutil.WaitFor(t, "the first piece to be read", func() bool { return src.n.Load() >= uploadPiece })
	time.Sleep(50 * time.Millisecond) // room to run further, were it reading ahead
	if n := src.n.Load(); n != uploadPiece {
		t.Errorf("read %d bytes while the first piece was being written, want %d", n, uploadPiece)
	}
	close(unblock)
	if err := <-ended; !errors.Is(err, errStop) {
		t.Fatalf("copy ended with %v, want the writer's error", err)
	}
	if n := src.n.Load(); n != uploadPiece {
		t.Errorf("read %d bytes in all, want %d: a failed write ends the reading", n, uploadPiece)
	}
	if u.out() != 0 {
		t.Fatalf("%d buffers not given back", u.out())
	}
}

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
	n, err := u.copy(&w, &failingReader{after: uploadPiece + 10})
	if err == nil || err.Error() != "connection reset" {
		t.Fatalf("copy ended with %v, want the reader's error", err)
	}
	if n != uploadPiece+10 || w.Len() != uploadPiece+10 {
		t.Fatalf("the writer took %d (%d) bytes, want what was read before the error", n, w.Len())
	}
}

// A sender that stalls halfway holds its upload's one buffer and no more:
// many of them cost a piece each, and keep nobody else waiting.
func TestStalledUploadsHoldOnePieceEach(t *testing.T) {
	var u uploadBuffers
	const stalled = 40
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range stalled {
		pr, pw := io.Pipe()
		wg.Add(1)
		go func() {
			defer wg.Done()
			u.copy(io.Discard, pr)
		}()
		go func() {
			pw.Write([]byte("half"))
			<-release
			pw.Close()
		}()
	}
	testutil.WaitFor(t, "the stalled uploads to take their buffers", func() bool { return u.out() >= stalled })
	if n := u.out(); n != stalled {
		t.Fatalf("%d stalled uploads hold %d buffers, want one each", stalled, n)
	}
	src := pattern(4 * uploadPiece)
	var w recorder
	if n, err := u.copy(&w, bytes.NewReader(src)); err != nil || n != int64(len(src)) || !bytes.Equal(w.Bytes(), src) {
		t.Fatalf("an upload beside stalled ones: %d, %v", n, err)
	}
	close(release)
	wg.Wait()
	if u.out() != 0 {
		t.Fatalf("%d buffers not given back", u.out())
	}
}
