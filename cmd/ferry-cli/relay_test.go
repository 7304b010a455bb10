package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// startRelay runs `ferry-cli relay` on loopback with args and returns
// its address and output.
func startRelay(t *testing.T, args ...string) (addr string, out, errOut *syncBuffer) {
	t.Helper()
	out, errOut = newSyncBuffer(), newSyncBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() { exit <- run(ctx, append([]string{"relay", "--listen", "127.0.0.1:0"}, args...), out, errOut) }()
	t.Cleanup(func() { cancel(); <-exit })
	deadline := time.After(10 * time.Second)
	for {
		if _, rest, ok := strings.Cut(out.String(), "relay listening on "); ok {
			return strings.Fields(rest)[0], out, errOut
		}
		select {
		case <-out.changed():
		case code := <-exit:
			exit <- code
			t.Fatalf("relay exited with %d: %s", code, errOut)
		case <-deadline:
			t.Fatalf("relay not listening: %s %s", out, errOut)
		}
	}
}

// TestRelaySecretFlags: a relay started without a secret says loudly
// that anyone can relay through it; one with a secret (from a file, not a
// flag's value) turns away a receiver without it or with another, in a
// sentence naming the relay and its relay secret; a secret too short is
// refused before anything starts.
func TestRelaySecretFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("relay.secret", "c2VjcmV0IG9mIHRoZSByZWxheSBmb3IgdGVzdHM=\n")
	other := write("other.secret", "another secret, long enough\n")
	short := write("short.secret", "short\n")

	_, out, errOut := startRelay(t)
	if !strings.Contains(out.String(), "WITHOUT A SECRET") || !strings.Contains(errOut.String(), "anyone who can reach its port can relay through it") {
		t.Errorf("a relay without a secret: out %q, log %q", out, errOut)
	}
	if code, _, stderr := runCLI(t, "relay", "--listen", "127.0.0.1:0", "--secret-file", short); code == 0 || !strings.Contains(stderr, "at least 16 characters") {
		t.Errorf("a short secret: exit %d, %q", code, stderr)
	}

	addr, out, _ := startRelay(t, "--secret-file", good)
	if strings.Contains(out.String(), "WITHOUT") {
		t.Errorf("a relay with a secret warns: %q", out)
	}
	receive := func(extra ...string) (int, string) {
		args := append([]string{"receive", "--config", t.TempDir(), "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--no-discovery",
			"--localsend=false", "--anywhere", "--relay", addr}, extra...)
		code, _, stderr := runCLI(t, args...)
		return code, stderr
	}
	for _, tc := range []struct {
		name  string
		extra []string
		says  string
	}{
		{"no secret", nil, "this device has none"},
		{"another secret", []string{"--relay-secret-file", other}, "refused this device's relay secret"},
	} {
		code, stderr := receive(tc.extra...)
		if code == 0 || !strings.Contains(stderr, addr) || !strings.Contains(stderr, tc.says) {
			t.Errorf("%s: exit %d, %q", tc.name, code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "send", "--config", t.TempDir(), "--relay-secret-file", good, "--to", "x", good); code != 2 {
		t.Errorf("--relay-secret-file without --relay: exit %d, %q", code, stderr)
	}
}

// TestRelaySecretFromEnv: FERRY_RELAY_SECRET when no file is given, the
// file first when both are; a bad one is named.
func TestRelaySecretFromEnv(t *testing.T) {
	t.Setenv("FERRY_RELAY_SECRET", "  the secret from the environment\n")
	if s, err := relaySecret(""); err != nil || s != "the secret from the environment" {
		t.Fatalf("from the environment: %q, %v", s, err)
	}
	f := filepath.Join(t.TempDir(), "s")
	os.WriteFile(f, []byte("the secret from the file"), 0o600)
	if s, err := relaySecret(f); err != nil || s != "the secret from the file" {
		t.Fatalf("file and environment: %q, %v", s, err)
	}
	t.Setenv("FERRY_RELAY_SECRET", "short")
	if _, err := relaySecret(""); err == nil || !strings.Contains(err.Error(), "FERRY_RELAY_SECRET") {
		t.Fatalf("a short one: %v", err)
	}
	if _, err := relaySecret(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing file")
	}
	t.Setenv("FERRY_RELAY_SECRET", "")
	if s, err := relaySecret(""); err != nil || s != "" {
		t.Fatalf("none: %q, %v", s, err)
	}
}

// TestReceivedRouteLine: receive's transport line says how a session came
// beyond the LAN; a sender's reason says it already.
func TestReceivedRouteLine(t *testing.T) {
	for _, tc := range []struct {
		dir   engine.Direction
		route string
		want  string
	}{
		{engine.Receiving, engine.RouteRelayed, "transport: quic (chosen by the sender), relayed via 203.0.113.5:3478\n"},
		{engine.Receiving, engine.RouteInternet, "transport: quic (chosen by the sender), through the internet (direct), found through relay 203.0.113.5:3478\n"},
		{engine.Receiving, engine.RouteLAN, "transport: quic (chosen by the sender)\n"},
		{engine.Sending, engine.RouteRelayed, "transport: quic (chosen by the sender)\n"},
	} {
		var out strings.Builder
		newPrinter(&out, false).event(engine.Event{Kind: engine.EventTransport, Direction: tc.dir,
			Transport: &engine.TransportInfo{Name: "quic", Reason: "chosen by the sender", Route: tc.route, Relay: "203.0.113.5:3478"}})
		if out.String() != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.dir, tc.route, out.String(), tc.want)
		}
	}
}

// TestAddressThatIsNoRelay: --relay given the address of something else
// (a web server, a TCP echo, the wrong port) says that it is no Ferry
// relay, for send and for receive, not that the relay "does not answer"
// (it did) nor a web server's "501 Unsupported method".
func TestAddressThatIsNoRelay(t *testing.T) {
	noLANLook(t)
	web := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(status)
			io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	echo := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { io.Copy(c, c); c.Close() }()
			}
		}()
		return ln.Addr().String()
	}
	a, b := newDevice(t, "Laptop"), newDevice(t, "Desktop")
	pairAnywhere(t, a, b, false)
	file := writeFile(t, "a.txt", "a")
	for _, tc := range []struct{ name, addr string }{
		{"a web server that takes no POST", web(http.StatusNotImplemented, "Unsupported method ('POST')")},
		{"a web server with a page for every path", web(http.StatusOK, "<html><body>It works!</body></html>")},
		{"a web server that wants a login", web(http.StatusUnauthorized, "login first")},
		{"a TCP echo", echo()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "receive", "--config", b.dir, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--no-discovery",
				"--localsend=false", "--anywhere", "--relay", tc.addr)
			says(t, "receive", code, stderr, tc.addr)
			code, _, stderr = runCLI(t, "send", "--config", a.dir, "--relay", tc.addr, "--to", "Desktop", file)
			says(t, "send", code, stderr, tc.addr)
		})
	}
}

// says checks that a command ended saying that addr is no Ferry relay.
func says(t *testing.T, cmd string, code int, stderr, addr string) {
	t.Helper()
	if code != 1 || !strings.Contains(stderr, addr+" is not a Ferry relay") || strings.Contains(stderr, "does not answer") ||
		strings.Contains(stderr, "secret") {
		t.Errorf("%s: exit %d, %q", cmd, code, stderr)
	}
}

// TestTwoPairedDevicesOfOneName: send --relay --to a name two paired
// devices bear says which two they are, by the first letters of their IDs,
// which --to then takes: it said only "name one by its device ID", and
// nothing else in ferry-cli shows the IDs of paired devices out of reach.
func TestTwoPairedDevicesOfOneName(t *testing.T) {
	a, b, c := newDevice(t, "Laptop"), newDevice(t, "Desktop"), newDevice(t, "Desktop")
	pairAnywhere(t, a, b, true)
	pairAnywhere(t, a, c, true)
	file := writeFile(t, "a.txt", "a")
	relay := "127.0.0.1:1" // nothing listens: the name is settled before
	code, _, stderr := runCLI(t, "send", "--config", a.dir, "--relay", relay, "--to", "Desktop", file)
	if code == 0 || !strings.Contains(stderr, b.id.Short()) || !strings.Contains(stderr, c.id.Short()) {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "send", "--config", a.dir, "--relay", relay, "--to", strings.ToLower(c.id.Short()), file)
	if code == 0 || strings.Contains(stderr, "called") || !strings.Contains(stderr, c.id.Short()) {
		t.Fatalf("--to %s: exit %d, %q", c.id.Short(), code, stderr)
	}
}

// TestRelayErrorsNameTheDevice: a send through a relay that cannot reach
// the device names it as the user knows it, its name with its ID's first
// letters, however --to gave it: it said "cannot reach device 3YEFXSUB",
// an ID nothing else the user typed or saw showed.
func TestRelayErrorsNameTheDevice(t *testing.T) {
	noLANLook(t)
	a, b := newDevice(t, "Laptop"), newDevice(t, "Desktop")
	pairAnywhere(t, a, b, false)
	relay, _, _ := startRelay(t)
	file := writeFile(t, "a.txt", "a")
	for _, to := range []string{"Desktop", strings.ToLower(b.id.Short())} {
		code, _, stderr := runCLI(t, "send", "--config", a.dir, "--relay", relay, "--to", to, file)
		if code != 1 || !strings.Contains(stderr, "cannot reach Desktop ("+b.id.Short()+") from anywhere: it is not receiving through relay "+relay) {
			t.Errorf("--to %s: exit %d, %q", to, code, stderr)
		}
	}
}

// TestRelayCheckedBeforeListening: receive --anywhere says "listening"
// (which scripts wait on) only once the relay took it; a relay down or a
// wrong relay secret ends it before: it said "listening", then exited 1.
func TestRelayCheckedBeforeListening(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "relay.secret")
	if err := os.WriteFile(secret, []byte("c2VjcmV0IG9mIHRoZSByZWxheSBmb3IgdGVzdHM=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	relay, _, _ := startRelay(t, "--secret-file", secret)
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"a relay down", []string{"--relay", "127.0.0.1:1"}},
		{"no relay secret", []string{"--relay", relay}},
	} {
		args := append([]string{"receive", "--config", t.TempDir(), "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--no-discovery",
			"--localsend=false", "--anywhere"}, tc.extra...)
		code, stdout, stderr := runCLI(t, args...)
		if code != 1 || strings.Contains(stdout, "listening") || !strings.Contains(stderr, "cannot receive from anywhere") {
			t.Errorf("%s: exit %d, %q %q", tc.name, code, stdout, stderr)
		}
	}
	r := startReceiver(t, "", "--no-discovery", "--anywhere", "--relay", relay, "--relay-secret-file", secret)
	testutil.WaitFor(t, "the relay's line", func() bool {
		return strings.Contains(r.out.String(), "reachable from anywhere through relay "+relay)
	})
	if out := r.out.String(); strings.Index(out, "listening") > strings.Index(out, "reachable") {
		t.Errorf("the lines: %q", out)
	}
}

// TestRelayErrorsEndInASentence: a relay down, or a device not receiving
// through it, is said in a sentence and the system's plain cause, as the
// CLI's other errors are: they ended in the dial's Go error ("relay
// unreachable: 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection
// refused") or said again what the sentence had said ("device not found
// through the relay HOST").
func TestRelayErrorsEndInASentence(t *testing.T) {
	noLANLook(t)
	a, b := newDevice(t, "Laptop"), newDevice(t, "Desktop")
	pairAnywhere(t, a, b, false)
	file := writeFile(t, "a.txt", "a")
	down := "127.0.0.1:1" // nothing listens there
	const check = "is `ferry-cli relay` running there, and is the address right?"
	code, _, stderr := runCLI(t, "send", "--config", a.dir, "--relay", down, "--to", "Desktop", file)
	if want := "ferry-cli send: cannot reach Desktop (" + b.id.Short() + ") from anywhere: the relay " + down + " does not answer (" + check + "): connection refused\n"; code != 1 || stderr != want {
		t.Errorf("send, a relay down: exit %d, %q, want %q", code, stderr, want)
	}
	code, _, stderr = runCLI(t, "receive", "--config", b.dir, "--dir", t.TempDir(), "--listen", "127.0.0.1:0", "--no-discovery",
		"--localsend=false", "--anywhere", "--relay", down)
	if want := "ferry-cli receive: cannot receive from anywhere: the relay " + down + " does not answer (" + check + "): connection refused\n"; code != 1 || stderr != want {
		t.Errorf("receive, a relay down: exit %d, %q, want %q", code, stderr, want)
	}
	relay, _, _ := startRelay(t)
	code, _, stderr = runCLI(t, "send", "--config", a.dir, "--relay", relay, "--to", "Desktop", file)
	if code != 1 || !strings.HasSuffix(stderr, "turn on \"Reach my paired devices from anywhere\")\n") {
		t.Errorf("send, a device not receiving there: exit %d, %q", code, stderr)
	}
}

// TestRelayReachLines: receive --anywhere says in one line that the relay
// can no longer be reached (the engine's EventListener for the relay,
// after its grace), and in one that it can again; it printed nothing.
func TestRelayReachLines(t *testing.T) {
	for _, tc := range []struct {
		st   engine.ListenerStatus
		want string
	}{
		{engine.ListenerStatus{Transport: engine.RelayListener, Addr: "203.0.113.5:3478", Err: "the relay 203.0.113.5:3478 does not answer: connection refused"},
			"not reachable from anywhere for now: the relay 203.0.113.5:3478 does not answer: connection refused; paired devices reach this device through it again once it answers\n"},
		{engine.ListenerStatus{Transport: engine.RelayListener, Addr: "203.0.113.5:3478"}, "reachable from anywhere through relay 203.0.113.5:3478 again\n"},
	} {
		var out strings.Builder
		newPrinter(&out, false).event(engine.Event{Kind: engine.EventListener, Listener: &tc.st})
		if out.String() != tc.want {
			t.Errorf("%q, want %q", out.String(), tc.want)
		}
	}
}
