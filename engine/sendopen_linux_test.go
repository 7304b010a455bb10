package engine

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// TestSendOpenHelper is not a test of its own: run by
// TestSenderOpensSmallFilesWithoutThePoller, it sends a folder over TCP to
// an engine in the same process.
func TestSendOpenHelper(t *testing.T) {
	src := testutil.HelperArg(t)
	recv := startReceiver(t, Options{NoListen: onlyListen("tcp")})
	send := testEngine(t, Options{NoListen: onlyListen("tcp")})
	res := sendWait(t, send, target(recv), []string{src}, SendOptions{})
	if res.State != StateDone {
		t.Fatalf("result %+v", res)
	}
}

// A sender of a tree opens every file it sends: a small file must not cost
// Go's poller its system calls (os.Open registers a regular file: four
// fcntl and an epoll_ctl that fails with EPERM, about a tenth of the
// sender's CPU on workload D, docs/benchmarks/trees.md), nor os.NewFile's
// fcntl. Counted with strace over a whole transfer in one process: the
// receiver's os.NewFile makes one fcntl per file, its files and sockets no
// failing epoll_ctl. Skipped where strace cannot run.
func TestSenderOpensSmallFilesWithoutThePoller(t *testing.T) {
	const files = 300
	src := filepath.Join(t.TempDir(), "tree")
	for i := range files {
		writeFile(t, filepath.Join(src, fmt.Sprintf("f%03d", i)), 100+i)
	}
	calls := testutil.CountSyscalls(t, "TestSendOpenHelper", "epoll_ctl,fcntl,pread64", src)
	if n, _ := calls.Calls("pread64"); n < files {
		t.Fatalf("the sender read %d times, not once per file (%d):\n%s", n, files, calls)
	}
	// The runtime's start, the engines' sockets and folders make a few.
	_, failed := calls.Calls("epoll_ctl")
	fcntl, _ := calls.Calls("fcntl")
	t.Logf("%d small files sent: %d failing epoll_ctl, %d fcntl", files, failed, fcntl)
	if failed > files/10 || fcntl > 2*files {
		t.Errorf("sending %d small files made %d failing epoll_ctl and %d fcntl (the receiver's os.NewFile: %d fcntl; the sender's os.Open adds %d fcntl and %d failing epoll_ctl, os.NewFile %d fcntl):\n%s",
			files, failed, fcntl, files, 4*files, files, files, calls)
	}
}
