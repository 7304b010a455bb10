package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/netlab"
)

// BenchmarkAnywhereRTT is issue #29's benchmark: FERRY_ANYWHERE_MIB (default
// 256) MiB from A to B through the NAT lab with its links given a round-trip
// time (NATConfig.Impaired: 20 and 80 ms, a bottleneck of
// FERRY_ANYWHERE_MBIT, default 200, Mbit/s on every link), over the shared
// LAN (the baseline), direct through the NATs, relayed (A behind a
// port-randomising NAT), and starting on the LAN which is cut a quarter of
// the way ("leave"). Each path's iperf3 (TCP, the same bytes, the same links;
// through the NATs to a port RouterB forwards) runs in the same lab just
// before Ferry. It reports the time to the first byte (process start to the
// first progress with bytes), Ferry's throughput after it and its ratio to
// iperf3's, the sender's CPU seconds, and for "leave" the stall (the cut to
// the first byte after it) and the bytes sent twice. Goals (docs/
// beyond-the-lan.md): direct within 10 % of the LAN's throughput at the same
// RTT, first byte under 3 s, stall under 5 s. Root, Linux, iperf3. With
// FERRY_LOG=info the sender's log is printed after each case.
//
//	go test -run '^$' -bench AnywhereRTT -benchtime 1x -timeout 60m ./cmd/ferry-cli
func BenchmarkAnywhereRTT(b *testing.B) {
	mib, mbit := envInt("FERRY_ANYWHERE_MIB", 256), envInt("FERRY_ANYWHERE_MBIT", 200)
	if _, err := exec.LookPath("iperf3"); err != nil {
		b.Skip("iperf3 not installed")
	}
	bin := buildCLI(b)
	src := randomFile(b, mib)
	for _, rtt := range []time.Duration{20 * time.Millisecond, 80 * time.Millisecond} {
		for _, path := range []string{"lan", "direct", "relayed", "leave"} {
			b.Run(fmt.Sprintf("rtt%dms/%s", rtt.Milliseconds(), path), func(b *testing.B) {
				rttCase(b, bin, src, path, rtt, int64(mbit)*1e6)
			})
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func rttCase(b *testing.B, bin, src, path string, rtt time.Duration, rate int64) {
	lan := path == "lan" || path == "leave"
	cfg := netlab.NATConfig{Impaired: true, SharedLAN: lan}
	if path == "relayed" {
		cfg.A = netlab.PortRandom
	}
	lab := natLab(b, cfg)
	// A round trip crosses the shared link twice, or each WAN link twice.
	links := map[string]time.Duration{netlab.NATLinkWANA: rtt / 4, netlab.NATLinkWANB: rtt / 4}
	if lan {
		links[netlab.NATLinkShared] = rtt / 2
	}
	for name, d := range links {
		if err := lab.SetImpairment(name, netlab.Impairment{Delay: d, Rate: rate}); err != nil {
			b.Fatal(err)
		}
	}
	st, err := os.Stat(src)
	if err != nil {
		b.Fatal(err)
	}
	size := st.Size()
	a, bdev := newDevice(b, "Laptop"), newDevice(b, "Desktop")
	// "leave" starts where A last reached B, on the LAN; the others call
	// B through the relay alone (a device whose LAN address is known but
	// does not answer is called 1.5 s later: engine anywhereHeadStart).
	at := ""
	if path == "leave" {
		at = "10.99.0.2:47800"
	}
	pairAnywhereAt(b, a, bdev, false, at)
	inbox := b.TempDir()
	relay, _ := startRelayAndReceiver(b, lab, bin, bdev, inbox)

	var iperf float64 // bytes per second
	if path != "leave" {
		iperf = iperf3Through(b, lab, path == "lan", size)
	}
	args := []string{"send", "--config", a.dir, "--name", a.name, "--json", "--to", bdev.name, "--relay", relayAt, src}
	if path == "lan" {
		args = []string{"send", "--config", a.dir, "--name", a.name, "--json", "--transport", "quic", "--to", "10.99.0.2:47800", src}
	}
	v0 := procCPU(b, relay.Process.Pid)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := lab.Command(ctx, netlab.HostA, bin, args...)
	cmd.Env = append(os.Environ(), "FERRY_PROGRESS_INTERVAL=20ms")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b.ResetTimer()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var first, cut, after, end time.Time
	var atCut, resent int64
	var reason string
	var lines []string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		var ev struct {
			Kind      string `json:"kind"`
			Transport *struct {
				Reason string `json:"reason"`
			} `json:"transport"`
			Progress *struct {
				Bytes int64 `json:"bytes"`
			} `json:"progress"`
			Result *struct {
				State string `json:"state"`
				Bytes int64  `json:"bytes"`
				Total int64  `json:"total_bytes"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		now := time.Now()
		switch {
		case ev.Kind == "progress" && ev.Progress != nil && ev.Progress.Bytes > 0:
			if first.IsZero() {
				first = now
			}
			if path == "leave" && cut.IsZero() && ev.Progress.Bytes >= size/4 {
				if err := lab.SetSharedLAN(ctx, false); err != nil {
					b.Fatal(err)
				}
				cut, atCut = time.Now(), ev.Progress.Bytes
			} else if !cut.IsZero() && after.IsZero() && ev.Progress.Bytes > atCut {
				after = now
			}
		case ev.Kind == "transport" && ev.Transport != nil:
			reason = ev.Transport.Reason
		case ev.Kind == "result" && ev.Result != nil && ev.Result.State == "done":
			end, resent = now, ev.Result.Bytes-ev.Result.Total
		}
	}
	if err := cmd.Wait(); err != nil || end.IsZero() {
		b.Fatalf("send: %v\n%s\n%s", err, strings.Join(lines, "\n"), stderr.String())
	}
	b.StopTimer()
	switch want := map[string]string{"direct": "through the internet, direct", "relayed": "through the internet, relayed",
		"leave": "through the internet"}[path]; {
	case want != "" && !strings.HasPrefix(reason, want):
		b.Fatalf("%s went %q", path, reason)
	case path == "leave" && after.IsZero():
		b.Fatalf("the LAN was not cut mid-way:\n%s", strings.Join(lines, "\n"))
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	rateMiB := float64(size) / (1 << 20) / end.Sub(first).Seconds()
	b.ReportMetric(first.Sub(start).Seconds(), "first-byte-s")
	b.ReportMetric(rateMiB, "MiB/s")
	b.ReportMetric(cpu.Seconds(), "sender-CPU-s")
	b.ReportMetric((procCPU(b, relay.Process.Pid) - v0).Seconds(), "relay-CPU-s")
	if iperf > 0 {
		b.ReportMetric(iperf/(1<<20), "iperf3-MiB/s")
		b.ReportMetric(rateMiB*(1<<20)/iperf, "ratio-to-iperf3")
	}
	if path == "leave" {
		b.ReportMetric(after.Sub(cut).Seconds(), "stall-s")
		b.ReportMetric(float64(resent)/(1<<20), "resent-MiB")
	}
	b.Logf("%s at %v: path %q; started %s, first byte %s", path, rtt, reason,
		start.UTC().Format("15:04:05.000"), first.UTC().Format("15:04:05.000"))
	if os.Getenv("FERRY_LOG") != "" { // the sender's log: how long each step took
		b.Log(stderr.String())
	}
}

// iperf3Through runs iperf3 (TCP, n bytes) from HostA to HostB over the
// shared LAN, or through both NATs to a port RouterB forwards to HostB,
// and returns its goodput in bytes per second.
func iperf3Through(b *testing.B, lab *netlab.NAT, lan bool, n int64) float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	to := "10.99.0.2"
	if !lan {
		to = "7.0.2.2"
		for _, rule := range [][]string{
			{"-t", "nat", "-A", "PREROUTING", "-i", "wan", "-p", "tcp", "--dport", "5201", "-j", "DNAT", "--to-destination", "192.168.2.2:5201"},
			{"-I", "FORWARD", "1", "-i", "wan", "-p", "tcp", "-d", "192.168.2.2", "--dport", "5201", "-j", "ACCEPT"},
		} {
			if out, err := lab.Command(ctx, netlab.RouterB, "iptables", rule...).CombinedOutput(); err != nil {
				b.Fatalf("iptables %v: %v: %s", rule, err, out)
			}
		}
	}
	startIn(b, lab, netlab.HostB, "iperf3", "Server listening", "-s", "-1", "-p", "5201", "--forceflush")
	out, err := lab.Command(ctx, netlab.HostA, "iperf3", "-c", to, "-p", "5201", "-n", strconv.FormatInt(n, 10), "-J").Output()
	if err != nil {
		b.Fatalf("iperf3: %v\n%s", err, out)
	}
	var r struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.End.SumReceived.BitsPerSecond == 0 {
		b.Fatalf("iperf3's report: %v\n%s", err, out)
	}
	return r.End.SumReceived.BitsPerSecond / 8
}
