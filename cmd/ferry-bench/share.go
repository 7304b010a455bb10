package main

// The "share" command measures how a Ferry transfer shares a clean
// bottleneck with one iperf3 flow (loss-based, the lab's congestion control):
// extra flows are for random loss, not for crowding out neighbours. iperf3
// runs first; once it reached its steady state Ferry sends a file beside it;
// the report compares Ferry's rate with iperf3's over the same seconds.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/internal/netlab"
)

func init() {
	register(command{
		name:    "share",
		summary: "Ferry beside one iperf3 flow on a clean shared bottleneck (Linux, root)",
		run:     runShare,
	})
}

// shareResult is what runShare prints (one JSON line).
type shareResult struct {
	RTTms        float64 `json:"rtt_ms"`
	RateMbit     float64 `json:"rate_mbit"`
	CC           string  `json:"cc"`
	BBR          bool    `json:"bbr"`
	Transport    string  `json:"transport"`     // what --transport asked
	Carried      string  `json:"carried"`       // what carried the data
	Flows        int     `json:"flows"`         // the flows Ferry grew to (0: none)
	FerryMbit    float64 `json:"ferry_mbit"`    // Ferry's goodput
	IperfMbit    float64 `json:"iperf3_mbit"`   // iperf3's over the same seconds
	Ratio        float64 `json:"ratio"`         // Ferry / iperf3
	FerrySeconds float64 `json:"ferry_seconds"` // Ferry's transfer
	Bytes        int64   `json:"bytes"`
	// Reasons says why each transport carried the data and why the flows
	// grew, in order: what to read when Flows is not 0.
	Reasons []string `json:"reasons,omitempty"`
}

func runShare(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("share", flag.ContinueOnError)
	rtt := fs.Duration("rtt", 20*time.Millisecond, "round-trip time of the path")
	rate := fs.Float64("rate", 20, "bottleneck rate in Mbit/s (50 ms queue)")
	mib := fs.Int64("mib", 0, "MiB Ferry sends (default: about 8 s at half the rate)")
	cc := fs.String("cc", "cubic", "the lab's TCP congestion control (iperf3's)")
	bbr := fs.Bool("bbr", false, "let Ferry pick BBR (default: unavailable, as on typical desktops)")
	transport := fs.String("transport", "auto", "Ferry's --transport")
	ferryCLI := fs.String("ferry-cli", "", "ferry-cli binary (default: go build ./cmd/ferry-cli)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *mib <= 0 {
		halfRate := *rate * 1e6 / 8 / 2 // bytes per second
		*mib = max(1, int64(halfRate*8/(1<<20)))
	}
	if _, err := exec.LookPath("iperf3"); err != nil {
		return errors.New("share needs iperf3 (apt install iperf3)")
	}
	if err := netlab.Available(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "ferry-bench-share-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	lab, err := newBenchLab(ctx, "ferryshare", cc, *bbr, io.Discard)
	if err != nil {
		return err
	}
	defer lab.Close()
	im := netlab.Impairment{Delay: *rtt / 2, Rate: int64(*rate * 1e6)}
	if err := lab.SetImpairment(labPath, netlab.Both, im); err != nil {
		return err
	}
	env := &benchEnv{lab: lab, tmp: tmp, timeout: 5 * time.Minute, out: io.Discard, noBBR: !*bbr, rtt: *rtt}
	if env.self, err = os.Executable(); err != nil {
		return err
	}
	env.rcvAddr = lab.MustAddr(netlab.Receiver, labPath)
	if env.ferry, err = ferryBinary(ctx, *ferryCLI, tmp); err != nil {
		return err
	}
	files, err := env.workloadFiles(workload{name: "share", files: 1, size: *mib << 20})
	if err != nil {
		return err
	}

	ictx, stopIperf := context.WithCancel(ctx)
	defer stopIperf()
	ip, err := startIperfFlow(ictx, lab, env.rcvAddr)
	if err != nil {
		return err
	}
	defer ip.wait()
	// Ferry starts once iperf3 reached its steady state: a few intervals in.
	if err := ip.waitIntervals(ctx, 6); err != nil {
		return err
	}
	dst, err := os.MkdirTemp(tmp, "dst-")
	if err != nil {
		return err
	}
	start := time.Now()
	r, err := ferryTool(*transport)(ctx, env, files, dst)
	end := time.Now()
	if err != nil {
		return fmt.Errorf("ferry: %w", err)
	}
	stopIperf()
	ip.wait()
	size := *mib << 20
	secs := end.Sub(start).Seconds()
	res := shareResult{
		RTTms: float64(*rtt) / 1e6, RateMbit: *rate, CC: *cc, BBR: *bbr, Transport: *transport,
		Carried: r.transport, Flows: r.flows, FerrySeconds: secs, Bytes: size, Reasons: r.reasons,
		FerryMbit: float64(size) * 8 / secs / 1e6,
		IperfMbit: ip.mbitBetween(start, end),
	}
	if res.IperfMbit > 0 {
		res.Ratio = res.FerryMbit / res.IperfMbit
	}
	return json.NewEncoder(out).Encode(res)
}

// iperfFlow is one iperf3 client in the lab's Sender namespace, whose
// per-interval reports are read as they come.
type iperfFlow struct {
	srv  *exec.Cmd
	cli  *exec.Cmd
	done chan struct{}
	err  error

	mu        sync.Mutex // guards the fields below
	intervals []interval
	more      chan struct{} // closed and replaced at each new interval
}

// interval is one iperf3 report, placed on the wall clock by its arrival.
type interval struct {
	end     time.Time
	seconds float64
	mbit    float64
}

// iperfLine matches "[  5]   1.00-1.50   sec  1.19 MBytes  20.0 Mbits/sec ...".
var iperfLine = regexp.MustCompile(`\]\s+([\d.]+)-([\d.]+)\s+sec\s+\S+\s+\S+\s+([\d.]+)\s+Mbits/sec`)

func startIperfFlow(ctx context.Context, lab *netlab.Lab, rcv netip.Addr) (*iperfFlow, error) {
	port := strconv.Itoa(randomPort())
	srv, err := startServer(ctx, lab.Command(ctx, netlab.Receiver, "iperf3", "-s", "-1", "--forceflush", "-B", rcv.String(), "-p", port), "Server listening", false)
	if err != nil {
		return nil, err
	}
	cli := lab.Command(ctx, netlab.Sender, "iperf3", "-c", rcv.String(), "-p", port, "-t", "600", "-i", "0.5", "-f", "m", "--forceflush")
	stdout, err := cli.StdoutPipe()
	if err != nil {
		srv.kill()
		return nil, err
	}
	if err := cli.Start(); err != nil {
		srv.kill()
		return nil, err
	}
	f := &iperfFlow{srv: srv.cmd, cli: cli, done: make(chan struct{}), more: make(chan struct{})}
	go func() {
		defer close(f.done)
		defer srv.kill()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			m := iperfLine.FindStringSubmatch(sc.Text())
			if m == nil || strings.Contains(sc.Text(), "sender") || strings.Contains(sc.Text(), "receiver") {
				continue
			}
			from, _ := strconv.ParseFloat(m[1], 64)
			to, _ := strconv.ParseFloat(m[2], 64)
			mbit, _ := strconv.ParseFloat(m[3], 64)
			f.mu.Lock()
			f.intervals = append(f.intervals, interval{end: time.Now(), seconds: to - from, mbit: mbit})
			close(f.more)
			f.more = make(chan struct{})
			f.mu.Unlock()
		}
		f.err = cli.Wait()
	}()
	return f, nil
}

// waitIntervals returns once n intervals were reported.
func (f *iperfFlow) waitIntervals(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		have, more := len(f.intervals), f.more
		f.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-more:
		case <-f.done:
			return fmt.Errorf("iperf3 ended after %d intervals: %v", have, f.err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// mbitBetween is iperf3's mean rate over the intervals that ended between
// from and to (the last one's end may trail to by up to one interval).
func (f *iperfFlow) mbitBetween(from, to time.Time) float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var bits, secs float64
	for _, iv := range f.intervals {
		if iv.end.After(from) && !iv.end.After(to.Add(500*time.Millisecond)) {
			bits += iv.mbit * iv.seconds
			secs += iv.seconds
		}
	}
	if secs == 0 {
		return 0
	}
	return bits / secs
}

// wait waits for the client to end (its context was cancelled).
func (f *iperfFlow) wait() { <-f.done }
