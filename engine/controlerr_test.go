package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/wire"
)

// failingStream is a control stream whose reads end with err after what
// it holds.
type failingStream struct {
	bytes.Reader
	err error
}

func (s *failingStream) Read(p []byte) (int, error) {
	if s.Reader.Len() > 0 {
		return s.Reader.Read(p)
	}
	return 0, s.err
}
func (s *failingStream) Write(p []byte) (int, error) { return len(p), nil }
func (s *failingStream) Close() error                { return nil }
func (s *failingStream) Abort()                      {}

// The connection's end read on the control stream (lost, silent, ended
// by the relay's word) reads as the session's end, as it does when a data
// stream read it first: "The connection went silent for 10s: …", where the
// line read "Control stream: the connection went silent for 10s: …" when
// the control stream was first. A message that breaks the protocol still
// names the stream.
func TestConnectionEndReadOnTheControlStreamIsTheSessions(t *testing.T) {
	silent := fmt.Errorf("the connection went silent for 10s: %w", errors.New("timeout: no recent network activity"))
	var bad bytes.Buffer
	bad.Write([]byte{0xee, 0, 0, 0, 1, 0}) // an unknown message type
	for _, c := range []struct {
		stream *failingStream
		want   string
	}{
		{&failingStream{err: silent}, "The connection went silent for 10s: timeout: no recent network activity."},
		{&failingStream{Reader: *bytes.NewReader(bad.Bytes()), err: silent}, "Control stream: protocol violation: unknown message type 238"},
	} {
		tx := &sender{ctl: newControl(c.stream)}
		err := tx.readControl(context.Background())
		if err == nil {
			t.Fatalf("%v: no error", c.stream.err)
		}
		if got := core.EndOf(core.Dropped(err, "vm"), "vm", false).Text; !strings.HasPrefix(got, c.want) {
			t.Errorf("the sender says %q, want %q…", got, c.want)
		}
	}
	if err := controlErr(silent); !errors.Is(err, silent) {
		t.Errorf("%v is not the connection's end underneath", err)
	}
	if err := controlErr(fmt.Errorf("%w: unknown message type 238", wire.ErrProtocol)); !errors.Is(err, wire.ErrProtocol) {
		t.Errorf("%v is not a protocol error", err)
	}
}
