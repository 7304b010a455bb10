package main

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"
)

// TestCtrlCExits130: a send, and a receive --once, that Ctrl-C ends exit
// 130 (128+SIGINT, as a shell says of a command a signal ended), not 1,
// which a script could not tell from a send that failed; a receive that
// Ctrl-C stops (its way to end) still exits 0.
func TestCtrlCExits130(t *testing.T) {
	r := startReceiver(t, "", "--accept", "all", "--no-discovery")
	src := writeFile(t, "hello.txt", "hello, ferry\n")
	interrupt := func() context.Context {
		ctx, cancel := context.WithCancelCause(t.Context())
		cancel(interrupted{syscall.SIGINT})
		return ctx
	}
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"send", []string{"send", "--config", t.TempDir(), "--to", r.tcp, src}, 130},
		{"receive --once", []string{"receive", "--once", "--config", t.TempDir(), "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--localsend=false", "--no-discovery"}, 130},
		{"receive", []string{"receive", "--config", t.TempDir(), "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--localsend=false", "--no-discovery"}, 0},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		if code := run(interrupt(), c.args, &out, &errOut); code != c.want {
			t.Errorf("%s after Ctrl-C: exit %d, want %d; stderr: %s", c.name, code, c.want, strings.TrimSpace(errOut.String()))
		}
	}
}
