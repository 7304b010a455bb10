package core

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/ferrydrop/ferry/engine/internal/errcode"
)

// A connection that broke under a transfer reads as one the user
// understands; dials, peers' words and other errors stay as they were.
func TestDroppedSaysTheConnectionWasLost(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 31), Port: 47800}
	write := func(errno syscall.Errno) error {
		return &net.OpError{Op: "write", Net: "tcp", Addr: addr, Err: os.NewSyscallError("write", errno)}
	}
	dial := &net.OpError{Op: "dial", Net: "tcp", Addr: addr, Err: os.NewSyscallError("connect", syscall.ETIMEDOUT)}
	cases := []struct {
		name string
		err  error
		peer string
		want string // "" : the error comes back unchanged
	}{
		{"reset", write(syscall.ECONNRESET), "Bob", "the connection to Bob was lost: connection reset by peer"},
		{"broken pipe, wrapped", fmt.Errorf("sending big.bin: %w", write(syscall.EPIPE)), "Bob", "the connection to Bob was lost: broken pipe"},
		{"no name yet", write(syscall.ECONNRESET), "", "the connection to the other device was lost: connection reset by peer"},
		{"a name that could disguise itself", write(syscall.ECONNRESET), "Bob\x1b[2J", `the connection to "Bob\x1b[2J" was lost`},
		{"a dial that timed out", dial, "Bob", ""},
		{"joined dials", errors.Join(dial, write(syscall.ECONNRESET)), "Bob", ""},
		{"refused is not dropped", write(syscall.ECONNREFUSED), "Bob", ""},
		{"the peer's own words", fmt.Errorf("read: %w", &errcode.RemoteError{Code: errcode.CodeCancelled}), "Bob", ""},
		{"a short read", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), "Bob", ""},
		{"nil", nil, "Bob", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Dropped(c.err, c.peer)
			if c.want == "" {
				if got != c.err {
					t.Fatalf("Dropped changed %v into %v", c.err, got)
				}
				return
			}
			if !strings.HasPrefix(got.Error(), c.want) || strings.Contains(got.Error(), "\x1b") {
				t.Errorf("got %q, want it to start %q", got.Error(), c.want)
			}
			if !errors.Is(got, c.err) {
				t.Error("the socket's error is no longer in the chain")
			}
			if again := Dropped(got, c.peer); again != got {
				t.Errorf("said twice: %q", again)
			}
			// The user reads the sentence; the details keep the socket's words.
			end := EndOf(got, c.peer, false)
			if end.State != StateFailed || !strings.HasPrefix(end.Text, "The connection to ") || !strings.HasSuffix(end.Text, ".") {
				t.Errorf("ending %s %q", end.State, end.Text)
			}
			if end.Detail != c.err.Error() {
				t.Errorf("detail %q, want the socket's %q", end.Detail, c.err.Error())
			}
			if !Retryable(got) {
				t.Error("a dropped connection is no longer retried")
			}
		})
	}
}
