package engine

import (
	"fmt"
	"io"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/wire"
)

// discardStream takes whatever is written to it and has nothing to read.
type discardStream struct{}

func (discardStream) Read([]byte) (int, error)    { return 0, io.EOF }
func (discardStream) Write(p []byte) (int, error) { return len(p), nil }
func (discardStream) Close() error                { return nil }
func (discardStream) Abort()                      {}

// A receiver killed while the sender was still writing its offer (a folder
// of 2000 files is several messages) resets the connection, which the read
// of its answer sees first: the offer then ends with that lost connection,
// which the send retries. It ended with "Protocol violation: the receiver
// answered before the whole offer was sent", which is not retried: ferry-cli
// send exited 1 in a kill -9 torture run of its receiver. An answer that
// came part-way is still that violation.
func TestConnectionLostWhileOfferingIsRetried(t *testing.T) {
	send := testEngine(t, Options{ChunkSize: 4096})
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "d", "a.bin"), 3*4096)
	files, err := buildManifest([]string{filepath.Join(src, "d")})
	if err != nil {
		t.Fatal(err)
	}
	reset := fmt.Errorf("waiting for the receiver: %w", syscall.ECONNRESET)
	for _, c := range []struct {
		name      string
		answer    offerAnswer
		retryable bool
	}{
		{"connection reset", offerAnswer{err: reset}, true},
		{"accepted part-way", offerAnswer{d: &wire.Decision{Accept: true}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tx := &sender{e: send, t: &Transfer{id: "lost", dir: Sending, done: make(chan struct{})}, files: files, chunkSize: 4096,
				ctl: newControl(discardStream{})}
			answered := make(chan offerAnswer, 1)
			answered <- c.answer
			err := tx.offer(answered)
			if err == nil {
				t.Fatal("the offer was written whole after the receiver's end was read")
			}
			if got := core.Retryable(err); got != c.retryable {
				t.Errorf("the offer ended with %q, retried: %v, want %v", err, got, c.retryable)
			}
			if len(answered) != 1 {
				t.Error("the answer was not left for offerAndDecision")
			}
		})
	}
}
