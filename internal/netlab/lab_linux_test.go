//go:build linux

package netlab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPingRTT: the round trip equals the sum of the configured one-way delays,
// never less, and at most 2 ms more (the forwarder's and the kernel's cost).
func TestPingRTT(t *testing.T) {
	lab := newLab(t, Config{})
	src, dst := lab.MustAddr(Sender, "main"), lab.MustAddr(Receiver, "main")
	p := newPinger(t, lab, Sender, src)
	cases := []struct {
		name     string
		fwd, rev time.Duration
	}{
		{"none", 0, 0},
		{"symmetric 10ms", 10 * time.Millisecond, 10 * time.Millisecond},
		{"asymmetric 5+25ms", 5 * time.Millisecond, 25 * time.Millisecond},
		{"long 60ms", 60 * time.Millisecond, 60 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := lab.SetImpairment("main", SenderToReceiver, Impairment{Delay: c.fwd}); err != nil {
				t.Fatal(err)
			}
			if err := lab.SetImpairment("main", ReceiverToSender, Impairment{Delay: c.rev}); err != nil {
				t.Fatal(err)
			}
			roundTrip(t, p, dst, c.fwd+c.rev, 25)
		})
	}
}

// roundTrip pings dst from p's path n times and checks that no round trip
// is below want (the lab never shortens a delay) and that the median is at
// most 2 ms above it (the forwarder's and the kernel's cost). A median the
// busy host pushed up (a scheduling delay of the forwarder or the pinger,
// outside the lab's timing) is taken again, up to three times, as TestLoss
// does; a delay below the configured one fails at once.
func roundTrip(t *testing.T, p *pinger, dst netip.Addr, want time.Duration, n int) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		var rtts []time.Duration
		for range n {
			rtt, err := p.ping(dst, 56, time.Second+2*want)
			if err != nil {
				t.Fatal(err)
			}
			rtts = append(rtts, rtt)
		}
		med, lo := median(rtts), slicesMin(rtts)
		t.Logf("configured RTT %v: measured median %v, min %v, max %v", want, med, lo, slicesMax(rtts))
		if lo < want {
			t.Fatalf("min RTT %v is below the configured %v", lo, want)
		}
		if med <= want+2*time.Millisecond || busy(t) {
			return
		}
		if attempt == 3 {
			t.Fatalf("median RTT %v exceeds configured %v by more than 2ms, three times", med, want)
		}
	}
}

// TestJitter: with jitter the RTTs spread over Delay±Jitter and never go
// below Delay-Jitter. A median the busy host pushed up (the scheduler can
// only add delay) is taken again, up to three times, as roundTrip does: a
// CI rehearsal's run beside the GUI tests measured 23.4 ms once.
func TestJitter(t *testing.T) {
	lab := newLab(t, Config{})
	src, dst := lab.MustAddr(Sender, "main"), lab.MustAddr(Receiver, "main")
	im := Impairment{Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond}
	if err := lab.SetImpairment("main", SenderToReceiver, im); err != nil {
		t.Fatal(err)
	}
	p := newPinger(t, lab, Sender, src)
	for attempt := 1; ; attempt++ {
		var rtts []time.Duration
		for range 40 {
			rtt, err := p.ping(dst, 56, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			rtts = append(rtts, rtt)
		}
		sorted := slices.Clone(rtts)
		slices.Sort(sorted)
		lo, p10, med, p90 := sorted[0], sorted[len(sorted)/10], sorted[len(sorted)/2], sorted[len(sorted)*9/10]
		t.Logf("delay 20ms jitter 5ms one way: RTT min %v p10 %v median %v p90 %v max %v", lo, p10, med, p90, sorted[len(sorted)-1])
		if lo < 15*time.Millisecond {
			t.Fatalf("min RTT %v below Delay-Jitter = 15ms", lo)
		}
		if med < 18*time.Millisecond {
			t.Fatalf("median RTT %v, want about 20ms (uniform 15..25ms plus forwarding)", med)
		}
		if p90-p10 < 4*time.Millisecond {
			t.Fatalf("p10..p90 spread %v: jitter not applied (want about 8ms)", p90-p10)
		}
		if med <= 23*time.Millisecond || busy(t) {
			return
		}
		if attempt == 3 {
			t.Fatalf("median RTT %v, want about 20ms (uniform 15..25ms plus forwarding), three times", med)
		}
	}
}

// udpLoss sends n numbered datagrams from Sender to Receiver on path "main"
// and returns which sequence numbers arrived (see udpRecv). It paces the sender and checks
// that no packet was dropped by a socket buffer, so every missing datagram
// was lost on the wire.
func udpLoss(t *testing.T, lab *Lab, n int) []bool {
	t.Helper()
	got := make([]bool, n)
	for _, s := range udpRecv(t, lab, n) {
		got[s] = true
	}
	return got
}

// udpRecv sends n numbered datagrams from Sender to Receiver on path "main"
// and returns the sequence numbers in arrival order. A host too busy to
// run the lab drops datagrams outside it (the TUN queue, a socket buffer),
// which says nothing of the lab's impairment: such a measurement is taken
// again, up to three times, and only then fails.
func udpRecv(t *testing.T, lab *Lab, n int) []uint32 {
	t.Helper()
	var why string
	for try := 1; try <= 3; try++ {
		got, invalid := udpRecvOnce(t, lab, n)
		if invalid == "" {
			return got
		}
		why = invalid
		t.Logf("try %d: %s; measuring again", try, invalid)
	}
	t.Fatalf("three measurements invalid, the last: %s", why)
	return nil
}

// udpRecvOnce is one measurement of udpRecv; invalid says why it does not
// count.
func udpRecvOnce(t *testing.T, lab *Lab, n int) (_ []uint32, invalid string) {
	t.Helper()
	rc, err := lab.ListenPacket(Receiver, "udp4", netip.AddrPortFrom(lab.MustAddr(Receiver, "main"), 0).String())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	bigRcvBuf(t, rc)
	sc, err := lab.Dial(context.Background(), Sender, "udp4", rc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	rcvErrs := snmp(t, lab, Receiver, "Udp", "RcvbufErrors")
	before := lab.Stats()[0].SenderToReceiver

	var got []uint32
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 2048)
		for {
			m, _, err := rc.ReadFrom(buf)
			if err != nil {
				if isTimeout(err) {
					err = nil
				}
				done <- err
				return
			}
			if m >= 4 {
				if s := binary.BigEndian.Uint32(buf); int(s) < n {
					got = append(got, s)
				}
			}
		}
	}()
	msg := make([]byte, 64)
	for i := range n {
		binary.BigEndian.PutUint32(msg, uint32(i))
		if _, err := sc.Write(msg); err != nil {
			t.Fatal(err)
		}
		if i%64 == 63 {
			time.Sleep(time.Millisecond) // pacing, so no queue on the way overflows
		}
	}
	// Everything left the wire within a few ms; the deadline ends the reader.
	rc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	after := lab.Stats()[0].SenderToReceiver
	if entered := after.Packets - before.Packets; entered != uint64(n) {
		return nil, fmt.Sprintf("%d of %d datagrams entered the wire: lost before the lab", entered, n)
	}
	if e := snmp(t, lab, Receiver, "Udp", "RcvbufErrors"); e != rcvErrs {
		return nil, fmt.Sprintf("receiver socket buffer dropped %d datagrams", e-rcvErrs)
	}
	return got, ""
}

// TestLoss: the measured loss matches the configured rate within a 5-sigma
// binomial bound (a false failure about once in 1.7 million runs).
func TestLoss(t *testing.T) {
	lab := newLab(t, Config{})
	const n = 20000
	for _, p := range []float64{0, 0.005, 0.02, 0.05} {
		t.Run(pct(p), func(t *testing.T) {
			if err := lab.SetImpairment("main", SenderToReceiver, Impairment{Loss: p}); err != nil {
				t.Fatal(err)
			}
			got := udpLoss(t, lab, n)
			lost := countFalse(got)
			measured := float64(lost) / n
			sd := math.Sqrt(n * p * (1 - p))
			t.Logf("configured loss %.2f%%: lost %d of %d = %.3f%% (expected %.0f ± %.0f)", 100*p, lost, n, 100*measured, n*p, sd)
			if math.Abs(float64(lost)-n*p) > 5*sd {
				t.Errorf("lost %d, want %.0f ± %.0f (5 sigma)", lost, n*p, 5*sd)
			}
		})
	}
}

// TestBurstLoss: Gilbert-Elliott loss has the configured mean rate and comes
// in runs of mean length 1/R, unlike independent loss.
func TestBurstLoss(t *testing.T) {
	lab := newLab(t, Config{})
	g := GilbertElliott{P: 0.01, R: 0.25, LossBad: 1}
	if err := lab.SetImpairment("main", SenderToReceiver, Impairment{Burst: &g}); err != nil {
		t.Fatal(err)
	}
	const n = 40000
	got := udpLoss(t, lab, n)
	lost := countFalse(got)
	mean := g.MeanLoss()
	// Losses are correlated (lag-1 correlation rho = 1-P-R), which inflates
	// the variance of the count by about (1+rho)/(1-rho).
	rho := 1 - g.P - g.R
	sd := math.Sqrt(n*mean*(1-mean)) * math.Sqrt((1+rho)/(1-rho))
	runs, inRun := 0, false
	for _, ok := range got {
		if !ok && !inRun {
			runs++
		}
		inRun = !ok
	}
	runLen := float64(lost) / float64(max(runs, 1))
	t.Logf("GE p=%.2f r=%.2f: lost %d of %d = %.2f%% (expected %.2f%% ± %.2f%%), %d runs of mean length %.2f (expected %.1f)",
		g.P, g.R, lost, n, 100*float64(lost)/n, 100*mean, 100*sd/n, runs, runLen, 1/g.R)
	if math.Abs(float64(lost)-n*mean) > 5*sd {
		t.Errorf("lost %d, want %.0f ± %.0f", lost, n*mean, 5*sd)
	}
	// About 300 runs with geometric lengths (sd ~3.5): the mean length is
	// known to ±0.2; 3..5 is a 5-sigma band.
	if runLen < 3 || runLen > 5 {
		t.Errorf("mean loss run length %.2f, want 4 ± 1", runLen)
	}
}

// TestReorderDuplicate: reordered packets arrive after their successors and
// duplicated ones arrive twice, at the configured rates.
func TestReorderDuplicate(t *testing.T) {
	lab := newLab(t, Config{})
	const n, p = 10000, 0.05
	im := Impairment{Delay: time.Millisecond, Reorder: p, ReorderDelay: 3 * time.Millisecond, Duplicate: p}
	if err := lab.SetImpairment("main", SenderToReceiver, im); err != nil {
		t.Fatal(err)
	}
	recv := udpRecv(t, lab, n)
	seen := make([]int, n)
	late := 0 // arrivals after a higher sequence number arrived
	var highest uint32
	for i, s := range recv {
		seen[s]++
		if i > 0 && s < highest && seen[s] == 1 {
			late++
		}
		highest = max(highest, s)
	}
	dups := 0
	for _, c := range seen {
		if c == 0 {
			t.Fatal("a packet was lost with no loss configured")
		}
		dups += c - 1
	}
	sd := math.Sqrt(n * p * (1 - p))
	t.Logf("reorder %.0f%%: %d late arrivals; duplicate %.0f%%: %d duplicates (expected %.0f ± %.0f each)", 100*p, late, 100*p, dups, n*p, sd)
	if math.Abs(float64(dups)-n*p) > 5*sd {
		t.Errorf("%d duplicates, want %.0f ± %.0f", dups, n*p, 5*sd)
	}
	reordered := lab.Stats()[0].SenderToReceiver.Reordered
	if math.Abs(float64(reordered)-n*p) > 5*sd {
		t.Errorf("%d packets held back, want %.0f ± %.0f", reordered, n*p, 5*sd)
	}
	// Packets go out about 64 per ms and are held back 3 ms, so nearly every
	// held-back packet is overtaken; a starved sender can leave a gap.
	if late > int(reordered) || float64(late) < 0.7*float64(reordered) && !busy(t) {
		t.Errorf("%d late arrivals for %d held-back packets", late, reordered)
	}
}

// tcpPair opens a TCP connection from Sender to Receiver on the named path.
func tcpPair(t testing.TB, lab *Lab, pathName string) (snd, rcv net.Conn) {
	t.Helper()
	ln, err := lab.Listen(Receiver, "tcp4", netip.AddrPortFrom(lab.MustAddr(Receiver, pathName), 0).String())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	snd, err = lab.Dial(ctx, Sender, "tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	rcv = <-accepted
	if rcv == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { snd.Close(); rcv.Close() })
	return snd, rcv
}

// TestRateLimit: a TCP bulk transfer through a 20 Mbit/s bottleneck gets
// between 85% of the rate and the rate minus header overhead; a UDP blast at
// twice the rate is cut down to the rate by tail drops.
func TestRateLimit(t *testing.T) {
	const rate = 20_000_000
	lab := newLab(t, Config{})
	im := Impairment{Rate: rate, Delay: 5 * time.Millisecond}
	if err := lab.SetImpairment("main", Both, im); err != nil {
		t.Fatal(err)
	}
	t.Run("tcp", func(t *testing.T) {
		snd, rcv := tcpPair(t, lab, "main")
		go func() {
			buf := make([]byte, 64<<10)
			for {
				if _, err := snd.Write(buf); err != nil {
					return
				}
			}
		}()
		buf := make([]byte, 64<<10)
		// Skip slow start, then measure for 3 s.
		if _, err := io.ReadFull(rcv, make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var total int64
		for time.Since(start) < 3*time.Second {
			n, err := rcv.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			total += int64(n)
		}
		got := float64(total*8) / time.Since(start).Seconds()
		// 1448 payload bytes per 1500-byte packet (timestamps on).
		ceiling := rate * 1448.0 / 1500
		t.Logf("TCP goodput %.2f Mbit/s through a %.0f Mbit/s bottleneck (ceiling %.2f)", got/1e6, rate/1e6, ceiling/1e6)
		if got > ceiling*1.02 || got < 0.85*rate && !busy(t) {
			t.Errorf("goodput %.2f Mbit/s, want in [%.2f, %.2f]", got/1e6, 0.85*rate/1e6, ceiling*1.02/1e6)
		}
	})
	t.Run("udp tail drop", func(t *testing.T) {
		rc, err := lab.ListenPacket(Receiver, "udp4", netip.AddrPortFrom(lab.MustAddr(Receiver, "main"), 0).String())
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		bigRcvBuf(t, rc)
		sc, err := lab.Dial(context.Background(), Sender, "udp4", rc.LocalAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		before := lab.Stats()[0].SenderToReceiver
		const size, dur = 1000, 2 * time.Second // 1028-byte IP packets
		type res struct {
			bytes int64
			first time.Time
			last  time.Time
		}
		done := make(chan res, 1)
		go func() {
			var r res
			buf := make([]byte, 2048)
			for {
				n, _, err := rc.ReadFrom(buf)
				if err != nil {
					done <- r
					return
				}
				now := time.Now()
				if r.first.IsZero() {
					r.first = now
				} else {
					r.bytes += int64(n + 28)
				}
				r.last = now
			}
		}()
		// Offer 40 Mbit/s: 5000 packets/s of 1028 bytes, in 5 per ms.
		msg := make([]byte, size)
		start := time.Now()
		for i := 0; time.Since(start) < dur; i++ {
			if _, err := sc.Write(msg); err != nil {
				t.Fatal(err)
			}
			if i%5 == 4 {
				time.Sleep(time.Millisecond)
			}
		}
		rc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		r := <-done
		got := float64(r.bytes*8) / r.last.Sub(r.first).Seconds()
		st := lab.Stats()[0].SenderToReceiver
		drops := st.QueueDropped - before.QueueDropped
		offered := float64((st.Bytes-before.Bytes)*8) / dur.Seconds()
		t.Logf("UDP offered %.1f Mbit/s, delivered %.2f Mbit/s (IP bytes) through %.0f Mbit/s, %d tail drops",
			offered/1e6, got/1e6, rate/1e6, drops)
		if got > rate*1.02 {
			t.Errorf("delivered %.2f Mbit/s through a %.0f Mbit/s limit", got/1e6, rate/1e6)
		}
		switch {
		case offered < 1.5*rate:
			t.Logf("sender starved (offered %.1f Mbit/s): lower bound not checked", offered/1e6)
		case drops == 0:
			t.Error("no tail drops although the offered load exceeded the rate")
		case got < rate*0.9 && !busy(t):
			t.Errorf("delivered %.2f Mbit/s, want at least 90%% of %.0f", got/1e6, rate/1e6)
		}
	})
}

// TestCutRestore: a cut path drops everything and a TCP connection over it
// survives the outage once the path is restored.
func TestCutRestore(t *testing.T) {
	lab := newLab(t, Config{})
	src, dst := lab.MustAddr(Sender, "main"), lab.MustAddr(Receiver, "main")
	p := newPinger(t, lab, Sender, src)
	if _, err := p.ping(dst, 56, time.Second); err != nil {
		t.Fatalf("ping before cut: %v", err)
	}
	snd, rcv := tcpPair(t, lab, "main")
	if err := lab.Cut("main"); err != nil {
		t.Fatal(err)
	}
	if !lab.Stats()[0].Cut {
		t.Error("Stats does not report the cut")
	}
	msg := []byte("across the outage")
	if _, err := snd.Write(msg); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ping(dst, 56, 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("ping over a cut path: err = %v, want a timeout", err)
	}
	if s := lab.Stats()[0].SenderToReceiver; s.CutDropped == 0 {
		t.Errorf("CutDropped = 0 after traffic on a cut path")
	}
	if err := lab.Restore("main"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ping(dst, 56, time.Second); err != nil {
		t.Fatalf("ping after restore: %v", err)
	}
	rcv.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(rcv, got); err != nil {
		t.Fatalf("TCP data sent during the cut never arrived: %v", err)
	}
	if string(got) != string(msg) {
		t.Fatalf("got %q", got)
	}
}

// TestMultiPath: each path has its own addresses and impairments; a socket
// bound to a path's Sender address uses that path whatever the destination,
// and cutting one path leaves the other alone.
func TestMultiPath(t *testing.T) {
	lab := newLab(t, Config{Paths: []PathConfig{{Name: "wifi"}, {Name: "cellular", MTU: 1400}}})
	if got := lab.Paths(); len(got) != 2 || got[0] != "wifi" || got[1] != "cellular" {
		t.Fatalf("Paths() = %v", got)
	}
	if err := lab.SetImpairment("wifi", Both, Impairment{Delay: 2 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := lab.SetImpairment("cellular", Both, Impairment{Delay: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	dst := lab.MustAddr(Receiver, "wifi") // one server address, reached over either path
	wifi := newPinger(t, lab, Sender, lab.MustAddr(Sender, "wifi"))
	cell := newPinger(t, lab, Sender, lab.MustAddr(Sender, "cellular"))
	// Each path's round trip is its own (the check that a delay is kept
	// to within 2 ms, taken again when the busy host pushed a median up:
	// the cellular path's 42.2 ms failed a CI run so).
	t.Log("wifi:")
	roundTrip(t, wifi, dst, 4*time.Millisecond, 9)
	t.Log("cellular:")
	roundTrip(t, cell, dst, 40*time.Millisecond, 9)
	if err := lab.Cut("wifi"); err != nil {
		t.Fatal(err)
	}
	if _, err := wifi.ping(dst, 56, 200*time.Millisecond); !isTimeout(err) {
		t.Errorf("wifi ping while cut: %v, want timeout", err)
	}
	if _, err := cell.ping(dst, 56, time.Second); err != nil {
		t.Errorf("cellular ping while wifi is cut: %v", err)
	}
	st := lab.Stats()
	if !st[0].Cut || st[1].Cut {
		t.Errorf("cut flags = %v, %v; want true, false", st[0].Cut, st[1].Cut)
	}
	if st[1].SenderToReceiver.Delivered == 0 {
		t.Error("no packets counted on cellular")
	}
	if _, err := lab.Addr(Sender, "satellite"); !errors.Is(err, ErrUnknownPath) {
		t.Errorf("Addr of unknown path: %v", err)
	}
	if _, err := lab.Addr("router", "wifi"); !errors.Is(err, ErrUnknownNamespace) {
		t.Errorf("Addr of unknown namespace: %v", err)
	}
}

// TestMTU: with an impairment MTU below the interface MTU, big IPv4 packets
// are dropped with an ICMP "fragmentation needed", and TCP adapts (PMTUD).
func TestMTU(t *testing.T) {
	lab := newLab(t, Config{})
	if err := lab.SetImpairment("main", SenderToReceiver, Impairment{MTU: 1200}); err != nil {
		t.Fatal(err)
	}
	snd, rcv := tcpPair(t, lab, "main")
	data := make([]byte, 256<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	go func() { snd.Write(data) }()
	rcv.SetReadDeadline(time.Now().Add(20 * time.Second))
	got := make([]byte, len(data))
	if _, err := io.ReadFull(rcv, got); err != nil {
		t.Fatalf("transfer over a 1200-byte MTU path: %v", err)
	}
	if string(got) != string(data) {
		t.Fatal("data corrupted")
	}
	if s := lab.Stats()[0].SenderToReceiver; s.MTUDropped == 0 {
		t.Error("MTUDropped = 0: the MTU limit was never exercised")
	}
}

// TestCommandAndClose: commands run inside the namespaces and Close removes
// the namespaces, kills their processes and stops the forwarders.
func TestCommandAndClose(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipping network lab test: %v", err)
	}
	goroutines := runtime.NumGoroutine()
	lab, err := New(context.Background(), Config{Paths: []PathConfig{{Name: "a"}, {Name: "b"}}, CongestionControl: "reno"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	out, err := lab.Command(context.Background(), Receiver, "ip", "-brief", "addr").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10.77.1.2", "10.77.2.2"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("receiver addresses %q lack %s", out, want)
		}
	}
	var buf strings.Builder
	run := exec.Command("ip", "-brief", "addr")
	run.Stdout = &buf
	if err := lab.Run(Sender, run); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(buf.String(), "10.77.2.1 peer") || strings.Contains(buf.String(), "10.77.2.2 peer") {
		t.Errorf("Run did not run in the sender namespace: %q", buf.String())
	}
	cc, err := lab.Command(context.Background(), Sender, "cat", "/proc/sys/net/ipv4/tcp_congestion_control").Output()
	if err != nil || strings.TrimSpace(string(cc)) != "reno" {
		t.Errorf("congestion control in the sender namespace = %q, %v; want reno", cc, err)
	}
	sleeper := lab.Command(context.Background(), Receiver, "sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sleeper.Wait() }()

	if err := lab.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := lab.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("process in the namespace survived Close")
	}
	for _, ns := range []string{Sender, Receiver} {
		name, _ := lab.Namespace(ns)
		if _, err := os.Stat(filepath.Join(netnsDir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("namespace %s still exists after Close (%v)", name, err)
		}
	}
	if err := lab.Do(Sender, func() error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Do after Close: %v, want ErrClosed", err)
	}
	if g := runtime.NumGoroutine(); g > goroutines {
		t.Errorf("%d goroutines after Close, %d before: leak", g, goroutines)
	}
}

// TestCongestionControlNotAllowed: a default the kernel would refuse is
// reported with the sysctl that fixes it, before anything is created.
func TestCongestionControlNotAllowed(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipping network lab test: %v", err)
	}
	_, err := New(context.Background(), Config{CongestionControl: "no-such-cc"})
	if !errors.Is(err, ErrCongestionControlNotAllowed) {
		t.Fatalf("New with an unknown congestion control: %v", err)
	}
}

// TestRouteCongestionControl: a connection across the lab runs the
// congestion control its routes impose, on both ends, though the host's
// allowed list (global, read-only inside a namespace) may not let a
// namespace make it its default, and over what a socket chose before it
// connected; once connected a socket may still change it.
func TestRouteCongestionControl(t *testing.T) {
	for _, cc := range []string{"cubic", "reno"} {
		if !ccListed("available", cc) {
			continue
		}
		lab := newLab(t, Config{RouteCongestionControl: cc})
		ln, err := lab.Listen(Receiver, "tcp4", netip.AddrPortFrom(lab.MustAddr(Receiver, "main"), 0).String())
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, _ := ln.Accept()
			accepted <- c
		}()
		var c net.Conn
		err = lab.Do(Sender, func() error {
			d := net.Dialer{Control: func(network, address string, rc syscall.RawConn) error {
				rc.Control(func(fd uintptr) { unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, "reno") })
				return nil
			}}
			var err error
			c, err = d.Dial("tcp4", ln.Addr().String())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		a := <-accepted
		if a == nil {
			t.Fatal("accept failed")
		}
		defer a.Close()
		for side, conn := range map[string]net.Conn{"sender": c, "receiver": a} {
			if got := congestionOf(t, conn); got != cc {
				t.Errorf("lab %s: %s socket runs %q", cc, side, got)
			}
		}
	}
	if _, err := New(context.Background(), Config{RouteCongestionControl: "no-such-cc"}); !errors.Is(err, ErrCongestionControlNotAllowed) {
		t.Errorf("New with an unknown route congestion control: %v", err)
	}
}

func congestionOf(t *testing.T, c net.Conn) string {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got string
	var gerr error
	rc.Control(func(fd uintptr) { got, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION) })
	if gerr != nil {
		t.Fatal(gerr)
	}
	return strings.TrimRight(got, "\x00")
}

// TestStaleSweep: New removes namespaces left behind by a dead process.
func TestStaleSweep(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipping network lab test: %v", err)
	}
	// PID 0x7ffffffe is above pid_max, so it cannot be alive.
	stale := "ferrylabsweep-2147483646-1-snd"
	if err := ipCmd(context.Background(), "netns", "add", stale); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeNamespace(context.Background(), stale) })
	newLab(t, Config{NamePrefix: "ferrylabsweep"})
	if _, err := os.Stat(filepath.Join(netnsDir, stale)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale namespace %s survived New", stale)
	}
}

func countFalse(b []bool) int {
	n := 0
	for _, v := range b {
		if !v {
			n++
		}
	}
	return n
}

func pct(p float64) string { return strconv.FormatFloat(100*p, 'f', -1, 64) + "%" }

func slicesMin(d []time.Duration) time.Duration {
	m := d[0]
	for _, v := range d {
		m = min(m, v)
	}
	return m
}

func slicesMax(d []time.Duration) time.Duration {
	m := d[0]
	for _, v := range d {
		m = max(m, v)
	}
	return m
}

// TestChangeWhileFlowing: impairments change, and the path is cut and
// restored, while traffic flows; afterwards every packet is accounted for
// (delivered or dropped for a counted reason) and the path works.
func TestChangeWhileFlowing(t *testing.T) {
	lab := newLab(t, Config{})
	rc, err := lab.ListenPacket(Receiver, "udp4", netip.AddrPortFrom(lab.MustAddr(Receiver, "main"), 0).String())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	go io.Copy(io.Discard, readerOf(rc))
	sc, err := lab.Dial(context.Background(), Sender, "udp4", rc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	stop := make(chan struct{})
	blasted := make(chan struct{})
	go func() {
		defer close(blasted)
		msg := make([]byte, 1200)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			sc.Write(msg)
			if i%16 == 15 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	profiles := []Impairment{
		{Delay: 5 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: 0.1},
		{Rate: 5_000_000, QueueBytes: 20_000},
		{Burst: &GilbertElliott{P: 0.1, R: 0.3, LossBad: 1}, Reorder: 0.2, Duplicate: 0.1},
		{MTU: 1000},
		{},
	}
	for i := range 200 {
		if err := lab.SetImpairment("main", Both, profiles[i%len(profiles)]); err != nil {
			t.Fatal(err)
		}
		if i%50 == 25 {
			lab.Cut("main")
		}
		if i%50 == 30 {
			lab.Restore("main")
		}
		time.Sleep(2 * time.Millisecond)
	}
	close(stop)
	<-blasted
	lab.Restore("main")
	lab.SetImpairment("main", Both, Impairment{})
	// The delay line drains within milliseconds; poll the counters, with a
	// generous deadline, until every packet is accounted for.
	var s DirStats
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		s = lab.Stats()[0].SenderToReceiver
		if s.Packets+s.Duplicated == s.Delivered+s.Lost+s.BurstLost+s.QueueDropped+s.MTUDropped+s.CutDropped {
			break
		}
	}
	t.Logf("%+v", s)
	if s.Packets+s.Duplicated != s.Delivered+s.Lost+s.BurstLost+s.QueueDropped+s.MTUDropped+s.CutDropped {
		t.Errorf("packets unaccounted for: %+v", s)
	}
	for _, n := range []uint64{s.Lost, s.BurstLost, s.QueueDropped, s.MTUDropped, s.CutDropped, s.Duplicated, s.Reordered} {
		if n == 0 {
			t.Errorf("some impairment never acted: %+v", s)
			break
		}
	}
	p := newPinger(t, lab, Sender, lab.MustAddr(Sender, "main"))
	if _, err := p.ping(lab.MustAddr(Receiver, "main"), 56, 2*time.Second); err != nil {
		t.Errorf("path broken after the changes: %v", err)
	}
}

// readerOf adapts a PacketConn to an io.Reader for draining.
func readerOf(c net.PacketConn) io.Reader { return pcReader{c} }

type pcReader struct{ c net.PacketConn }

func (r pcReader) Read(b []byte) (int, error) {
	n, _, err := r.c.ReadFrom(b)
	return n, err
}
