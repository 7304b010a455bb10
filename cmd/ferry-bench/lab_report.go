package main

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// report writes lab-results.csv (every run), lab-results.jsonl (every run
// with the tool's own metrics), lab-results.md (medians per cell) and
// lab-results.svg (completion time vs loss) into the output directory.
type report struct {
	o     labOptions
	csvF  *os.File
	csv   *csv.Writer
	jsonl *os.File
	cells []cell
}

var csvHeader = []string{
	"profile", "rtt_ms", "loss_pct", "bursty", "rate_mbit", "workload", "files", "bytes",
	"tool", "run", "status", "seconds", "goodput_mbit", "first_file_s", "transport",
	"wire_lost_pkts", "queue_drops_pkts", "tcp_retrans_segs", "congestion_events", "datagrams_per_send_call", "srtt_ms",
	"stalls", "stalled_streams", "stall_seconds", "longest_stall_s", "stall_threshold_ms", "stalls_per_lost_pkt", "flows", "note",
}

func newReport(o labOptions) (*report, error) {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	r := &report{o: o}
	var err error
	if r.csvF, err = os.Create(filepath.Join(o.out, "lab-results.csv")); err != nil {
		return nil, err
	}
	if r.jsonl, err = os.Create(filepath.Join(o.out, "lab-results.jsonl")); err != nil {
		r.csvF.Close()
		return nil, err
	}
	r.csv = csv.NewWriter(r.csvF)
	return r, r.csv.Write(csvHeader)
}

func (r *report) close() {
	r.csv.Flush()
	r.csvF.Close()
	r.jsonl.Close()
}

func (r *report) addRun(c cell, x runResult) error {
	p, w := c.profile, c.workload
	row := []string{
		p.name(), ms(p.rtt), strconv.FormatFloat(100*p.meanLoss(), 'f', -1, 64), strconv.FormatBool(p.burst != nil),
		strconv.FormatFloat(float64(p.rate)/1e6, 'f', -1, 64), w.name, strconv.Itoa(w.files), strconv.FormatInt(w.bytes(), 10),
		c.tool, strconv.Itoa(x.run), string(x.status), f3(x.seconds), f3(x.goodput), f3(x.firstFile), x.transport,
		u(x.wireLost), u(x.queueDrop), u(x.retrans), i64(x.congEvents), f3(x.dgPerCall), f3(x.srttMs),
	}
	if st := x.stalls; st != nil {
		row = append(row, strconv.FormatInt(st.Stalls, 10), strconv.FormatInt(st.StalledStreams, 10), f3(st.Seconds), f3(st.LongestSeconds), f3(st.ThresholdMs), x.stallsPerLoss())
	} else {
		row = append(row, "", "", "", "", "", "")
	}
	row = append(row, i64(int64(x.flows)), x.note)
	if err := r.csv.Write(row); err != nil {
		return err
	}
	r.csv.Flush()
	rec := map[string]any{}
	for i, h := range csvHeader {
		rec[h] = row[i]
	}
	if len(x.extra) > 0 {
		rec["metrics"] = x.extra
	}
	if len(x.reasons) > 0 {
		rec["transport_reasons"] = x.reasons
	}
	if len(x.flowSteps) > 0 {
		rec["flow_steps"] = x.flowSteps
	}
	if x.resent > 0 {
		rec["resent_bytes"] = x.resent
	}
	return json.NewEncoder(r.jsonl).Encode(rec)
}

func (r *report) addCell(c cell) { r.cells = append(r.cells, c) }

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', -1, 64) }
func f3(f float64) string {
	if f == 0 {
		return ""
	}
	return strconv.FormatFloat(f, 'f', 3, 64)
}
func u(v uint64) string { return strconv.FormatUint(v, 10) }
func i64(v int64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatInt(v, 10)
}

func (r *report) write(elapsed time.Duration) error {
	var b strings.Builder
	host, _ := os.Hostname()
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	fmt.Fprintf(&b, "# Lab benchmark results\n\n")
	fmt.Fprintf(&b, "Produced by `%s` (as root) on %s, %d CPUs, kernel %s, %s; took %s.\n\n",
		strings.TrimSpace(r.o.cmdline), host, runtime.NumCPU(), strings.TrimSpace(string(kernel)),
		time.Now().UTC().Format("2006-01-02 15:04 MST"), elapsed.Round(time.Second))
	fmt.Fprintf(&b, "Network: internal/netlab (TUN + user-space forwarder, no netem), one path, "+
		"%g Mbit/s bottleneck in both directions with a 50 ms tail-drop queue, half the RTT of delay each way, "+
		"loss on the data direction only. Default TCP congestion control in the lab: %s. %s Bursty profile: Gilbert-Elliott p=%g r=%g, 80%% loss in Bad "+
		"(mean %.2f%%, bursts of ~%g packets).\n\n",
		float64(r.o.rate)/1e6, ccName(r.o.cc), bbrNote(r.o.bbr), burstyProfile.P, burstyProfile.R, 100*burstyProfile.MeanLoss(), 1/burstyProfile.R)
	fmt.Fprintf(&b, "Workloads are scaled down per cell so that a loss-limited TCP flow (Mathis) needs about %s; "+
		"every contender of a cell moves the same files. Each Ferry cell is the median of %d run(s), each other tool's of %d; "+
		"a transfer still running after %v is stopped and shown as \"> %.0f\" (speed-ups over it as bounds). "+
		"Seconds are wall clock of the sending command (connection setup included); iperf3's goodput is its "+
		"own receiver figure. `lost` = packets the lab dropped on purpose (random/bursty), `qdrop` = tail drops "+
		"at the bottleneck (congestion), `retrans` = TCP segments retransmitted by the sender namespace. "+
		"`vs tls-cubic` is the completion-time speed-up over the single TLS-over-TCP stream with the default "+
		"congestion control. `first file`: TLS measures it at the receiver from accept, Ferry from the "+
		"sender's launch to its first verified-file event.\n\n", r.o.budget, r.o.runs, r.o.baselineRuns, r.o.timeout, r.o.timeout.Seconds())
	fmt.Fprintf(&b, "Raw data: [lab-results.csv](lab-results.csv), [lab-results.jsonl](lab-results.jsonl) (with Ferry's metrics).\n\n")
	if r.svg() {
		fmt.Fprintf(&b, "![completion time vs loss](lab-results.svg)\n\n")
	}
	r.targets(&b)
	fmt.Fprintf(&b, "## All cells\n\n")
	fmt.Fprintf(&b, "| profile | workload | tool | seconds | goodput Mbit/s | first file s | lost | qdrop | retrans | cong. events | dgrams/send | stalls (streams) | stall s | stalls/lost pkt | vs tls-cubic | note |\n")
	fmt.Fprintf(&b, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for i, c := range r.cells {
		m, ok := c.median()
		wl := fmt.Sprintf("%s %dx%s", c.workload.name, c.workload.files, fmtBytes(c.workload.size))
		if !ok {
			note := ""
			if len(c.runs) > 0 {
				note = string(c.runs[0].status) + ": " + c.runs[0].note
			}
			fmt.Fprintf(&b, "| %s | %s | %s | | | | | | | | | | | | | %s |\n", c.profile.name(), wl, c.tool, mdEscape(note))
			continue
		}
		vs := ""
		if ref, ok := r.reference(i); ok && c.tool != "tls-cubic" && !strings.HasPrefix(c.tool, "iperf3") {
			vs = speedup(ref, m)
		}
		secs := fmt.Sprintf("%.2f", m.seconds)
		if m.status == statusTimeout {
			secs = fmt.Sprintf("> %.0f", m.seconds)
		}
		ff := ""
		if m.firstFile > 0 {
			ff = fmt.Sprintf("%.2f", m.firstFile)
		}
		stalls, stallSecs := "", ""
		if st := m.stalls; st != nil {
			stalls = fmt.Sprintf("%d (%d)", st.Stalls, st.StalledStreams)
			stallSecs = fmt.Sprintf("%.2f", st.Seconds)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f | %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n",
			c.profile.name(), wl, c.tool, secs, m.goodput, ff, m.wireLost, m.queueDrop, m.retrans,
			i64(m.congEvents), f3(m.dgPerCall), stalls, stallSecs, m.stallsPerLoss(), vs, mdEscape(m.carried()))
	}
	return os.WriteFile(filepath.Join(r.o.out, "lab-results.md"), []byte(b.String()), 0o644)
}

// find returns the median of tool's cell with the same profile and workload.
func (r *report) find(c cell, tool string) (runResult, bool) {
	for _, o := range r.cells {
		if o.tool == tool && o.profile.name() == c.profile.name() && o.workload == c.workload {
			return o.median()
		}
	}
	return runResult{}, false
}

// targets checks the goals of issue 7 against the measured medians and
// writes what holds, what does not, and what could not be judged.
func (r *report) targets(b *strings.Builder) {
	fmt.Fprintf(b, "## Targets\n\n")
	n := 0
	line := func(format string, args ...any) {
		fmt.Fprintf(b, "- "+format+"\n", args...)
		n++
	}
	verdict := func(ok bool) string {
		if ok {
			return "**met**"
		}
		return "**NOT met**"
	}
	checked, within := 0, 0
	for _, c := range r.cells {
		if c.tool != "ferry-auto" {
			continue
		}
		auto, ok := c.median()
		p := c.profile
		if !ok {
			line("%s, workload %s: ferry-auto has no result (%s).", p.name(), c.workload.name, firstNote(c))
			continue
		}
		// auto within 10%% of the better of tcp and quic.
		tcp, okT := r.find(c, "ferry-tcp")
		quic, okQ := r.find(c, "ferry-quic")
		if okT || okQ {
			best := math.Inf(1)
			if okT {
				best = tcp.seconds
			}
			if okQ {
				best = min(best, quic.seconds)
			}
			checked++
			if auto.seconds <= 1.1*best {
				within++
			} else {
				line("%s, workload %s: ferry-auto %.2fs is more than 10%% slower than the better of ferry-tcp/quic (%.2fs): %s.",
					p.name(), c.workload.name, auto.seconds, best, verdict(false))
			}
		}
		if p.burst == nil && p.rtt <= 5*time.Millisecond && p.loss > 0 && p.rate >= 500e6 && c.workload.name == "A" && auto.status == statusOK {
			// Issue 30: a fast short link with random loss (a busy Wi-Fi).
			// The lab forwards in user space: where it cannot reach the
			// rate, the clean cell's eight iperf3 flows show what it can.
			ceiling := float64(p.rate) / 1e6
			of := "the link rate"
			for _, o := range r.cells {
				if ip, ok := o.median(); ok && o.tool == "iperf3-p8" && o.profile.rtt == p.rtt && o.profile.loss == 0 &&
					o.profile.burst == nil && ip.goodput < ceiling {
					ceiling, of = ip.goodput, "the forwarder's ceiling (iperf3 -P 8, clean)"
				}
			}
			line("%s, A: ferry-auto %.0f Mbit/s = %.0f%% of %s, %.0f Mbit/s (target >= 60%%): %s.",
				p.name(), auto.goodput, 100*auto.goodput/ceiling, of, ceiling, verdict(auto.goodput >= 0.6*ceiling))
		}
		if p.burst == nil && p.rtt == 120*time.Millisecond && p.loss == 0.02 && c.workload.name == "B" {
			if ref, ok := r.find(c, "tls-cubic"); ok && auto.status == statusOK {
				line("120 ms, 2%%, B: ferry-auto %.2fs vs TLS/TCP cubic %s = %s (target >= 3x): %s.",
					auto.seconds, fmtSecs(ref), speedup(ref, auto), verdict(ref.seconds >= 3*auto.seconds))
			}
			for _, t := range []string{"scp", "rsync"} {
				if ref, ok := r.find(c, t); ok {
					line("120 ms, 2%%, B: ferry-auto %.2fs vs %s %.2fs (target: faster): %s.", auto.seconds, t, ref.seconds, verdict(auto.seconds < ref.seconds))
				}
			}
		}
		if p.burst == nil && p.rtt == time.Millisecond && p.loss == 0 && c.workload.name == "A" {
			if ip, ok := r.find(c, "iperf3"); ok {
				line("1 ms, clean, A: ferry-auto %.1f Mbit/s vs iperf3 %.1f Mbit/s = %.0f%% (target >= 90%%): %s.",
					auto.goodput, ip.goodput, 100*auto.goodput/ip.goodput, verdict(auto.goodput >= 0.9*ip.goodput))
			}
		}
	}
	if checked > 0 {
		line("ferry-auto within 10%% of the better of ferry-tcp and ferry-quic in %d of %d cells: %s.", within, checked, verdict(within == checked))
	}
	if n == 0 {
		fmt.Fprintf(b, "No target applies to the cells measured.\n")
	}
	fmt.Fprintf(b, "\n")
}

func firstNote(c cell) string {
	if len(c.runs) == 0 {
		return "not run"
	}
	return string(c.runs[0].status) + ": " + c.runs[0].note
}

// carried names the transport that carried the data, with the flows it
// spread over on random loss.
func (x runResult) carried() string {
	if x.flows > 0 {
		return fmt.Sprintf("%s, %d flows", x.transport, x.flows)
	}
	return x.transport
}

// stallsPerLoss is stream stalls per packet the lab dropped on purpose;
// empty when either is unknown or nothing was dropped.
func (x runResult) stallsPerLoss() string {
	if x.stalls == nil || x.wireLost == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", float64(x.stalls.Stalls)/float64(x.wireLost))
}

// speedup is ref's time over m's, as a bound when either timed out.
func speedup(ref, m runResult) string {
	switch {
	case m.status == statusTimeout && ref.status == statusTimeout:
		return "?"
	case m.status == statusTimeout:
		return fmt.Sprintf("<= %.2fx", ref.seconds/m.seconds)
	case ref.status == statusTimeout:
		return fmt.Sprintf(">= %.2fx", ref.seconds/m.seconds)
	}
	return fmt.Sprintf("%.2fx", ref.seconds/m.seconds)
}

func fmtSecs(r runResult) string {
	if r.status == statusTimeout {
		return fmt.Sprintf("> %.0fs (timed out)", r.seconds)
	}
	return fmt.Sprintf("%.2fs", r.seconds)
}

// reference finds the tls-cubic median of the same profile and workload.
func (r *report) reference(i int) (runResult, bool) {
	c := r.cells[i]
	for _, o := range r.cells {
		if o.tool == "tls-cubic" && o.profile.name() == c.profile.name() && o.workload == c.workload {
			return o.median()
		}
	}
	return runResult{}, false
}

func ccName(cc string) string {
	if cc == "" {
		b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
		if err != nil {
			return "inherited from the host"
		}
		return strings.TrimSpace(string(b)) + " (inherited from the host)"
	}
	return cc
}

func bbrNote(bbr bool) string {
	if bbr {
		return "Ferry may pick BBR for its TCP sockets (as root can here; `--bbr`)."
	}
	return "**BBR unavailable** (`--bbr=false`), as on typical desktops: Ferry runs under `ferry-bench no-cc`, " +
		"which refuses its choice of TCP congestion control, the lab's routes impose the congestion control above on every " +
		"TCP connection (`ip route ... congctl`), and tls-bbr is skipped."
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// svg draws completion time (log scale) against random loss for one
// workload (B if measured, else the first) at the largest RTT: one line per
// tool. It returns false when there is nothing to draw.
func (r *report) svg() bool {
	var rtt time.Duration
	wl := ""
	for _, c := range r.cells {
		rtt = max(rtt, c.profile.rtt)
		if c.workload.name == "B" || wl == "" {
			wl = c.workload.name
		}
	}
	type pt struct{ loss, secs float64 }
	series := map[string][]pt{}
	var tools []string
	for _, c := range r.cells {
		if c.profile.rtt != rtt || c.workload.name != wl || c.profile.burst != nil {
			continue
		}
		m, ok := c.median()
		if !ok {
			continue
		}
		if _, seen := series[c.tool]; !seen {
			tools = append(tools, c.tool)
		}
		series[c.tool] = append(series[c.tool], pt{100 * c.profile.loss, m.seconds})
	}
	if len(tools) == 0 {
		return false
	}
	const W, H, L, R, T, B = 720, 420, 70, 150, 40, 50
	maxLoss, minS, maxS := 0.0, math.Inf(1), 0.0
	for _, s := range series {
		for _, p := range s {
			maxLoss = max(maxLoss, p.loss)
			minS, maxS = min(minS, p.secs), max(maxS, p.secs)
		}
	}
	if maxLoss == 0 {
		maxLoss = 1
	}
	lo, hi := math.Floor(math.Log10(minS)), math.Ceil(math.Log10(maxS))
	if hi == lo {
		hi++
	}
	x := func(l float64) float64 { return L + l/maxLoss*(W-L-R) }
	y := func(s float64) float64 { return H - B - (math.Log10(s)-lo)/(hi-lo)*(H-T-B) }
	colors := []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%d" y="20" font-size="14">Workload %s, RTT %s, %g Mbit/s: completion time vs loss</text>`+"\n", L, wl, rtt, float64(r.o.rate)/1e6)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", L, H-B, W-R, H-B, L, T, L, H-B)
	for e := lo; e <= hi; e++ {
		v := math.Pow(10, e)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%gs</text>`+"\n", L, y(v), W-R, y(v), L-5, y(v)+4, v)
	}
	var losses []float64
	for _, s := range series {
		for _, p := range s {
			if !slices.Contains(losses, p.loss) {
				losses = append(losses, p.loss)
			}
		}
	}
	for _, l := range losses {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%g%%</text>`+"\n", x(l), H-B+18, l)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">random loss (data direction)</text>`+"\n", (L+W-R)/2, H-10)
	for i, t := range tools {
		s := series[t]
		slices.SortFunc(s, func(a, b pt) int { return cmp.Compare(a.loss, b.loss) })
		col := colors[i%len(colors)]
		var pts []string
		for _, p := range s {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.loss), y(p.secs)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x(p.loss), y(p.secs), col)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), col)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", W-R+10, T+20+18*i, col, t)
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(filepath.Join(r.o.out, "lab-results.svg"), []byte(b.String()), 0o644) == nil
}
