// Package testutil holds what tests across Ferry's packages share: one
// poll helper for conditions that no event or channel reports, a
// goroutine leak check for a package's whole run, the live heap for tests
// that bound the bytes something holds, a tus client's requests to a
// receive link (tus.go), and the system calls a test helper makes, counted
// by strace (strace.go), and a small disk to fill (smalldisk_linux.go).
// Only tests import it.
package testutil

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// waitLimit bounds WaitFor: a bound for a stuck test on a loaded machine,
// not a speed requirement.
const waitLimit = 30 * time.Second

// WaitFor polls cond until it holds, failing t (saying what it waited for)
// after a generous bound. Use it only where nothing can be waited on: an
// event, a channel or a Done are better.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	WaitForWithin(t, what, waitLimit, cond)
}

// WaitForWithin is WaitFor with its own bound. It polls often at first and
// less as the wait goes on (5 ms doubling to 100 ms), so a condition that
// runs a command or takes a screenshot does not load the machine.
func WaitForWithin(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	poll := 5 * time.Millisecond
	for deadline := time.Now().Add(limit); !cond(); poll = min(2*poll, 100*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(poll)
	}
}

// Main runs a package's tests and then fails them if goroutines started
// during the run are still there (every component's Close must wait for
// its goroutines). Call it from TestMain; it works with t.Parallel.
func Main(m *testing.M) {
	before := running()
	code := m.Run()
	if code == 0 {
		if err := settle(before); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// CheckNoLeaks fails t if goroutines started during it still run once its
// cleanups ran. Registered first, so it runs last. Not for parallel tests.
func CheckNoLeaks(t *testing.T) {
	t.Helper()
	before := running()
	t.Cleanup(func() {
		if err := settle(before); err != nil {
			t.Error(err)
		}
	})
}

// running returns the stacks of the running goroutines by their first
// line's "goroutine N", but the runtime's own helpers that a test run may
// start and never stop (the signal loop that fuzzing starts, for one).
func running() map[string]string {
	out := map[string]string{}
	for _, g := range stacks() {
		if !strings.Contains(g, "os/signal.loop") {
			id, _, _ := strings.Cut(g, " [")
			out[id] = g
		}
	}
	return out
}

// Stacks returns the stacks of the running goroutines whose stack holds
// in (a package path: what a test that waited in vain was waiting on).
func Stacks(in string) string {
	var out []string
	for _, g := range stacks() {
		if strings.Contains(g, in) {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

func stacks() []string {
	buf := make([]byte, 4<<20)
	return strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
}

// settle waits up to ~10 s for the goroutines to fall back to as many as
// before; the error shows those started since, the leak among them.
func settle(before map[string]string) error {
	var now map[string]string
	for range 1000 {
		if now = running(); len(now) <= len(before) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	var started []string
	for id, g := range now {
		if _, ok := before[id]; !ok {
			started = append(started, g)
		}
	}
	slices.Sort(started)
	return fmt.Errorf("goroutine leak: %d before the tests, %d after; the %d started since:\n%s",
		len(before), len(now), len(started), strings.Join(started, "\n\n"))
}

// LiveHeap is the heap in use once the garbage is collected: what a test
// that bounds the bytes something holds compares before and after.
func LiveHeap() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
