package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/netlab"
)

// parseListening reads another program's output: table cases double as fuzz
// seeds.
var listeningCases = []struct {
	line      string
	quic, tcp string
}{
	{"listening quic=10.77.1.2:4242 tcp=10.77.1.2:4243", "10.77.1.2:4242", "10.77.1.2:4243"},
	{"listening quic=10.77.1.2:4242 tcp= id=ABC name=\"vm\"", "10.77.1.2:4242", ""},
	{"listening tcp=[::1]:80", "", "[::1]:80"},
	{"listening quic=nonsense tcp=also:nonsense", "", ""},
	{"", "", ""},
	{"quic=quic=1.2.3.4:5", "", ""},
}

func TestParseListening(t *testing.T) {
	for _, c := range listeningCases {
		q, tc := parseListening(c.line)
		if q != c.quic || tc != c.tcp {
			t.Errorf("parseListening(%q) = %q, %q; want %q, %q", c.line, q, tc, c.quic, c.tcp)
		}
	}
}

func FuzzParseListening(f *testing.F) {
	for _, c := range listeningCases {
		f.Add(c.line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		q, tc := parseListening(line)
		if q != "" && !strings.Contains(line, "quic="+q) {
			t.Errorf("quic address %q not in %q", q, line)
		}
		if tc != "" && !strings.Contains(line, "tcp="+tc) {
			t.Errorf("tcp address %q not in %q", tc, line)
		}
	})
}

func TestWorkloadScaled(t *testing.T) {
	const rate = 100e6
	cases := []struct {
		name    string
		w       workload
		p       profile
		budget  time.Duration
		files   int
		size    int64
		shrunk  bool
		maxSecs float64 // the Mathis-rate transfer time must stay below this
	}{
		{"clean link keeps A", baseWorkloads["A"], profile{rtt: time.Millisecond, rate: rate}, 2 * time.Minute, 1, 1 << 30, false, 0},
		{"lossy long link shrinks A", baseWorkloads["A"], profile{rtt: 120 * time.Millisecond, loss: 0.05, rate: rate}, time.Minute, 1, 0, true, 60},
		{"lossy long link drops files of B", baseWorkloads["B"], profile{rtt: 120 * time.Millisecond, loss: 0.02, rate: rate}, time.Minute, 0, 2 << 20, true, 0},
		{"C never below 10 files", baseWorkloads["C"], profile{rtt: 120 * time.Millisecond, loss: 0.05, rate: rate}, time.Second, 10, 16 << 10, true, 0},
	}
	for _, c := range cases {
		got := c.w.scaled(c.p, c.budget)
		if (got != c.w) != c.shrunk {
			t.Errorf("%s: scaled = %+v, shrunk want %v", c.name, got, c.shrunk)
		}
		if c.files != 0 && got.files != c.files {
			t.Errorf("%s: files = %d, want %d", c.name, got.files, c.files)
		}
		if c.size != 0 && got.size != c.size {
			t.Errorf("%s: size = %d, want %d", c.name, got.size, c.size)
		}
		if got.files < 1 || got.size < 1 {
			t.Errorf("%s: empty workload %+v", c.name, got)
		}
	}
}

func TestParseLabFlags(t *testing.T) {
	o, err := parseLabFlags([]string{"--quick"})
	if err != nil {
		t.Fatal(err)
	}
	if o.runs != 1 || o.bursty || len(o.rtts) != 1 || len(o.losses) != 2 {
		t.Errorf("quick defaults: %+v", o)
	}
	o, err = parseLabFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.runs != 3 || !o.bursty || len(o.rtts) != 3 || len(o.losses) != 5 || o.rate != 100e6 {
		t.Errorf("full defaults: %+v", o)
	}
	for _, bad := range [][]string{{"--tools", "ftp"}, {"--loss", "150"}, {"--rtt", "fast"}, {"--workloads", "Z"}, {"--rate", "0"}} {
		if _, err := parseLabFlags(bad); err == nil {
			t.Errorf("parseLabFlags(%q) accepted", bad)
		}
	}
}

// TestLab runs the real suite end to end (root only): the binaries are
// built once, then each subtest brings up a lab and runs its contenders in
// their namespaces.
func TestLab(t *testing.T) {
	if err := netlab.Available(); err != nil {
		t.Skipf("skipping lab bench test: %v", err)
	}
	if testing.Short() {
		t.Skip("builds and runs the bench binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ferry-bench")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cli := filepath.Join(dir, "ferry-cli")
	if out, err := exec.Command("go", "build", "-o", cli, "../ferry-cli").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("quick", func(t *testing.T) { labQuickTLS(t, bin, cli) })
	t.Run("quick without BBR", func(t *testing.T) { labQuickNoBBR(t, bin, cli) })
	t.Run("share", func(t *testing.T) { labShare(t, bin, cli) })
}

// labRun runs `ferry-bench lab` with args and returns its CSV rows by
// column name, and its JSONL records.
func labRun(t *testing.T, bin string, args ...string) (rows []map[string]string, records []map[string]any) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, append([]string{"lab", "--out", out}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ferry-bench lab: %v\n%s", err, b)
	} else {
		t.Logf("%s", b)
	}
	f, err := os.Open(filepath.Join(out, "lab-results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all[1:] {
		row := map[string]string{}
		for i, h := range all[0] {
			row[h] = r[i]
		}
		rows = append(rows, row)
	}
	data, err := os.ReadFile(filepath.Join(out, "lab-results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		records = append(records, rec)
	}
	for _, name := range []string{"lab-results.md", "lab-results.svg"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
	return rows, records
}

// labQuickTLS: the TLS baselines and Ferry's auto on small cells, with the
// stall figures of both receivers.
func labQuickTLS(t *testing.T, bin, cli string) {
	rows, records := labRun(t, bin, "--quick", "--tools", "tls-cubic,tls-bbr,ferry-auto", "--workloads", "C", "--loss", "0,1", "--ferry-cli", cli)
	if len(rows) != 6 {
		t.Fatalf("%d CSV rows, want 6", len(rows))
	}
	for _, r := range rows {
		if r["status"] != "ok" {
			t.Errorf("run not ok: %v", r)
		}
		// Both receivers meter their streams; at 20 ms RTT the threshold is
		// the 10 ms floor, or half the RTT Ferry measured (a little more).
		if th, err := strconv.ParseFloat(r["stall_threshold_ms"], 64); err != nil || th < 10 || th > 15 || r["stalls"] == "" {
			t.Errorf("no stall figures: %v", r)
		}
		// At 20 ms auto picks before it starts: TCP, where the kernel gives
		// it BBR. (A handshake RTT inflated past 50 ms by a busy machine
		// starts it on QUIC, and the batch moves to TCP.)
		if r["tool"] == "ferry-auto" && r["transport"] != "tcp" && r["transport"] != "quic->tcp" {
			if b, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control"); strings.Contains(string(b), "bbr") {
				t.Errorf("auto carried by %q, want tcp (auto's reasons: %v)", r["transport"], autoReasons(records))
			}
		}
	}
}

// autoReasons lists why auto carried each of its runs as it did.
func autoReasons(records []map[string]any) [][]any {
	var out [][]any
	for _, rec := range records {
		if rec["tool"] == "ferry-auto" {
			reasons, _ := rec["transport_reasons"].([]any)
			out = append(out, reasons)
		}
	}
	return out
}

// labQuickNoBBR: one lossy cell with BBR unavailable, as on typical
// desktops. auto keeps QUIC, spreads it over more connections on the random
// loss, and beats the single TLS stream (Cubic) by a wide margin; Ferry's
// TCP, with Cubic, spreads over more connections too.
func labQuickNoBBR(t *testing.T, bin, cli string) {
	run := func() ([]map[string]string, []map[string]any) {
		return labRun(t, bin, "--quick", "--bbr=false", "--rtt", "20ms", "--loss", "2", "--workloads", "A",
			"--tools", "tls-cubic,ferry-tcp,ferry-auto", "--ferry-cli", cli)
	}
	rows, records := run()
	// A session grows on random loss seen with no queue on the path; the
	// lab forwards in user space, and a host busy with the rest of the
	// suite adds its own delay (the path's 20 ms read 27 ms in a failed CI
	// run, beyond the queue threshold of 27; another, at load 12, read it
	// 17 % high and Ferry's TCP did not spread). A run whose Ferry did not
	// grow is taken again, once: growth that is broken fails both.
	if notGrown, inflated := noBBRGrowth(rows); notGrown != nil {
		t.Logf("no growth (RTT over 20 %% above the path's: %v; load %s): running again: %v", inflated, loadAvg(), notGrown)
		rows, records = run()
	}
	secs := map[string]float64{}
	for _, r := range rows {
		if r["status"] != "ok" {
			t.Fatalf("run not ok: %v", r)
		}
		secs[r["tool"]], _ = strconv.ParseFloat(r["seconds"], 64)
		if r["tool"] == "ferry-auto" && r["transport"] != "quic" {
			t.Errorf("auto carried by %q, want quic", r["transport"])
		}
	}
	if notGrown, _ := noBBRGrowth(rows); notGrown != nil {
		t.Errorf("Ferry did not spread over more flows on 2%% random loss (TCP past its four connections, auto past one): %v", notGrown)
	}
	for _, rec := range records {
		if rec["tool"] != "ferry-auto" {
			continue
		}
		reasons, _ := rec["transport_reasons"].([]any)
		if len(reasons) == 0 || !strings.Contains(fmt.Sprint(reasons[0]), "cannot use BBR") {
			t.Errorf("auto's reasons: %v", reasons)
		}
	}
	autos, tlss := []float64{secs["ferry-auto"]}, []float64{secs["tls-cubic"]}
	auto, tls := autos[0], tlss[0]
	t.Logf("20 ms, 2 %% loss, no BBR: ferry-auto %.2f s, one TLS stream (Cubic) %.2f s: %.1fx", auto, tls, tls/auto)
	// One run of each at 2 % loss is a draw: a Cubic stream that meets
	// few of the losses on 3 MiB finishes several times sooner than it
	// usually does (0.97 s in a failed CI run, where six runs after it
	// took 3.48-6.69 s and Ferry's auto 0.81-1.16 s). A comparison lost
	// is taken twice more, and the medians of the three decide.
	if auto > 0 && tls > 0 && auto >= tls {
		for range 2 {
			more, _ := labRun(t, bin, "--quick", "--bbr=false", "--rtt", "20ms", "--loss", "2", "--workloads", "A",
				"--tools", "tls-cubic,ferry-auto", "--ferry-cli", cli)
			for _, r := range more {
				s, err := strconv.ParseFloat(r["seconds"], 64)
				switch {
				case r["status"] != "ok" || err != nil:
					t.Fatalf("run not ok: %v", r)
				case r["tool"] == "ferry-auto":
					autos = append(autos, s)
				case r["tool"] == "tls-cubic":
					tlss = append(tlss, s)
				}
			}
		}
		auto, tls = median(autos), median(tlss)
		t.Logf("three runs: ferry-auto %v s, one TLS stream %v s; medians %.2f and %.2f s", autos, tlss, auto, tls)
	}
	if auto <= 0 || tls <= 0 || auto >= tls {
		t.Errorf("ferry-auto %.2f s did not beat one TLS stream (%.2f s)", auto, tls)
	}
}

// loadAvg is the machine's load average, for the log.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

// noBBRGrowth finds the Ferry row of labQuickNoBBR that did not grow (nil:
// both grew), and whether its RTT read over 20 % above the lab's 20 ms.
func noBBRGrowth(rows []map[string]string) (row map[string]string, inflated bool) {
	for _, r := range rows {
		n, _ := strconv.Atoi(r["flows"])
		if r["tool"] == "ferry-tcp" && n <= 4 || r["tool"] == "ferry-auto" && n < 2 {
			srtt, _ := strconv.ParseFloat(r["srtt_ms"], 64)
			return r, srtt > 1.2*20
		}
	}
	return nil, false
}

// labShare: on a clean shared bottleneck one Ferry transfer beside one
// iperf3 flow takes no more than about twice the iperf3 flow's share, and
// does not spread: extra flows are for random loss, not for crowding out
// neighbours. One step to 2 flows is allowed while the share holds: a
// session that met iperf3's queue standing takes the queued RTT for the
// path's minimum, and two of the queue's drops in neighbouring round trips
// are then the same evidence as sparse random loss (a CI run grew to 2 at
// 1.08x iperf3's share; spread.TestJudge, "drops in two neighbouring
// rounds"). Growing further, or past the share, fails.
func labShare(t *testing.T, bin, cli string) {
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("iperf3 not installed")
	}
	out, err := exec.Command(bin, "share", "--rtt", "20ms", "--rate", "20", "--ferry-cli", cli).Output()
	if err != nil {
		t.Fatalf("ferry-bench share: %v\n%s", err, out)
	}
	var res shareResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("share output %q: %v", out, err)
	}
	t.Logf("%+v", res)
	if res.Flows > 2 {
		t.Errorf("Ferry spread over %d flows on a clean bottleneck", res.Flows)
	}
	if res.IperfMbit <= 0 || res.Ratio > 2.5 {
		t.Errorf("Ferry took %.1f Mbit/s beside iperf3's %.1f (%.2fx), more than about twice its share",
			res.FerryMbit, res.IperfMbit, res.Ratio)
	}
}

// TestReportTargets: the markdown judges the targets from medians.
func TestReportTargets(t *testing.T) {
	rep, o, p := newTargetReport(t)
	w := baseWorkloads["B"]
	secs := map[string][]float64{
		"tls-cubic":  {30, 31, 29},
		"scp":        {40},
		"rsync":      {20},
		"ferry-tcp":  {6},
		"ferry-quic": {5},
		"ferry-auto": {9, 100, 8}, // median 9: 3.3x cubic, slower than 1.1 x 5
	}
	for tool, ss := range secs {
		c := cell{profile: p, workload: w, tool: tool}
		for _, s := range ss {
			c.runs = append(c.runs, runResult{status: statusOK, seconds: s})
		}
		rep.addCell(c)
	}
	reportHas(t, rep, o.out,
		"ferry-auto 9.00s vs TLS/TCP cubic 30.00s = 3.33x (target >= 3x): **met**",
		"ferry-auto 9.00s vs scp 40.00s (target: faster): **met**",
		"ferry-auto 9.00s vs rsync 20.00s (target: faster): **met**",
		"ferry-auto 9.00s is more than 10% slower than the better of ferry-tcp/quic (5.00s): **NOT met**",
		"within 10% of the better of ferry-tcp and ferry-quic in 0 of 1 cells: **NOT met**",
	)
}

// Issue 30's target on a fast short lossy link is judged against the link
// rate, or against the forwarder's ceiling (eight iperf3 flows on the
// clean path) where that is lower.
func TestReportFastLinkTarget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ceiling float64 // iperf3-p8 on the clean path, Mbit/s
		want    string
	}{
		{"the forwarder reaches the rate", 1000, "ferry-auto 550 Mbit/s = 55% of the link rate, 1000 Mbit/s (target >= 60%): **NOT met**"},
		{"the forwarder is the limit", 800, "ferry-auto 550 Mbit/s = 69% of the forwarder's ceiling (iperf3 -P 8, clean), 800 Mbit/s (target >= 60%): **met**"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, o, _ := newTargetReport(t, "--rate", "1000")
			w := baseWorkloads["A"]
			clean := profile{rtt: 2 * time.Millisecond, rate: o.rate}
			lossy := profile{rtt: 2 * time.Millisecond, loss: 0.005, rate: o.rate}
			rep.addCell(cell{profile: clean, workload: w, tool: "iperf3-p8", runs: []runResult{{status: statusOK, seconds: 9, goodput: tc.ceiling}}})
			for _, tool := range []string{"ferry-tcp", "ferry-quic", "ferry-auto"} {
				rep.addCell(cell{profile: lossy, workload: w, tool: tool, runs: []runResult{{status: statusOK, seconds: 4, goodput: 550}}})
			}
			reportHas(t, rep, o.out, tc.want)
		})
	}
}

// A timed-out baseline makes the speed-up a bound, and the table says so.
func TestReportTimeoutIsABound(t *testing.T) {
	rep, o, p := newTargetReport(t, "--timeout", "60s")
	w := baseWorkloads["B"]
	for tool, r := range map[string]runResult{
		"tls-cubic":  {status: statusTimeout, seconds: 60},
		"ferry-tcp":  {status: statusOK, seconds: 4},
		"ferry-quic": {status: statusTimeout, seconds: 60},
		"ferry-auto": {status: statusOK, seconds: 4},
	} {
		rep.addCell(cell{profile: p, workload: w, tool: tool, runs: []runResult{r}})
	}
	reportHas(t, rep, o.out,
		"ferry-auto 4.00s vs TLS/TCP cubic > 60s (timed out) = >= 15.00x (target >= 3x): **met**",
		"| ferry-quic | > 60 |",
		"within 10% of the better of ferry-tcp and ferry-quic in 1 of 1 cells: **met**",
	)
}

// reportHas writes rep's markdown into out and checks it holds every want.
func reportHas(t *testing.T, rep *report, out string, wants ...string) {
	t.Helper()
	if err := rep.write(time.Second); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "lab-results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range wants {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// newTargetReport opens a report in a temp folder for the cell the issue's
// main target names: 120 ms, 2 % loss.
func newTargetReport(t *testing.T, flags ...string) (*report, labOptions, profile) {
	t.Helper()
	o, err := parseLabFlags(append([]string{"--out", t.TempDir()}, flags...))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := newReport(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rep.close)
	return rep, o, profile{rtt: 120 * time.Millisecond, loss: 0.02, rate: o.rate}
}
