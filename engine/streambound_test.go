package engine

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/engine/wire"
)

// boundConn is a session that asks for more data streams than any receiver
// takes once the sender's one first data stream is open. The first data
// stream writes nothing until want streams were opened (or a while
// passed), so the batch cannot end before the growth. With legacy set it
// hides the receiver's Hello.DataStreams, as a Ferry from before it sent
// none.
type boundConn struct {
	*pipeConn
	want   int  // data streams the test expects the sender to open
	legacy bool // hide Hello.DataStreams from the sender
	advice chan transport.Advice
	grown  chan struct{}

	mu     sync.Mutex // guards the fields below
	opens  int
	hidden bool // legacy: the hello's data_streams was hidden
}

func (c *boundConn) OpenStream(ctx context.Context) (Stream, error) {
	c.mu.Lock()
	c.opens++
	n := c.opens
	if n == opensBeforeGrowth {
		c.advice <- transport.Advice{Streams: 2 * wire.MaxDataStreams, Flows: 2 * wire.MaxDataStreams, Reason: "test"}
	}
	if n == 1+c.want {
		close(c.grown)
	}
	c.mu.Unlock()
	s, err := c.pipeConn.OpenStream(ctx)
	if err != nil {
		return s, err
	}
	switch {
	case n == 1 && c.legacy:
		return &hidingStream{Stream: s, c: c}, nil
	case n == opensBeforeGrowth:
		return &heldStream{Stream: s, until: c.grown, aborted: make(chan struct{})}, nil
	}
	return s, nil
}

func (c *boundConn) DataStreams() int                        { return 0 }
func (c *boundConn) StreamsAdvised() <-chan transport.Advice { return c.advice }

// hidingStream blanks the data_streams field of what it reads (the
// receiver's hello) with spaces: the frame keeps its length, the JSON its
// meaning but for that field.
type hidingStream struct {
	Stream
	c *boundConn
}

func (s *hidingStream) Read(p []byte) (int, error) {
	n, err := s.Stream.Read(p)
	field := fmt.Appendf(nil, `,"data_streams":%d`, maxDataStreams)
	if i := bytes.Index(p[:n], field); i >= 0 {
		copy(p[i:], bytes.Repeat([]byte(" "), len(field)))
		s.c.mu.Lock()
		s.c.hidden = true
		s.c.mu.Unlock()
	}
	return n, err
}

// A session grows to the data streams the receiver's hello says it takes,
// less the reserve for a switch and re-sends, at most maxSendStreams:
// beyond the 31 every Ferry took before the hello said so. A receiver that says nothing (every Ferry
// before) gets what it always got: 26 to grow to, 31 in all.
func TestSessionGrowsToWhatTheReceiverTakes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		legacy bool
		want   int
	}{
		{"receiver says it takes " + fmt.Sprint(maxDataStreams), false, min(maxDataStreams-sendReserve, maxSendStreams)},
		{"receiver says nothing", true, wire.LegacyDataStreams - sendReserve},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recv := testEngine(t, Options{})
			send := testEngine(t, Options{ChunkSize: 64 << 10})
			pc, srv := newPipeConns(send.ident.ID, recv.ident.ID)
			pc.accept = make(chan Stream, 2*wire.MaxDataStreams)
			srv.accept = make(chan Stream, 2*wire.MaxDataStreams)
			cli := &boundConn{pipeConn: pc, want: tc.want, legacy: tc.legacy, advice: make(chan transport.Advice, 1), grown: make(chan struct{})}
			late := time.AfterFunc(20*time.Second, func() { // fewer streams than want: let the batch end, and the count below tell
				cli.mu.Lock()
				defer cli.mu.Unlock()
				if cli.opens < 1+cli.want {
					close(cli.grown)
					cli.want = -1
				}
			})
			defer late.Stop()
			served := make(chan struct{})
			go func() { defer close(served); recv.serve(context.Background(), srv) }()
			src := t.TempDir()
			writeFile(t, filepath.Join(src, "d", "a.bin"), 8<<20)
			files, err := buildManifest([]string{filepath.Join(src, "d")})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			tr := &Transfer{id: "bound", dir: Sending, done: make(chan struct{}), started: time.Now()}
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
			if tc.legacy && !cli.hidden {
				t.Fatal("the receiver's hello said nothing of its data streams to hide: the test tested nothing")
			}
			got := cli.opens - 1 // less the control stream
			if got != tc.want {
				t.Fatalf("the sender opened %d data streams, want %d", got, tc.want)
			}
			if legacy := wire.LegacyDataStreams - sendReserve; !tc.legacy && got <= legacy {
				t.Fatalf("the sender opened %d data streams to a receiver that takes %d: no more than to one that says nothing (%d)", got, maxDataStreams, legacy)
			}
			sameTree(t, filepath.Join(src, "d"), recv.DownloadDir())
		})
	}
}
