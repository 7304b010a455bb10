//go:build unix

package localsend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"syscall"
	"testing"
)

// fullSink is a Sink whose disk fills after some bytes.
type fullSink struct {
	n, room int
	err     error
}

func (s *fullSink) Write(b []byte) (int, error) {
	if s.n+len(b) > s.room {
		return 0, &fs.PathError{Op: "write", Path: "a.bin.partial", Err: s.err}
	}
	s.n += len(b)
	return len(b), nil
}
func (s *fullSink) Commit() error { return nil }
func (s *fullSink) Abort(error)   {}

// A write of this side's that fails is told apart from the sender's bytes:
// a full disk is 507 ErrNoSpace, another write error 500 ErrStore; both
// read as 400 "size differs from the offer" (the sender's fault) before.
func TestUploadOntoAFailingDisk(t *testing.T) {
	for _, c := range []struct {
		err    error
		want   error
		status int
	}{
		{syscall.ENOSPC, ErrNoSpace, http.StatusInsufficientStorage},
		{syscall.EIO, ErrStore, http.StatusInternalServerError},
	} {
		t.Run(fmt.Sprint(c.err), func(t *testing.T) {
			f := &upFile{id: "0", size: 4 << 20}
			err := receive(context.Background(), &uploadBuffers{}, bytes.NewReader(make([]byte, 4<<20)), f, &fullSink{room: 1 << 20, err: c.err})
			if !errors.Is(err, c.want) || errors.Is(err, ErrSize) || statusOf(err) != c.status {
				t.Fatalf("err %v (status %d), want %v (%d)", err, statusOf(err), c.want, c.status)
			}
			// And the sender reads it so (errorOf).
			if back := errorOf("upload", c.status, "", false); c.status == http.StatusInsufficientStorage && !errors.Is(back, ErrNoSpace) {
				t.Fatalf("the sender reads %v", back)
			}
		})
	}
}
