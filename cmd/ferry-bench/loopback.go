package main

import (
	"bufio"
	"bytes"
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
	"sync"
	"time"

	"github.com/ferrydrop/ferry/cmd/internal/ferryenv"
)

func init() {
	register(command{name: "loopback", summary: "workloads A/B/C end to end on loopback: Ferry, rsync/scp/croc and the bare TLS and QUIC ceilings", run: runLoopback})
}

// workload is a set of files to move.
type loopWorkload struct {
	name  string
	files int
	size  int64
	// tree: a real tree (workload D, loopback_tree.go) of this many copies
	// of the Go distribution, measured once built (total bytes).
	tree  int
	total int64
}

func (w loopWorkload) bytes() int64 {
	if w.tree > 0 {
		return w.total
	}
	return int64(w.files) * w.size
}

func (w loopWorkload) String() string {
	if w.tree > 0 {
		return fmt.Sprintf("%s: %d copies of Go 1.26.8 (%d files, %.2f GB)", w.name, w.tree, w.files, float64(w.total)/1e9)
	}
	return fmt.Sprintf("%s: %d x %s", w.name, w.files, sizeName(w.size))
}

func sizeName(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	default:
		return fmt.Sprintf("%d KiB", n>>10)
	}
}

func loopWorkloads(quick bool) []loopWorkload {
	if quick {
		return []loopWorkload{{name: "A", files: 1, size: 128 << 20}, {name: "B", files: 50, size: 2 << 20},
			{name: "C", files: 500, size: 16 << 10}, treeWorkload(true)}
	}
	return []loopWorkload{{name: "A", files: 1, size: 1 << 30}, {name: "B", files: 500, size: 2 << 20},
		{name: "C", files: 5000, size: 16 << 10}, treeWorkload(false)}
}

// loopResult is one measured run. seconds is wall time: from launching the
// first process of the transfer (Ferry's receiver, the sshd, croc's sender)
// to the sender's exit.
type loopResult struct {
	seconds float64
	mbps    float64
	// CPU-s (user + system) of each side's processes and their children;
	// other is a third party (croc's relay). Zero: not measured.
	cpuSend, cpuRecv, cpuOther float64
	rssSendKB, rssRecvKB       int64
	engineSeconds              float64 // Ferry's own transfer duration
	transport                  string
	reason                     string
	wireBytes                  int64
	sendCalls                  int64
	datagrams                  int64
	congestion                 int64
	// the receiver's receive calls and the datagrams they brought (GRO)
	recvCalls, recvDatagrams int64
}

func (r loopResult) cpu() float64 { return r.cpuSend + r.cpuRecv + r.cpuOther }

// loopCell is one row of the table: something that moves a workload.
type loopCell struct {
	key      string // row label
	baseline bool   // not Ferry: "x best baseline" compares against these
	ceiling  bool   // memory to memory, not a transfer of files
	run      func(ctx context.Context, w loopWorkload, src, dst string) (loopResult, error)
	skip     error // set when the cell cannot run here: a row says why
}

// loopOptions are the flags of `ferry-bench loopback`.
type loopOptions struct {
	quick      bool
	runs       int
	workloads  string
	transports []string
	dir        string
	smallDir   string
	cli        string
	compare    string
	baselines  []string
	croc       string
	// magic-wormhole's mailbox server and transit relay
	wormholeRelay   string
	wormholeTransit string
	ceilings        bool
	md              string
	csv             string
	svg             string
	resumeCost      bool
	profile         string
	treeD           string
}

func parseLoopFlags(args []string) (loopOptions, error) {
	fs := flag.NewFlagSet("ferry-bench loopback", flag.ContinueOnError)
	var o loopOptions
	fs.BoolVar(&o.quick, "quick", false, "small files and one run per cell (CI)")
	fs.IntVar(&o.runs, "runs", 3, "rounds; each round runs every cell once, and the median is reported")
	fs.StringVar(&o.workloads, "workloads", "A,B,C", "workloads to run (D: a real tree of 105,252 files, 1.6 GB, built by scripts/workload-d.sh; about 3 minutes per cell)")
	fs.StringVar(&o.treeD, "tree-d", "", "copy workload D from this `DIR` (built by scripts/workload-d.sh) instead of building it")
	tps := fs.String("transports", "quic,tcp,auto", "Ferry variants: a transport, optionally followed by +NAME=VALUE environment settings for both processes and +--flag=value flags for the sender (e.g. tcp+FERRY_BUFFERED_IO=1, quic+--streams=2)")
	fs.StringVar(&o.dir, "dir", "", "folder for the files of A and B: source and destination on the same disk (default: a temp folder)")
	fs.StringVar(&o.smallDir, "small-dir", "/dev/shm", "folder for the files of C (\"\" = as --dir): on this VM's disk, creating thousands of files within minutes of deleting thousands measures ext4's search past recently deleted inodes, not the tools (docs/benchmarks/trees.md)")
	fs.StringVar(&o.cli, "cli", "", "ferry-cli binary (default: built from this checkout)")
	fs.StringVar(&o.compare, "compare", "", "other ferry-cli `BINARIES` (comma-separated, e.g. built from older commits), run in the same rounds with rows of their own, labelled by file name")
	bl := fs.String("baselines", "croc,rsync,scp,wormhole", "other tools to run in the same rounds (rsync -e ssh and scp to a private sshd on loopback, croc through a local relay, magic-wormhole through the mailbox server --wormhole-relay names); each is skipped if not installed")
	fs.StringVar(&o.croc, "croc", "", "croc binary (default: croc in PATH or in $(go env GOPATH)/bin)")
	fs.StringVar(&o.wormholeRelay, "wormhole-relay", "", "magic-wormhole's mailbox server, already running (e.g. ws://127.0.0.1:4000/v1 from `twist wormhole-mailbox --port tcp:4000:interface=127.0.0.1`)")
	fs.StringVar(&o.wormholeTransit, "wormhole-transit", "", "magic-wormhole's transit relay, already running (e.g. tcp:127.0.0.1:4001)")
	fs.BoolVar(&o.ceilings, "ceilings", true, "also run the bare TLS and QUIC streams, memory to memory")
	fs.StringVar(&o.md, "md", "", "also write the markdown tables to this `FILE`")
	fs.StringVar(&o.csv, "csv", "", "also write every run of every cell to this `FILE` (CSV)")
	fs.StringVar(&o.svg, "svg", "", "also draw the median wall times into this `FILE` (SVG)")
	fs.BoolVar(&o.resumeCost, "resume-cost", false, "also run each transport with the receiver keeping no resume state")
	fs.StringVar(&o.profile, "profile", "", "write CPU profiles of both Ferry processes of every run into this `DIR`")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.quick {
		o.runs = 1
	}
	if o.runs < 1 {
		return o, errors.New("--runs must be at least 1")
	}
	o.transports = splitList(*tps)
	o.baselines = splitList(*bl)
	for _, b := range o.baselines {
		if _, ok := loopBaselines[b]; !ok {
			return o, fmt.Errorf("unknown baseline %q (have rsync, scp, croc, wormhole)", b)
		}
	}
	return o, nil
}

func runLoopback(ctx context.Context, args []string, out io.Writer) error {
	o, err := parseLoopFlags(args)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp(o.dir, "ferry-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	smallWork := work
	if o.smallDir != "" {
		if smallWork, err = os.MkdirTemp(o.smallDir, "ferry-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(smallWork)
	}
	bin := o.cli
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
	env := &loopEnv{work: work, out: out}
	defer env.close()
	cells := env.cells(ctx, o, self, bin)
	started := time.Now().UTC()
	fmt.Fprintf(out, "ferry-bench loopback: %d round(s), A/B files in %s, C files in %s, started %s\n",
		o.runs, work, smallWork, started.Format("2006-01-02 15:04 MST"))
	var tables []loopTable
	for _, w := range loopWorkloads(o.quick) {
		if !slices.Contains(splitList(o.workloads), w.name) {
			continue
		}
		base := work
		if w.name == "C" {
			base = smallWork
		}
		t, err := env.runWorkload(ctx, o, w, base, cells)
		if err != nil {
			return err
		}
		tables = append(tables, t)
		for _, row := range t.rows() {
			fmt.Fprintln(out, row)
		}
	}
	md := loopMarkdown(tables, cells, o, started)
	fmt.Fprintln(out)
	fmt.Fprint(out, md)
	if o.svg != "" {
		if err := os.WriteFile(o.svg, []byte(loopSVG(tables, started)), 0o644); err != nil {
			return err
		}
	}
	if o.csv != "" {
		f, err := os.Create(o.csv)
		if err != nil {
			return err
		}
		if err := writeLoopCSV(f, tables); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if o.md != "" {
		return os.WriteFile(o.md, []byte(md), 0o644)
	}
	return nil
}

// loopEnv is what the cells of a run share.
type loopEnv struct {
	work string
	out  io.Writer
	ssh  *sshKit
}

func (e *loopEnv) close() {}

// cells lists every row of a run, in table order: ceilings, the disk,
// Ferry's variants (and the compared binary's), then the baselines.
func (e *loopEnv) cells(ctx context.Context, o loopOptions, self, bin string) []loopCell {
	var cells []loopCell
	if o.ceilings {
		for _, c := range loopCeilings {
			spec := ceilingSpec{proto: c.proto, conns: c.conns}
			cells = append(cells, loopCell{key: c.what, ceiling: true, run: func(ctx context.Context, w loopWorkload, _, _ string) (loopResult, error) {
				spec := spec
				spec.bytes = w.bytes()
				r, err := runCeiling(ctx, self, spec)
				if err != nil { // one retry: a lost handshake on a busy machine is not a ceiling
					r, err = runCeiling(ctx, self, spec)
				}
				return r, err
			}})
		}
	}
	// The floor of a copy to this disk: cp of the page-cached source into
	// the same folder the transfers write to, without a sync (none of the
	// transfers syncs; Ferry's direct writes of whole chunks do wait for the
	// device, which cp does not).
	cells = append(cells, loopCell{key: "disk: cp -R (the copy alone)", ceiling: true,
		run: func(ctx context.Context, _ loopWorkload, src, dst string) (loopResult, error) {
			return copyCeiling(ctx, src, dst)
		}})
	cells = append(cells, loopCell{key: "disk: tar c piped to tar x (two processes)", ceiling: true,
		run: func(ctx context.Context, _ loopWorkload, src, dst string) (loopResult, error) {
			return pipeCeiling(ctx, src, dst)
		}})
	variants := slices.Clone(o.transports)
	if o.resumeCost {
		for _, tp := range o.transports {
			variants = append(variants, tp+"/no-resume")
		}
	}
	ferryCells := func(bin, label string) {
		for _, v := range variants {
			fv := parseFerryVariant(v)
			key := "ferry " + v
			if label != "" {
				key += " (" + label + ")"
			}
			profile := ""
			if o.profile != "" {
				profile = filepath.Join(o.profile, strings.NewReplacer(" ", "_", "/", "_", "(", "", ")", "", "=", "-", "+", "_").Replace(key))
			}
			cells = append(cells, loopCell{key: key, run: func(ctx context.Context, w loopWorkload, src, dst string) (loopResult, error) {
				return loopFerry(ctx, bin, e.work, src, dst, fv, profile)
			}})
		}
	}
	ferryCells(bin, "")
	for _, other := range splitList(o.compare) {
		if _, err := os.Stat(other); err != nil {
			cells = append(cells, loopCell{key: "ferry (" + filepath.Base(other) + ")", skip: err})
			continue
		}
		ferryCells(other, filepath.Base(other))
	}
	for _, b := range o.baselines {
		cells = append(cells, loopBaselines[b](ctx, e, o))
	}
	return cells
}

// ferryVariant is one way of running Ferry: a transport, whether the
// receiver keeps resume state, extra environment for both processes and
// extra flags for the sender.
type ferryVariant struct {
	transport string
	noResume  bool
	env       []string
	sendArgs  []string
}

// parseFerryVariant reads "TRANSPORT[+NAME=VALUE|+--flag=value]...[/no-resume]".
func parseFerryVariant(v string) ferryVariant {
	v, noResume := strings.CutSuffix(v, "/no-resume")
	parts := strings.Split(v, "+")
	fv := ferryVariant{transport: parts[0], noResume: noResume, env: []string{}}
	for _, p := range parts[1:] {
		if strings.HasPrefix(p, "-") {
			fv.sendArgs = append(fv.sendArgs, p)
		} else {
			fv.env = append(fv.env, p)
		}
	}
	return fv
}

// loopTable holds one workload's results: every cell's runs, and per round
// the ratio of the best baseline's time to each cell's.
type loopTable struct {
	w       loopWorkload
	cells   []loopCell
	results map[string][]loopResult
	speedup map[string][]float64 // best baseline seconds / cell seconds, per round
	cpuQT   []float64            // ferry quic CPU / ferry tcp CPU, per round
	cpuTCP  map[string][]float64 // a Ferry cell's CPU / ferry tcp's CPU, per round
}

// runWorkload runs o.runs rounds of every cell on w. Rounds, not blocks:
// each round runs every cell once, back to back (starting one cell later
// each round), and ratios are taken within a round. On a VM whose speed
// drifts by ±15 % from minute to minute and that other people share, that
// compares like with like.
func (e *loopEnv) runWorkload(ctx context.Context, o loopOptions, w loopWorkload, base string, cells []loopCell) (loopTable, error) {
	t := loopTable{w: w, cells: cells, results: map[string][]loopResult{}, speedup: map[string][]float64{}, cpuTCP: map[string][]float64{}}
	src := filepath.Join(base, "src-"+w.name)
	if w.tree > 0 {
		var err error
		if w.files, w.total, err = makeTree(ctx, src, w, o.treeD); err != nil {
			return t, err
		}
		t.w = w
	} else if err := loopMakeFiles(src, w); err != nil {
		return t, err
	}
	defer os.RemoveAll(src)
	warm := loopWarm
	if w.tree > 0 {
		warm = warmTree
	}
	for round := range o.runs {
		got := map[string]loopResult{}
		for i := range cells {
			c := cells[(i+round)%len(cells)]
			if c.skip != nil {
				continue
			}
			// Every cell starts with the source just read: this VM pages
			// out file pages left unread for about a minute (DAMON), so a
			// cell late in a round could otherwise read from the disk.
			if err := warm(src); err != nil {
				return t, err
			}
			r, err := loopRunCell(ctx, c, w, src, base)
			if err != nil {
				return t, fmt.Errorf("%s, workload %s: %w", c.key, w.name, err)
			}
			got[c.key] = r
			t.results[c.key] = append(t.results[c.key], r)
		}
		best := 0.0
		for _, c := range cells {
			if r, ok := got[c.key]; ok && c.baseline && (best == 0 || r.seconds < best) {
				best = r.seconds
			}
		}
		for _, c := range cells {
			if r, ok := got[c.key]; ok && best > 0 && !c.ceiling {
				t.speedup[c.key] = append(t.speedup[c.key], best/r.seconds)
			}
		}
		if q, tc := got["ferry quic"], got["ferry tcp"]; q.cpu() > 0 && tc.cpu() > 0 {
			t.cpuQT = append(t.cpuQT, q.cpu()/tc.cpu())
		}
		for _, c := range cells {
			if r, ok := got[c.key]; ok && !c.ceiling && !c.baseline && c.key != "ferry tcp" && got["ferry tcp"].cpu() > 0 {
				t.cpuTCP[c.key] = append(t.cpuTCP[c.key], r.cpu()/got["ferry tcp"].cpu())
			}
		}
		fmt.Fprintf(e.out, "  %s round %d/%d done\n", w.name, round+1, o.runs)
	}
	return t, nil
}

// loopRunCell runs one cell into a fresh destination folder and checks that
// every byte landed.
func loopRunCell(ctx context.Context, c loopCell, w loopWorkload, src, base string) (loopResult, error) {
	dst, err := os.MkdirTemp(base, "dst-")
	if err != nil {
		return loopResult{}, err
	}
	// Few large files are removed after the run, so their dirty pages do not
	// throttle the next one. Many small files on a disk stay until the whole
	// run ends: deleting thousands of files just before creating thousands
	// more makes ext4 search its inode tables for recently deleted inodes,
	// and would measure that instead.
	if w.files < 1000 || onTmpfs(base) {
		defer os.RemoveAll(dst)
	}
	flushDirty() // start every run with the disk caught up, outside the timed part
	r, err := c.run(ctx, w, src, dst)
	if err != nil {
		return r, err
	}
	if w.tree > 0 && !c.ceiling {
		// A real tree must arrive exact: every file and folder.
		if err := sameTreeShape(src, dst); err != nil {
			return r, err
		}
	}
	if !c.ceiling {
		landed, err := dirBytes(dst)
		if err != nil {
			return r, err
		}
		if landed != w.bytes() {
			return r, fmt.Errorf("%d of %d bytes landed", landed, w.bytes())
		}
	}
	if r.mbps == 0 && r.seconds > 0 {
		r.mbps = float64(w.bytes()) / r.seconds / 1e6
	}
	return r, nil
}

// rows are the detailed table's rows for one workload.
func (t loopTable) rows() []string {
	var rows []string
	gib := float64(t.w.bytes()) / (1 << 30)
	for _, c := range t.cells {
		if c.skip != nil {
			rows = append(rows, fmt.Sprintf("| %s | %s | | | | | | skipped: %v |", t.w.name, c.key, c.skip))
			continue
		}
		rs := t.results[c.key]
		if len(rs) == 0 {
			continue
		}
		r := loopMedianOf(rs)
		speed := ""
		if s := t.speedup[c.key]; len(s) > 0 {
			speed = fmt.Sprintf("%.2f", median(s))
		}
		cpu := ""
		if r.cpu() > 0 {
			cpu = fmt.Sprintf("%.1f + %.1f", medianOf(rs, func(r loopResult) float64 { return r.cpuSend })/gib,
				medianOf(rs, func(r loopResult) float64 { return r.cpuRecv + r.cpuOther })/gib)
		}
		rss := ""
		if r.rssRecvKB > 0 {
			rss = fmt.Sprintf("%.0f / %.0f", float64(r.rssSendKB)/1024, float64(r.rssRecvKB)/1024)
		}
		var notes []string
		switch {
		case c.ceiling && strings.HasPrefix(c.key, "disk"):
			notes = append(notes, "page-cached source to the same disk, no network")
		case c.ceiling:
			notes = append(notes, "same bytes, memory to memory")
		}
		if r.transport != "" && !c.baseline {
			notes = append(notes, "carried by "+r.transport)
		}
		if r.sendCalls > 0 && r.transport == "quic" {
			notes = append(notes, fmt.Sprintf("%.1f datagrams/send call", float64(r.datagrams)/float64(r.sendCalls)))
		}
		if r.recvCalls > 0 && r.transport == "quic" {
			notes = append(notes, fmt.Sprintf("%.1f datagrams/receive call", float64(r.recvDatagrams)/float64(r.recvCalls)))
		}
		if x := t.cpuTCP[c.key]; len(x) > 0 {
			notes = append(notes, fmt.Sprintf("CPU %.2fx ferry tcp's (rounds %s)", median(x), joinRatios(x)))
		}
		if t.w.tree > 0 && r.cpuRecv > 0 && !c.ceiling {
			notes = append(notes, fmt.Sprintf("receiver %.0f µs CPU per file", medianOf(rs, func(r loopResult) float64 { return r.cpuRecv + r.cpuOther })/float64(t.w.files)*1e6))
		}
		if r.cpuOther > 0 {
			notes = append(notes, fmt.Sprintf("relay %.1f CPU-s/GiB counted on the receiving side", medianOf(rs, func(r loopResult) float64 { return r.cpuOther })/gib))
		}
		if len(rs) > 1 {
			notes = append(notes, "runs "+joinSeconds(rs))
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %.2f | %.0f | %s | %s | %s | %s |", t.w.name, c.key, r.seconds, r.mbps,
			speed, cpu, rss, strings.Join(notes, "; ")))
	}
	if len(t.cpuQT) > 0 {
		rows = append(rows, fmt.Sprintf("| %s | ferry quic CPU / ferry tcp CPU | | | | %.2fx | | per round %s |", t.w.name, median(t.cpuQT), joinRatios(t.cpuQT)))
	}
	return rows
}

// loopMarkdown renders a run: a summary in the layout (tools across,
// workloads down), then the detailed rows.
func loopMarkdown(tables []loopTable, cells []loopCell, o loopOptions, started time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s, %d round(s), median wall seconds (launch of the first process to the sender's exit):\n\n",
		started.Format("2006-01-02 15:04 MST"), o.runs)
	var cols []loopCell
	for _, c := range cells {
		if c.baseline {
			cols = append(cols, c)
		}
	}
	for _, c := range cells {
		if !c.baseline && !c.ceiling && c.skip == nil {
			cols = append(cols, c)
		}
	}
	b.WriteString("| workload |")
	for _, c := range cols {
		b.WriteString(" " + c.key + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
	for _, t := range tables {
		fmt.Fprintf(&b, "| %s |", t.w)
		for _, c := range cols {
			if rs := t.results[c.key]; len(rs) > 0 {
				fmt.Fprintf(&b, " %.2f s |", loopMedianOf(rs).seconds)
			} else {
				b.WriteString(" - |")
			}
		}
		b.WriteString("\n")
	}
	for _, t := range tables {
		if t.w.name == "C" {
			continue // per-file costs, not per byte
		}
		gib := float64(t.w.bytes()) / (1 << 30)
		fmt.Fprintf(&b, "| CPU-s per GiB, %s (both sides) |", t.w.name)
		for _, c := range cols {
			if rs := t.results[c.key]; len(rs) > 0 && rs[0].cpu() > 0 {
				fmt.Fprintf(&b, " %.1f |", medianOf(rs, loopResult.cpu)/gib)
			} else {
				b.WriteString(" - |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| workload | what | seconds | MB/s | x best baseline | CPU-s/GiB send + recv | peak RSS send / recv (MiB) | notes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, t := range tables {
		for _, row := range t.rows() {
			b.WriteString(row + "\n")
		}
	}
	return b.String()
}

// loopCeilings are the bare-stream runs of every round. The QUIC
// ceiling is one quic-go stream; Ferry spreads a session over
// quicSessionConns connections on loopback, so the same bytes over that many
// bare connections are measured too.
var loopCeilings = []struct {
	what  string
	proto string
	conns int
}{
	{"bare TLS-over-TCP stream", "tls", 1},
	{"bare quic-go stream", "quic", 1},
	{fmt.Sprintf("bare quic-go, %d connections", loopQUICConns()), "quic", loopQUICConns()},
}

// loopQUICConns is how many QUIC connections Ferry's sessions use on loopback.
func loopQUICConns() int { return ferryenv.Transport().WithDefaults().QUICConns }

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

// medianOf is the median of f over the runs.
func medianOf(rs []loopResult, f func(loopResult) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return median(xs)
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

func joinSeconds(rs []loopResult) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.2f", r.seconds)
	}
	return strings.Join(parts, " ") + " s"
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

// loopWarm reads every source file once, so each cell starts with the
// sources in the page cache, as they are right after being written or
// downloaded.
func loopWarm(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// loopFerry moves src into dst with ferry-cli send/receive as two processes.
func loopFerry(ctx context.Context, bin, work, src, dst string, v ferryVariant, profile string) (loopResult, error) {
	cfg, err := os.MkdirTemp(work, "cfg-")
	if err != nil {
		return loopResult{}, err
	}
	defer os.RemoveAll(cfg)
	env := append(os.Environ(), v.env...)
	args := []string{"receive", "--config", filepath.Join(cfg, "recv"), "--dir", dst, "--listen", "127.0.0.1:0",
		"--accept", "all", "--once", "--json", "--no-discovery"}
	if hasReceiveFlag(bin, "localsend") { // a --compare binary from before LocalSend has no such flag
		args = append(args, "--localsend=false")
	}
	if v.noResume {
		args = append(args, "--no-resume")
	}
	recv := exec.CommandContext(ctx, bin, args...)
	recv.Env = env
	var sendEnv []string
	if profile != "" {
		if err := os.MkdirAll(filepath.Dir(profile), 0o755); err != nil {
			return loopResult{}, err
		}
		stamp := time.Now().Format("150405.000")
		recv.Env = append(slices.Clone(env), "FERRY_CPUPROFILE="+profile+"-"+stamp+"-recv.pprof")
		sendEnv = []string{"FERRY_CPUPROFILE=" + profile + "-" + stamp + "-send.pprof"}
	}
	rout, err := recv.StdoutPipe()
	if err != nil {
		return loopResult{}, err
	}
	recv.Stderr = os.Stderr
	start := time.Now()
	if err := recv.Start(); err != nil {
		return loopResult{}, err
	}
	defer recv.Process.Kill()
	recvPeak := watchPeak(recv.Process.Pid)
	sc := bufio.NewScanner(rout)
	var quicAddr, tcpAddr string
	for sc.Scan() {
		if f, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
			quicAddr, tcpAddr = parseListening(f)
			break
		}
	}
	var recvOut bytes.Buffer
	recvRead := make(chan struct{})
	go func() {
		defer close(recvRead)
		io.Copy(&recvOut, rout)
	}()
	if quicAddr == "" && tcpAddr == "" {
		return loopResult{}, errors.New("receiver did not start")
	}
	addr := quicAddr
	if v.transport == "tcp" || addr == "" {
		addr = tcpAddr
	}
	sendArgs := append([]string{"send", "--config", filepath.Join(cfg, "send"), "--to", addr, "--transport", v.transport, "--json"}, v.sendArgs...)
	send := exec.CommandContext(ctx, bin, append(sendArgs, src)...)
	send.Env = append(slices.Clone(env), sendEnv...)
	outb, sendKB, err := runWatched(send)
	secs := time.Since(start).Seconds()
	if err != nil {
		return loopResult{}, fmt.Errorf("send: %w: %s", err, loopLastLine(outb))
	}
	<-recvRead // the receiver ends after one transfer (--once)
	err = recv.Wait()
	recvKB := recvPeak()
	if err != nil {
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
	var rev struct {
		Result struct {
			Metrics struct {
				Calls     int64 `json:"recv_calls"`
				Datagrams int64 `json:"recv_call_datagrams"`
			} `json:"metrics"`
		} `json:"result"`
	}
	json.Unmarshal([]byte(loopLastLine(recvOut.Bytes())), &rev) // older builds have no such counts
	return loopResult{
		recvCalls: rev.Result.Metrics.Calls, recvDatagrams: rev.Result.Metrics.Datagrams,
		seconds: secs, mbps: float64(r.Bytes) / secs / 1e6, engineSeconds: r.Duration,
		cpuSend: cpuSeconds(send.ProcessState), cpuRecv: cpuSeconds(recv.ProcessState),
		rssSendKB: sendKB, rssRecvKB: recvKB,
		transport: r.Transport, reason: r.Reason, wireBytes: r.WireBytes,
		sendCalls: r.Metrics.SendCalls, datagrams: r.Metrics.Datagrams, congestion: r.Metrics.Congestion,
	}, nil
}

// cpuSeconds is the user + system time of a finished process and of the
// children it waited for.
func cpuSeconds(ps *os.ProcessState) float64 {
	if ps == nil {
		return 0
	}
	return (ps.UserTime() + ps.SystemTime()).Seconds()
}

func loopLastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// loopSVG draws one panel per workload: a bar per transfer tool (Ferry's
// variants and the baselines), as long as its median wall time.
func loopSVG(tables []loopTable, started time.Time) string {
	const (
		W, labelW, barW = 720, 260, 380
		rowH, gap       = 18, 30
	)
	var rows [][]loopCell
	H := 40
	for _, t := range tables {
		var rs []loopCell
		for _, c := range t.cells {
			if !c.ceiling && c.skip == nil && len(t.results[c.key]) > 0 {
				rs = append(rs, c)
			}
		}
		rows = append(rows, rs)
		H += gap + len(rs)*rowH
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14">Loopback, median wall seconds (shorter is better), %s</text>`+"\n", started.Format("2006-01-02"))
	y := 40
	for i, t := range tables {
		y += gap
		fmt.Fprintf(&b, `<text x="10" y="%d" font-weight="bold">%s</text>`+"\n", y-8, t.w)
		longest := 0.0
		for _, c := range rows[i] {
			longest = max(longest, loopMedianOf(t.results[c.key]).seconds)
		}
		for _, c := range rows[i] {
			s := loopMedianOf(t.results[c.key]).seconds
			color := "#4a7ebb"
			if c.baseline {
				color = "#999999"
			} else if strings.Contains(c.key, "(") {
				color = "#a8c4e5" // a compared binary
			}
			w := int(float64(barW) * s / longest)
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-6, y+rowH-5, svgEscape(c.key))
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", labelW, y+2, max(w, 1), rowH-4, color)
			fmt.Fprintf(&b, `<text x="%d" y="%d">%.2f s</text>`+"\n", labelW+w+4, y+rowH-5, s)
			y += rowH
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func svgEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// receiveFlags caches, per ferry-cli binary, the usage text of its receive
// command.
var receiveFlags sync.Map

// hasReceiveFlag tells whether bin's receive command has the flag name
// (older binaries compared with --compare lack newer flags).
func hasReceiveFlag(bin, name string) bool {
	usage, ok := receiveFlags.Load(bin)
	if !ok {
		out, _ := exec.Command(bin, "receive", "-h").CombinedOutput()
		usage, _ = receiveFlags.LoadOrStore(bin, string(out))
	}
	return strings.Contains(usage.(string), "-"+name+" ") || strings.Contains(usage.(string), "-"+name+"\n")
}
