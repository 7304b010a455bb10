package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/cmd/internal/ferryenv"
)

func init() {
	register(command{name: "loopback", summary: "workloads A/B/C end to end on loopback vs the bare TLS and QUIC ceilings", run: runLoopback})
}

// workload is a set of files to move.
type loopWorkload struct {
	name  string
	files int
	size  int64
}

func (w loopWorkload) bytes() int64 { return int64(w.files) * w.size }

func loopWorkloads(quick bool) []loopWorkload {
	if quick {
		return []loopWorkload{{"A", 1, 128 << 20}, {"B", 50, 2 << 20}, {"C", 500, 16 << 10}}
	}
	return []loopWorkload{{"A", 1, 1 << 30}, {"B", 500, 2 << 20}, {"C", 5000, 16 << 10}}
}

// loopResult is one measured run.
type loopResult struct {
	seconds    float64
	mbps       float64
	rssSendKB  int64
	rssRecvKB  int64
	transport  string
	reason     string
	wireBytes  int64
	sendCalls  int64
	datagrams  int64
	congestion int64
}

func runLoopback(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ferry-bench loopback", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "small files and one run per cell (CI)")
	runs := fs.Int("runs", 3, "runs per cell (the median is reported)")
	which := fs.String("workloads", "A,B,C", "workloads to run")
	tps := fs.String("transports", "quic,tcp,auto", "Ferry transports to measure")
	dir := fs.String("dir", "", "folder for the test files (default: a temp folder on disk)")
	cli := fs.String("cli", "", "ferry-cli binary (default: built from this checkout)")
	mdOut := fs.String("md", "", "also write the markdown table to this `FILE`")
	resumeCost := fs.Bool("resume-cost", false, "also run each transport with the receiver keeping no resume state")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quick {
		*runs = 1
	}
	work, err := os.MkdirTemp(*dir, "ferry-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := *cli
	if bin == "" {
		bin = filepath.Join(work, "ferry-cli")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ferry-cli")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build ferry-cli (run from the repository root or pass --cli): %w", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var rows []string
	rows = append(rows, "| workload | what | MB/s | seconds | x ceiling | peak RSS send / recv (MiB) | notes |",
		"|---|---|---|---|---|---|---|")
	fmt.Fprintf(out, "ferry-bench loopback: %d run(s) per cell, files in %s\n", *runs, work)
	for _, w := range loopWorkloads(*quick) {
		if !strings.Contains(*which, w.name) {
			continue
		}
		src := filepath.Join(work, "src-"+w.name)
		if err := loopMakeFiles(src, w); err != nil {
			return err
		}
		variants := strings.Split(*tps, ",")
		if *resumeCost {
			for _, tp := range strings.Split(*tps, ",") {
				variants = append(variants, tp+"/no-resume")
			}
		}
		// Rounds, not blocks: each round runs every cell once, back to back,
		// and a Ferry cell's ratio is the median of its per-round ratios to
		// the ceiling of the same round. On a VM whose speed drifts by ±15 %
		// from minute to minute, that compares like with like.
		cells := map[string][]loopResult{}
		ratios := map[string][]float64{}
		ratiosConns := map[string][]float64{} // QUIC: to bare connections as many as Ferry's
		for round := range *runs {
			ceil := map[string]float64{}
			for _, c := range loopCeilings {
				spec := ceilingSpec{proto: c.proto, bytes: w.bytes(), conns: c.conns}
				r, err := runCeiling(ctx, self, spec)
				if err != nil { // one retry: a lost handshake on a busy machine is not a ceiling
					r, err = runCeiling(ctx, self, spec)
				}
				if err != nil {
					return fmt.Errorf("%s ceiling: %w", c.key, err)
				}
				cells[c.key] = append(cells[c.key], r)
				ceil[c.key] = r.mbps
			}
			disk, err := diskCeiling(work, w)
			if err != nil {
				return fmt.Errorf("disk ceiling: %w", err)
			}
			cells["disk"] = append(cells["disk"], disk)
			for _, variant := range variants {
				tp, noResume := strings.CutSuffix(variant, "/no-resume")
				r, err := loopFerry(ctx, bin, work, src, tp, noResume)
				if err != nil {
					return fmt.Errorf("ferry %s %s: %w", variant, w.name, err)
				}
				c := ceil["bare-quic"]
				if r.transport == "tcp" {
					c = ceil["bare-tls"]
				} else {
					ratiosConns[variant] = append(ratiosConns[variant], r.mbps/ceil["bare-quic-conns"])
				}
				cells[variant] = append(cells[variant], r)
				ratios[variant] = append(ratios[variant], r.mbps/c)
			}
			fmt.Fprintf(out, "  %s round %d/%d done\n", w.name, round+1, *runs)
		}
		for _, c := range loopCeilings {
			r := loopMedianOf(cells[c.key])
			row := fmt.Sprintf("| %s | %s | %.0f | %.2f | %s | %.0f / %.0f | same bytes, memory to memory |",
				w.name, c.what, r.mbps, r.seconds, c.ratio, float64(r.rssSendKB)/1024, float64(r.rssRecvKB)/1024)
			rows = append(rows, row)
			fmt.Fprintln(out, row)
		}
		disk := loopMedianOf(cells["disk"])
		row := fmt.Sprintf("| %s | disk write (same files, same folder) | %.0f | %.2f | | | create + 1 MiB writes + close, no network |", w.name, disk.mbps, disk.seconds)
		rows = append(rows, row)
		fmt.Fprintln(out, row)
		for _, variant := range variants {
			r := loopMedianOf(cells[variant])
			note := fmt.Sprintf("carried by %s", r.transport)
			if r.sendCalls > 0 && r.transport == "quic" {
				note += fmt.Sprintf("; %.1f datagrams/send call", float64(r.datagrams)/float64(r.sendCalls))
			}
			rs := ratios[variant]
			note += "; per-round ratios " + joinRatios(rs)
			if rc := ratiosConns[variant]; len(rc) > 0 {
				note += fmt.Sprintf("; %.2fx bare quic-go over %d connections", median(rc), loopQUICConns())
			}
			row := fmt.Sprintf("| %s | ferry %s | %.0f | %.2f | %.2f | %.0f / %.0f | %s |", w.name, variant, r.mbps, r.seconds,
				median(rs), float64(r.rssSendKB)/1024, float64(r.rssRecvKB)/1024, note)
			rows = append(rows, row)
			fmt.Fprintln(out, row)
		}
	}
	if *mdOut != "" {
		return os.WriteFile(*mdOut, []byte(strings.Join(rows, "\n")+"\n"), 0o644)
	}
	return nil
}

// loopCeilings are the bare-stream runs of every round. The QUIC
// ceiling is one quic-go stream; Ferry spreads a session over
// quicSessionConns connections on loopback, so the same bytes over that many
// bare connections are measured too.
var loopCeilings = []struct {
	key, what, ratio string
	proto            string
	conns            int
}{
	{"bare-tls", "bare TLS-over-TCP stream", "1.00", "tls", 1},
	{"bare-quic", "bare quic-go stream", "1.00", "quic", 1},
	{"bare-quic-conns", fmt.Sprintf("bare quic-go, %d connections", loopQUICConns()), "", "quic", loopQUICConns()},
}

// loopQUICConns is how many QUIC connections Ferry's sessions use on loopback.
func loopQUICConns() int { return ferryenv.Transport().WithDefaults().QUICConns }

// diskCeiling writes the workload's bytes as files into a fresh folder on the
// same file system, the way a receiver does, without any network: what the
// disk path alone allows.
func diskCeiling(work string, w loopWorkload) (loopResult, error) {
	dst, err := os.MkdirTemp(work, "disk-")
	if err != nil {
		return loopResult{}, err
	}
	if w.files < 1000 {
		defer os.RemoveAll(dst)
	}
	flushDirty()
	buf := make([]byte, 1<<20)
	start := time.Now()
	for i := range w.files {
		f, err := os.Create(filepath.Join(dst, fmt.Sprintf("f%05d", i)))
		if err != nil {
			return loopResult{}, err
		}
		for off := int64(0); off < w.size; off += int64(len(buf)) {
			n := min(int64(len(buf)), w.size-off)
			if _, err := f.WriteAt(buf[:n], off); err != nil {
				f.Close()
				return loopResult{}, err
			}
		}
		if err := f.Close(); err != nil {
			return loopResult{}, err
		}
	}
	secs := time.Since(start).Seconds()
	return loopResult{seconds: secs, mbps: float64(w.bytes()) / secs / 1e6}, nil
}

// loopMedianOf returns the run with the median duration; its peak RSS is
// the largest of all runs, since the issue bounds the peak.
func loopMedianOf(rs []loopResult) loopResult {
	rs = slices.Clone(rs)
	sort.Slice(rs, func(i, j int) bool { return rs[i].seconds < rs[j].seconds })
	m := rs[len(rs)/2]
	for _, r := range rs {
		m.rssSendKB, m.rssRecvKB = max(m.rssSendKB, r.rssSendKB), max(m.rssRecvKB, r.rssRecvKB)
	}
	return m
}

// median of xs (the upper middle one for an even count, like loopMedianOf).
func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func joinRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, " ")
}

func loopMakeFiles(dir string, w loopWorkload) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	seed := uint64(len(w.name)*7919 + 1)
	for i := range buf {
		seed = seed*6364136223846793005 + 1442695040888963407
		buf[i] = byte(seed >> 56)
	}
	for i := range w.files {
		name := filepath.Join(dir, fmt.Sprintf("file-%05d.bin", i))
		if w.files == 1 {
			name = filepath.Join(dir, "big.bin")
		}
		f, err := os.Create(name)
		if err != nil {
			return err
		}
		for left := w.size; left > 0; {
			n := min(left, int64(len(buf)))
			buf[0], buf[1] = byte(i), byte(left) // different content per file and chunk
			if _, err := f.Write(buf[:n]); err != nil {
				f.Close()
				return err
			}
			left -= n
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// runFerry moves src with ferry-cli send/receive as two processes.
func loopFerry(ctx context.Context, bin, work, src, transport string, noResume bool) (loopResult, error) {
	dst, err := os.MkdirTemp(work, "dst-")
	if err != nil {
		return loopResult{}, err
	}
	// Few large files are removed after the run, so their dirty pages do not
	// throttle the next one. Many small files stay until the whole run ends:
	// deleting thousands of files just before creating thousands more makes
	// ext4 search its inode tables for recently deleted inodes, and would
	// measure that instead.
	if n, _ := os.ReadDir(src); len(n) < 1000 {
		defer os.RemoveAll(dst)
	}
	flushDirty() // start every run with the disk caught up, outside the timed part
	rcfg, scfg := filepath.Join(work, "cfg-recv"), filepath.Join(work, "cfg-send")
	args := []string{"receive", "--config", rcfg, "--dir", dst, "--listen", "127.0.0.1:0",
		"--accept", "all", "--once", "--json", "--no-discovery"}
	if noResume {
		args = append(args, "--no-resume")
	}
	recv := exec.CommandContext(ctx, bin, args...)
	rout, err := recv.StdoutPipe()
	if err != nil {
		return loopResult{}, err
	}
	recv.Stderr = os.Stderr
	if err := recv.Start(); err != nil {
		return loopResult{}, err
	}
	defer recv.Process.Kill()
	sc := bufio.NewScanner(rout)
	var quicAddr, tcpAddr string
	for sc.Scan() {
		if f, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
			for _, kv := range strings.Fields(f) {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "quic":
					quicAddr = v
				case "tcp":
					tcpAddr = v
				}
			}
			break
		}
	}
	go io.Copy(io.Discard, rout)
	if quicAddr == "" && tcpAddr == "" {
		return loopResult{}, errors.New("receiver did not start")
	}
	addr := quicAddr
	if transport == "tcp" || addr == "" {
		addr = tcpAddr
	}
	send := exec.CommandContext(ctx, bin, "send", "--config", scfg, "--to", addr, "--transport", transport, "--json", src)
	send.Stderr = os.Stderr
	outb, err := send.Output()
	if err != nil {
		return loopResult{}, fmt.Errorf("send: %w: %s", err, loopLastLine(outb))
	}
	if err := recv.Wait(); err != nil {
		return loopResult{}, fmt.Errorf("receiver: %w", err)
	}
	var ev struct {
		Result struct {
			State     string  `json:"state"`
			Duration  float64 `json:"duration_seconds"`
			Bytes     int64   `json:"bytes"`
			WireBytes int64   `json:"wire_bytes"`
			Transport string  `json:"transport"`
			Reason    string  `json:"transport_reason"`
			Metrics   struct {
				SendCalls  int64 `json:"send_calls"`
				Datagrams  int64 `json:"datagrams_sent"`
				Congestion int64 `json:"congestion_events"`
			} `json:"metrics"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(loopLastLine(outb)), &ev); err != nil || ev.Result.State != "done" {
		return loopResult{}, fmt.Errorf("send did not finish: %s", loopLastLine(outb))
	}
	r := ev.Result
	return loopResult{
		seconds: r.Duration, mbps: float64(r.Bytes) / r.Duration / 1e6,
		rssSendKB: loopMaxRSS(send.ProcessState), rssRecvKB: loopMaxRSS(recv.ProcessState),
		transport: r.Transport, reason: r.Reason, wireBytes: r.WireBytes,
		sendCalls: r.Metrics.SendCalls, datagrams: r.Metrics.Datagrams, congestion: r.Metrics.Congestion,
	}, nil
}

func loopLastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
