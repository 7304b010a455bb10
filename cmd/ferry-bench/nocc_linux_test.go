//go:build linux

package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// noCCEnv makes the test binary play the parts of TestNoCC: "wrap" runs
// no-cc on the test binary itself, "child" checks what the filter allows.
const noCCEnv = "FERRY_BENCH_NOCC_TEST"

func init() {
	if os.Getenv(noCCEnv) == "wrap" {
		os.Setenv(noCCEnv, "child")
		err := runNoCC(context.Background(), []string{os.Args[0], "-test.run=^TestNoCCChild$", "-test.count=1", "-test.v"}, os.Stdout)
		os.Stderr.WriteString("no-cc: " + err.Error() + "\n")
		os.Exit(3)
	}
}

// TestNoCC: a program started through no-cc cannot choose its TCP congestion
// control (EPERM, as for an unprivileged socket asking for BBR where it is
// not allowed), and every other socket option still works.
func TestNoCC(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoCCChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), noCCEnv+"=wrap")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestNoCCChild") {
		t.Fatalf("the child did not run its checks:\n%s", out)
	}
}

func TestNoCCChild(t *testing.T) {
	if os.Getenv(noCCEnv) != "child" {
		t.Skip("runs under TestNoCC")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rc, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	rc.Control(func(fd uintptr) {
		for _, cc := range []string{"bbr", "cubic"} {
			if err := unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc); !errors.Is(err, unix.EPERM) {
				t.Errorf("TCP_CONGESTION %s: %v, want EPERM", cc, err)
			}
		}
		if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			t.Errorf("TCP_NODELAY: %v", err)
		}
		if _, err := unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION); err != nil {
			t.Errorf("reading TCP_CONGESTION: %v", err)
		}
	})
}
