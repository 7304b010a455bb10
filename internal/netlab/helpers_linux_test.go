//go:build linux

package netlab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newLab builds a lab for one test and removes it when the test ends, or
// skips the test when the lab cannot run here.
func newLab(t testing.TB, cfg Config) *Lab {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("skipping network lab test: %v (run the tests as root on Linux)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lab, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("netlab.New: %v", err)
	}
	t.Cleanup(func() {
		if err := lab.Close(); err != nil {
			t.Errorf("lab.Close: %v", err)
		}
	})
	t.Logf("lab seed %d", lab.Seed())
	return lab
}

// pinger sends ICMP echo requests from one namespace over a raw socket and
// times the kernel's replies.
type pinger struct {
	c   net.PacketConn
	id  uint16
	seq uint16
}

func newPinger(t testing.TB, lab *Lab, ns string, src netip.Addr) *pinger {
	t.Helper()
	c, err := lab.ListenPacket(ns, "ip4:icmp", src.String())
	if err != nil {
		t.Fatalf("raw ICMP socket in %s: %v", ns, err)
	}
	t.Cleanup(func() { c.Close() })
	return &pinger{c: c, id: uint16(os.Getpid())}
}

// ping sends one echo request of size payload bytes to dst and returns the
// round trip, or an error when no reply came within timeout.
func (p *pinger) ping(dst netip.Addr, payload int, timeout time.Duration) (time.Duration, error) {
	p.seq++
	msg := make([]byte, 8+payload)
	msg[0] = 8 // echo request
	binary.BigEndian.PutUint16(msg[4:], p.id)
	binary.BigEndian.PutUint16(msg[6:], p.seq)
	binary.BigEndian.PutUint16(msg[2:], checksum(msg))
	start := time.Now()
	if _, err := p.c.WriteTo(msg, &net.IPAddr{IP: dst.AsSlice()}); err != nil {
		return 0, fmt.Errorf("ping: %w", err)
	}
	if err := p.c.SetReadDeadline(start.Add(timeout)); err != nil {
		return 0, err
	}
	buf := make([]byte, 65536)
	for {
		n, _, err := p.c.ReadFrom(buf)
		if err != nil {
			return 0, fmt.Errorf("ping: %w", err)
		}
		if n >= 8 && buf[0] == 0 && binary.BigEndian.Uint16(buf[4:]) == p.id && binary.BigEndian.Uint16(buf[6:]) == p.seq {
			return time.Since(start), nil
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// snmp reads one counter of /proc/net/snmp as seen from namespace ns, e.g.
// ("Udp", "RcvbufErrors").
func snmp(t testing.TB, lab *Lab, ns, proto, field string) uint64 {
	t.Helper()
	var data []byte
	// /proc/net follows the process's namespace; thread-self follows ours.
	err := lab.Do(ns, func() error {
		var err error
		data, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	})
	if err != nil {
		t.Fatalf("read snmp in %s: %v", ns, err)
	}
	lines := strings.Split(string(data), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(lines[i], proto+":") || !strings.HasPrefix(lines[i+1], proto+":") {
			continue
		}
		names, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		for j, n := range names {
			if n == field && j < len(vals) {
				v, err := strconv.ParseUint(vals[j], 10, 64)
				if err != nil {
					t.Fatalf("snmp %s %s: %v", proto, field, err)
				}
				return v
			}
		}
	}
	t.Fatalf("snmp %s %s not found", proto, field)
	return 0
}

// busy reports whether the machine is so loaded (1-minute load average above
// twice the CPU count) that upper bounds on time and lower bounds on
// throughput would measure the scheduler rather than the lab. Tests then
// report those figures instead of enforcing them; the bounds that load
// cannot break (an RTT never below the configured delay, a rate never above
// the configured limit) are always enforced.
func busy(t testing.TB) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return false
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return false
	}
	l, err := strconv.ParseFloat(f[0], 64)
	if err != nil || l <= 2*float64(runtime.NumCPU()) {
		return false
	}
	t.Logf("machine busy (load %.1f on %d CPUs): timing upper bounds and throughput lower bounds reported, not enforced", l, runtime.NumCPU())
	return true
}

// bigRcvBuf makes a UDP socket's receive buffer large enough for a whole
// test burst even when the reading goroutine is starved.
func bigRcvBuf(t testing.TB, c net.PacketConn) {
	t.Helper()
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 64<<20)
	})
	if serr != nil {
		t.Logf("SO_RCVBUFFORCE: %v", serr)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
