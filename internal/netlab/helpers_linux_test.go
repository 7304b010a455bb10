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
	"slices"
	"strconv"
	"strings"
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

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
