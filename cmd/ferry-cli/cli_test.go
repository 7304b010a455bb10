package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/testutil"
)

func TestMain(m *testing.M) {
	// Nothing here may multicast onto the host's network: discovery sees no
	// interfaces, as on a machine without a LAN, so names resolve only
	// through remembered devices (direct probes and the trust store).
	discoveryInterfaces = func() ([]net.Interface, error) { return nil, nil }
	localsendInterfaces = func() ([]net.Interface, error) { return nil, nil }
	lsWatchHost = "127.0.0.1"
	resolveWait = 1500 * time.Millisecond
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is the ferry-cli that buildCLI built for this test run: one build
// for every test that runs it as a process (linking it took 2-3 s a test).
var built struct {
	once sync.Once
	dir  string // removed by TestMain
	bin  string
	err  error
}

// buildCLI returns ferry-cli built (without -race: the children only need to
// be real processes) once for the test run; a test that changes the binary
// must copy it first.
func buildCLI(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("these tests need the go tool to build ferry-cli: ", err)
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "ferry-cli-test-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "ferry-cli")
		cmd := exec.Command("go", "build", "-o", built.bin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatalf("go build ferry-cli: %v", built.err)
	}
	return built.bin
}

// syncBuffer collects a command's output; it is written from the command's
// goroutine and read from the test's.
type syncBuffer struct {
	mu        sync.Mutex // guards the fields below
	b         bytes.Buffer
	listening chan string // receives receive's "listening ..." line once
	sent      bool
	notify    chan struct{} // signalled after each write (see changed)
}

func newSyncBuffer() *syncBuffer {
	return &syncBuffer{listening: make(chan string, 1), notify: make(chan struct{}, 1)}
}

// changed is signalled after a write, for tests waiting for some output.
func (s *syncBuffer) changed() <-chan struct{} { return s.notify }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}()
	s.b.Write(p)
	if !s.sent {
		for _, l := range strings.Split(s.b.String(), "\n") {
			if strings.HasPrefix(l, "listening ") {
				s.listening <- l
				s.sent = true
				break
			}
		}
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runCLI runs one ferry-cli command to completion.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// receiver is a `ferry-cli receive` running in the background.
type receiver struct {
	quic, tcp, id string
	dir           string
	out, errOut   *syncBuffer
	cancel        context.CancelFunc
	exit          chan int
	once          sync.Once
	code          int
}

// startReceiver runs receive on a loopback port with its own config and
// download dirs (cfg, when not empty, is reused) and waits until it listens.
func startReceiver(t *testing.T, cfg string, args ...string) *receiver {
	t.Helper()
	if cfg == "" {
		cfg = t.TempDir()
	}
	r := &receiver{dir: t.TempDir(), out: newSyncBuffer(), errOut: newSyncBuffer(), exit: make(chan int, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	full := append([]string{"receive", "--config", cfg, "--dir", r.dir}, args...)
	if !slices.Contains(args, "--listen") {
		full = append(full, "--listen", "127.0.0.1:0")
	}
	// LocalSend binds its port and multicasts on this machine's own
	// interfaces: tests turn it on only inside namespaces they create.
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--localsend") }) {
		full = append(full, "--localsend=false")
	}
	go func() { r.exit <- run(ctx, full, r.out, r.errOut) }()
	t.Cleanup(func() { r.stop() })
	select {
	case line := <-r.out.listening:
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "quic":
				r.quic = v
			case "tcp":
				r.tcp = v
			case "id":
				r.id = v
			}
		}
	case code := <-r.exit:
		r.exit <- code
		t.Fatalf("receive exited with %d before listening: %s", code, r.errOut)
	}
	if r.quic == "" && r.tcp == "" || r.id == "" {
		t.Fatalf("bad listening line: %q", r.out)
	}
	return r
}

// wait returns receive's exit code once it has ended by itself.
func (r *receiver) wait() int {
	r.once.Do(func() { r.code = <-r.exit })
	return r.code
}

// stop cancels receive and waits for it to exit.
func (r *receiver) stop() int {
	r.cancel()
	return r.wait()
}

// files lists what the receiver saved, relative to its download dir.
func (r *receiver) files(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(r.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(r.dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeFile creates a file with content under a fresh temp dir.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// lastEvent decodes the last JSON line of send --json.
func lastEvent(t *testing.T, stdout string) engine.Event {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var ev engine.Event
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &ev); err != nil {
		t.Fatalf("last line is not a JSON event: %v\n%s", err, stdout)
	}
	return ev
}

// oneLine checks that stderr is a single "ferry-cli CMD: reason" line.
func oneLine(t *testing.T, stderr, cmd string) string {
	t.Helper()
	s := strings.TrimSuffix(stderr, "\n")
	if s == "" || strings.Contains(s, "\n") || !strings.HasPrefix(s, "ferry-cli "+cmd+": ") || len(s) == len("ferry-cli "+cmd+": ") {
		t.Fatalf("stderr is not one line with a reason: %q", stderr)
	}
	t.Log(s)
	return s
}

func TestSendReceiveLoopback(t *testing.T) {
	r := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery")
	src := writeFile(t, "hello.txt", "hello, ferry\n")
	code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--to", r.quic, "--json", src)
	if code != 0 {
		t.Fatalf("send exit %d: %s", code, stderr)
	}
	ev := lastEvent(t, stdout)
	if ev.Kind != engine.EventResult || ev.Result == nil || ev.Result.State != engine.StateDone || ev.Result.Verified != 1 {
		t.Fatalf("last event is not a done result: %+v", ev)
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("receive --once exit %d: %s", code, r.errOut)
	}
	got, err := os.ReadFile(filepath.Join(r.dir, "hello.txt"))
	if err != nil || string(got) != "hello, ferry\n" {
		t.Fatalf("received %q, %v", got, err)
	}
}

// TestReceiveWithoutQUIC: another program holds the UDP port, so QUIC cannot
// listen; receive says so and receives over TCP on the same port.
func TestReceiveWithoutQUIC(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	port := pc.LocalAddr().String()
	r := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery", "--listen", port)
	if r.quic != "" || r.tcp != port {
		t.Fatalf("listening quic=%q tcp=%q, want TCP alone on %s", r.quic, r.tcp, port)
	}
	if !strings.Contains(r.errOut.String(), "QUIC is not listening") {
		t.Errorf("no word about QUIC: %q", r.errOut)
	}
	src := writeFile(t, "hello.txt", "over tcp\n")
	code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--to", port, "--json", src)
	if code != 0 {
		t.Fatalf("send exit %d: %s", code, stderr)
	}
	if ev := lastEvent(t, stdout); ev.Result == nil || ev.Result.State != engine.StateDone || ev.Result.Transport != "tcp" {
		t.Fatalf("last event %+v", ev)
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("receive --once exit %d: %s", code, r.errOut)
	}
}

func TestSendDeclined(t *testing.T) {
	// A receiver that only accepts trusted devices declines a new sender.
	r := startReceiver(t, "", "--once", "--accept", "trusted", "--no-discovery")
	src := writeFile(t, "no.txt", "unwanted")
	code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--to", r.quic, "--json", src)
	if code == 0 {
		t.Fatalf("send to a declining receiver exited 0: %s", stdout)
	}
	oneLine(t, stderr, "send")
	if ev := lastEvent(t, stdout); ev.Result == nil || ev.Result.State != engine.StateDeclined {
		t.Fatalf("last event is not a declined result: %+v", ev)
	}
	if code := r.wait(); code == 0 {
		t.Fatal("receive --once exited 0 after declining")
	}
	if f := r.files(t); len(f) != 0 {
		t.Fatalf("declined transfer left files: %v", f)
	}
}

func TestUsageErrors(t *testing.T) {
	file := writeFile(t, "f", "x")
	cfg := t.TempDir()
	for _, args := range [][]string{
		{},
		{"no-such-command"},
		{"send", "--config", cfg, file},
		{"send", "--config", cfg, "--to", "127.0.0.1:1"},
		{"send", "--config", cfg, "--bogus", "--to", "127.0.0.1:1", file},
		{"receive", "--config", cfg, "--accept", "maybe"},
		{"peers", "--config", cfg, "extra"},
		{"peers", "--config", cfg, "--timeout", "0s"},
		{"doctor", "--port", "70000"},
		{"id", "--config", cfg, "--nope"},
		{"id", "--config", cfg, "extra"},
		// A folder given without --dir: files would go to ~/Downloads.
		{"receive", "--config", cfg, "--no-discovery", t.TempDir()},
		{"send", "--config", cfg, "--streams", "-3", "--to", "127.0.0.1:1", file},
		{"send", "--config", cfg, "--streams", "1000", "--to", "127.0.0.1:1", file},
		{"send", "--config", cfg, "--retry-for", "-1s", "--to", "127.0.0.1:1", file},
		{"send", "--config", cfg, "--to", "127.0.0.1:99999", file},
		{"send", "--config", cfg, "--to", "[::1]:0", file},
		{"share", "--config", cfg, "--expire", "0", file},
		{"share", "--config", cfg, "--expire", "-5m", file},
		{"receive", "--config", cfg, "--link", "--expire", "0"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 with a message", args, code, stderr)
		}
	}
}

// An IP address without a port is Ferry's default port on that device,
// not a device's name to look for (which ended in 'no device called
// "192.168.1.5" answered').
func TestToAnAddressWithoutAPort(t *testing.T) {
	for in, want := range map[string]string{
		"192.168.1.5": "192.168.1.5:" + defaultPort,
		"fe80::1":     "[fe80::1]:" + defaultPort,
		"[::1]":       "[::1]:" + defaultPort,
		"10.0.0.7:9":  "10.0.0.7:9",
	} {
		tg, err := resolveByDiscovery(t.Context(), in, t.TempDir(), false, io.Discard)
		if err != nil || len(tg.Addrs) == 0 {
			t.Fatalf("%q: %v %v", in, tg, err)
		}
		for _, a := range tg.Addrs {
			if !strings.HasSuffix(a.String(), want) {
				t.Errorf("%q: dials %s, want %s", in, a, want)
			}
		}
	}
}

// A path to share that is not there is said plainly: the path and why,
// not the layers it went through ("share link: weblink: share: stat ...").
func TestShareMissingPath(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	code, _, stderr := runCLI(t, "share", "--config", t.TempDir(), "--listen", "127.0.0.1:0", missing)
	if want := "ferry-cli share: " + missing + ": no such file or directory\n"; code != 1 || stderr != want {
		t.Fatalf("exit %d, stderr %q; want 1, %q", code, stderr, want)
	}
}

func TestIDJSONCreatesConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "new", "ferry")
	read := func() map[string]string {
		t.Helper()
		code, stdout, stderr := runCLI(t, "id", "--config", cfg, "--name", "Test Box", "--json")
		if code != 0 {
			t.Fatalf("id exit %d: %s", code, stderr)
		}
		var m map[string]string
		if err := json.Unmarshal([]byte(stdout), &m); err != nil {
			t.Fatalf("id --json: %v: %q", err, stdout)
		}
		return m
	}
	first := read()
	if first["name"] != "Test Box" || len(first["id"]) != 52 || strings.ReplaceAll(first["human_id"], "-", "") != first["id"] {
		t.Fatalf("id --json: %v", first)
	}
	entries, err := os.ReadDir(cfg)
	if err != nil || len(entries) == 0 {
		t.Fatalf("--config %s was not populated: %v %v", cfg, entries, err)
	}
	if again := read(); again["id"] != first["id"] {
		t.Fatalf("identity not kept in --config: %s then %s", first["id"], again["id"])
	}
}

// TestSendByRememberedName sends once by address, then by the receiver's
// name and by an ID prefix: with no multicast, both resolve through the
// trust store's remembered address, and the handshake must prove the ID.
func TestSendByRememberedName(t *testing.T) {
	r := startReceiver(t, "", "--accept", "all", "--no-discovery", "--name", "Lab Receiver")
	cfg := t.TempDir()
	send := func(to, file string) {
		t.Helper()
		code, stdout, stderr := runCLI(t, "send", "--config", cfg, "--to", to, "--json", writeFile(t, file, file))
		if code != 0 {
			t.Fatalf("send --to %s exit %d: %s", to, code, stderr)
		}
		if ev := lastEvent(t, stdout); ev.Result == nil || ev.Result.State != engine.StateDone || ev.Peer.ID != r.id {
			t.Fatalf("send --to %s: last event %+v", to, ev)
		}
	}
	// Unknown before the first transfer.
	code, _, stderr := runCLI(t, "send", "--config", cfg, "--to", "lab receiver", writeFile(t, "x", "x"))
	if code == 0 || !strings.Contains(stderr, "no device called") {
		t.Fatalf("unknown name: exit %d, %q", code, stderr)
	}
	oneLine(t, stderr, "send")
	if _, err := resolveByDiscovery(t.Context(), r.id[:6], cfg, false, io.Discard); !errors.Is(err, errNoDevice) {
		t.Fatalf("resolve: %v, want errNoDevice", err)
	}

	send(r.quic, "one.txt")
	send("lab receiver", "two.txt") // names match ignoring case
	send(r.id[:8], "three.txt")
	send(strings.ToLower(r.id[:4]+"-"+r.id[4:8]), "four.txt") // the short ID as every screen shows it

	tgt, err := resolveByDiscovery(t.Context(), "Lab Receiver", cfg, false, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if tgt.ID != r.id || !slices.ContainsFunc(tgt.Addrs, func(a addr.Addr) bool { return a.HostPort() == r.quic }) {
		t.Fatalf("resolved %+v; want ID %s at %s", tgt, r.id, r.quic)
	}
	want := []string{"four.txt", "one.txt", "three.txt", "two.txt"}
	if got := r.files(t); !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
}

// TestNameMustProveIdentity replaces a remembered receiver with another
// device on the same address and name: sending by name must refuse it.
func TestNameMustProveIdentity(t *testing.T) {
	a := startReceiver(t, "", "--accept", "all", "--no-discovery", "--name", "twin")
	cfg := t.TempDir()
	if code, _, stderr := runCLI(t, "send", "--config", cfg, "--to", a.quic, writeFile(t, "a.txt", "a")); code != 0 {
		t.Fatalf("first send: %s", stderr)
	}
	a.stop()
	b := startReceiver(t, "", "--accept", "all", "--no-discovery", "--name", "twin", "--listen", a.quic)
	if b.id == a.id {
		t.Fatal("two receivers share an ID")
	}
	// Not the default two minutes of tries (the device may come back to
	// its address): a few are enough to see none reaches the other one.
	code, _, stderr := runCLI(t, "send", "--config", cfg, "--retry-for", "3s", "--to", "twin", writeFile(t, "b.txt", "b"))
	if code == 0 {
		t.Fatalf("send by name reached a different device: %s", stderr)
	}
	if !strings.Contains(stderr, "last known address") {
		t.Fatalf("expected the trust-store fallback note: %q", stderr)
	}
	if f := b.files(t); len(f) != 0 {
		t.Fatalf("impostor received %v", f)
	}
}

// TestAmbiguousName: two remembered devices share a name; sending by that
// name lists both instead of picking one.
func TestAmbiguousName(t *testing.T) {
	cfg := t.TempDir()
	var ids []string
	for range 2 {
		r := startReceiver(t, "", "--accept", "all", "--no-discovery", "--name", "same")
		if code, _, stderr := runCLI(t, "send", "--config", cfg, "--to", r.quic, writeFile(t, "f", "f")); code != 0 {
			t.Fatalf("send: %s", stderr)
		}
		ids = append(ids, r.id)
		r.stop() // offline, so only the trust store knows them
	}
	code, _, stderr := runCLI(t, "send", "--config", cfg, "--to", "same", writeFile(t, "g", "g"))
	if code == 0 {
		t.Fatal("ambiguous name accepted")
	}
	line := oneLine(t, stderr, "send")
	for _, id := range ids {
		if short := id[:4] + "-" + id[4:8]; !strings.Contains(line, short) {
			t.Fatalf("candidate %s not listed: %s", short, line)
		}
	}
	if _, err := resolveByDiscovery(t.Context(), "SAME", cfg, false, io.Discard); !errors.Is(err, errAmbiguousDevice) {
		t.Fatalf("resolve: %v, want errAmbiguousDevice", err)
	}
	// The full ID is never ambiguous; it resolves to the remembered
	// address, pinned to that ID. (Resolved, not sent: sending to an
	// offline device retries for minutes.)
	var note bytes.Buffer
	tgt, err := resolveByDiscovery(t.Context(), ids[0], cfg, false, &note)
	if err != nil || tgt.ID != ids[0] || len(tgt.Addrs) == 0 || !strings.Contains(note.String(), "last known address") {
		t.Fatalf("full ID: %+v, %v, note %q", tgt, err, note.String())
	}
}

func TestPeersListsRememberedDevice(t *testing.T) {
	r := startReceiver(t, "", "--accept", "all", "--no-discovery", "--name", "Shelf")
	cfg := t.TempDir()
	if code, _, stderr := runCLI(t, "send", "--config", cfg, "--to", r.quic, writeFile(t, "f", "f")); code != 0 {
		t.Fatalf("send: %s", stderr)
	}
	code, stdout, stderr := runCLI(t, "peers", "--config", cfg, "--json", "--timeout", "3s", "--localsend=false")
	if code != 0 {
		t.Fatalf("peers exit %d: %s", code, stderr)
	}
	var found []discovery.Peer
	dec := json.NewDecoder(strings.NewReader(stdout))
	for dec.More() {
		var p discovery.Peer
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("peers --json: %v: %q", err, stdout)
		}
		if p.Source == discovery.SourceRemembered || p.ID == r.id {
			found = append(found, p) // other Ferry devices on this network are not this test's business
		}
	}
	if len(found) != 1 || found[0].ID != r.id || found[0].Name != "Shelf" || found[0].Source != discovery.SourceRemembered {
		t.Fatalf("peers: %+v (stderr %q)", found, stderr)
	}
	if !strings.Contains(stderr, "not working") {
		t.Fatalf("peers did not say that mDNS is unavailable: %q", stderr)
	}
}

func TestReceiveAdvertisesWithoutMulticast(t *testing.T) {
	// Discovery on: with no multicast interface the receiver still works
	// and says why it is not visible.
	r := startReceiver(t, "", "--once", "--accept", "all")
	if code, _, stderr := runCLI(t, "send", "--config", t.TempDir(), "--to", r.quic, writeFile(t, "f", "f")); code != 0 {
		t.Fatalf("send: %s", stderr)
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("receive exit %d", code)
	}
	if !strings.Contains(r.errOut.String(), "not visible on the local network yet") {
		t.Fatalf("receive stderr: %q", r.errOut)
	}
}

func TestDoctorChecksOurPorts(t *testing.T) {
	var got discovery.DiagnoseOptions
	diagnose = func(ctx context.Context, o discovery.DiagnoseOptions) discovery.Report {
		got = o
		return discovery.Report{Findings: []discovery.Finding{{Check: "firewall", Severity: discovery.SeverityError,
			Message: "A firewall rule drops port 47800.", Fix: "Allow it."}}}
	}
	t.Cleanup(func() { diagnose = discovery.Diagnose })
	var listenPort int
	checkListen = func(ctx context.Context, port int) []discovery.Finding {
		listenPort = port
		return nil
	}
	t.Cleanup(func() { checkListen = listenFindings })
	checkLocalSend = func(int) []discovery.Finding { return nil } // binds 53317 and joins groups on this machine
	t.Cleanup(func() { checkLocalSend = localSendFindings })
	code, stdout, _ := runCLI(t, "doctor", "--no-selftest")
	if code != 1 || !slices.Equal(got.Ports, []int{47800}) || !got.SkipSelfTest {
		t.Fatalf("doctor exit %d, options %+v", code, got)
	}
	if !strings.Contains(stdout, "drops port 47800") || !strings.Contains(stdout, "Allow it.") {
		t.Fatalf("doctor output: %q", stdout)
	}
	if code, _, _ := runCLI(t, "doctor", "--no-selftest", "--port", "9000"); code != 1 || !slices.Equal(got.Ports, []int{9000}) || listenPort != 9000 {
		t.Fatalf("--port 9000: exit %d, ports %v, listen check on %d", code, got.Ports, listenPort)
	}
}

// The doctor says when a transport cannot listen on the port (here: another
// program holds the UDP port).
func TestListenFindings(t *testing.T) {
	pc, err := net.ListenPacket("udp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	port := pc.LocalAddr().(*net.UDPAddr).Port
	fs := listenFindings(t.Context(), port)
	if len(fs) != 1 || fs[0].Severity != discovery.SeverityWarning || !strings.HasPrefix(fs[0].Message, "QUIC cannot listen") {
		t.Fatalf("findings %+v", fs)
	}
	pc.Close()
	if fs := listenFindings(t.Context(), port); len(fs) != 1 || fs[0].Severity != discovery.SeverityOK {
		t.Fatalf("with the port free: %+v", fs)
	}
}

func TestMatch(t *testing.T) {
	const idA = "AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHHIIIIJJJJKKKKLLLLMMMM"
	const idB = "AAAAZZZZCCCCDDDDEEEEFFFFGGGGHHHHIIIIJJJJKKKKLLLLMMMM"
	cs := []candidate{{Name: "Laptop", ID: idA}, {Name: "laptop", ID: idB}, {Name: "AAAABB", ID: "XXXX" + idA[4:]}}
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"", nil},
		{"nothing", nil},
		{"LAPTOP", []string{idA, idB}},       // names ignore case
		{idA, []string{idA}},                 // exact ID
		{"aaaa-bbbb", []string{idA}},         // prefix, dashes and case ignored
		{"AAAA", []string{idA, idB}},         // ambiguous prefix
		{"AAA", nil},                         // too short for a prefix
		{"AAAABB", []string{idA}},            // a prefix beats a name
		{"xxxx", []string{"XXXX" + idA[4:]}}, // prefix
		{" Laptop ", []string{idA, idB}},     // spaces trimmed
		{"AAAA BBBB", []string{idA}},         // spaced human form
		{"Laptop\x00", nil},                  // no control tricks
	} {
		var got []string
		for _, c := range match(tc.q, cs) {
			got = append(got, c.ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("match(%q) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestIsHostPort(t *testing.T) {
	for s, want := range map[string]bool{
		"127.0.0.1:47800": true, "[::1]:9": true, "host.local:47800": true,
		"laptop": false, "127.0.0.1": false, ":47800": false, "a:b": false, "h:0": false, "h:70000": false,
		"AAAA-BBBB": false,
	} {
		if got := isHostPort(s); got != want {
			t.Errorf("isHostPort(%q) = %v", s, got)
		}
	}
}

// TestNamespacesSendByName runs the real binary in two network namespaces
// joined by a veth pair: receive advertises over mDNS, and send --to NAME
// (with an empty trust store) and peers find it there. It needs root.
func TestNamespacesSendByName(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: network namespace tests need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipping: the ip command (iproute2) is not installed")
	}
	bin := buildCLI(t)
	tag := strconv.Itoa(os.Getpid() % 100000)
	nsA, nsB := "fcA"+tag, "fcB"+tag
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, ns := range []string{nsA, nsB} {
		ip("netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	ip("link", "add", "fva"+tag, "netns", nsA, "type", "veth", "peer", "name", "fvb"+tag, "netns", nsB)
	ip("-n", nsA, "addr", "add", "10.77.1.1/24", "dev", "fva"+tag)
	ip("-n", nsB, "addr", "add", "10.77.1.2/24", "dev", "fvb"+tag)
	for _, c := range [][]string{{nsA, "lo"}, {nsB, "lo"}, {nsA, "fva" + tag}, {nsB, "fvb" + tag}} {
		ip("-n", c[0], "link", "set", c[1], "up")
	}

	// The receiver, on the default port, advertising.
	rdir := t.TempDir()
	recv := exec.Command("ip", "netns", "exec", nsA, bin, "receive", "--config", t.TempDir(), "--dir", rdir,
		"--accept", "all", "--once", "--name", "Netns Box")
	stdout, err := recv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var rerr bytes.Buffer
	recv.Stderr = &rerr
	if err := recv.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	waited := make(chan error, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			select {
			case first <- lines.Text():
			default:
			}
		}
		close(first)
		waited <- recv.Wait()
	}()
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = recv.Process.Kill()
			<-waited
		}
	})
	listening := <-first
	if !strings.HasPrefix(listening, "listening ") {
		t.Fatalf("receive did not start: %q", listening)
	}
	if !strings.Contains(listening, ":"+defaultPort) {
		t.Errorf("receive did not use the default port: %s", listening)
	}
	_, id, _ := strings.Cut(listening, " id=")
	id, _, _ = strings.Cut(id, " ")

	inB := func(args ...string) (string, string, error) {
		cmd := exec.Command("ip", append([]string{"netns", "exec", nsB, bin}, args...)...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		return o.String(), e.String(), err
	}
	out, errOut, err := inB("peers", "--config", t.TempDir(), "--json", "--timeout", "3s")
	if err != nil {
		t.Fatalf("peers: %v %s", err, errOut)
	}
	// One device, one line: the receiver speaks Ferry (mDNS) and, since
	// receive serves LocalSend by default, LocalSend; its LocalSend
	// certificate proves its Ferry key, so the two are one peer.
	var p discovery.Peer
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("peers in the other namespace: %q (stderr %s)", out, errOut)
	}
	if err := json.Unmarshal([]byte(lines[0]), &p); err != nil || p.ID != id || p.Source != discovery.SourceMDNS || p.Name != "Netns Box" ||
		p.OS != runtime.GOOS || !slices.Contains(p.HostPorts(), "10.77.1.1:"+defaultPort) {
		t.Fatalf("peers in the other namespace: %q %v (stderr %s)", out, err, errOut)
	}
	// Its LocalSend side at either of its addresses: the IPv4 one, or its
	// IPv6 link-local one (reachable since the client escapes the zone),
	// whichever was verified first.
	lsAt := func(ls *discovery.LocalSend) bool {
		host, port, _ := net.SplitHostPort(ls.Addr.HostPort())
		ip, err := netip.ParseAddr(host)
		return port == "53317" && err == nil && (ip == netip.MustParseAddr("10.77.1.1") || ip.Is6() && ip.IsLinkLocalUnicast())
	}
	if ls := p.LocalSend; ls == nil || ls.Alias != "Netns Box" || !lsAt(ls) || !ls.Verified || len(ls.Fingerprint) != 64 ||
		!slices.Contains(p.Addresses(), ls.Addr) {
		t.Fatalf("the receiver's LocalSend side: %+v", p.LocalSend)
	}

	src := writeFile(t, "over-mdns.txt", "found by name\n")
	out, errOut, err = inB("send", "--config", t.TempDir(), "--to", "netns box", "--json", src)
	if err != nil {
		t.Fatalf("send by name: %v %s", err, errOut)
	}
	if ev := lastEvent(t, out); ev.Result == nil || ev.Result.State != engine.StateDone || ev.Peer.ID != id {
		t.Fatalf("send by name: %+v", ev)
	}
	err = <-waited
	exited = true
	if err != nil {
		t.Fatalf("receive --once: %v %s", err, rerr.String())
	}
	if got, err := os.ReadFile(filepath.Join(rdir, "over-mdns.txt")); err != nil || string(got) != "found by name\n" {
		t.Fatalf("received %q, %v", got, err)
	}
}

// Issue 26, finding 9: the doctor names the port the app listens on, the
// default one or the one it uses instead.
func TestDoctorNamesTheAppPort(t *testing.T) {
	dir := t.TempDir()
	if f := appPortFinding(dir, 47800, false); f.Severity != discovery.SeverityOK || !strings.Contains(f.Message, "Port 47800, Ferry's default (QUIC over UDP, and TCP), is free here") {
		t.Errorf("free: %+v", f)
	}
	if f := appPortFinding(dir, 47800, true); f.Severity != discovery.SeverityWarning || !strings.Contains(f.Message, "free port it picks") {
		t.Errorf("taken, none saved: %+v", f)
	}
	if err := os.WriteFile(filepath.Join(dir, appPortFile), []byte("51234\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f := appPortFinding(dir, 47800, true); !strings.Contains(f.Message, "listens on port 51234 instead") || !strings.Contains(f.Fix, "at port 51234") {
		t.Errorf("taken, 51234 saved: %+v", f)
	}
	if err := os.WriteFile(filepath.Join(dir, appPortFile), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f := appPortFinding(dir, 47800, true); strings.Contains(f.Message, "junk") || !strings.Contains(f.Message, "free port it picks") {
		t.Errorf("taken, junk saved: %+v", f)
	}
}

// TestFlagsAfterPaths: flags may follow the paths, as in most tools; "--"
// still ends the flags.
func TestFlagsAfterPaths(t *testing.T) {
	fs, _ := newFlagSet("send", io.Discard)
	fs.String("to", "", "")
	fs.Bool("json", false, "")
	fs.String("text", "", "")
	for _, c := range []struct{ in, want []string }{
		{[]string{"a.jpg", "--to", "bob", "b.jpg"}, []string{"--to", "bob", "--", "a.jpg", "b.jpg"}},
		{[]string{"--to=bob", "a.jpg", "--json"}, []string{"--to=bob", "--json", "--", "a.jpg"}},
		{[]string{"--json", "--to", "bob"}, []string{"--json", "--to", "bob"}},
		{[]string{"--text", "-", "--to", "bob"}, []string{"--text", "-", "--to", "bob"}},
		{[]string{"--to", "bob", "--", "-notes.txt", "--json"}, []string{"--to", "bob", "--", "-notes.txt", "--json"}},
		{[]string{"a.jpg", "-", "--bogus", "x"}, []string{"--bogus", "--", "a.jpg", "-", "x"}},
		{[]string{"a.jpg", "--to"}, []string{"--to"}}, // the parse refuses it: no value
	} {
		if got := interspersed(fs, c.in); !slices.Equal(got, c.want) {
			t.Errorf("interspersed(%q) = %q, want %q", c.in, got, c.want)
		}
	}

	r := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery")
	dash := filepath.Join(t.TempDir(), "-notes.txt")
	if err := os.WriteFile(dash, []byte("n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, "photo.jpg", "jpeg")
	code, stdout, stderr := runCLI(t, "send", file, "--config", t.TempDir(), "--to", r.tcp, "--json", "--", dash)
	if code != 0 {
		t.Fatalf("send with flags after a path: exit %d: %s %s", code, stdout, stderr)
	}
	if ev := lastEvent(t, stdout); ev.Result == nil || ev.Result.Verified != 2 {
		t.Fatalf("last event %+v; want 2 files verified (--json read as a flag)", ev)
	}
	r.wait()
	if got := r.files(t); !slices.Equal(got, []string{"-notes.txt", "photo.jpg"}) {
		t.Fatalf("received %q", got)
	}
	if code, _, stderr := runCLI(t, "send", file, "--config", t.TempDir(), "--to"); code != 2 || !strings.Contains(stderr, "flag needs an argument") {
		t.Fatalf("a flag without its value: exit %d, %q", code, stderr)
	}
}

// TestPromptWithoutInput: receive asks, but its standard input is closed
// (a service, a pipe): the offer is declined, the sender reads why, and the
// receiver's terminal says how to receive without a prompt, not only
// "Declined by you".
func TestPromptWithoutInput(t *testing.T) {
	old := stdin
	stdin = strings.NewReader("")
	t.Cleanup(func() { stdin = old })
	r := startReceiver(t, "", "--once", "--no-discovery")
	src := writeFile(t, "f.txt", "x")
	code, _, stderr := runCLI(t, "send", "--config", t.TempDir(), "--to", r.tcp, src)
	if code == 0 || !strings.Contains(stderr, "the receiver could not be asked") {
		t.Fatalf("send: exit %d, %q", code, stderr)
	}
	r.wait()
	if out := r.errOut.String(); !strings.Contains(out, "standard input is closed") || !strings.Contains(out, "--accept all") {
		t.Fatalf("the receiver did not say why it declined:\n%s", out)
	}
}

// A remembered device's name is what its hello said: whatever peers makes
// of a name with control characters (the trust store keeps none, and peers
// escapes what it prints), nothing of it acts on the terminal.
func TestPeersEscapesARememberedName(t *testing.T) {
	r := startReceiver(t, "", "--accept", "all", "--no-discovery", "--name", "Shelf\x1b[2J\r")
	cfg := t.TempDir()
	if code, _, stderr := runCLI(t, "send", "--config", cfg, "--to", r.quic, writeFile(t, "f", "f")); code != 0 {
		t.Fatalf("send: %s", stderr)
	}
	code, stdout, stderr := runCLI(t, "peers", "--config", cfg, "--timeout", "1s", "--localsend=false")
	if code != 0 {
		t.Fatalf("peers exit %d: %s", code, stderr)
	}
	if strings.ContainsAny(stdout, "\x1b\r") || !strings.Contains(stdout, "remembered") {
		t.Fatalf("peers printed %q", stdout)
	}
}

// A slip of the finger at the prompt is asked about again, not taken for
// "no" (it declined the offer).
func TestPromptAsksAgainAfterASlip(t *testing.T) {
	old := stdin
	stdin = strings.NewReader("x\n\nyes please\nY\n")
	t.Cleanup(func() { stdin = old })
	r := startReceiver(t, "", "--once", "--no-discovery")
	src := writeFile(t, "f.txt", "x")
	if code, _, stderr := runCLI(t, "send", "--config", t.TempDir(), "--to", r.tcp, src); code != 0 {
		t.Fatalf("send: exit %d, %q", code, stderr)
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("receive exit %d: %s", code, r.errOut)
	}
	if out := r.out.String() + r.errOut.String(); strings.Count(out, "Please type y, n or a.") != 2 || strings.Count(out, "Accept? ") != 4 {
		t.Fatalf("the prompt:\n%s", out)
	}
	if got, err := os.ReadFile(filepath.Join(r.dir, "f.txt")); err != nil || string(got) != "x" {
		t.Fatalf("received %q, %v", got, err)
	}
}

// A mistyped flag is one line that says where the flags are listed; --help
// lists them (exit 0).
func TestMistypedFlagIsOneLine(t *testing.T) {
	code, _, stderr := runCLI(t, "send", "--config", t.TempDir(), "--no-discovery", "x")
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "-no-discovery") || !strings.Contains(stderr, "ferry-cli send --help lists its flags") {
		t.Fatalf("exit %d, stderr %q; want one line naming the flag and --help", code, stderr)
	}
	for _, args := range [][]string{{"send", "--help"}, {"send", "photo.jpg", "-h"}, {"help", "send"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || !strings.Contains(stdout, "-retry-for") || stderr != "" {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q; want the flags on standard output", args, code, stdout, stderr)
		}
	}
}

// A receiver that cannot keep resume state (its folder cannot be made)
// says so when it starts: an interrupted transfer would start again from
// its beginning, with nothing said before.
func TestReceiveSaysResumeCannotBeKept(t *testing.T) {
	cfg := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfg, "resume"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startReceiver(t, cfg, "--no-discovery")
	testutil.WaitFor(t, "the warning", func() bool { return strings.Contains(r.errOut.String(), "its progress cannot be kept") })
	if ok := startReceiver(t, "", "--no-discovery"); strings.Contains(ok.errOut.String(), "cannot be kept") {
		t.Errorf("a receiver that can keep it said %q", ok.errOut.String())
	}
}
