//go:build linux

package netwatch

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNetlinkSeesChanges: in a network namespace of its own, adding an
// address, a route, and taking the link down each wake the watcher at once
// (needs root; the namespace is the test's, the host's network is untouched).
func TestNetlinkSeesChanges(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root to create a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipping: no `ip` command (iproute2)")
	}
	ns := fmt.Sprintf("ferrynw-%d", os.Getpid())
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	ip("-n", ns, "link", "add", "d0", "type", "veth", "peer", "name", "d1")

	// The netlink socket belongs to the namespace of the thread that opens it.
	var w *Watcher
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		f, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		w = New(Options{ListAddrs: func() ([]net.Addr, error) { return nil, nil }})
		errc <- nil
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.How() != "netlink" {
		t.Fatalf("watching by %s, want netlink", w.How())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, step := range [][]string{
		{"-n", ns, "link", "set", "d0", "up"},
		{"-n", ns, "addr", "add", "10.99.0.1/24", "dev", "d0"},
		{"-n", ns, "route", "add", "10.98.0.0/16", "dev", "d0"},
		{"-n", ns, "addr", "del", "10.99.0.1/24", "dev", "d0"},
		{"-n", ns, "link", "set", "d0", "down"},
	} {
		ch := w.Changed()
		ip(step...)
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("no change reported after ip %v", step)
		}
	}
}
