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
// the sender's first ones are open, and whose peer does not take some of
// the streams added then: a listener sheds the handshakes one address has
// beyond its bound, as a receiver did in the lab when a TCP session grew
// from 4 to 26 connections at once.
type growingConn struct {
	*pipeConn
	first  int // opens before the growth: the control stream and the first data streams
	advice chan transport.Advice

	mu     sync.Mutex // guards the fields below
	opens  int
	failed int
}

var errShed = errors.New("the listener shed the handshake")

func (c *growingConn) OpenStream(ctx context.Context) (Stream, error) {
	c.mu.Lock()
	c.opens++
	n := c.opens
	if n == c.first {
		c.advice <- transport.Advice{Streams: maxSendStreams, Flows: maxSendStreams, Reason: "test"}
	}
	shed := n > c.first && n%3 != 0
	if shed {
		c.failed++
	}
	c.mu.Unlock()
	if shed {
		return nil, errShed
	}
	return c.pipeConn.OpenStream(ctx)
}

func (c *growingConn) DataStreams() int                        { return 0 }
func (c *growingConn) StreamsAdvised() <-chan transport.Advice { return c.advice }

// A stream added when the session grew that does not open costs that
// flow, not the transfer: the batch goes on over the streams it has.
func TestGrowthSurvivesStreamsNotOpened(t *testing.T) {
	recv := testEngine(t, Options{})
	send := testEngine(t, Options{ChunkSize: 64 << 10})
	pc, srv := newPipeConns(send.ident.ID, recv.ident.ID)
	cli := &growingConn{pipeConn: pc, first: 1 + defaultQUICStreams, advice: make(chan transport.Advice, 1)}
	served := make(chan struct{})
	go func() { defer close(served); recv.serve(context.Background(), srv) }()
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "d", "a.bin"), 4<<20) // 64 chunks: every first stream takes one
	files, err := buildManifest([]string{filepath.Join(src, "d")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := &Transfer{id: "grow", dir: Sending, done: make(chan struct{}), started: time.Now()}
	tx := &sender{e: send, t: tr, files: files, chunkSize: 64 << 10}
	err = tx.session(ctx, cli, "test", "", SendOptions{})
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
