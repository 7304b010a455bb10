package engine

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// growingConn is a session that asks for maxSendStreams data streams once
// the sender's one first data stream is open, and whose peer does not take
// two in three of the streams added then: a listener sheds the handshakes
// one address has beyond its bound, as a receiver did in the lab when a
// TCP session grew from 4 to 26 connections at once. The first data
// stream writes nothing until every added stream was tried, so the batch
// cannot end before the growth.
type growingConn struct {
	*pipeConn
	advice chan transport.Advice
	grown  chan struct{} // closed once every added stream was tried

	mu     sync.Mutex // guards the fields below
	opens  int
	failed int
}

var errShed = errors.New("the listener shed the handshake")

// opensBeforeGrowth are the control stream and the one first data stream.
const opensBeforeGrowth = 2

func (c *growingConn) OpenStream(ctx context.Context) (Stream, error) {
	c.mu.Lock()
	c.opens++
	n := c.opens
	if n == opensBeforeGrowth {
		c.advice <- transport.Advice{Streams: maxSendStreams, Flows: maxSendStreams, Reason: "test"}
	}
	if n == opensBeforeGrowth+maxSendStreams-1 {
		close(c.grown)
	}
	shed := n > opensBeforeGrowth && n%3 != 0
	if shed {
		c.failed++
	}
	c.mu.Unlock()
	if shed {
		return nil, errShed
	}
	s, err := c.pipeConn.OpenStream(ctx)
	if err != nil || n != opensBeforeGrowth {
		return s, err
	}
	return &heldStream{Stream: s, until: c.grown, aborted: make(chan struct{})}, nil
}

func (c *growingConn) DataStreams() int                        { return 0 }
func (c *growingConn) StreamsAdvised() <-chan transport.Advice { return c.advice }

// heldStream writes nothing until until closes (or it is aborted).
type heldStream struct {
	Stream
	until   <-chan struct{}
	aborted chan struct{}
	once    sync.Once
}

func (s *heldStream) Write(p []byte) (int, error) {
	select {
	case <-s.until:
	case <-s.aborted:
	}
	return s.Stream.Write(p)
}

func (s *heldStream) Abort() {
	s.once.Do(func() { close(s.aborted) })
	s.Stream.Abort()
}

// A stream added when the session grew that does not open costs that
// flow, not the transfer: the batch goes on over the streams it has.
func TestGrowthSurvivesStreamsNotOpened(t *testing.T) {
	recv := testEngine(t, Options{})
	send := testEngine(t, Options{ChunkSize: 64 << 10})
	pc, srv := newPipeConns(send.ident.ID, recv.ident.ID)
	cli := &growingConn{pipeConn: pc, advice: make(chan transport.Advice, 1), grown: make(chan struct{})}
	served := make(chan struct{})
	go func() { defer close(served); recv.serve(context.Background(), srv) }()
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "d", "a.bin"), 4<<20)
	files, err := buildManifest([]string{filepath.Join(src, "d")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := &Transfer{id: "grow", dir: Sending, done: make(chan struct{}), started: time.Now()}
	tx := &sender{e: send, t: tr, files: files, chunkSize: 64 << 10}
	err = tx.session(ctx, cli, "test", "", SendOptions{Streams: 1})
	cli.Close(nil)
	<-served
	if err != nil {
		t.Fatalf("the session failed: %v", err)
	}
	if tx.verified.Load() != 1 {
		t.Fatalf("verified %d of 1", tx.verified.Load())
	}
	cli.mu.Lock()
	defer cli.mu.Unlock()
	if cli.failed == 0 {
		t.Fatalf("no added stream was refused (%d opens): the test tested nothing", cli.opens)
	}
	sameTree(t, filepath.Join(src, "d"), recv.DownloadDir())
}
