package engine

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/ferrydrop/ferry/engine/internal/anywhere"
)

// A relay that resets the connection reads as one that closed it, however
// the system says the reset: on Windows it is WSAECONNRESET (10054), which
// syscall.ECONNRESET (a value Go made up there) does not match, and the
// reset read "does not answer: ...". The errors are built as net/http and
// the mailbox hand them on.
func TestRelayResetIsClosedOnEverySystem(t *testing.T) {
	const relay = "relay.example:3478"
	reset := func(errno syscall.Errno) error {
		op := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("wsarecv", errno)}
		return fmt.Errorf("%w: %s: %w", anywhere.ErrRelayUnreachable, relay, op)
	}
	for _, c := range []struct {
		name   string
		err    error
		closed bool
	}{
		{"ECONNRESET", reset(syscall.ECONNRESET), true},
		{"WSAECONNRESET", reset(syscall.Errno(10054)), true},
		{"EOF", fmt.Errorf("%w: %s: %w", anywhere.ErrRelayUnreachable, relay, io.EOF), true},
		{"ECONNREFUSED", reset(syscall.ECONNREFUSED), false},
	} {
		got := relayUnreachable(relay, c.err).Error()
		if closed := strings.Contains(got, "closed the connection without answering"); closed != c.closed {
			t.Errorf("%s: %q, want closed %v", c.name, got, c.closed)
		}
		if strings.Contains(got, "wsarecv") {
			t.Errorf("%s: %q names the system call", c.name, got)
		}
	}
}
