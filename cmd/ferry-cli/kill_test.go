//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32" // CRC32C of journal records, as the engine writes them: a storage check, not security
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
)

// The kill tests run real ferry-cli processes and SIGKILL one end of a
// transfer at random points, many times, then check that the transfer still
// ends with every file intact and that each kill cost no more than the data
// in flight plus one chunk per stream.
//
// Default (CI) mode: a 96 MiB file, 8 kills per case. FERRY_KILL_FULL=1: the
// issue's 512 MiB and 20 kills per case. -short: 32 MiB, 3 kills.

const (
	killChunk   = 1 << 20         // the engine's default chunk size
	killStreams = 4               // the engine's default data streams, QUIC and TCP
	killMargin  = 4 * killStreams // chunks never chosen as a kill point at the end (see killPoint)
	// What a stream buffers in user space on each side (bufio writer and reader).
	killStreamBuf = 2 * 256 << 10
	// The QUIC connection's flow-control window (MaxConnectionReceiveWindow).
	killQUICWindow = 32 << 20
	// Bytes of one chunk record in the receiver's journal: length, payload, CRC.
	killJournalRec = 4 + 45 + 4
)

type killPlan struct {
	size  int64
	kills int
	min   int // the fewest kills a sender loop may end with (killSenderLoop)
}

func killSettings() killPlan {
	switch {
	case os.Getenv("FERRY_KILL_FULL") == "1":
		return killPlan{size: 512 << 20, kills: 20, min: 10}
	case testing.Short():
		// 64 MiB: a smaller batch is cut into smaller chunks (the engine's
		// batchChunkSize), and the checks here count 1 MiB ones.
		return killPlan{size: 64 << 20, kills: 3, min: 2}
	}
	return killPlan{size: 96 << 20, kills: 8, min: 3}
}

// child is one ferry-cli process whose stdout lines are collected.
type child struct {
	name   string
	cmd    *exec.Cmd
	stderr bytes.Buffer // written by exec's copier; read only after exited
	exited chan struct{}
	err    error // set before exited closes

	mu      sync.Mutex // guards the fields below
	lines   []string
	partial []byte
	changed chan struct{} // ticked on every new line
}

func (c *child) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.lines = append(c.lines, string(c.partial[:i]))
		c.partial = c.partial[i+1:]
	}
	select {
	case c.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

// startChild runs bin with args; t.Cleanup kills it if it still runs.
func startChild(t *testing.T, bin, name string, args ...string) *child {
	t.Helper()
	c := &child{name: name, exited: make(chan struct{}), changed: make(chan struct{}, 1)}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Env = append(os.Environ(), "FERRY_QUIC_IDLE_TIMEOUT=2s", "QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING=1")
	c.cmd.Stdout = c
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() { c.kill() })
	return c
}

// kill SIGKILLs the process (if it still runs) and waits until it is gone.
func (c *child) kill() {
	select {
	case <-c.exited:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// exitCode waits for the process to end by itself, at most d.
func (c *child) exitCode(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-c.exited:
	case <-time.After(d):
		c.kill()
		t.Fatalf("%s did not exit within %v; stderr:\n%s", c.name, d, c.stderr.String())
	}
	if c.err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// waitLine returns the index of the first line at or after from for which
// match is true. It fails the test when the process exits first or d passes.
func (c *child) waitLine(t *testing.T, from int, d time.Duration, what string, match func(string) bool) int {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		for i := from; i < len(c.lines); i++ {
			if match(c.lines[i]) {
				c.mu.Unlock()
				return i
			}
		}
		from = len(c.lines)
		c.mu.Unlock()
		select {
		case <-c.changed:
		case <-c.exited:
			// Lines written just before the exit may still be unread.
			c.mu.Lock()
			n := len(c.lines)
			c.mu.Unlock()
			if n > from {
				continue
			}
			t.Fatalf("%s exited (%v) while waiting for %s; stderr:\n%s", c.name, c.err, what, c.stderr.String())
		case <-deadline.C:
			t.Fatalf("%s: no %s within %v", c.name, what, d)
		}
	}
}

func (c *child) nLines() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lines)
}

// events decodes the JSON event lines (others, like "listening", are skipped).
func (c *child) events() []engine.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []engine.Event
	for _, l := range c.lines {
		var ev engine.Event
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Kind != "" {
			out = append(out, ev)
		}
	}
	return out
}

func isEvent(kind engine.EventKind, state engine.State) func(string) bool {
	return func(l string) bool {
		var ev engine.Event
		return json.Unmarshal([]byte(l), &ev) == nil && ev.Kind == kind && (state == "" || ev.State == state)
	}
}

// startKillReceiver runs `receive` on listen and returns it with its address
// for transport tp once it listens.
func startKillReceiver(t *testing.T, bin, cfg, dir, listen, tp string, once bool) (*child, string) {
	t.Helper()
	args := []string{"receive", "--listen", listen, "--accept", "all", "--json", "--no-discovery", "--localsend=false", "--dir", dir, "--config", cfg}
	if once {
		args = append(args, "--once")
	}
	r := startChild(t, bin, "receiver", args...)
	i := r.waitLine(t, 0, 30*time.Second, "listening line", func(l string) bool { return strings.HasPrefix(l, "listening ") })
	r.mu.Lock()
	line := r.lines[i]
	r.mu.Unlock()
	for _, f := range strings.Fields(line) {
		if k, v, _ := strings.Cut(f, "="); k == tp {
			return r, v
		}
	}
	t.Fatalf("no %s address in %q", tp, line)
	return nil, ""
}

func startKillSender(t *testing.T, bin, cfg, addr, tp string, paths ...string) *child {
	t.Helper()
	args := append([]string{"send", "--to", addr, "--transport", tp, "--json", "--retry-for", "5m", "--config", cfg}, paths...)
	return startChild(t, bin, "sender", args...)
}

// writeRandom writes size random bytes to path.
func writeRandom(t *testing.T, path string, size int64, seed uint64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 1})
	if _, err := io.CopyN(f, r, size); err != nil {
		t.Fatal(err)
	}
}

// sameContent fails unless the two files are byte for byte equal.
func sameContent(t *testing.T, want, got string) {
	t.Helper()
	a, err := os.Open(want)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := os.Open(got)
	if err != nil {
		t.Fatalf("received file: %v", err)
	}
	defer b.Close()
	ra, rb := bufio.NewReaderSize(a, 1<<20), bufio.NewReaderSize(b, 1<<20)
	bufA, bufB := make([]byte, 1<<20), make([]byte, 1<<20)
	var off int64
	for {
		na, ea := io.ReadFull(ra, bufA)
		nb, eb := io.ReadFull(rb, bufB)
		if na != nb || !bytes.Equal(bufA[:na], bufB[:nb]) {
			t.Fatalf("%s differs from %s in the MiB at offset %d", got, want, off)
		}
		off += int64(na)
		if ea != nil || eb != nil {
			if (ea == nil) != (eb == nil) {
				t.Fatalf("%s and %s differ in length", got, want)
			}
			return
		}
	}
}

// noPartialFiles fails if any .partial file is left under dir.
func noPartialFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".partial") {
			t.Errorf(".partial file left: %s", p)
		}
		return nil
	})
}

// held is what a receiver's resume state says it keeps.
type held struct {
	bytes   int64 // verified bytes on disk (saved files count whole)
	holes   int   // missing chunks below the highest chunk held, summed over files
	missing []int // per file in the state: chunks still missing
}

// readHeld parses <cfg>/resume/*.json and replays its .log journal, the same
// formats the engine writes (see engine/resume.go, engine/journal.go). No
// state is zero.
func readHeld(t *testing.T, cfg string) held {
	t.Helper()
	snaps, _ := filepath.Glob(filepath.Join(cfg, "resume", "*.json"))
	snaps = slices.DeleteFunc(snaps, func(p string) bool { return strings.HasPrefix(filepath.Base(p), ".") })
	if len(snaps) == 0 {
		return held{}
	}
	if len(snaps) > 1 {
		t.Fatalf("%d resume states for one transfer: %v", len(snaps), snaps)
	}
	data, err := os.ReadFile(snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		ChunkSize int `json:"chunk_size"`
		Files     []struct {
			Index uint32 `json:"index"`
			Size  int64  `json:"size"`
			Done  bool   `json:"done"`
			Have  []byte `json:"have"`
		} `json:"files"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("resume state %s: %v", snaps[0], err)
	}
	if s.ChunkSize != killChunk {
		t.Fatalf("resume state has chunk size %d", s.ChunkSize)
	}
	byIdx := map[uint32]int{}
	for i, f := range s.Files {
		byIdx[f.Index] = i
	}
	log, _ := os.ReadFile(strings.TrimSuffix(snaps[0], ".json") + ".log")
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for len(log) >= 4 {
		n := int(binary.BigEndian.Uint32(log))
		if n < 5 || len(log) < 4+n+4 {
			break // a torn tail: the engine stops here too
		}
		p := log[4 : 4+n]
		if binary.BigEndian.Uint32(log[4+n:]) != crc32.Checksum(p, castagnoli) {
			break
		}
		log = log[4+n+4:]
		if p[0] == 6 {
			continue // the snapshot's head: the journal starts with what the snapshot says
		}
		idx := binary.BigEndian.Uint32(p[1:])
		i, ok := byIdx[idx]
		if !ok && (p[0] == 4 || p[0] == 5) && n >= 13 {
			// The snapshot lists only the files begun or saved when it was
			// written: a partial record (with the file's size, and since
			// 2026-12-05 the partial's identity) of another one adds it.
			size := int64(binary.BigEndian.Uint64(p[5:]))
			chunks := int((size + killChunk - 1) / killChunk)
			s.Files = append(s.Files, struct {
				Index uint32 `json:"index"`
				Size  int64  `json:"size"`
				Done  bool   `json:"done"`
				Have  []byte `json:"have"`
			}{Index: idx, Size: size, Have: make([]byte, (chunks+7)/8)})
			i, ok = len(s.Files)-1, true
			byIdx[idx] = i
		}
		if !ok {
			t.Fatalf("journal names file %d, which neither the snapshot nor a partial record before has", idx)
		}
		switch p[0] {
		case 1:
			c := int(binary.BigEndian.Uint32(p[5:]))
			if c/8 < len(s.Files[i].Have) {
				s.Files[i].Have[c/8] |= 1 << (c % 8)
			}
		case 2:
			s.Files[i].Done = true
		case 7: // chunks held when the snapshot was written: index, CRC32C, leaf
			for e := p[5:]; len(e) >= 40; e = e[40:] {
				if c := int(binary.BigEndian.Uint32(e)); c/8 < len(s.Files[i].Have) {
					s.Files[i].Have[c/8] |= 1 << (c % 8)
				}
			}
		}
	}
	var h held
	for _, f := range s.Files {
		if f.Done {
			h.bytes += f.Size
			h.missing = append(h.missing, 0)
			continue
		}
		n := int((f.Size + killChunk - 1) / killChunk)
		top, miss := -1, 0
		for c := 0; c < n; c++ {
			if c/8 < len(f.Have) && f.Have[c/8]&(1<<(c%8)) != 0 {
				h.bytes += min(killChunk, f.Size-int64(c)*killChunk)
				top = c
			} else {
				miss++
			}
		}
		for c := 0; c < top; c++ {
			if f.Have[c/8]&(1<<(c%8)) == 0 {
				h.holes++
			}
		}
		h.missing = append(h.missing, miss)
	}
	return h
}

// journalPath waits for the receiver's journal to exist and returns it.
func journalPath(t *testing.T, cfg string, alive *child) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		logs, _ := filepath.Glob(filepath.Join(cfg, "resume", "*.log"))
		if len(logs) == 1 {
			return logs[0]
		}
		select {
		case <-alive.exited:
			t.Fatalf("%s exited before the receiver journaled anything: %v\n%s", alive.name, alive.err, alive.stderr.String())
		case <-time.After(2 * time.Millisecond):
		}
	}
	t.Fatal("the receiver started no resume journal")
	return ""
}

// waitLanded returns once the journal at path holds at least n chunk records,
// or false if watched exits first.
func waitLanded(t *testing.T, path string, n int, watched *child) bool {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if landed(path) >= n {
			return true
		}
		select {
		case <-watched.exited:
			return false
		case <-time.After(time.Millisecond):
		}
	}
	t.Fatalf("fewer than %d chunks landed in 2 minutes", n)
	return false
}

// landed counts the chunk records of the journal at path. Counted, not
// told from its size: a journal starts with what its snapshot says
// (resume.Dir.Compact: its head, its partials with the chunks they hold,
// in records of their own type, its saved files), and a compacted state's
// journal is there before the next session starts its own.
func landed(path string) int {
	b, _ := os.ReadFile(path)
	n := 0
	for len(b) >= 4 {
		l := int(binary.BigEndian.Uint32(b))
		if l < 1 || len(b) < 4+l+4 {
			break
		}
		if b[4] == 1 && l+8 == killJournalRec { // a chunk's record
			n++
		}
		b = b[4+l+4:]
	}
	return n
}

// killPoint picks how many more chunks may land before the next kill: random,
// and spread so that the remaining kills all happen before the end.
func killPoint(rng *rand.Rand, remaining, killsLeft int) int {
	// The last chunks stay out of reach: what the sender already pushed into
	// socket buffers lands after the kill (many MiB on loopback, where a
	// transfer of what is left takes milliseconds), and a kill after the last
	// chunk landed would find the transfer done.
	remaining = max(remaining-killMargin, 2)
	m := max(remaining/(killsLeft+2), 2)
	return 1 + rng.IntN(2*m-1)
}

// killCost is what one kill cost: what the sender had counted as sent (or
// skipped because the receiver had it) minus what the receiver kept.
type killCost struct {
	resent int64 // sender's count minus bytes kept; -1 if the sender reported nothing
	holes  int   // chunks missing below the receiver's highest chunk: sent, then lost
}

func summarize(t *testing.T, label string, costs []killCost, bound int64, window string) {
	t.Helper()
	var rs []int64
	var hs []int
	for _, c := range costs {
		if c.resent >= 0 {
			rs = append(rs, c.resent)
		}
		hs = append(hs, c.holes)
	}
	slices.Sort(rs)
	slices.Sort(hs)
	mib := func(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) }
	if len(rs) > 0 {
		med, mx := rs[len(rs)/2], rs[len(rs)-1]
		t.Logf("%s: re-sent per kill (%d measured of %d): median %s MiB, max %s MiB = %.1f / %.1f chunks; window %s; bound %s MiB",
			label, len(rs), len(costs), mib(med), mib(mx), float64(med)/killChunk, float64(mx)/killChunk, window, mib(bound))
	}
	t.Logf("%s: holes per kill (chunks lost below the highest kept): median %d, max %d", label, hs[len(hs)/2], hs[len(hs)-1])
	for i, c := range costs {
		if c.resent > bound {
			t.Errorf("%s: kill %d cost %s MiB, more than the bound of %s MiB", label, i+1, mib(c.resent), mib(bound))
		}
		if int64(c.holes)*killChunk > bound {
			t.Errorf("%s: kill %d left %d holes, more than the bound of %s MiB", label, i+1, c.holes, mib(bound))
		}
	}
}

// inFlight is the bound on what one kill may cost for transport tp: the
// transport's window, plus per stream one chunk and the user-space buffers.
func inFlight(t *testing.T, tp string) (int64, string) {
	perStream := int64(killStreams) * (killChunk + killStreamBuf)
	if tp == "quic" {
		return killQUICWindow + perStream, "32 MiB (QUIC connection flow control)"
	}
	// TCP: every stream is its own connection; Linux grows its buffers up to
	// tcp_rmem/tcp_wmem max (the engine only pins them when rmem_max allows 8 MiB).
	rmax, wmax := sysMax(t, "/proc/sys/net/ipv4/tcp_rmem"), sysMax(t, "/proc/sys/net/ipv4/tcp_wmem")
	if r := sysMax(t, "/proc/sys/net/core/rmem_max"); r >= 8<<20 {
		rmax = 2 * 8 << 20
	}
	if w := sysMax(t, "/proc/sys/net/core/wmem_max"); w >= 8<<20 {
		wmax = 2 * 8 << 20
	}
	w := int64(killStreams) * (rmax + wmax)
	return w + perStream, fmt.Sprintf("%d MiB (%d TCP streams x (rcvbuf %d + sndbuf %d MiB))", w>>20, killStreams, rmax>>20, wmax>>20)
}

// sysMax reads the last number of a /proc/sys file (e.g. tcp_rmem's max).
func sysMax(t *testing.T, path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("cannot read %s to size the TCP window: %v", path, err)
	}
	f := strings.Fields(string(b))
	n, err := strconv.ParseInt(f[len(f)-1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestKill(t *testing.T) {
	bin := buildCLI(t)
	plan := killSettings()
	for _, tp := range []string{"quic", "tcp"} {
		t.Run("receiver/"+tp, func(t *testing.T) { killReceiverLoop(t, bin, tp, plan) })
		t.Run("sender/"+tp, func(t *testing.T) { killSenderLoop(t, bin, tp, plan) })
	}
	t.Run("retry-window/tcp", func(t *testing.T) { killRetryWindow(t, bin) })
	for _, tp := range []string{"tcp", "quic"} {
		t.Run("small-files/"+tp, func(t *testing.T) { killSmallFiles(t, bin, tp) })
	}
}

// killSmallFiles: a receiver of a tree of small files killed twice while
// they land saves each of them once. A small file is named whole, with no
// partial, and the journal's record that it was saved may wait a few
// milliseconds for the next record (resume.Journal.SavedFound); a file
// named in that window is found by the identity journaled before its name
// at the next attempt, not fetched again and saved a second time as
// "name (1).txt" (without that record: 9 to 58 such files in 5 of 6 kills
// of a 20,000-file tree).
func killSmallFiles(t *testing.T, bin, tp string) {
	const folders, perFolder, size = 40, 150, 2000
	src := filepath.Join(t.TempDir(), "tree")
	want := map[string][]byte{}
	rng := rand.New(rand.NewPCG(7, uint64(len(tp))))
	for d := range folders {
		dir := filepath.Join(src, fmt.Sprintf("d%02d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range perFolder {
			b := make([]byte, size)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			rel := filepath.Join("tree", fmt.Sprintf("d%02d", d), fmt.Sprintf("f%03d.txt", f))
			want[rel] = b
			if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("d%02d", d), fmt.Sprintf("f%03d.txt", f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	rcfg, dl, scfg := t.TempDir(), t.TempDir(), t.TempDir()
	r, addr := startKillReceiver(t, bin, rcfg, dl, "127.0.0.1:0", tp, true)
	s := startKillSender(t, bin, scfg, addr, tp, src)
	isFile := isEvent(engine.EventFile, "")
	for _, at := range []int{len(want) / 4, len(want) / 8} { // files saved by this receiver before its kill
		n := 0
		r.waitLine(t, 0, time.Minute, fmt.Sprintf("%d files saved", at), func(l string) bool {
			if isFile(l) {
				n++
			}
			return n >= at
		})
		r.kill()
		r, _ = startKillReceiver(t, bin, rcfg, dl, addr, tp, true)
	}
	if code := s.exitCode(t, 2*time.Minute); code != 0 {
		t.Fatalf("sender exit %d:\n%s", code, s.stderr.String())
	}
	if code := r.exitCode(t, time.Minute); code != 0 {
		t.Fatalf("receiver exit %d:\n%s", code, r.stderr.String())
	}
	got := 0
	var twice []string
	filepath.WalkDir(dl, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dl, p)
		b, ok := want[rel]
		if !ok {
			twice = append(twice, rel)
			return nil
		}
		got++
		if data, err := os.ReadFile(p); err != nil || !bytes.Equal(data, b) {
			t.Errorf("%s: not the bytes sent (%v)", rel, err)
		}
		return nil
	})
	if len(twice) > 0 {
		slices.Sort(twice)
		t.Errorf("%d files saved a second time (or not sent at all), such as %q", len(twice), twice[:min(5, len(twice))])
	}
	if got != len(want) {
		t.Errorf("%d of %d files saved", got, len(want))
	}
}

// killRetryWindow: --retry-for bounds one outage, not the whole transfer. The
// receiver is killed, comes back, the transfer resumes and then runs (here:
// the receiver's machine sleeps, SIGSTOP) for longer than --retry-for; a
// second kill must be retried like the first, not end the transfer.
func killRetryWindow(t *testing.T, bin string) {
	const retryFor = 3 * time.Second
	src := filepath.Join(t.TempDir(), "big.bin")
	writeRandom(t, src, 256<<20, 7)
	rcfg, dl, scfg := t.TempDir(), t.TempDir(), t.TempDir()
	r, addr := startKillReceiver(t, bin, rcfg, dl, "127.0.0.1:0", "tcp", true)
	s := startChild(t, bin, "sender", "send", "--to", addr, "--transport", "tcp", "--json",
		"--retry-for", retryFor.String(), "--config", scfg, src)
	r.waitLine(t, 0, time.Minute, "active transfer", isEvent(engine.EventState, engine.StateActive))
	if !waitLanded(t, journalPath(t, rcfg, r), 4, r) {
		t.Fatal("finished before the first kill")
	}
	r.kill()
	r, _ = startKillReceiver(t, bin, rcfg, dl, addr, "tcp", true)
	r.waitLine(t, 0, time.Minute, "active transfer", isEvent(engine.EventState, engine.StateActive))
	// The transfer is resumed: the sender succeeded in reconnecting. Now it
	// runs (stalled by a sleeping receiver) for longer than --retry-for.
	r.cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(retryFor + time.Second) // the outage-free stretch the test is about, not a wait for readiness
	r.cmd.Process.Signal(syscall.SIGCONT)
	j := journalPath(t, rcfg, r)
	if !waitLanded(t, j, landed(j)+2, r) {
		t.Fatal("finished before the second kill")
	}
	r.kill()
	r, _ = startKillReceiver(t, bin, rcfg, dl, addr, "tcp", true)
	if code := s.exitCode(t, 2*time.Minute); code != 0 {
		t.Fatalf("the sender gave up after the second interruption although the first one was over long ago (exit %d):\n%s",
			code, s.stderr.String())
	}
	if code := r.exitCode(t, time.Minute); code != 0 {
		t.Fatalf("receiver exit %d:\n%s", code, r.stderr.String())
	}
	sameContent(t, src, filepath.Join(dl, "big.bin"))
}

// killReceiverLoop: one sender with --retry-for; the receiver is SIGKILLed and
// restarted on the same address, config and folder plan.kills times.
func killReceiverLoop(t *testing.T, bin, tp string, plan killPlan) {
	start := time.Now()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	src := filepath.Join(t.TempDir(), "big.bin")
	writeRandom(t, src, plan.size, rng.Uint64())
	rcfg, dl, scfg := t.TempDir(), t.TempDir(), t.TempDir()
	chunks := int((plan.size + killChunk - 1) / killChunk)

	r, addr := startKillReceiver(t, bin, rcfg, dl, "127.0.0.1:0", tp, true)
	s := startKillSender(t, bin, scfg, addr, tp, src)
	heldAfter := make([]held, 0, plan.kills)
	for k := 0; k < plan.kills; k++ {
		if k > 0 {
			r, _ = startKillReceiver(t, bin, rcfg, dl, addr, tp, true)
		}
		// The session is accepted (and its journal fresh) once the receiver says active.
		r.waitLine(t, 0, 2*time.Minute, "active transfer", isEvent(engine.EventState, engine.StateActive))
		j := journalPath(t, rcfg, r)
		prev := 0
		if k > 0 {
			prev = int(heldAfter[k-1].bytes / killChunk)
		}
		if !waitLanded(t, j, killPoint(rng, chunks-prev, plan.kills-k), r) {
			t.Fatalf("the transfer finished after %d of %d kills: plan more kill points", k, plan.kills)
		}
		r.kill()
		h := readHeld(t, rcfg)
		if k > 0 && h.bytes < heldAfter[k-1].bytes {
			t.Errorf("kill %d: the receiver holds %d bytes, fewer than the %d it held before", k+1, h.bytes, heldAfter[k-1].bytes)
		}
		heldAfter = append(heldAfter, h)
	}
	// Let it finish.
	r, _ = startKillReceiver(t, bin, rcfg, dl, addr, tp, true)
	if code := s.exitCode(t, 6*time.Minute); code != 0 {
		t.Fatalf("sender exit %d; stderr:\n%s", code, s.stderr.String())
	}
	if code := r.exitCode(t, time.Minute); code != 0 {
		t.Fatalf("receiver exit %d; stderr:\n%s", code, r.stderr.String())
	}
	sameContent(t, src, filepath.Join(dl, "big.bin"))
	noPartialFiles(t, dl)

	// What the sender counted in each attempt: its last progress before the
	// attempt's "reconnecting" event (sent plus skipped-because-held).
	evs := s.events()
	var res *engine.Result
	var attempt []int64
	// Only attempts that got going count: a redial that found nobody
	// listening yet also ends in "reconnecting".
	last, active := int64(-1), false
	for _, ev := range evs {
		switch {
		case ev.Kind == engine.EventState && ev.State == engine.StateActive:
			last, active = -1, true
		case ev.Kind == engine.EventProgress && active:
			last = ev.Progress.Bytes
		case ev.Kind == engine.EventState && ev.State == engine.StateRetrying:
			if active {
				attempt = append(attempt, last)
			}
			active = false
		case ev.Kind == engine.EventResult:
			res = ev.Result
		}
	}
	if res == nil || res.State != engine.StateDone {
		t.Fatalf("no done result from the sender: %+v", res)
	}
	if len(attempt) < plan.kills {
		t.Fatalf("the sender resumed %d times for %d kills", len(attempt), plan.kills)
	}
	costs := make([]killCost, plan.kills)
	var sum int64
	for k := range costs {
		costs[k] = killCost{resent: -1, holes: heldAfter[k].holes}
		if attempt[k] >= 0 {
			costs[k].resent = max(attempt[k]-heldAfter[k].bytes, 0)
			sum += costs[k].resent
		}
	}
	bound, window := inFlight(t, tp)
	total := res.Bytes - plan.size // exact: the sender counts every payload byte it sent
	t.Logf("receiver kills over %s: %d kills, %d MiB file; sender sent %d bytes in all: %.1f MiB re-sent in total (%.1f MiB per kill on average; per-kill estimates sum to %.1f MiB); %d reconnects; %v",
		tp, plan.kills, plan.size>>20, res.Bytes, float64(total)/(1<<20), float64(total)/float64(plan.kills)/(1<<20),
		float64(sum)/(1<<20), len(attempt), time.Since(start).Round(time.Second))
	summarize(t, "receiver kills/"+tp, costs, bound, window)
	if total > int64(plan.kills)*bound {
		t.Errorf("%d bytes re-sent in all for %d kills: more than %d per kill", total, plan.kills, bound)
	}
}

// killSenderLoop: one receiver runs throughout; the sender is SIGKILLed and
// re-run with the same command plan.kills times. Files saved early must not
// be touched again.
func killSenderLoop(t *testing.T, bin, tp string, plan killPlan) {
	start := time.Now()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	folder := filepath.Join(t.TempDir(), "batch")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	// Walked in name order: the small files go first and are saved early.
	smalls := []string{"a-notes.txt", "b-photo.jpg", "c-data.csv"}
	for i, n := range smalls {
		writeRandom(t, filepath.Join(folder, n), int64(1000+i*70000), rng.Uint64())
	}
	writeRandom(t, filepath.Join(folder, "z-big.bin"), plan.size, rng.Uint64())
	total := plan.size + 1000 + 71000 + 141000 // with the small files above
	rcfg, dl, scfg := t.TempDir(), t.TempDir(), t.TempDir()
	chunks := int((plan.size + killChunk - 1) / killChunk)

	r, addr := startKillReceiver(t, bin, rcfg, dl, "127.0.0.1:0", tp, false)
	type stamp struct {
		ino   uint64
		mtime time.Time
	}
	saved := map[string]stamp{}
	checkSaved := func(when string) {
		t.Helper()
		for _, n := range smalls {
			st, err := os.Stat(filepath.Join(dl, "batch", n))
			if err != nil {
				continue
			}
			now := stamp{st.Sys().(*syscall.Stat_t).Ino, st.ModTime()}
			if was, ok := saved[n]; !ok {
				saved[n] = now
			} else if was != now {
				t.Errorf("%s: %s was written again after it had been saved (%+v -> %+v)", when, n, was, now)
			}
		}
	}
	costs := make([]killCost, 0, plan.kills)
	var before held
	results := 0
	// A killed sender's last chunks still land: what its kernel had in the
	// sockets' send buffers goes out after the process is gone (up to the
	// window of inFlight, tens of MiB over TCP when a loaded receiver lags
	// behind). Kills that land more than killPoint's margin may leave too
	// little of the file for every planned kill: the kills then end early,
	// once at least plan.min were made, and the sender that finishes the
	// transfer is the last.
	var last *child
	endsEarly := func(k int) {
		t.Helper()
		if k < plan.min {
			t.Fatalf("the transfer finished after %d of %d kills (at least %d wanted): plan more kill points", k, plan.kills, plan.min)
		}
		t.Logf("the transfer finished after %d of %d kills: what landed after the kills (%.0f MiB held after kill %d) left too little for the rest",
			k, plan.kills, float64(before.bytes)/(1<<20), k)
	}
	for k := 0; k < plan.kills; k++ {
		if chunks-int(before.bytes/killChunk) <= killMargin {
			// No kill point is left that the transfer would not reach
			// before the kill, or finish at it (killPoint): the last
			// sender runs to the end.
			endsEarly(k)
			break
		}
		s := startKillSender(t, bin, scfg, addr, tp, folder)
		j := journalPath(t, rcfg, s)
		if !waitLanded(t, j, killPoint(rng, chunks-int(before.bytes/killChunk), plan.kills-k), s) {
			endsEarly(k)
			last = s
			break
		}
		s.kill()
		// The receiver's session ends when it notices (QUIC: the idle timeout);
		// its state is final once it reports the result.
		results++
		from := 0
		for n := 0; n < results; n++ {
			from = r.waitLine(t, from, time.Minute, "the interrupted session's result", isEvent(engine.EventResult, "")) + 1
		}
		after := readHeld(t, rcfg)
		checkSaved(fmt.Sprintf("after kill %d", k+1))
		// A killed sender reports nothing more, and its progress reports are
		// too far apart to say what it had sent: the cost of the kill is
		// measured at the receiver, as the chunks that started to arrive and
		// were lost (plus at most one chunk per stream still in the sender).
		costs = append(costs, killCost{resent: -1, holes: after.holes})
		if after.bytes < before.bytes {
			t.Errorf("kill %d: the receiver holds %d bytes, fewer than the %d it held before", k+1, after.bytes, before.bytes)
		}
		before = after
	}
	s := last
	if s == nil {
		s = startKillSender(t, bin, scfg, addr, tp, folder)
	}
	if code := s.exitCode(t, 6*time.Minute); code != 0 {
		t.Fatalf("final sender exit %d; stderr:\n%s", code, s.stderr.String())
	}
	var res *engine.Result
	for _, ev := range s.events() {
		if ev.Kind == engine.EventResult {
			res = ev.Result
		}
	}
	if res == nil || res.State != engine.StateDone || res.Verified != len(smalls)+1 {
		t.Fatalf("final sender result: %+v", res)
	}
	r.waitLine(t, 0, time.Minute, "a done result", isEvent(engine.EventResult, engine.StateDone))
	r.cmd.Process.Signal(os.Interrupt)
	if code := r.exitCode(t, 30*time.Second); code != 0 {
		t.Errorf("receiver exit %d after Ctrl-C; stderr:\n%s", code, r.stderr.String())
	}
	checkSaved("at the end")
	if len(saved) != len(smalls) {
		t.Errorf("only %d of %d small files saved", len(saved), len(smalls))
	}
	for _, n := range append(smalls, "z-big.bin") {
		sameContent(t, filepath.Join(folder, n), filepath.Join(dl, "batch", n))
	}
	noPartialFiles(t, dl)
	// The last sender only sent what the receiver did not hold.
	if want := total - before.bytes; res.Bytes > want+int64(killStreams)*killChunk {
		t.Errorf("the last sender sent %d bytes; the receiver lacked only %d", res.Bytes, want)
	}
	bound, window := inFlight(t, tp)
	t.Logf("sender kills over %s: %d kills, %d MiB file; the last sender sent %.1f MiB; %v",
		tp, len(costs), plan.size>>20, float64(res.Bytes)/(1<<20), time.Since(start).Round(time.Second))
	summarize(t, "sender kills/"+tp, costs, bound, window)
}
