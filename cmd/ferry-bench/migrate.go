package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/internal/netlab"
)

// ferry-bench migrate moves the network under a running transfer in the lab
// and measures what the transfer felt: the longest gap in the receiver's
// progress (the stall), the bytes sent again, the path events the sender
// reported, and, for a receiver that restarts elsewhere, the time until
// the transfer runs again. Each case runs in a lab of its own with two
// paths, "wifi" (100 Mbit/s, 2 ms each way) and "ethernet" (200 Mbit/s,
// 1 ms); the receiver answers at 10.77.0.2, an address of its own that
// either path reaches, and the sender's routes to it say which path the
// system prefers, the way a laptop's routes do (Ethernet's metric below
// Wi-Fi's). Results: docs/benchmarks/migration.md.

func init() {
	register(command{name: "migrate", summary: "connection migration in the lab: stalls, bytes re-sent, time to find a moved receiver", run: runMigrate})
}

// receiverAddr is the receiver's address that both paths reach.
const receiverAddr = "10.77.0.2"

// migCase is one way the network moves under a transfer.
type migCase struct {
	name, what string
	transport  string
	// ethernetRoute is the metric of the sender's route over ethernet at
	// the start (0: no such route yet).
	ethernetRoute int
	// act moves the network once the transfer is under way.
	act func(ctx context.Context, m *migRun) error
	// sameSession: the transfer must go on without reconnecting.
	sameSession bool
	// restart: the receiver is killed and started again on another port;
	// the sender addresses it by device ID.
	restart bool
}

var migCases = []migCase{
	{name: "addr-removed", what: "the sender's Wi-Fi address is removed", transport: "quic", ethernetRoute: 200, sameSession: true,
		act: func(ctx context.Context, m *migRun) error {
			return m.ip(ctx, netlab.Sender, "addr", "del", m.wifi, "peer", m.wifiPeer, "dev", m.wifiDev)
		}},
	{name: "link-down", what: "the sender's Wi-Fi link goes down", transport: "quic", ethernetRoute: 200, sameSession: true,
		act: func(ctx context.Context, m *migRun) error {
			return m.ip(ctx, netlab.Sender, "link", "set", m.wifiDev, "down")
		}},
	{name: "silent", what: "Wi-Fi drops everything, address and link up", transport: "quic", ethernetRoute: 200, sameSession: true,
		act: func(ctx context.Context, m *migRun) error { return m.lab.Cut("wifi") }},
	{name: "better-path", what: "Ethernet appears beside Wi-Fi (a route with a lower metric)", transport: "quic", sameSession: true,
		act: func(ctx context.Context, m *migRun) error {
			return m.ip(ctx, netlab.Sender, "route", "add", receiverAddr+"/32", "dev", m.ethDev, "src", m.eth, "metric", "50")
		}},
	{name: "same-link", what: "the sender's Wi-Fi address changes (DHCP), same link", transport: "quic", ethernetRoute: 200, sameSession: true,
		act: func(ctx context.Context, m *migRun) error {
			for _, c := range [][]string{
				{netlab.Receiver, "route", "add", "10.77.1.3/32", "dev", m.wifiDev},
				{netlab.Sender, "addr", "add", "10.77.1.3/32", "dev", m.wifiDev},
				{netlab.Sender, "route", "replace", receiverAddr + "/32", "dev", m.wifiDev, "src", "10.77.1.3", "metric", "100"},
				{netlab.Sender, "addr", "del", m.wifi, "peer", m.wifiPeer, "dev", m.wifiDev},
			} {
				if err := m.ip(ctx, c[0], c[1:]...); err != nil {
					return err
				}
			}
			return nil
		}},
	{name: "tcp-cut", what: "TCP: the sender's Wi-Fi address is removed", transport: "tcp", ethernetRoute: 200,
		act: func(ctx context.Context, m *migRun) error {
			return m.ip(ctx, netlab.Sender, "addr", "del", m.wifi, "peer", m.wifiPeer, "dev", m.wifiDev)
		}},
	{name: "receiver-restart", what: "the receiver is killed (-9) and starts again on another port; sent to its device ID", transport: "quic",
		ethernetRoute: 200, restart: true,
		act: func(ctx context.Context, m *migRun) error { return m.restartReceiver(ctx) }},
}

// migRun is one run of one case.
type migRun struct {
	lab                      *netlab.Lab
	ferry, tmp, file         string
	size                     int64
	wifi, wifiPeer, wifiDev  string
	eth, ethDev              string
	cfgR, dst                string
	rcv                      *migProc
	rcvMu                    sync.Mutex
	restartedAt, listeningAt time.Time
	ports                    []string // the receiver's ports, in order
}

// migResult is what one run measured.
type migResult struct {
	Case       string      `json:"case"`
	Err        string      `json:"error,omitempty"`
	StallMs    float64     `json:"stall_ms"`     // longest gap in the receiver's progress around the change
	ResentB    int64       `json:"resent_bytes"` // bytes sent more than once
	Reconnects int         `json:"reconnects"`
	Paths      []pathEvent `json:"paths,omitempty"`
	FindMs     float64     `json:"find_ms,omitempty"` // restart: receiver listening again -> its first progress
	Seconds    float64     `json:"seconds"`
}

type pathEvent struct {
	Moved   string  `json:"moved"`
	From    string  `json:"from"`
	To      string  `json:"to"`
	Reason  string  `json:"reason"`
	ProbeMs float64 `json:"probe_ms"`
	StallMs float64 `json:"stall_ms"`
}

// migEvent is the part of ferry-cli's JSON lines the bench reads.
type migEvent struct {
	Time     time.Time  `json:"time"`
	Kind     string     `json:"kind"`
	State    string     `json:"state"`
	Path     *pathEvent `json:"path"`
	Progress *struct {
		Bytes int64 `json:"bytes"`
	} `json:"progress"`
	Result *struct {
		State  string `json:"state"`
		Bytes  int64  `json:"bytes"`
		Resent int64  `json:"resent_bytes"`
		Error  string `json:"error"`
	} `json:"result"`
}

func runMigrate(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	runs := fs.Int("runs", 20, "runs per case")
	sizeMiB := fs.Int("size", 256, "file size in MiB")
	only := fs.String("cases", "", "comma-separated cases (default all: "+strings.Join(migCaseNames(), ",")+")")
	ferry := fs.String("ferry", "", "ferry-cli binary (default: build ./cmd/ferry-cli)")
	jsonOut := fs.String("json", "", "also write every run as JSON lines to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	results, err := migrate(ctx, *runs, int64(*sizeMiB)<<20, *only, *ferry, func(r migResult) {
		fmt.Fprintf(os.Stderr, "%s: stall %.0f ms, re-sent %d B, reconnects %d, find %.0f ms %s\n", r.Case, r.StallMs, r.ResentB, r.Reconnects, r.FindMs, r.Err)
	})
	if err != nil {
		return err
	}
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(f)
		for _, r := range results {
			enc.Encode(r)
		}
		f.Close()
	}
	fmt.Fprint(out, migrateTable(results, *runs, int64(*sizeMiB)<<20))
	return nil
}

func migCaseNames() []string {
	var n []string
	for _, c := range migCases {
		n = append(n, c.name)
	}
	return n
}

// migrate runs each chosen case runs times.
func migrate(ctx context.Context, runs int, size int64, only, ferry string, each func(migResult)) ([]migResult, error) {
	if err := netlab.Available(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "ferry-migrate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin, err := ferryBinary(ctx, ferry, tmp)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(tmp, "payload.bin")
	if err := writeRandom(file, size); err != nil {
		return nil, err
	}
	var results []migResult
	for _, c := range migCases {
		if only != "" && !slices.Contains(strings.Split(only, ","), c.name) {
			continue
		}
		for range runs {
			r := runMigCase(ctx, c, bin, tmp, file, size)
			if ctx.Err() != nil {
				return results, ctx.Err()
			}
			if each != nil {
				each(r)
			}
			results = append(results, r)
		}
	}
	return results, nil
}

func writeRandom(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var x uint64 = 0x9e3779b97f4a7c15
	for left := size; left > 0; left -= int64(len(buf)) {
		for i := 0; i < len(buf); i += 8 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			for j := range 8 {
				buf[i+j] = byte(x >> (8 * j))
			}
		}
		if _, err := f.Write(buf[:min(left, int64(len(buf)))]); err != nil {
			return err
		}
	}
	return nil
}

// runMigCase runs one case once, in a lab of its own.
func runMigCase(ctx context.Context, c migCase, bin, tmp, file string, size int64) (res migResult) {
	res.Case = c.name
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	lab, err := netlab.New(ctx, netlab.Config{Paths: []netlab.PathConfig{{Name: "wifi"}, {Name: "ethernet"}}})
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer lab.Close()
	m := &migRun{lab: lab, ferry: bin, tmp: tmp, file: file, size: size,
		wifi: lab.MustAddr(netlab.Sender, "wifi").String(), wifiPeer: lab.MustAddr(netlab.Receiver, "wifi").String() + "/32",
		eth: lab.MustAddr(netlab.Sender, "ethernet").String()}
	m.wifiDev, m.ethDev = devName(0, "wifi"), devName(1, "ethernet")
	if err := m.setup(ctx, c); err != nil {
		res.Err = "setup: " + err.Error()
		return res
	}
	start := time.Now()
	err = m.transfer(ctx, c, &res)
	res.Seconds = time.Since(start).Seconds()
	if err != nil {
		res.Err = err.Error()
	}
	return res
}

// devName is the lab's interface name of path i (netlab's tunName).
func devName(i int, name string) string {
	n := fmt.Sprintf("t%d-%s", i, name)
	return n[:min(len(n), 15)]
}

func (m *migRun) ip(ctx context.Context, ns string, args ...string) error {
	_, err := runCmd(m.lab.Command(ctx, ns, "ip", args...))
	return err
}

// setup gives the receiver its own address and the sender its routes.
func (m *migRun) setup(ctx context.Context, c migCase) error {
	if err := m.lab.SetImpairment("wifi", netlab.Both, netlab.Impairment{Delay: 2 * time.Millisecond, Rate: 100e6}); err != nil {
		return err
	}
	if err := m.lab.SetImpairment("ethernet", netlab.Both, netlab.Impairment{Delay: time.Millisecond, Rate: 200e6}); err != nil {
		return err
	}
	steps := [][]string{
		{netlab.Receiver, "addr", "add", receiverAddr + "/32", "dev", "lo"},
		{netlab.Sender, "route", "add", receiverAddr + "/32", "dev", m.wifiDev, "src", m.wifi, "metric", "100"},
	}
	if c.ethernetRoute > 0 {
		steps = append(steps, []string{netlab.Sender, "route", "add", receiverAddr + "/32", "dev", m.ethDev, "src", m.eth, "metric", fmt.Sprint(c.ethernetRoute)})
	}
	for _, s := range steps {
		if err := m.ip(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// migProc is a ferry-cli process whose JSON lines are read as they come.
type migProc struct {
	cmd    *exec.Cmd
	lines  chan migEvent
	first  chan string // its first non-JSON line ("listening ...")
	done   chan struct{}
	stderr strings.Builder
}

func (m *migRun) start(ctx context.Context, ns string, args ...string) (*migProc, error) {
	cmd := m.lab.Command(ctx, ns, m.ferry, args...)
	cmd.Env = append(os.Environ(), "FERRY_PROGRESS_INTERVAL=20ms", "FERRY_LOG=info")
	p := &migProc{cmd: cmd, lines: make(chan migEvent, 1<<16), first: make(chan string, 1), done: make(chan struct{})}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(p.done)
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var ev migEvent
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				select {
				case p.first <- sc.Text():
				default:
				}
				continue
			}
			p.lines <- ev // read as it comes; the buffer absorbs a slow reader
		}
		cmd.Wait()
	}()
	return p, nil
}

// startReceiver starts a receiver on a free port and returns its port.
func (m *migRun) startReceiver(ctx context.Context, discovery, once bool) (string, error) {
	args := []string{"receive", "--config", m.cfgR, "--dir", m.dst, "--listen", "0.0.0.0:0", "--accept", "all", "--json", "--localsend=false"}
	if once {
		// One session: a receiver the sender reconnects to must stay.
		args = append(args, "--once")
	}
	if !discovery {
		args = append(args, "--no-discovery")
	}
	p, err := m.start(ctx, netlab.Receiver, args...)
	if err != nil {
		return "", err
	}
	select {
	case line := <-p.first:
		m.rcvMu.Lock()
		m.rcv, m.listeningAt = p, time.Now()
		m.rcvMu.Unlock()
		q, _ := parseListening(line)
		_, port, err := net.SplitHostPort(q)
		return port, err
	case <-p.done:
		return "", fmt.Errorf("ferry-cli receive exited: %s", oneLine(p.stderr.String()))
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (m *migRun) receiver() *migProc {
	m.rcvMu.Lock()
	defer m.rcvMu.Unlock()
	return m.rcv
}

// restartReceiver kills the receiver (no goodbye) and starts it again on
// another port.
func (m *migRun) restartReceiver(ctx context.Context) error {
	old := m.receiver()
	old.cmd.Process.Kill()
	<-old.done
	m.restartedAt = time.Now()
	port, err := m.startReceiver(ctx, true, false)
	m.ports = append(m.ports, port)
	return err
}

// transfer sends the file, moves the network at a third of it, and
// measures.
func (m *migRun) transfer(ctx context.Context, c migCase, res *migResult) error {
	var err error
	if m.cfgR, err = os.MkdirTemp(m.tmp, "rcv-"); err != nil {
		return err
	}
	if m.dst, err = os.MkdirTemp(m.tmp, "dst-"); err != nil {
		return err
	}
	cfgS, err := os.MkdirTemp(m.tmp, "snd-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(m.cfgR)
	defer os.RemoveAll(m.dst)
	defer os.RemoveAll(cfgS)
	port, err := m.startReceiver(ctx, c.restart, c.sameSession)
	if err != nil {
		return err
	}
	m.ports = append(m.ports, port)
	defer func() {
		if p := m.receiver(); p != nil {
			p.cmd.Process.Kill()
			<-p.done
		}
	}()
	to := net.JoinHostPort(receiverAddr, port)
	if c.restart {
		idOut, err := runCmd(m.lab.Command(ctx, netlab.Receiver, m.ferry, "id", "--config", m.cfgR, "--json"))
		if err != nil {
			return err
		}
		var id struct{ ID string }
		if err := json.Unmarshal(idOut, &id); err != nil {
			return fmt.Errorf("ferry-cli id: %w", err)
		}
		to = id.ID
	}
	snd, err := m.start(ctx, netlab.Sender, "send", "--config", cfgS, "--to", to, "--transport", c.transport, "--json", "--retry-for", "90s", m.file)
	if err != nil {
		return err
	}
	defer func() { snd.cmd.Process.Kill(); <-snd.done }()

	// Progress as the receiver saw it: the gaps are the stalls.
	type mark struct {
		at    time.Time
		bytes int64
	}
	var marks []mark
	var acted time.Time
	var result *migEvent
	var findFrom time.Time
	rcvLines, sndLines := m.receiver().lines, snd.lines
	for result == nil {
		select {
		case ev, ok := <-rcvLines:
			if !ok {
				rcvLines = nil // ended (--once, or killed): the next one, if any, is read after a restart
				continue
			}
			if ev.Kind != "progress" || ev.Progress == nil {
				continue
			}
			if n := len(marks); n == 0 || ev.Progress.Bytes > marks[n-1].bytes {
				marks = append(marks, mark{ev.Time, ev.Progress.Bytes})
			}
			if !findFrom.IsZero() && res.FindMs == 0 {
				res.FindMs = float64(ev.Time.Sub(findFrom)) / float64(time.Millisecond)
			}
			if acted.IsZero() && ev.Progress.Bytes > m.size/3 {
				acted = time.Now()
				if err := c.act(ctx, m); err != nil {
					return fmt.Errorf("moving the network: %w", err)
				}
				if c.restart {
					rcvLines = m.receiver().lines
					findFrom = m.listeningAt
				}
			}
		case ev, ok := <-sndLines:
			if !ok {
				return fmt.Errorf("ferry-cli send ended without a result: %s", oneLine(snd.stderr.String()))
			}
			switch {
			case ev.Kind == "path" && ev.Path != nil:
				res.Paths = append(res.Paths, *ev.Path)
			case ev.Kind == "state" && ev.State == "reconnecting":
				res.Reconnects++
			case ev.Kind == "result":
				result = &ev
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if result.Result == nil || result.Result.State != "done" {
		msg := ""
		if result.Result != nil {
			msg = result.Result.State + ": " + result.Result.Error
		}
		return fmt.Errorf("transfer did not finish (receiver ports %v): %s; sender log: %s", m.ports, msg, lastLines(snd.stderr.String(), 12))
	}
	res.ResentB = result.Result.Bytes + result.Result.Resent - m.size
	if acted.IsZero() {
		return errors.New("the transfer ended before the network moved")
	}
	// The longest gap between two progress marks that spans the change, or
	// starts within 5 s after it.
	for i := 1; i < len(marks); i++ {
		a, b := marks[i-1].at, marks[i].at
		if b.Before(acted) || a.After(acted.Add(5*time.Second)) {
			continue
		}
		res.StallMs = max(res.StallMs, float64(b.Sub(a))/float64(time.Millisecond))
	}
	if c.sameSession && res.Reconnects > 0 {
		return fmt.Errorf("the transfer reconnected %d times instead of moving its connection", res.Reconnects)
	}
	if c.sameSession && len(res.Paths) == 0 {
		return errors.New("no path change was reported")
	}
	return nil
}

// migrateTable summarises the runs per case: median, p90 and max of the
// stall, bytes re-sent, and the time to find a moved receiver.
func migrateTable(results []migResult, runs int, size int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| case | runs ok | stall median | p90 | max | re-sent per event (median, max) | reconnects | path events (first reason) | find median / max |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range migCases {
		var stalls, finds []float64
		var resent []int64
		ok, n, reconnects := 0, 0, 0
		reason := ""
		var errs []string
		for _, r := range results {
			if r.Case != c.name {
				continue
			}
			n++
			if r.Err != "" {
				errs = append(errs, r.Err)
				continue
			}
			ok++
			stalls = append(stalls, r.StallMs)
			resent = append(resent, r.ResentB)
			reconnects += r.Reconnects
			if r.FindMs > 0 {
				finds = append(finds, r.FindMs)
			}
			if reason == "" && len(r.Paths) > 0 {
				reason = r.Paths[0].Reason
			}
		}
		if n == 0 {
			continue
		}
		slices.Sort(stalls)
		slices.Sort(resent)
		slices.Sort(finds)
		find := "—"
		if len(finds) > 0 {
			find = fmt.Sprintf("%.1f s / %.1f s", pct(finds, 50)/1000, finds[len(finds)-1]/1000)
		}
		row := fmt.Sprintf("| %s | %d/%d | %.0f ms | %.0f ms | %.0f ms | %s, %s | %d | %s | %s |\n", c.name, ok, n,
			pct(stalls, 50), pct(stalls, 90), pct(stalls, 100), mib(pctI(resent, 50)), mib(pctI(resent, 100)), reconnects, reason, find)
		b.WriteString(row)
		for _, e := range errs {
			fmt.Fprintf(&b, "|  ↳ failed: %s |||||||||\n", oneLine(e))
		}
	}
	return b.String()
}

// pct is the p-th percentile of sorted v (nearest rank).
func pct(v []float64, p int) float64 {
	if len(v) == 0 {
		return 0
	}
	return v[min(len(v)-1, max(0, (len(v)*p+99)/100-1))]
}

func pctI(v []int64, p int) int64 {
	if len(v) == 0 {
		return 0
	}
	return v[min(len(v)-1, max(0, (len(v)*p+99)/100-1))]
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// lastLines is the end of a log, for an error message.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], " | ")
}
