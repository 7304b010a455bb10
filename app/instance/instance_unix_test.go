//go:build unix

package instance

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStaleSocketDoesNotBlockStart(t *testing.T) {
	dir := t.TempDir()
	p, err := socketPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	// What a crash leaves: a socket file nobody listens on.
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no stale socket to test with: %v", err)
	}
	_, got := serve(t, dir)
	if err := handOver(t, dir, Request{Files: []string{"/a"}}); err != nil {
		t.Fatal(err)
	}
	<-got
}

func TestLongConfigDirUsesRuntimeSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	_, got := serve(t, dir)
	if err := handOver(t, dir, Request{Files: []string{"/x"}}); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Files[0] != "/x" {
		t.Fatalf("request = %+v", r)
	}
}
