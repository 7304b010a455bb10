package testutil

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// Syscalls is strace -c's table of the system calls a helper made.
type Syscalls struct{ table []byte }

// helperArgEnv carries CountSyscalls's argument to the helper it runs.
const helperArgEnv = "FERRY_SYSCALL_HELPER_ARG"

// CountSyscalls runs the test helper of this test binary (the test named
// helper, which reads arg with HelperArg) under strace -f -c, counting the
// system calls in trace (as strace -e trace= takes them:
// "fcntl,epoll_ctl"), and returns the counts. It skips t where strace is
// not installed or cannot trace, and fails it when the helper did not pass.
func CountSyscalls(t testing.TB, helper, trace, arg string) Syscalls {
	t.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	counts := filepath.Join(t.TempDir(), "counts")
	cmd := exec.Command(strace, "-f", "-c", "-e", "trace="+trace, "-o", counts,
		os.Args[0], "-test.run=^"+helper+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), helperArgEnv+"="+arg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("ptrace")) {
			t.Skipf("strace cannot trace here: %s", out)
		}
		t.Fatalf("%s: %v\n%s", helper, err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+helper)) {
		t.Fatalf("%s did not pass:\n%s", helper, out)
	}
	table, err := os.ReadFile(counts)
	if err != nil {
		t.Fatal(err)
	}
	return Syscalls{table}
}

// HelperArg is the argument CountSyscalls gave the helper test running
// now. A helper is no test of its own: run otherwise, it skips t.
func HelperArg(t testing.TB) string {
	t.Helper()
	arg, ok := os.LookupEnv(helperArgEnv)
	if !ok {
		t.Skip("a helper, run by testutil.CountSyscalls")
	}
	return arg
}

// Calls is how many times the system call name was made, and how many of
// those failed.
func (s Syscalls) Calls(name string) (calls, failed int) {
	// strace -c: % time, seconds, usecs/call, calls, [errors,] syscall.
	m := regexp.MustCompile(`(?m)^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:(\d+)\s+)?` + regexp.QuoteMeta(name) + `$`).FindSubmatch(s.table)
	if m == nil {
		return 0, 0
	}
	calls, _ = strconv.Atoi(string(m[1]))
	failed, _ = strconv.Atoi(string(m[2]))
	return calls, failed
}

// String is strace's table, for a failure's message.
func (s Syscalls) String() string { return string(s.table) }
