package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// A receiver killed (SIGKILL, by its PID) while it fills a file's partial
// with zeros on a fusefat stick, before any of the file's bytes were
// written, leaves a partial that its next start finds and removes when the
// sender comes back: the stick then holds the file alone. The partial was
// journaled only once filled, so it was known to nothing, left on the stick
// for good ("big.bin.partial" of the megabytes filled so far) beside the
// file saved through a partial of another name. Needs root and fusefat: it
// skips without them.
func TestKilledDuringAFillOnAFATStick(t *testing.T) {
	stick := testutil.FATStick(t)
	if !fuseFAT(t, stick) {
		t.Skip("the stick is not mounted by fusefat, whose partials are filled")
	}
	bin := buildCLI(t)
	src := filepath.Join(t.TempDir(), "big.bin")
	// Large enough that the fill (a few MB/s) is still under way when the
	// kill comes, about 1 MB in; no larger: fusefat walks its cluster
	// chain from the file's start whenever a write moves to another
	// stream's chunk, so the writes after the fill take time that grows
	// with the square of the size (24 MiB: about 21 s of the test's 30).
	const size = 12 << 20
	writeRandom(t, src, size, 7)
	rcfg, scfg := t.TempDir(), t.TempDir()
	r, addr := startKillReceiver(t, bin, rcfg, stick, "127.0.0.1:0", "tcp", true)
	s := startKillSender(t, bin, scfg, addr, "tcp", src)
	partial := filepath.Join(stick, "big.bin.partial")
	filled := int64(0)
	deadline := time.Now().Add(2 * time.Minute)
	for filled == 0 {
		if fi, err := os.Stat(partial); err == nil && fi.Size() > 0 {
			filled = fi.Size()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no fill began")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.kill() // by its PID: the process this test started
	if fi, err := os.Stat(partial); err != nil || fi.Size() >= size {
		t.Skipf("the fill was over before the kill (%v): nothing to show", err)
	}
	t.Logf("killed with %d bytes filled", filled)
	r, _ = startKillReceiver(t, bin, rcfg, stick, addr, "tcp", true)
	if code := s.exitCode(t, 3*time.Minute); code != 0 {
		t.Fatalf("sender exit %d; stderr:\n%s", code, s.stderr.String())
	}
	if code := r.exitCode(t, time.Minute); code != 0 {
		t.Fatalf("receiver exit %d; stderr:\n%s", code, r.stderr.String())
	}
	if res := lastResult(s); res == nil || res.State != engine.StateDone {
		t.Fatalf("the sender's result: %+v", res)
	}
	sameContent(t, src, filepath.Join(stick, "big.bin"))
	names, err := os.ReadDir(stick)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n.Name() != "big.bin" {
			t.Errorf("the stick holds %s beside big.bin", n.Name())
		}
	}
}

// lastResult is the last result event c wrote.
func lastResult(c *child) *engine.Result {
	var res *engine.Result
	for _, ev := range c.events() {
		if ev.Kind == engine.EventResult {
			res = ev.Result
		}
	}
	return res
}

// fuseFAT reports whether dir is mounted by fusefat.
func fuseFAT(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return false
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		if fields := strings.Fields(lines.Text()); len(fields) > 2 && fields[1] == dir && fields[2] == "fuse.fusefat" {
			return true
		}
	}
	return false
}
