package discovery

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// Environment of the helper mode: the test binary re-executes itself inside
// a network namespace and runs one Ferry advertiser + browser there.
const (
	helperEnv     = "FERRY_DISCOVERY_HELPER"
	helperIDEnv   = "FERRY_HELPER_ID"
	helperNameEnv = "FERRY_HELPER_NAME"
	helperModeEnv = "FERRY_HELPER_MODE" // "" (advertise+browse), "looked" (the same, saying when Looked changes) or "doctor"
)

// TestMain runs the helper mode, or the tests with the goroutine leak check.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(runHelper())
	}
	testutil.Main(m)
}

// helperLine is one JSON line printed by the helper.
type helperLine struct {
	Ev     string   `json:"ev"` // start, ready, appeared, changed, gone, refused, closed, error
	ID     string   `json:"id,omitempty"`
	Name   string   `json:"name,omitempty"`
	Addrs  []string `json:"addrs,omitempty"`
	Reason string   `json:"reason,omitempty"`
	NS     int64    `json:"ns"` // wall clock, Unix nanoseconds
	Err    string   `json:"err,omitempty"`
	Report *Report  `json:"report,omitempty"`
	// Goroutines before start and after a clean shutdown (leak check).
	GoroutinesBefore int `json:"g_before,omitempty"`
	GoroutinesAfter  int `json:"g_after,omitempty"`
}

// runHelper advertises and browses until stdin closes, printing events.
func runHelper() int {
	start := time.Now()
	enc := json.NewEncoder(os.Stdout)
	emit := func(l helperLine) {
		if l.NS == 0 {
			l.NS = time.Now().UnixNano()
		}
		_ = enc.Encode(l)
	}
	emit(helperLine{Ev: "start", NS: start.UnixNano()})
	if os.Getenv(helperModeEnv) == "doctor" {
		r := Diagnose(context.Background(), DiagnoseOptions{Ports: []int{40000}})
		emit(helperLine{Ev: "report", Report: &r})
		return 0
	}
	before := runtime.NumGoroutine()
	id, name := os.Getenv(helperIDEnv), os.Getenv(helperNameEnv)
	opts := Options{SelfID: id}
	looked := os.Getenv(helperModeEnv) == "looked"
	if looked {
		// One remembered device, away: its probe finds nothing.
		opts.Remembered = func() []Remembered {
			return []Remembered{{ID: strings.Repeat("A", IDLen), Name: "Away", Addrs: []string{"192.0.2.1:47800"}}}
		}
		opts.Prober = func(ctx context.Context, addr string) (string, string, error) {
			<-ctx.Done() // no answer from another network
			return "", "", ctx.Err()
		}
		opts.ProbeTimeout, opts.ProbeInterval = 500*time.Millisecond, 2*time.Second
		// The change TestNamespaceLooked makes is seen at the next poll:
		// sooner than the default 3 s, which only adds to the wait.
		opts.InterfacePoll = 500 * time.Millisecond
		opts.Logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	}
	d, err := New(opts)
	if err != nil {
		emit(helperLine{Ev: "error", Err: err.Error()})
		return 1
	}
	events, unsub := d.Subscribe(256)
	defer unsub()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	if os.Getenv(helperModeEnv) == "advertise-only" {
		go func() { <-ctx.Done(); runErr <- ctx.Err() }()
	} else {
		go func() { runErr <- d.Run(ctx) }()
	}
	adv, err := Advertise(Service{Name: name, ID: id, Addrs: listeners(40000, 40001)})
	if err != nil {
		emit(helperLine{Ev: "error", Err: err.Error()})
		cancel()
		return 1
	}
	emit(helperLine{Ev: "ready", Err: errString(adv.Err())})
	var lookedTick <-chan time.Time
	if looked {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		lookedTick = t.C
	}
	wasLooked := false
	// stdin carries commands ("name NEW"); EOF means shut down cleanly.
	stdinClosed := make(chan struct{})
	commands := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			commands <- sc.Text()
		}
		close(stdinClosed)
	}()
	for {
		select {
		case c := <-commands:
			if newName, ok := strings.CutPrefix(c, "name "); ok {
				if err := adv.Update(Service{Name: newName, ID: id, Addrs: listeners(40000, 40001)}); err != nil {
					emit(helperLine{Ev: "error", Err: err.Error()})
				}
			}
		case <-lookedTick:
			if now := d.Looked(); now != wasLooked {
				wasLooked = now
				emit(helperLine{Ev: map[bool]string{true: "looked", false: "unlooked"}[now]})
			}
		case e := <-events:
			l := helperLine{Ev: string(e.Kind), ID: e.Peer.ID, Name: e.Peer.Name, Reason: e.Reason}
			for _, a := range e.Peer.Addrs {
				l.Addrs = append(l.Addrs, a.String())
			}
			emit(l)
		case err := <-runErr:
			emit(helperLine{Ev: "error", Err: err.Error()})
			adv.Close()
			return 1
		case <-stdinClosed:
			adv.Close()
			cancel()
			<-runErr
			unsub()
			// zeroconf's announcement goroutine may outlive Shutdown by up
			// to 3 s (it sleeps between announcements): poll, bounded.
			after := runtime.NumGoroutine()
			for deadline := time.Now().Add(5 * time.Second); os.Getenv("FERRY_HELPER_LEAKCHECK") == "1" && after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
				time.Sleep(50 * time.Millisecond)
			}
			emit(helperLine{Ev: "closed", GoroutinesBefore: before, GoroutinesAfter: after})
			return 0
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// randomID returns a fresh, valid device ID.
func randomID(t testing.TB) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)
}

func requireRootAndIP(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: network namespace tests need root (run as root, e.g. in CI's container)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipping: the ip command (iproute2) is not installed")
	}
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

var nsCounter atomic.Int64

// vethPair creates two network namespaces joined by a veth pair, with
// 10.<x>.<y>.1/24 and .2/24, and removes them when the test ends.
func vethPair(t testing.TB) (nsA, nsB, ipA, ipB string) {
	t.Helper()
	nsA, nsB, ipA, ipB, up := vethPairDown(t)
	up()
	return nsA, nsB, ipA, ipB
}

// vethPairDown is vethPair with the veth links left down until up is called.
func vethPairDown(t testing.TB) (nsA, nsB, ipA, ipB string, up func()) {
	t.Helper()
	n := nsCounter.Add(1)
	tag := fmt.Sprintf("%d%d", os.Getpid()%100000, n)
	nsA, nsB = "fdA"+tag, "fdB"+tag
	for _, ns := range []string{nsA, nsB} {
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	vA, vB := "va"+tag, "vb"+tag
	run(t, "ip", "link", "add", vA, "netns", nsA, "type", "veth", "peer", "name", vB, "netns", nsB)
	sub := fmt.Sprintf("10.%d.%d", 100+n%100, os.Getpid()%250)
	ipA, ipB = sub+".1", sub+".2"
	for _, c := range [][]string{
		{nsA, "addr", "add", ipA + "/24", "dev", vA}, {nsB, "addr", "add", ipB + "/24", "dev", vB},
		{nsA, "link", "set", "lo", "up"}, {nsB, "link", "set", "lo", "up"},
	} {
		run(t, "ip", append([]string{"-n", c[0]}, c[1:]...)...)
	}
	return nsA, nsB, ipA, ipB, func() {
		t.Helper()
		run(t, "ip", "-n", nsA, "link", "set", vA, "up")
		run(t, "ip", "-n", nsB, "link", "set", vB, "up")
	}
}

// helper is a running helper process inside a namespace.
type helper struct {
	id, name string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	lines    chan helperLine
	// tolerateErrors: "error" lines do not fail the test.
	tolerateErrors bool
}

func startHelper(t testing.TB, ns, name string, env ...string) *helper {
	t.Helper()
	h := &helper{id: randomID(t), name: name, lines: make(chan helperLine, 1024)}
	h.cmd = exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^$")
	h.cmd.Env = append(os.Environ(), helperEnv+"=1", helperIDEnv+"="+h.id, helperNameEnv+"="+name)
	h.cmd.Env = append(h.cmd.Env, env...)
	h.cmd.Stderr = &testWriter{t: t, prefix: ns + ": "}
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.stdin.Close()
		done := make(chan struct{})
		go func() { h.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			h.cmd.Process.Kill()
			<-done
		}
	})
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l helperLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				continue // not ours (e.g. zeroconf's log lines go to stderr anyway)
			}
			h.lines <- l
		}
	}()
	return h
}

// waitFor returns the first line for which match is true, failing the test
// when the helper exits, reports an error, or the deadline passes.
func (h *helper) waitFor(t testing.TB, what string, limit time.Duration, match func(helperLine) bool) helperLine {
	t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				t.Fatalf("%s: helper exited while waiting for %s", h.name, what)
			}
			if l.Ev == "error" && !h.tolerateErrors {
				t.Fatalf("%s: helper error: %s", h.name, l.Err)
			}
			if (l.Ev == "appeared" || l.Ev == "changed") && l.ID == h.id {
				t.Errorf("%s: own ID appeared in its table", h.name)
			}
			if match(l) {
				return l
			}
		case <-timer.C:
			t.Fatalf("%s: no %s within %v", h.name, what, limit)
		}
	}
}

type testWriter struct {
	t      testing.TB
	prefix string
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s%s", w.prefix, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestNamespacesFindAndLoseEachOther is the acceptance test: two
// Ferry instances in two namespaces over veth find each other within 2 s
// and lose each other within a few seconds of a clean shutdown.
func TestNamespacesFindAndLoseEachOther(t *testing.T) {
	requireRootAndIP(t)
	nsA, nsB, ipA, ipB := vethPair(t)
	a := startHelper(t, nsA, "Alpha")
	b := startHelper(t, nsB, "Bravo", "FERRY_HELPER_LEAKCHECK=1")
	startA := a.waitFor(t, "start", 10*time.Second, func(l helperLine) bool { return l.Ev == "start" })
	startB := b.waitFor(t, "start", 10*time.Second, func(l helperLine) bool { return l.Ev == "start" })
	started := time.Unix(0, max(startA.NS, startB.NS))

	seenB := a.waitFor(t, "Bravo appearing", 2*time.Second, func(l helperLine) bool { return l.Ev == "appeared" && l.ID == b.id })
	seenA := b.waitFor(t, "Alpha appearing", 2*time.Second, func(l helperLine) bool { return l.Ev == "appeared" && l.ID == a.id })
	t.Logf("Alpha saw Bravo after %v, Bravo saw Alpha after %v",
		time.Unix(0, seenB.NS).Sub(started), time.Unix(0, seenA.NS).Sub(started))
	if seenB.Name != "Bravo" || seenA.Name != "Alpha" {
		t.Errorf("names: got %q and %q", seenB.Name, seenA.Name)
	}
	if !slices.Contains(seenB.Addrs, ipB) || seenB.Addrs[0] != ipB {
		t.Errorf("Alpha's addresses for Bravo = %v, want %s first", seenB.Addrs, ipB)
	}
	if !slices.Contains(seenA.Addrs, ipA) {
		t.Errorf("Bravo's addresses for Alpha = %v, want %s", seenA.Addrs, ipA)
	}

	// Clean shutdown of Bravo: Alpha must see it go, by goodbye.
	stop := time.Now()
	b.stdin.Close()
	closed := b.waitFor(t, "clean shutdown", 10*time.Second, func(l helperLine) bool { return l.Ev == "closed" })
	if closed.GoroutinesAfter > closed.GoroutinesBefore {
		t.Errorf("goroutines leaked: %d before, %d after shutdown", closed.GoroutinesBefore, closed.GoroutinesAfter)
	}
	gone := a.waitFor(t, "Bravo leaving", 5*time.Second, func(l helperLine) bool { return l.Ev == "gone" && l.ID == b.id })
	t.Logf("Alpha lost Bravo %v after shutdown began (reason %q)", time.Unix(0, gone.NS).Sub(stop), gone.Reason)
	if gone.Reason != "goodbye" {
		t.Errorf("Bravo left by %q, want goodbye", gone.Reason)
	}
}

// TestNamespaceDiscoveryLatency measures (and only logs) how long a device
// takes to appear on another one: from the start of the newcomer's process
// to the appearance event on the device already running, over
// FERRY_LATENCY_RUNS runs (default 5: each costs about 1.4 s, most of it
// the departure's goodbyeGrace; set 20 or more for a median worth
// quoting). Run with -v to see the median.
func TestNamespaceDiscoveryLatency(t *testing.T) {
	requireRootAndIP(t)
	if testing.Short() {
		t.Skip("skipping latency measurement in -short mode")
	}
	runs := 5
	if s := os.Getenv("FERRY_LATENCY_RUNS"); s != "" {
		fmt.Sscan(s, &runs)
	}
	nsA, nsB, _, _ := vethPair(t)
	a := startHelper(t, nsA, "Stayer")
	a.waitFor(t, "ready", 10*time.Second, func(l helperLine) bool { return l.Ev == "ready" })
	var lat, leave []time.Duration
	for i := 0; i < runs; i++ {
		b := startHelper(t, nsB, fmt.Sprintf("Newcomer %d", i), os.Getenv("FERRY_LATENCY_NEWCOMER_ENV"))
		st := b.waitFor(t, "start", 10*time.Second, func(l helperLine) bool { return l.Ev == "start" })
		seen := a.waitFor(t, "newcomer", 10*time.Second, func(l helperLine) bool { return l.Ev == "appeared" && l.ID == b.id })
		lat = append(lat, time.Unix(0, seen.NS).Sub(time.Unix(0, st.NS)))
		stop := time.Now()
		b.stdin.Close()
		gone := a.waitFor(t, "newcomer leaving", 30*time.Second, func(l helperLine) bool { return l.Ev == "gone" && l.ID == b.id })
		leave = append(leave, time.Unix(0, gone.NS).Sub(stop))
		b.cmd.Wait()
	}
	t.Logf("discovery latencies in run order: %v", lat)
	slices.Sort(lat)
	slices.Sort(leave)
	t.Logf("discovery latency over %d runs: median %v, min %v, max %v", runs, lat[len(lat)/2], lat[0], lat[len(lat)-1])
	t.Logf("departure latency over %d runs: median %v, max %v", runs, leave[len(leave)/2], leave[len(leave)-1])
}

// TestNamespacesLinkComesUpLaterAndRename: both devices start without a
// usable network; when the link comes up they re-register and re-join and
// find each other; a rename shows up as one change, without a gone event.
func TestNamespacesLinkComesUpLaterAndRename(t *testing.T) {
	requireRootAndIP(t)
	nsA, nsB, _, ipB, up := vethPairDown(t)
	a := startHelper(t, nsA, "Alpha")
	b := startHelper(t, nsB, "Bravo")
	for _, h := range []*helper{a, b} {
		l := h.waitFor(t, "ready", 10*time.Second, func(l helperLine) bool { return l.Ev == "ready" })
		if l.Err == "" {
			t.Errorf("%s: advertising reported no problem without a usable interface", h.name)
		}
	}
	linkUp := time.Now()
	up()
	// Interfaces are polled every 3 s; then the announcement and the queries go out.
	seen := a.waitFor(t, "Bravo after link up", 15*time.Second, func(l helperLine) bool { return l.Ev == "appeared" && l.ID == b.id })
	b.waitFor(t, "Alpha after link up", 15*time.Second, func(l helperLine) bool { return l.Ev == "appeared" && l.ID == a.id })
	t.Logf("found each other %v after the link came up", time.Unix(0, seen.NS).Sub(linkUp))
	if !slices.Contains(seen.Addrs, ipB) {
		t.Errorf("Bravo's addresses %v lack %s", seen.Addrs, ipB)
	}

	if _, err := io.WriteString(b.stdin, "name Bravo Renamed\n"); err != nil {
		t.Fatal(err)
	}
	l := a.waitFor(t, "the new name", 10*time.Second, func(l helperLine) bool {
		if l.ID == b.id && l.Ev == "gone" {
			t.Errorf("rename flickered: %+v", l)
		}
		return l.ID == b.id && l.Name == "Bravo Renamed"
	})
	if l.Ev != "changed" {
		t.Errorf("rename reported as %q, want changed", l.Ev)
	}
}

// TestNamespaceLooked: on a real link, discovery has looked long enough
// (its first queries out and answered, a probe round of the remembered
// devices done) a few seconds after it starts, and looks again when the
// interfaces change: here a new address on the link (another network).
func TestNamespaceLooked(t *testing.T) {
	requireRootAndIP(t)
	nsA, _, _, _ := vethPair(t)
	a := startHelper(t, nsA, "Looker", helperModeEnv+"=looked")
	st := a.waitFor(t, "start", 10*time.Second, func(l helperLine) bool { return l.Ev == "start" })
	l := a.waitFor(t, "looked", 15*time.Second, func(l helperLine) bool { return l.Ev == "looked" || l.Ev == "unlooked" })
	after := time.Unix(0, l.NS).Sub(time.Unix(0, st.NS))
	t.Logf("looked %v after it started", after)
	if l.Ev != "looked" || after < 2*time.Second+answerWait {
		t.Errorf("%s %v after it started, want looked after its first queries had their answers", l.Ev, after)
	}
	var dev string
	out, err := exec.Command("ip", "-n", nsA, "-o", "link", "show", "type", "veth").Output()
	if f := strings.Fields(string(out)); err != nil || len(f) < 2 {
		t.Fatalf("the veth in %s: %v %q", nsA, err, out)
	} else {
		dev, _, _ = strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
	}
	changed := time.Now()
	run(t, "ip", "-n", nsA, "addr", "add", "10.250.250.1/24", "dev", dev)
	// Interfaces are polled every 0.5 s here (the helper's looked mode).
	a.waitFor(t, "unlooked", 10*time.Second, func(l helperLine) bool { return l.Ev == "unlooked" })
	l = a.waitFor(t, "looked again", 15*time.Second, func(l helperLine) bool { return l.Ev == "looked" })
	t.Logf("looked again %v after the new address", time.Unix(0, l.NS).Sub(changed))
}
