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
	if j.h.Length > inlineChunk {
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

func chunkOf(file uint32, n int) landing {
	return landing{h: wire.DataHeader{File: file, Length: uint32(n)}, buf: make([]byte, n)}
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
