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
	// The compared binary is the same one: its rows must still be its own.
	err := runLoopback(context.Background(), []string{"--quick", "--workloads", "B,C", "--transports", "quic,tcp",
		"--cli", cli, "--compare", cli, "--baselines", "rsync", "--dir", dir, "--small-dir", "", "--md", md, "--csv", filepath.Join(dir, "loopback.csv"), "--svg", filepath.Join(dir, "loopback.svg")}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())
	table, _ := os.ReadFile(md)
	want := []string{"| B | bare quic-go stream", "| B | ferry quic |", "| B | ferry tcp |", "| C | ferry quic |", "| C | disk: cp -R", "| C | disk: tar c piped to tar x",
		"| B | ferry tcp (ferry-cli) |", "| C | ferry quic (ferry-cli) |", "| B: 50 x 2 MiB |", "| CPU-s per GiB, B (both sides) |"}
	if _, err := exec.LookPath("rsync"); err == nil {
		want = append(want, "| B | rsync -e ssh |")
	}
	for _, w := range want {
		if !strings.Contains(string(table), w) {
			t.Errorf("no row %q in\n%s", w, table)
		}
	}
	csvText, _ := os.ReadFile(filepath.Join(dir, "loopback.csv"))
	for _, w := range []string{"workload,what,round,seconds,", "\nB,ferry tcp,1,", "\nC,ferry quic (ferry-cli),1,"} {
		if !strings.Contains(string(csvText), w) {
			t.Errorf("no %q in the CSV\n%s", w, csvText)
		}
	}
	if svg, err := os.ReadFile(filepath.Join(dir, "loopback.svg")); err != nil || !strings.Contains(string(svg), ">ferry tcp (ferry-cli)<") {
		t.Errorf("chart: %v\n%s", err, svg)
	}
}

func TestParseFerryVariant(t *testing.T) {
	for _, c := range []struct {
		in   string
		want ferryVariant
	}{
		{"tcp", ferryVariant{transport: "tcp", env: []string{}}},
		{"quic/no-resume", ferryVariant{transport: "quic", noResume: true, env: []string{}}},
		{"tcp+FERRY_BUFFERED_IO=1+X=2/no-resume", ferryVariant{transport: "tcp", noResume: true, env: []string{"FERRY_BUFFERED_IO=1", "X=2"}}},
		{"quic+--streams=2+X=1", ferryVariant{transport: "quic", env: []string{"X=1"}, sendArgs: []string{"--streams=2"}}},
	} {
		got := parseFerryVariant(c.in)
		if got.transport != c.want.transport || got.noResume != c.want.noResume || strings.Join(got.env, " ") != strings.Join(c.want.env, " ") ||
			strings.Join(got.sendArgs, " ") != strings.Join(c.want.sendArgs, " ") {
			t.Errorf("parseFerryVariant(%q) = %+v, want %+v", c.in, got, c.want)
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

// TestFileIOQuick runs every case of the file I/O bench once on a small file.
func TestFileIOQuick(t *testing.T) {
	var out bytes.Buffer
	if err := runFileIO(context.Background(), []string{"--dir", t.TempDir(), "--mib", "8", "--rounds", "1"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, c := range ioCases() {
		if !strings.Contains(out.String(), "| "+c.name+" |") {
			t.Errorf("no row for %q in\n%s", c.name, out.String())
		}
	}
}
