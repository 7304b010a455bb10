package main

// The "lab" command: transfer benchmarks through internal/netlab, for Ferry
// and for reference baselines (iperf3, TLS over TCP with the default
// congestion control and with BBR, scp and rsync over ssh), over a sweep of
// RTT x loss at a fixed bottleneck rate, plus a bursty-loss profile.
//
// Adding a contender is one entry in labTools (lab_tools.go): a function that
// moves the workload's files from the Sender namespace into an empty
// directory through the Receiver namespace.

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/internal/netlab"
)

func init() {
	register(command{
		name:    "lab",
		summary: "benchmark Ferry and baselines through the impairment lab (Linux, root)",
		run:     runLab,
	})
}

// labOptions are the flags of `ferry-bench lab`.
type labOptions struct {
	quick        bool
	out          string
	runs         int
	ferryCLI     string
	tools        []string
	workloads    []string
	rtts         []time.Duration
	losses       []float64
	rate         int64
	bursty       bool
	cc           string // default TCP congestion control in the lab
	bbr          bool   // Ferry may pick BBR (false: as on typical desktops, it cannot)
	baselineRuns int
	budget       time.Duration // target duration of the slowest expected transfer in a cell
	timeout      time.Duration // hard limit per transfer
	cmdline      string
}

func parseLabFlags(args []string) (labOptions, error) {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	o := labOptions{}
	fs.BoolVar(&o.quick, "quick", false, "a few cells with small files (CI smoke run, a couple of minutes)")
	fs.StringVar(&o.out, "out", "docs/benchmarks", "directory for lab-results.{csv,md,jsonl,svg}")
	fs.IntVar(&o.runs, "runs", 0, "runs per cell, the median is reported (default 3, quick 1)")
	fs.IntVar(&o.baselineRuns, "baseline-runs", 0, "runs per cell for the tools that are not Ferry (default: --runs)")
	fs.StringVar(&o.ferryCLI, "ferry-cli", "", "ferry-cli binary (default: go build ./cmd/ferry-cli into a temp dir)")
	tools := fs.String("tools", strings.Join(toolNames(), ","), "contenders to run")
	workloads := fs.String("workloads", "A,B,C", "workloads: A (1 x 1 GiB), B (500 x 2 MiB), C (5000 x 16 KiB)")
	rtts := fs.String("rtt", "", "RTTs, e.g. 1ms,20ms,120ms (default: 1ms,20ms,120ms; quick: 20ms)")
	losses := fs.String("loss", "", "loss rates in percent, e.g. 0,0.5,1,2,5 (default; quick: 0,2)")
	rate := fs.Float64("rate", 100, "bottleneck rate in Mbit/s, both directions")
	fs.StringVar(&o.cc, "cc", "cubic", "default TCP congestion control inside the lab (used by iperf3, scp, rsync and Ferry's TCP); \"\" inherits the host's")
	fs.BoolVar(&o.bbr, "bbr", true, "let Ferry pick BBR for its TCP sockets, as root can; false: BBR unavailable, as on typical desktops "+
		"(Ferry runs under `ferry-bench no-cc`, which refuses TCP_CONGESTION, so its sockets keep --cc; tls-bbr is skipped)")
	fs.BoolVar(&o.bursty, "bursty", true, "add a bursty-loss (Gilbert-Elliott) profile per RTT (quick: off)")
	fs.DurationVar(&o.budget, "budget", 0, "scale workloads down so a loss-limited TCP flow needs about this long (default 60s, quick 5s)")
	fs.DurationVar(&o.timeout, "timeout", 0, "give up on one transfer after this long (default 10m, quick 1m)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.cmdline = "ferry-bench lab " + strings.Join(args, " ")
	burstySet := false
	fs.Visit(func(f *flag.Flag) { burstySet = burstySet || f.Name == "bursty" })
	o.tools = splitList(*tools)
	for _, t := range o.tools {
		if _, ok := toolByName(t); !ok {
			return o, fmt.Errorf("unknown tool %q (have %s)", t, strings.Join(toolNames(), ", "))
		}
	}
	o.workloads = splitList(*workloads)
	for _, w := range o.workloads {
		if _, ok := baseWorkloads[w]; !ok {
			return o, fmt.Errorf("unknown workload %q", w)
		}
	}
	defRTT, defLoss := "1ms,20ms,120ms", "0,0.5,1,2,5"
	if o.quick {
		defRTT, defLoss = "20ms", "0,2"
		if !burstySet {
			o.bursty = false
		}
		if o.runs == 0 {
			o.runs = 1
		}
		if o.budget == 0 {
			o.budget = 5 * time.Second
		}
		if o.timeout == 0 {
			o.timeout = time.Minute
		}
	}
	if o.runs == 0 {
		o.runs = 3
	}
	if o.baselineRuns == 0 || o.baselineRuns > o.runs {
		o.baselineRuns = o.runs
	}
	if o.budget == 0 {
		o.budget = time.Minute
	}
	if o.timeout == 0 {
		o.timeout = 10 * time.Minute
	}
	if *rtts == "" {
		*rtts = defRTT
	}
	if *losses == "" {
		*losses = defLoss
	}
	for _, s := range splitList(*rtts) {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return o, fmt.Errorf("bad RTT %q", s)
		}
		o.rtts = append(o.rtts, d)
	}
	for _, s := range splitList(*losses) {
		p, err := strconv.ParseFloat(s, 64)
		if err != nil || p < 0 || p >= 100 {
			return o, fmt.Errorf("bad loss %q", s)
		}
		o.losses = append(o.losses, p/100)
	}
	if *rate <= 0 {
		return o, errors.New("rate must be positive")
	}
	o.rate = int64(*rate * 1e6)
	return o, nil
}

// newBenchLab brings up a lab whose TCP runs cc where nothing chooses its
// own. With BBR available cc becomes the namespaces' default, so a socket
// that asks for BBR (Ferry, tls-bbr) keeps it; where the host's allowed
// list refuses that, the lab says so and keeps the inherited default (cc
// becomes ""). Without BBR the lab's routes impose cc on every connection
// (Ferry cannot choose then anyway, see no-cc), whatever the host allows.
func newBenchLab(ctx context.Context, prefix string, cc *string, bbr bool, out io.Writer) (*netlab.Lab, error) {
	if !bbr {
		return netlab.New(ctx, netlab.Config{NamePrefix: prefix, RouteCongestionControl: *cc})
	}
	lab, err := netlab.New(ctx, netlab.Config{NamePrefix: prefix, CongestionControl: *cc})
	if errors.Is(err, netlab.ErrCongestionControlNotAllowed) {
		// Do not change the host's sysctl behind the user's back: say so,
		// run with the inherited default, and the report names it.
		fmt.Fprintf(out, "warning: %v\nwarning: running with the host's default congestion control instead\n", err)
		*cc = ""
		lab, err = netlab.New(ctx, netlab.Config{NamePrefix: prefix})
	}
	return lab, err
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// profile is one network condition of the sweep.
type profile struct {
	rtt   time.Duration
	loss  float64                // random loss, data direction
	burst *netlab.GilbertElliott // bursty loss, data direction
	rate  int64
}

// burstyProfile is the bursty-loss cell: mean 1.95 % in bursts (80 % loss
// while Bad, 5 packets on average in Bad).
var burstyProfile = netlab.GilbertElliott{P: 0.005, R: 0.2, LossGood: 0, LossBad: 0.8}

func (p profile) name() string {
	if p.burst != nil {
		return fmt.Sprintf("rtt=%s bursty(mean %.2f%%)", p.rtt, 100*p.burst.MeanLoss())
	}
	return fmt.Sprintf("rtt=%s loss=%s%%", p.rtt, strconv.FormatFloat(100*p.loss, 'f', -1, 64))
}

func (p profile) meanLoss() float64 {
	if p.burst != nil {
		return p.burst.MeanLoss()
	}
	return p.loss
}

// apply configures the lab: half the RTT each way, the rate limit both ways
// (default 50 ms queue), loss on the data direction only, as on the lossy
// last mile of a download.
func (p profile) apply(lab *netlab.Lab) error {
	base := netlab.Impairment{Delay: p.rtt / 2, Rate: p.rate}
	if err := lab.SetImpairment(labPath, netlab.ReceiverToSender, base); err != nil {
		return err
	}
	data := base
	data.Loss = p.loss
	data.Burst = p.burst
	return lab.SetImpairment(labPath, netlab.SenderToReceiver, data)
}

const labPath = "main"

// workload is a set of files to move.
type workload struct {
	name  string
	files int
	size  int64
}

func (w workload) bytes() int64 { return int64(w.files) * w.size }

var baseWorkloads = map[string]workload{
	"A": {"A", 1, 1 << 30},
	"B": {"B", 500, 2 << 20},
	"C": {"C", 5000, 16 << 10},
}

var quickWorkloads = map[string]workload{
	"A": {"A", 1, 8 << 20},
	"B": {"B", 10, 512 << 10},
	"C": {"C", 100, 16 << 10},
}

// scaled shrinks w so that a single loss-limited TCP flow (Mathis et al.:
// rate = 1.22 MSS / (RTT sqrt(p))) finishes in about budget. Every contender
// of a cell gets the same scaled workload.
func (w workload) scaled(p profile, budget time.Duration) workload {
	rate := float64(p.rate)
	if l := p.meanLoss(); l > 0 {
		rtt := max(p.rtt, time.Millisecond).Seconds()
		rate = min(rate, 1.22*1448*8/(rtt*math.Sqrt(l)))
	}
	allowed := rate / 8 * budget.Seconds()
	if float64(w.bytes()) <= allowed {
		return w
	}
	f := allowed / float64(w.bytes())
	if w.files == 1 {
		w.size = max(1<<20, int64(float64(w.size)*f)&^4095)
		return w
	}
	w.files = max(10, int(float64(w.files)*f))
	return w
}

func runLab(ctx context.Context, args []string, out io.Writer) error {
	o, err := parseLabFlags(args)
	if err != nil {
		return err
	}
	if err := netlab.Available(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "ferry-bench-lab-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	lab, err := newBenchLab(ctx, "ferrybench", &o.cc, o.bbr, out)
	if err != nil {
		return err
	}
	defer lab.Close()
	env := &benchEnv{lab: lab, tmp: tmp, timeout: o.timeout, out: out, noBBR: !o.bbr}
	if env.self, err = os.Executable(); err != nil {
		return err
	}
	env.rcvAddr = lab.MustAddr(netlab.Receiver, labPath)
	if err := env.prepareTools(ctx, o); err != nil {
		return err
	}
	defer env.closeTools()

	var profiles []profile
	for _, rtt := range o.rtts {
		for _, l := range o.losses {
			profiles = append(profiles, profile{rtt: rtt, loss: l, rate: o.rate})
		}
		if o.bursty {
			g := burstyProfile
			profiles = append(profiles, profile{rtt: rtt, burst: &g, rate: o.rate})
		}
	}
	wls := baseWorkloads
	if o.quick {
		wls = quickWorkloads
	}
	rep, err := newReport(o)
	if err != nil {
		return err
	}
	defer rep.close()
	started := time.Now()
	for _, p := range profiles {
		if err := p.apply(lab); err != nil {
			return err
		}
		env.rtt = p.rtt
		for _, wname := range o.workloads {
			w := wls[wname].scaled(p, o.budget)
			files, err := env.workloadFiles(w)
			if err != nil {
				return err
			}
			for _, tname := range o.tools {
				t, _ := toolByName(tname)
				if t.only != "" && t.only != w.name {
					continue
				}
				c := cell{profile: p, workload: w, tool: t.name}
				for run := 1; run <= o.runs; run++ {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					r := env.runOne(ctx, t, files, w)
					r.run = run
					c.runs = append(c.runs, r)
					fmt.Fprintf(out, "%-28s %s %-3s %-11s run %d: %s\n", p.name(), w.name, fmtBytes(w.bytes()), t.name, run, r.summary())
					if err := rep.addRun(c, r); err != nil {
						return err
					}
					if r.status != statusOK {
						break // a skipped, failed or timed-out tool does not get better by repeating
					}
					if run >= o.baselineRuns && !strings.HasPrefix(t.name, "ferry-") {
						break
					}
				}
				rep.addCell(c)
				// Long sweeps leave a readable report at every step.
				if err := rep.write(time.Since(started)); err != nil {
					return err
				}
			}
		}
	}
	if err := rep.write(time.Since(started)); err != nil {
		return err
	}
	fmt.Fprintf(out, "results in %s\n", o.out)
	return nil
}

// cell is one (profile, workload, tool) with its runs.
type cell struct {
	profile  profile
	workload workload
	tool     string
	runs     []runResult
}

// median returns the run with the median duration among the good runs; a
// timed-out run counts as taking the whole timeout.
func (c cell) median() (runResult, bool) {
	var ok []runResult
	for _, r := range c.runs {
		if r.status == statusOK || r.status == statusTimeout {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return runResult{}, false
	}
	slices.SortFunc(ok, func(a, b runResult) int { return cmp.Compare(a.seconds, b.seconds) })
	return ok[len(ok)/2], true
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%.0fMiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%dKiB", n>>10)
	}
}
