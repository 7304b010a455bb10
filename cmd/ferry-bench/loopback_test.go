package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoopbackQuick keeps the loopback benchmark working: it runs the quick
// mode end to end (ceilings, disk, Ferry over QUIC and TCP) and checks that
// every cell produced a row. The figures themselves are not judged here.
func TestLoopbackQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Ferry and moves a few hundred MB")
	}
	dir := t.TempDir()
	cli := filepath.Join(dir, "ferry-cli")
	if out, err := exec.Command("go", "build", "-o", cli, "../ferry-cli").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// runLoopback re-executes this binary for the ceiling server; TestMain
	// routes that back to the command.
	var out bytes.Buffer
	md := filepath.Join(dir, "loopback.md")
	err := runLoopback(context.Background(), []string{"--quick", "--workloads", "B,C", "--transports", "quic,tcp", "--cli", cli, "--dir", dir, "--md", md}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())
	table, _ := os.ReadFile(md)
	for _, want := range []string{"| B | bare quic-go stream", "| B | ferry quic", "| B | ferry tcp", "| C | ferry quic", "| C | disk write"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("no row %q in\n%s", want, table)
		}
	}
}

func TestMain(m *testing.M) {
	// The ceiling server runs as a child: "ferry-bench ceiling-server ...".
	if len(os.Args) > 1 && os.Args[1] == "ceiling-server" {
		if err := runCeilingServer(context.Background(), os.Args[2:], os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestCeilingModes runs the bare-stream ceiling with several connections,
// hashing and real files, and checks it cleans up after itself.
func TestCeilingModes(t *testing.T) {
	if testing.Short() {
		t.Skip("moves a few dozen MB")
	}
	dir := t.TempDir()
	for _, proto := range []string{"tls", "quic"} {
		var out bytes.Buffer
		args := []string{"--proto", proto, "--conns", "2", "--hash", "--files", dir, "--mib", "8"}
		if err := runCeilingCmd(context.Background(), args, &out); err != nil {
			t.Fatalf("%s: %v", proto, err)
		}
		if !strings.Contains(out.String(), proto+" x2 hash=true files=true: ") {
			t.Errorf("output %q", out.String())
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
