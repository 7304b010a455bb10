package engine

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// sendOpenHelperEnv makes the test binary send a folder between two engines
// (TestSendOpenHelper), for TestSenderOpensSmallFilesWithoutThePoller to
// count its system calls.
const sendOpenHelperEnv = "FERRY_SEND_OPEN_HELPER_DIR"

// TestSendOpenHelper is not a test of its own: run by
// TestSenderOpensSmallFilesWithoutThePoller, it sends a folder over TCP to
// an engine in the same process.
func TestSendOpenHelper(t *testing.T) {
	src := os.Getenv(sendOpenHelperEnv)
	if src == "" {
		t.Skip("run by TestSenderOpensSmallFilesWithoutThePoller")
	}
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
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	const files = 300
	src := filepath.Join(t.TempDir(), "tree")
	for i := range files {
		writeFile(t, filepath.Join(src, fmt.Sprintf("f%03d", i)), 100+i)
	}
	counts := filepath.Join(t.TempDir(), "counts")
	cmd := exec.Command(strace, "-f", "-c", "-e", "trace=epoll_ctl,fcntl,pread64", "-o", counts,
		os.Args[0], "-test.run=^TestSendOpenHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), sendOpenHelperEnv+"="+src)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("ptrace")) {
			t.Skipf("strace cannot trace here: %s", out)
		}
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestSendOpenHelper")) {
		t.Fatalf("the helper did not send:\n%s", out)
	}
	table, err := os.ReadFile(counts)
	if err != nil {
		t.Fatal(err)
	}
	// strace -c: % time, seconds, usecs/call, calls, [errors,] syscall.
	row := func(name string) (calls, errs int) {
		m := regexp.MustCompile(`(?m)^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:(\d+)\s+)?` + name + `$`).FindSubmatch(table)
		if m == nil {
			return 0, 0
		}
		calls, _ = strconv.Atoi(string(m[1]))
		errs, _ = strconv.Atoi(string(m[2]))
		return calls, errs
	}
	if n, _ := row("pread64"); n < files {
		t.Fatalf("the sender read %d times, not once per file (%d):\n%s", n, files, table)
	}
	// The runtime's start, the engines' sockets and folders make a few.
	_, failed := row("epoll_ctl")
	fcntl, _ := row("fcntl")
	t.Logf("%d small files sent: %d failing epoll_ctl, %d fcntl", files, failed, fcntl)
	if failed > files/10 || fcntl > 2*files {
		t.Errorf("sending %d small files made %d failing epoll_ctl and %d fcntl (the receiver's os.NewFile: %d fcntl; the sender's os.Open adds %d fcntl and %d failing epoll_ctl, os.NewFile %d fcntl):\n%s",
			files, failed, fcntl, files, 4*files, files, files, table)
	}
}
