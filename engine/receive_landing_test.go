package engine

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
)

// landingLog records what a streamLanding landed and gave back; a large
// chunk's landing waits until hold is closed.
type landingLog struct {
	mu     sync.Mutex
	landed []uint32 // file indexes, in the order landed
	put    int
	hold   chan struct{}
	inBig  chan struct{} // closed when the first large chunk's landing starts
	once   sync.Once
	failOn uint32 // landing the file of this index fails (0: none)
}

func newLandingLog() *landingLog {
	return &landingLog{hold: make(chan struct{}), inBig: make(chan struct{})}
}

func (g *landingLog) land(j landing, _ *merkle.Hasher) error {
	if !inlineLanding(j) {
		g.once.Do(func() { close(g.inBig) })
		<-g.hold
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failOn != 0 && j.h.File == g.failOn {
		return errors.New("disk full")
	}
	g.landed = append(g.landed, j.h.File)
	return nil
}

func (g *landingLog) give(buf []byte) {
	g.mu.Lock()
	g.put++
	g.mu.Unlock()
}

func (g *landingLog) counts() (landed, put int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.landed), g.put
}

// chunkOf is a chunk of n bytes that is the whole of its file.
func chunkOf(file uint32, n int) landing {
	return landing{f: &rxFile{entry: wire.FileEntry{Size: int64(n)}}, h: wire.DataHeader{File: file, Length: uint32(n)}, buf: make([]byte, n)}
}

// The last piece of a large file goes to the lander, small as it is: the
// reader does not wait for the file's direct writes (their lock) to write
// it. While the lander is held, whole small files land at once, the piece
// waits its turn.
func TestLastPieceOfALargeFileGoesToTheLander(t *testing.T) {
	g := newLandingLog()
	l := newStreamLanding(g.land, g.give)
	if err := l.add(chunkOf(1, inlineChunk+1)); err != nil {
		t.Fatal(err)
	}
	<-g.inBig
	tail := landing{f: &rxFile{entry: wire.FileEntry{Size: 1<<20 + 100}}, h: wire.DataHeader{File: 2, Chunk: 1, Length: 100}, buf: make([]byte, 100)}
	if err := l.add(tail); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := l.add(chunkOf(uint32(10+i), 100)); err != nil {
			t.Fatal(err)
		}
	}
	g.mu.Lock()
	landed := append([]uint32(nil), g.landed...)
	g.mu.Unlock()
	if len(landed) != 5 {
		t.Fatalf("landed %v while the lander was held, want the 5 small files only", landed)
	}
	for _, f := range landed {
		if f == 2 {
			t.Fatalf("the stream's reader landed the last piece of a large file itself (landed %v)", landed)
		}
	}
	close(g.hold)
	if err := l.wait(); err != nil {
		t.Fatal(err)
	}
	if n, put := g.counts(); n != 7 || put != 7 {
		t.Errorf("landed %d, gave back %d, want 7 and 7", n, put)
	}
}

// While a large chunk's write waits (a direct write waiting for the
// device), the stream's reader goes on: it queues landQueue more large
// chunks without waiting and lands the small ones behind them itself, at
// once. With one place in the queue and small chunks queued behind a busy
// lander, the reader stopped at the second large chunk, and every small
// file behind it waited for the write.
func TestSmallChunksLandWhileALargeOneWaits(t *testing.T) {
	g := newLandingLog()
	l := newStreamLanding(g.land, g.give)
	read := make(chan struct{})
	go func() {
		defer close(read)
		for i := range landQueue + 1 {
			if err := l.add(chunkOf(uint32(100+i), inlineChunk+1)); err != nil {
				t.Error(err)
			}
		}
		for i := range 50 {
			if err := l.add(chunkOf(uint32(i+1), 3000)); err != nil {
				t.Error(err)
			}
		}
	}()
	<-g.inBig
	select {
	case <-read:
	case <-time.After(time.Minute):
		close(g.hold)
		t.Fatal("the stream's reader waited for a large chunk's write")
	}
	if landed, _ := g.counts(); landed != 50 {
		t.Errorf("%d chunks landed while the large one's write waited, want the 50 small ones", landed)
	}
	close(g.hold)
	if err := l.wait(); err != nil {
		t.Fatal(err)
	}
	landed, put := g.counts()
	if landed != 50+landQueue+1 || put != landed {
		t.Errorf("%d chunks landed and %d buffers given back, want %d of each", landed, put, 50+landQueue+1)
	}
	if l.failed.Load() {
		t.Error("failed set without an error")
	}
}

// A large chunk that fails to land ends the stream's landing with its
// error: the reader sees failed, the chunks queued behind it are not landed
// but their buffers go back, and wait returns the error.
func TestStreamLandingLargeChunkFails(t *testing.T) {
	g := newLandingLog()
	g.failOn = 7
	close(g.hold)
	l := newStreamLanding(g.land, g.give)
	if err := l.add(chunkOf(7, inlineChunk+1)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := l.add(chunkOf(uint32(8+i), inlineChunk+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.wait(); err == nil || err.Error() != "disk full" {
		t.Fatalf("wait: %v, want the lander's error", err)
	}
	if !l.failed.Load() {
		t.Error("failed not set after a landing failed")
	}
	if landed, put := g.counts(); landed != 0 || put != 4 {
		t.Errorf("%d chunks landed after the failure and %d buffers given back, want 0 and 4", landed, put)
	}
}

// A small chunk that fails to land fails add itself, and its buffer goes
// back.
func TestStreamLandingSmallChunkFails(t *testing.T) {
	g := newLandingLog()
	g.failOn = 3
	l := newStreamLanding(g.land, g.give)
	if err := l.add(chunkOf(3, 100)); err == nil {
		t.Fatal("add of a chunk that failed to land returned nil")
	}
	if !l.failed.Load() {
		t.Error("failed not set after a landing failed")
	}
	if err := l.wait(); err != nil {
		t.Fatalf("wait: %v; the lander had nothing to land", err)
	}
	if _, put := g.counts(); put != 1 {
		t.Errorf("%d buffers given back, want 1", put)
	}
}

// Large chunks handed to the lander hold at most landQueueBytes: with 1 MiB
// chunks the reader stops at the fourth while the first one's write waits,
// so a large file's chunks are hashed soon after they arrive, and goes on
// once that write ended.
func TestLandingQueueBoundedInBytes(t *testing.T) {
	g := newLandingLog()
	l := newStreamLanding(g.land, g.give)
	const chunk = 1 << 20
	fits := landQueueBytes / chunk
	for i := range fits {
		if err := l.add(chunkOf(uint32(100+i), chunk)); err != nil {
			t.Fatal(err)
		}
	}
	<-g.inBig
	next := make(chan struct{})
	go func() {
		defer close(next)
		if err := l.add(chunkOf(200, chunk)); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-next:
		t.Errorf("a chunk beyond %d bytes of chunks waiting for the lander was queued", landQueueBytes)
	case <-time.After(50 * time.Millisecond):
	}
	close(g.hold)
	<-next
	if err := l.wait(); err != nil {
		t.Fatal(err)
	}
	if landed, put := g.counts(); landed != fits+1 || put != landed {
		t.Errorf("%d chunks landed and %d buffers given back, want %d of each", landed, put, fits+1)
	}
}
