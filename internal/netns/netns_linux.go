// Package netns runs code inside Linux network namespaces that a test
// creates: a goroutine locked to a thread that entered the namespace runs
// each function handed to Do, so sockets made there (listeners, dials,
// multicast sockets) belong to the namespace for their whole life, while
// the rest of the test process stays in its own. Needs root and iproute2.
package netns

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// NS is one network namespace and the thread that runs code inside it.
type NS struct {
	Name string
	do   chan func()
}

// nsSeq names the namespaces of one test binary apart.
var nsSeq atomic.Int64

// Available says why namespaces cannot be made here ("" when they can).
func Available() string {
	if os.Geteuid() != 0 {
		return "network namespace tests need root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "the ip command (iproute2) is not installed"
	}
	return ""
}

func run(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Pair makes two namespaces joined by a veth pair with ipA/24 and ipB/24
// on interfaces named ifA and ifB (multicast on, loopback up), removed when
// the test ends. It skips the test where namespaces cannot be made.
func Pair(t testing.TB) (a, b *NS, ipA, ipB, ifA, ifB string) {
	t.Helper()
	if why := Available(); why != "" {
		t.Skip("skipping: " + why)
	}
	n := nsSeq.Add(1)
	tag := fmt.Sprintf("%d%d", os.Getpid()%100000, n)
	names := []string{"lsA" + tag, "lsB" + tag}
	for _, ns := range names {
		run(t, "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	ifA, ifB = "la"+tag, "lb"+tag
	run(t, "link", "add", ifA, "netns", names[0], "type", "veth", "peer", "name", ifB, "netns", names[1])
	sub := fmt.Sprintf("10.%d.%d", 200+n%50, os.Getpid()%250)
	ipA, ipB = sub+".1", sub+".2"
	for _, c := range [][]string{
		{names[0], "addr", "add", ipA + "/24", "dev", ifA}, {names[1], "addr", "add", ipB + "/24", "dev", ifB},
		{names[0], "link", "set", "lo", "up"}, {names[1], "link", "set", "lo", "up"},
		{names[0], "link", "set", ifA, "up", "multicast", "on"}, {names[1], "link", "set", ifB, "up", "multicast", "on"},
	} {
		run(t, append([]string{"-n", c[0]}, c[1:]...)...)
	}
	return enter(t, names[0]), enter(t, names[1]), ipA, ipB, ifA, ifB
}

// enter starts the namespace's thread.
func enter(t testing.TB, name string) *NS {
	t.Helper()
	ns := &NS{Name: name, do: make(chan func())}
	ready := make(chan error, 1)
	go func() {
		// The thread never leaves the namespace: the goroutine ends
		// without unlocking, and the runtime then ends the thread.
		runtime.LockOSThread()
		f, err := os.Open("/var/run/netns/" + name)
		if err == nil {
			err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
			f.Close()
		}
		ready <- err
		if err != nil {
			return
		}
		for fn := range ns.do {
			fn()
		}
	}()
	if err := <-ready; err != nil {
		t.Fatalf("entering %s: %v", name, err)
	}
	t.Cleanup(func() { close(ns.do) })
	return ns
}

// Do runs f inside the namespace and waits for it.
func (ns *NS) Do(f func()) {
	done := make(chan struct{})
	ns.do <- func() { defer close(done); f() }
	<-done
}

// Listen opens a listener inside the namespace.
func (ns *NS) Listen(network, addr string) (ln net.Listener, err error) {
	ns.Do(func() { ln, err = net.Listen(network, addr) })
	return ln, err
}

// Dial is a DialContext that opens its socket inside the namespace.
func (ns *NS) Dial(ctx context.Context, network, addr string) (c net.Conn, err error) {
	ns.Do(func() { c, err = (&net.Dialer{}).DialContext(ctx, network, addr) })
	return c, err
}
