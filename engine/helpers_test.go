package engine

// What the engine's tests share: engines on loopback, files, sends and the
// waits on their events. Conditions no event reports are polled with
// testutil.WaitFor; the package's run fails on leaked goroutines.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/clock"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// TestMain fails the run if goroutines outlive the tests (every Close
// waits for what it started).
func TestMain(m *testing.M) { testutil.Main(m) }

// skipIfShort skips a test of long transfers or several sessions (ten
// seconds and more) in the quick loop (go test -short, scripts/test.sh
// --quick); the full suite runs it.
func skipIfShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("long transfers: skipped with -short")
	}
}

// testEngine returns an engine with its own config and download folders.
func testEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	if opts.ConfigDir == "" {
		opts.ConfigDir = t.TempDir()
	}
	if opts.DownloadDir == "" {
		opts.DownloadDir = t.TempDir()
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.Accept == "" {
		opts.Accept = AcceptAll
	}
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// portToComeBackTo is a "127.0.0.1:port" free now for TCP and UDP, below
// the kernel's ephemeral ports (ip_local_port_range; on macOS and Windows
// they start higher still): a receiver that listens there, closes and
// starts again on it finds it free, where a port the kernel picked
// ("127.0.0.1:0", among the ephemeral ones) can meanwhile be taken by an
// outgoing connection of a test running beside it ("bind: address already
// in use", seen in a CI rehearsal).
func portToComeBackTo(t testing.TB) string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				low = n
			}
		}
	}
	for range 100 {
		hp := net.JoinHostPort("127.0.0.1", strconv.Itoa(1024+mrand.IntN(low-1024)))
		tl, err := net.Listen("tcp", hp)
		if err != nil {
			continue
		}
		pc, err := net.ListenPacket("udp", hp)
		tl.Close()
		if err != nil {
			continue
		}
		pc.Close()
		return hp
	}
	t.Fatal("no port free for TCP and UDP below the ephemeral ones")
	return ""
}

func startReceiver(t testing.TB, opts Options) *Engine {
	t.Helper()
	e := testEngine(t, opts)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

func target(r *Engine) Target { return Target{Addrs: r.Addrs()} }

// listening is where e listens for kind ("host:port"), "" when it does not.
func listening(e *Engine, kind addr.Kind) string {
	a, _ := addr.First(e.Addrs(), kind)
	return a.HostPort()
}

// hostPortOf is to's first address of kind, "" when it has none.
func hostPortOf(to Target, kind addr.Kind) string {
	a, _ := addr.First(to.Addrs, kind)
	return a.HostPort()
}

// targetAt is a target of one kind at hostport.
func targetAt(kind addr.Kind, hostport string) Target {
	return Target{Addrs: []addr.Addr{addr.New(kind, hostport)}}
}

// onlyListen is Options.NoListen for an engine that listens on kind tp
// alone ("quic" or "tcp"; "" listens on every kind).
func onlyListen(tp string) []addr.Kind {
	var out []addr.Kind
	for _, k := range []addr.Kind{addr.QUIC, addr.TCP} {
		if tp != "" && k != addr.Kind(tp) {
			out = append(out, k)
		}
	}
	return out
}

// writeFile writes size random bytes at path (its folders made) and
// returns them. They come from ChaCha8 seeded at random, where they came
// from crypto/rand: four times as fast under -race (its assembly is not
// instrumented), on the hundreds of MiB the big-file tests write.
func writeFile(t testing.TB, path string, size int) []byte {
	t.Helper()
	data := make([]byte, size)
	var seed [32]byte
	rand.Read(seed[:])
	mrand.NewChaCha8(seed).Read(data)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

// sendWait sends and waits for the result.
func sendWait(t testing.TB, s *Engine, to Target, paths []string, opts SendOptions) Result {
	if t == nil {
		t = &testing.T{}
	}
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr, err := s.Send(ctx, to, paths, opts)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	case <-ctx.Done():
		t.Fatal("transfer did not finish")
	}
	return tr.Result()
}

// sameTree checks that every file under src arrived under dst/base(src) with the same bytes.
func sameTree(t *testing.T, src, dst string) int {
	t.Helper()
	n := 0
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Dir(src), p)
		same, err := sameFile(p, filepath.Join(dst, rel))
		if err != nil {
			return fmt.Errorf("%s missing: %w", rel, err)
		}
		if !same {
			return fmt.Errorf("%s differs", rel)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// sameFile says whether the files at a and b hold the same bytes (an error:
// b cannot be read). It reads both a piece at a time: read whole, the
// images of hundreds of MiB that some tests send took seconds under -race
// (its shadow of each buffer).
func sameFile(a, b string) (bool, error) {
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	fa, err := os.Open(a)
	if err != nil {
		return false, nil
	}
	defer fa.Close()
	bufA, bufB := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		na, errA := io.ReadFull(fa, bufA)
		nb, errB := io.ReadFull(fb, bufB)
		if !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false, nil
		}
		if errA != nil || errB != nil {
			// Both ended together (io.EOF or io.ErrUnexpectedEOF after the
			// same bytes), or one failed.
			return atEnd(errA) && atEnd(errB), nil
		}
	}
}

// atEnd: io.ReadFull met the end of the file (err is not a failure).
func atEnd(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }

func noPartials(t *testing.T, dir string) {
	t.Helper()
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".partial") {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

// resultsOf collects the results of transfers in direction dir, up to n.
func resultsOf(t *testing.T, e *Engine, dir Direction, n int) <-chan Result {
	t.Helper()
	return collectResults(t, e, dir, n, func(ev Event) Result { return *ev.Result })
}

// collectResults hands out, as pick makes them, the result events of
// transfers in direction dir, up to n.
func collectResults[T any](t *testing.T, e *Engine, dir Direction, n int, pick func(Event) T) <-chan T {
	t.Helper()
	events, unsub := e.Subscribe(4096)
	t.Cleanup(unsub) // ends the collector if fewer results came
	out := make(chan T, n)
	go func() {
		defer unsub()
		for ev := range events {
			if ev.Kind == EventResult && ev.Direction == dir {
				out <- pick(ev)
				if len(out) == n {
					return
				}
			}
		}
	}()
	return out
}

func next(t *testing.T, c <-chan Result) Result {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no result")
		return Result{}
	}
}

// waitProgress returns once the transfer moved more than frac of total.
func waitProgress(t *testing.T, events <-chan Event, id string, total int64, frac float64) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case ev := <-events:
			if ev.TransferID != id {
				continue
			}
			if ev.Kind == EventProgress && float64(ev.Progress.Bytes) > frac*float64(total) {
				return
			}
			if ev.Kind == EventResult {
				t.Fatalf("finished early: %+v", ev.Result)
			}
		case <-timeout:
			t.Fatal("no progress")
		}
	}
}

// offerPending sends a file to a receiver that asks its user, and returns
// once the offer waits for an answer: a transfer running on the receiver.
func offerPending(t *testing.T, recv *Engine, tp string) (sent *Transfer, offer Event, src string) {
	t.Helper()
	events, unsub := recv.Subscribe(64)
	defer unsub()
	send := testEngine(t, Options{RetryFor: -1})
	src = filepath.Join(t.TempDir(), "a.bin")
	writeFile(t, src, 2<<20)
	tr, err := send.Send(context.Background(), target(recv), []string{src}, SendOptions{Transport: tp})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Kind == EventOffer {
			return tr, ev, src
		}
	}
	t.Fatal("no offer")
	return nil, Event{}, ""
}

func waitDone(t *testing.T, tr *Transfer) Result {
	t.Helper()
	select {
	case <-tr.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("the transfer did not end")
	}
	return tr.Result()
}

// receivedResults collects the receiving side's result events (with their
// transfer and delivery IDs), up to n.
func receivedResults(t *testing.T, e *Engine, n int) <-chan Event {
	t.Helper()
	return collectResults(t, e, Receiving, n, func(ev Event) Event { return ev })
}

func nextEvent(t *testing.T, c <-chan Event) Event {
	t.Helper()
	select {
	case ev := <-c:
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no result")
		return Event{}
	}
}

// tcpGate is a TCP relay to a receiver that forwards what the sender
// writes until limit bytes passed, then holds everything the sender writes
// until Release: a transfer is stopped mid-way for certain, whatever the
// machine's speed (no race between the data and the test).
type tcpGate struct {
	t     *testing.T
	l     net.Listener
	to    string
	limit int64
	held  chan struct{} // closed once the limit is reached
	open  chan struct{} // closed by Release
	wg    sync.WaitGroup

	mu       sync.Mutex // guards the fields below
	passed   int64
	heldOnce bool
	released bool
	conns    []net.Conn
}

// newTCPGate relays from a loopback port to the TCP address to.
func newTCPGate(t *testing.T, to string, limit int64) *tcpGate {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &tcpGate{t: t, l: l, to: to, limit: limit, held: make(chan struct{}), open: make(chan struct{})}
	g.wg.Add(1)
	go g.accept()
	t.Cleanup(g.close)
	return g
}

// Addr is where the sender dials.
func (g *tcpGate) Addr() string { return g.l.Addr().String() }

// Held is closed once the gate holds the sender's bytes.
func (g *tcpGate) Held() <-chan struct{} { return g.held }

// Release lets everything through from now on.
func (g *tcpGate) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.released {
		g.released = true
		close(g.open)
	}
}

func (g *tcpGate) accept() {
	defer g.wg.Done()
	for {
		c, err := g.l.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", g.to)
		if err != nil {
			c.Close()
			continue
		}
		g.mu.Lock()
		g.conns = append(g.conns, c, u)
		g.mu.Unlock()
		g.wg.Add(2)
		go func() {
			defer g.wg.Done()
			g.forward(u, c)
			u.Close()
			c.Close()
		}()
		go func() {
			defer g.wg.Done()
			io.Copy(c, u)
			c.Close()
			u.Close()
		}()
	}
}

// forward copies the sender's bytes, holding them once the limit is reached.
func (g *tcpGate) forward(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			g.mu.Lock()
			hold := g.passed >= g.limit && !g.released
			if hold && !g.heldOnce {
				g.heldOnce = true
				close(g.held)
			}
			g.passed += int64(n)
			g.mu.Unlock()
			if hold {
				<-g.open
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (g *tcpGate) close() {
	g.l.Close()
	g.Release()
	g.mu.Lock()
	for _, c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// waitUntil is testutil.WaitFor for the engine's tests that name no reason.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, "the condition", cond)
}

// setClock is a clock that only stamps (the pairing budget's, the
// admission's): tests set its time with add; its timers are the system's.
// A test that needs timers to follow it takes a clock.Fake.
type setClock struct {
	clock.Real
	mu  sync.Mutex
	now time.Time
}

func (c *setClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *setClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// buildManifest is buildManifestSkipping's files.
func buildManifest(paths []string) ([]localFile, error) {
	m, _, err := buildManifestSkipping(paths)
	return m.files, err
}

// TestSameFileTellsTheDifference: sameTree's comparison, read a piece at a
// time, still tells a byte changed past its first piece and a file longer
// or shorter by one byte.
func TestSameFileTellsTheDifference(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	data := writeFile(t, a, 2<<20+5)
	changed := slices.Clone(data)
	changed[len(changed)-1]++
	for _, c := range []struct {
		name string
		b    []byte
		same bool
	}{
		{"same", data, true},
		{"last byte changed", changed, false},
		{"one byte longer", append(slices.Clone(data), 0), false},
		{"one byte shorter", data[:len(data)-1], false},
		{"a piece shorter", data[:1<<20], false},
		{"empty", nil, false},
	} {
		b := filepath.Join(dir, "b")
		if err := os.WriteFile(b, c.b, 0o644); err != nil {
			t.Fatal(err)
		}
		if same, err := sameFile(a, b); err != nil || same != c.same {
			t.Errorf("%s: same %v (%v), want %v", c.name, same, err, c.same)
		}
	}
	if _, err := sameFile(a, filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file compared without an error")
	}
}
