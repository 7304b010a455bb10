package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
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
