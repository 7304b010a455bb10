package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/internal/netlab"
	"github.com/ferrydrop/ferry/internal/stallmeter"
)

// labTool is one contender. run moves files (in the Sender namespace's view
// of the file system) into dst through the lab and returns what it measured;
// the runner times it, checks the bytes that landed and adds lab counters.
type labTool struct {
	name string
	only string // run only for this workload ("" = all)
	run  func(ctx context.Context, e *benchEnv, files []string, dst string) (runResult, error)
}

// labTools lists the contenders in report order. Ferry's own entries drive
// the ferry-cli binary.
var labTools = []labTool{
	{name: "iperf3", only: "A", run: runIperf3(1)},
	// Eight flows: what the lab's forwarder itself carries at a rate where
	// it, not the wire, may be the limit (it forwards in user space), and
	// what spread flows can reach under random loss.
	{name: "iperf3-p8", only: "A", run: runIperf3(8)},
	// Sixteen flows: what as many loss-limited flows as a spread Ferry
	// session uses carry on this lab (issue 30).
	{name: "iperf3-p16", only: "A", run: runIperf3(16)},
	// More flows than a session may grow to: whether the lab's ceiling
	// under random loss is the flows' or the forwarder's.
	{name: "iperf3-p32", only: "A", run: runIperf3(32)},
	{name: "iperf3-p64", only: "A", run: runIperf3(64)},
	{name: "tls-cubic", run: tlsTool("cubic")},
	{name: "tls-bbr", run: tlsTool("bbr")},
	{name: "scp", run: runSCP},
	{name: "rsync", run: runRsync},
	{name: "ferry-tcp", run: ferryTool("tcp")},
	{name: "ferry-quic", run: ferryTool("quic")},
	{name: "ferry-auto", run: ferryTool("auto")},
}

func toolNames() []string {
	var n []string
	for _, t := range labTools {
		n = append(n, t.name)
	}
	return n
}

func toolByName(name string) (labTool, bool) {
	for _, t := range labTools {
		if t.name == name {
			return t, true
		}
	}
	return labTool{}, false
}

type runStatus string

const (
	statusOK      runStatus = "ok"
	statusSkipped runStatus = "skipped"
	statusFailed  runStatus = "failed"
	// statusTimeout: the transfer did not finish within --timeout. It counts
	// as taking the whole timeout, so medians and speed-ups over it are
	// bounds (shown as "> N" and ">= Nx"), not failures.
	statusTimeout runStatus = "timed out"
)

// skipError marks a contender that cannot run here (missing binary, ...).
type skipError struct{ reason string }

func (e skipError) Error() string { return e.reason }

// runResult is one transfer.
type runResult struct {
	run       int
	status    runStatus
	note      string
	bytes     int64   // payload bytes that landed
	seconds   float64 // wall clock of the sending command
	goodput   float64 // Mbit/s; the tool's own figure for iperf3
	firstFile float64 // seconds until the first file was complete, if known
	transport string
	wireLost  uint64 // packets the lab dropped by random/bursty loss, data direction
	queueDrop uint64 // tail drops at the bottleneck, both directions
	retrans   uint64 // TCP segments retransmitted by the Sender namespace
	extra     json.RawMessage
	reasons   []string // Ferry: why each transport carried the data, in order
	flows     int      // Ferry: the flows its session grew to on random loss (0: it did not grow)
	flowSteps []string // Ferry: each growth, "flows@seconds since the start"
	resent    int64    // Ferry: payload bytes sent more than once (switch, endgame, re-requests)
	// From Ferry's own metrics, when present.
	congEvents int64
	dgPerCall  float64
	srttMs     float64
	// Receiver-side stream stalls (Ferry and the TLS baselines).
	stalls *stallmeter.Stats
}

func (r runResult) summary() string {
	if r.status != statusOK {
		return fmt.Sprintf("%s: %s", r.status, r.note)
	}
	return fmt.Sprintf("%7.2fs %7.1f Mbit/s lost %d qdrop %d retrans %d", r.seconds, r.goodput, r.wireLost, r.queueDrop, r.retrans)
}

// benchEnv is what tools share: the lab, the temp dir, long-running servers.
type benchEnv struct {
	lab     *netlab.Lab
	tmp     string
	self    string // this ferry-bench binary, for lab-tls
	rcvAddr netip.Addr
	timeout time.Duration
	out     io.Writer
	rtt     time.Duration // the current profile's RTT (stall threshold of the TLS baselines)
	noBBR   bool          // BBR unavailable: Ferry cannot choose its congestion control, tls-bbr is skipped

	ssh      *sshServer
	sshErr   error
	ferry    string // ferry-cli binary
	ferryErr error
	files    map[workload][]string
}

func (e *benchEnv) prepareTools(ctx context.Context, o labOptions) error {
	want := map[string]bool{}
	for _, t := range o.tools {
		want[t] = true
	}
	if want["scp"] || want["rsync"] {
		e.ssh, e.sshErr = startSSHD(ctx, e)
		if e.sshErr != nil {
			fmt.Fprintf(e.out, "ssh baselines skipped: %v\n", e.sshErr)
		}
	}
	if want["ferry-tcp"] || want["ferry-quic"] || want["ferry-auto"] {
		e.ferry, e.ferryErr = ferryBinary(ctx, o.ferryCLI, e.tmp)
		if e.ferryErr != nil {
			fmt.Fprintf(e.out, "ferry cells skipped: %v\n", e.ferryErr)
		}
	}
	return nil
}

func (e *benchEnv) closeTools() {
	if e.ssh != nil {
		e.ssh.close()
	}
}

// workloadFiles creates (once per shape) the workload's files with
// incompressible content.
func (e *benchEnv) workloadFiles(w workload) ([]string, error) {
	if files, ok := e.files[w]; ok {
		return files, nil
	}
	// Keep one set on disk at a time: a full run's sets add up to GiBs.
	for _, old := range e.files {
		if err := os.RemoveAll(filepath.Dir(old[0])); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(e.tmp, fmt.Sprintf("src-%s-%dx%d", w.name, w.files, w.size))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rng := rand.NewChaCha8([32]byte{byte(w.files), byte(w.size >> 10)})
	buf := make([]byte, 1<<20)
	var files []string
	for i := range w.files {
		p := filepath.Join(dir, fmt.Sprintf("file-%05d.bin", i))
		f, err := os.Create(p)
		if err != nil {
			return nil, err
		}
		for left := w.size; left > 0; {
			n := min(left, int64(len(buf)))
			rng.Read(buf[:n])
			if _, err := f.Write(buf[:n]); err != nil {
				f.Close()
				return nil, err
			}
			left -= n
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		files = append(files, p)
	}
	e.files = map[workload][]string{w: files}
	return files, nil
}

// runOne runs one transfer with a fresh destination and measures it.
func (e *benchEnv) runOne(ctx context.Context, t labTool, files []string, w workload) runResult {
	dst, err := os.MkdirTemp(e.tmp, "dst-")
	if err != nil {
		return runResult{status: statusFailed, note: err.Error()}
	}
	defer os.RemoveAll(dst)
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	before := e.lab.Stats()[0]
	retransBefore, _ := e.tcpRetrans()
	start := time.Now()
	r, err := t.run(ctx, e, files, dst)
	elapsed := time.Since(start).Seconds()
	if err != nil {
		var skip skipError
		if errors.As(err, &skip) {
			return runResult{status: statusSkipped, note: skip.reason}
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return runResult{status: statusTimeout, seconds: e.timeout.Seconds(),
				note: fmt.Sprintf("not done after %v", e.timeout)}
		}
		return runResult{status: statusFailed, note: oneLine(err.Error())}
	}
	after := e.lab.Stats()[0]
	retransAfter, _ := e.tcpRetrans()
	r.status = statusOK
	if r.seconds == 0 {
		r.seconds = elapsed
	}
	if !strings.HasPrefix(t.name, "iperf3") {
		landed, err := dirBytes(dst)
		if err != nil {
			return runResult{status: statusFailed, note: err.Error()}
		}
		if landed != w.bytes() {
			return runResult{status: statusFailed, note: fmt.Sprintf("%d of %d bytes landed", landed, w.bytes())}
		}
		r.bytes = landed
		r.goodput = float64(landed) * 8 / r.seconds / 1e6
	}
	s, b := after.SenderToReceiver, before.SenderToReceiver
	r.wireLost = s.Lost - b.Lost + s.BurstLost - b.BurstLost
	r.queueDrop = s.QueueDropped - b.QueueDropped + after.ReceiverToSender.QueueDropped - before.ReceiverToSender.QueueDropped
	r.retrans = retransAfter - retransBefore
	return r
}

func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

// tcpRetrans reads RetransSegs of the Sender namespace.
func (e *benchEnv) tcpRetrans() (uint64, error) {
	var data []byte
	err := e.lab.Do(netlab.Sender, func() error {
		var err error
		data, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	})
	if err != nil {
		return 0, err
	}
	lines := strings.Split(string(data), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if strings.HasPrefix(lines[i], "Tcp:") && strings.HasPrefix(lines[i+1], "Tcp:") {
			names, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
			for j, n := range names {
				if n == "RetransSegs" && j < len(vals) {
					return strconv.ParseUint(vals[j], 10, 64)
				}
			}
		}
	}
	return 0, errors.New("RetransSegs not found")
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// server is a process in the lab that announced readiness on a line.
type server struct {
	cmd     *exec.Cmd
	line    string
	done    chan struct{} // closed when the process exited
	scanned chan struct{} // closed when its output was read to the end
	rest    []string      // output lines after the marker; read after scanned
	stderr  *bytes.Buffer
	werr    error
}

// startServer starts cmd and waits until a line of its stdout (or stderr,
// if fromStderr) contains marker, or the process exits, or ctx ends.
func startServer(ctx context.Context, cmd *exec.Cmd, marker string, fromStderr bool) (*server, error) {
	s := &server{cmd: cmd, done: make(chan struct{}), scanned: make(chan struct{}), stderr: &bytes.Buffer{}}
	pr, pw := io.Pipe()
	if fromStderr {
		cmd.Stderr = io.MultiWriter(pw, s.stderr)
		if cmd.Stdout == nil {
			// Some log to stdout instead (croc 11's --debug does).
			cmd.Stdout = cmd.Stderr
		}
	} else {
		cmd.Stdout = pw
		cmd.Stderr = s.stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.werr = cmd.Wait()
		pw.Close()
		close(s.done)
	}()
	found := make(chan string, 1)
	go func() {
		defer close(s.scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			switch {
			case !sent && strings.Contains(sc.Text(), marker):
				found <- sc.Text()
				sent = true
			case sent:
				s.rest = append(s.rest, sc.Text())
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case s.line = <-found:
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("%s exited before it was ready: %v: %s", cmd.Args[0], s.werr, oneLine(s.stderr.String()))
	case <-ctx.Done():
		s.kill()
		return nil, ctx.Err()
	}
}

// wait waits for the server to exit on its own (one-shot servers).
func (s *server) wait(ctx context.Context) error {
	select {
	case <-s.done:
		<-s.scanned
		if s.werr != nil {
			return fmt.Errorf("%v: %s", s.werr, oneLine(s.stderr.String()))
		}
		return nil
	case <-ctx.Done():
		s.kill()
		return ctx.Err()
	}
}

func (s *server) kill() {
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
	}
	<-s.done
}

// randomPort picks a port for servers that cannot listen on port 0. The
// Receiver namespace is private to this run, so nothing else binds there.
func randomPort() int { return 20000 + rand.IntN(30000) }

func runCmd(cmd *exec.Cmd) ([]byte, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// When the run times out, what the killed tool started (rsync's ssh)
	// may still hold the output pipes: give up on them after a while
	// instead of waiting with it (a lab sweep waited 7 minutes on one).
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 5 * time.Second
	}
	out, err := cmd.Output()
	if err != nil {
		name := cmd.Args[0]
		if len(cmd.Args) > 4 && cmd.Args[1] == "netns" {
			name = cmd.Args[4] // ip netns exec NS NAME ...
		}
		return out, fmt.Errorf("%s: %v: %s", filepath.Base(name), err, oneLine(stderr.String()))
	}
	return out, nil
}

// --- iperf3: the raw link -------------------------------------------------

// runIperf3 sends the workload's bytes over flows parallel iperf3 flows
// (-P), memory to memory.
func runIperf3(flows int) func(ctx context.Context, e *benchEnv, files []string, dst string) (runResult, error) {
	return func(ctx context.Context, e *benchEnv, files []string, dst string) (runResult, error) {
		return iperf3Run(ctx, e, files, flows)
	}
}

func iperf3Run(ctx context.Context, e *benchEnv, files []string, flows int) (runResult, error) {
	if _, err := exec.LookPath("iperf3"); err != nil {
		return runResult{}, skipError{"iperf3 not installed"}
	}
	var total int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return runResult{}, err
		}
		total += st.Size()
	}
	port := strconv.Itoa(randomPort())
	srv, err := startServer(ctx, e.lab.Command(ctx, netlab.Receiver, "iperf3", "-s", "-1", "--forceflush", "-B", e.rcvAddr.String(), "-p", port), "Server listening", false)
	if err != nil {
		return runResult{}, err
	}
	defer srv.kill()
	start := time.Now()
	out, err := runCmd(e.lab.Command(ctx, netlab.Sender, "iperf3", "-c", e.rcvAddr.String(), "-p", port, "-n", strconv.FormatInt(total, 10), "-P", strconv.Itoa(flows), "-J"))
	elapsed := time.Since(start).Seconds()
	if err != nil {
		return runResult{}, err
	}
	var rep struct {
		End struct {
			SumReceived struct {
				Bytes         int64   `json:"bytes"`
				Seconds       float64 `json:"seconds"`
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return runResult{}, fmt.Errorf("iperf3 output: %w", err)
	}
	return runResult{
		bytes:   rep.End.SumReceived.Bytes,
		seconds: elapsed,
		goodput: rep.End.SumReceived.BitsPerSecond / 1e6,
	}, nil
}

// --- TLS over TCP -----------------------------------------------------------

func tlsTool(cc string) func(ctx context.Context, e *benchEnv, files []string, dst string) (runResult, error) {
	return func(ctx context.Context, e *benchEnv, files []string, dst string) (runResult, error) {
		if cc == "bbr" && e.noBBR {
			return runResult{}, skipError{"BBR unavailable (--bbr=false)"}
		}
		listen := netip.AddrPortFrom(e.rcvAddr, 0).String()
		srv, err := startServer(ctx, e.lab.Command(ctx, netlab.Receiver, e.self, "lab-tls", "recv", "--listen", listen, "--dir", dst,
			"--rtt", e.rtt.String()), "listening ", false)
		if err != nil {
			return runResult{}, err
		}
		defer srv.kill()
		addr := strings.TrimSpace(strings.TrimPrefix(srv.line, "listening "))
		if _, err := netip.ParseAddrPort(addr); err != nil {
			return runResult{}, fmt.Errorf("lab-tls announced %q", srv.line)
		}
		args := append([]string{"lab-tls", "send", "--cc", cc, "--to", addr}, files...)
		out, err := runCmd(e.lab.Command(ctx, netlab.Sender, e.self, args...))
		if err != nil {
			return runResult{}, err
		}
		var res tlsResult
		if err := json.Unmarshal(out, &res); err != nil {
			return runResult{}, fmt.Errorf("lab-tls send output %q: %w", out, err)
		}
		if err := srv.wait(ctx); err != nil {
			return runResult{}, fmt.Errorf("lab-tls recv: %w", err)
		}
		r := runResult{seconds: res.Seconds, transport: "tcp/" + cc}
		for _, l := range srv.rest {
			var rr tlsResult
			if json.Unmarshal([]byte(l), &rr) == nil && rr.Files > 0 {
				// Receiver clock from accept; the handshake adds about one RTT.
				r.firstFile = rr.FirstFileSeconds
				r.stalls = rr.Stalls
			}
		}
		return r, nil
	}
}

// --- scp and rsync over ssh -------------------------------------------------

type sshServer struct {
	srv  *server
	port string
	kit  *sshKit
}

// startSSHD runs a private sshd in the Receiver namespace with a throwaway
// host key and a throwaway client key, both in the bench's temp dir.
func startSSHD(ctx context.Context, e *benchEnv) (*sshServer, error) {
	kit, err := newSSHKit(ctx, filepath.Join(e.tmp, "ssh"))
	if err != nil {
		return nil, err
	}
	port := strconv.Itoa(randomPort())
	srv, err := startServer(ctx, e.lab.Command(context.WithoutCancel(ctx), netlab.Receiver, kit.sshd, kit.sshdArgs(e.rcvAddr, port, false)...), "Server listening", true)
	if err != nil {
		return nil, err
	}
	return &sshServer{srv: srv, port: port, kit: kit}, nil
}

func (s *sshServer) close() { s.srv.kill() }

func runSCP(ctx context.Context, e *benchEnv, files []string, dst string) (runResult, error) {
	if e.sshErr != nil {
		return runResult{}, skipError{e.sshErr.Error()}
	}
	if _, err := runCmd(e.lab.Command(ctx, netlab.Sender, "scp", e.ssh.kit.scpArgs(e.ssh.port, files, e.rcvAddr, dst)...)); err != nil {
		return runResult{}, err
	}
	return runResult{transport: "ssh"}, nil
}

func runRsync(ctx context.Context, e *benchEnv, files []string, dst string) (runResult, error) {
	if e.sshErr != nil {
		return runResult{}, skipError{e.sshErr.Error()}
	}
	if _, err := runCmd(e.lab.Command(ctx, netlab.Sender, "rsync", e.ssh.kit.rsyncArgs(e.ssh.port, filepath.Dir(files[0]), e.rcvAddr, dst)...)); err != nil {
		return runResult{}, err
	}
	return runResult{transport: "ssh"}, nil
}

// --- Ferry -------------------------------------------------------------------

// ferryBinary returns the ferry-cli to drive: the given path, or a fresh
// build of ./cmd/ferry-cli.
func ferryBinary(ctx context.Context, given, tmp string) (string, error) {
	if given != "" {
		if _, err := os.Stat(given); err != nil {
			return "", skipError{"ferry-cli: " + err.Error()}
		}
		return given, nil
	}
	bin := filepath.Join(tmp, "ferry-cli")
	if _, err := runCmd(exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ferry-cli")); err != nil {
		return "", skipError{"ferry-cli did not build: " + err.Error()}
	}
	return bin, nil
}

// ferryCommand runs ferry-cli in namespace ns; without BBR, under no-cc.
func (e *benchEnv) ferryCommand(ctx context.Context, ns string, args ...string) *exec.Cmd {
	if e.noBBR {
		return e.lab.Command(ctx, ns, e.self, append([]string{"no-cc", e.ferry}, args...)...)
	}
	return e.lab.Command(ctx, ns, e.ferry, args...)
}

// ferryEvent is the part of ferry-cli's JSON event lines the bench reads.
type ferryEvent struct {
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	File *struct {
		Verified bool `json:"verified"`
	} `json:"file"`
	Transport *struct {
		Name   string `json:"name"`
		Reason string `json:"reason"`
		Flows  int    `json:"flows"`
	} `json:"transport"`
	Result *struct {
		State           string            `json:"state"`
		Bytes           int64             `json:"bytes"`
		WireBytes       int64             `json:"wire_bytes"`
		Resent          int64             `json:"resent_bytes"`
		DurationSeconds float64           `json:"duration_seconds"`
		Transport       string            `json:"transport"`
		Metrics         json.RawMessage   `json:"metrics"`
		Error           string            `json:"error"`
		Stalls          *stallmeter.Stats `json:"stalls"`
	} `json:"result"`
}

func ferryTool(transport string) func(ctx context.Context, e *benchEnv, files []string, dst string) (runResult, error) {
	return func(ctx context.Context, e *benchEnv, files []string, dst string) (runResult, error) {
		if e.ferryErr != nil {
			return runResult{}, skipError{e.ferryErr.Error()}
		}
		cfgR, err := os.MkdirTemp(e.tmp, "ferry-rcv-")
		if err != nil {
			return runResult{}, err
		}
		defer os.RemoveAll(cfgR)
		cfgS, err := os.MkdirTemp(e.tmp, "ferry-snd-")
		if err != nil {
			return runResult{}, err
		}
		defer os.RemoveAll(cfgS)
		listen := netip.AddrPortFrom(e.rcvAddr, 0).String()
		srv, err := startServer(ctx, e.ferryCommand(ctx, netlab.Receiver, "receive", "--config", cfgR, "--dir", dst,
			"--listen", listen, "--accept", "all", "--once", "--json", "--no-discovery", "--localsend=false"), "listening ", false)
		if err != nil {
			return runResult{}, skipError{"ferry-cli receive: " + oneLine(err.Error())}
		}
		defer srv.kill()
		quicAddr, tcpAddr := parseListening(srv.line)
		to := quicAddr
		if transport == "tcp" || to == "" {
			to = tcpAddr
		}
		if to == "" {
			return runResult{}, fmt.Errorf("ferry-cli receive announced no usable %s address", transport)
		}
		args := append([]string{"send", "--config", cfgS, "--to", to, "--transport", transport, "--json"}, files...)
		start := time.Now()
		out, err := runCmd(e.ferryCommand(ctx, netlab.Sender, args...))
		// The sending command's wall clock, as for the other tools: it ends
		// once the receiver verified every file. The receiver's own exit
		// comes later, by up to its linger when the sender's QUIC
		// CONNECTION_CLOSE is lost (nothing resends it).
		sent := time.Since(start).Seconds()
		if err != nil {
			return runResult{}, err
		}
		var last *ferryEvent
		var firstFile float64
		var carriers, reasons []string // transports in the order they carried data (auto may switch), and why
		var steps []string             // the session's growth on random loss: "flows@seconds"
		flows := 0
		for _, line := range bytes.Split(out, []byte("\n")) {
			var ev ferryEvent
			if json.Unmarshal(line, &ev) != nil {
				continue
			}
			switch {
			case ev.Kind == "result":
				last = &ev
			case ev.Kind == "transport" && ev.Transport != nil && ev.Transport.Flows > 0:
				// The session spread over more flows on random loss.
				flows = ev.Transport.Flows
				steps = append(steps, fmt.Sprintf("%d@%.2fs", flows, ev.Time.Sub(start).Seconds()))
				reasons = append(reasons, ev.Transport.Reason)
			case ev.Kind == "transport" && ev.Transport != nil:
				carriers = append(carriers, ev.Transport.Name)
				reasons = append(reasons, ev.Transport.Reason)
			case ev.Kind == "file" && ev.File != nil && ev.File.Verified && firstFile == 0 && !ev.Time.IsZero():
				firstFile = ev.Time.Sub(start).Seconds()
			}
		}
		if last == nil || last.Result == nil {
			return runResult{}, errors.New("ferry-cli send printed no result event")
		}
		if last.Result.State != "done" {
			return runResult{}, fmt.Errorf("ferry-cli send: state %s: %s", last.Result.State, last.Result.Error)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := srv.wait(wctx); err != nil {
			return runResult{}, fmt.Errorf("ferry-cli receive --once: %w", err)
		}
		var stalls *stallmeter.Stats
		for _, l := range srv.rest {
			var ev ferryEvent
			if json.Unmarshal([]byte(l), &ev) == nil && ev.Kind == "result" && ev.Result != nil {
				stalls = ev.Result.Stalls
			}
		}
		// The whole metrics blob goes to the JSONL output; a few fields
		// become columns.
		carried := last.Result.Transport
		if len(carriers) > 1 {
			carried = strings.Join(carriers, "->")
		}
		r := runResult{
			seconds:   sent,
			transport: carried,
			firstFile: firstFile,
			extra:     last.Result.Metrics,
			reasons:   reasons,
			stalls:    stalls,
			flows:     flows,
			flowSteps: steps,
			resent:    last.Result.Resent,
		}
		var m ferryMetrics
		if len(last.Result.Metrics) > 0 && json.Unmarshal(last.Result.Metrics, &m) == nil {
			r.congEvents, r.srttMs = m.CongestionEvents, m.SRTTms
			if m.SendCalls > 0 {
				r.dgPerCall = float64(m.DatagramsSent) / float64(m.SendCalls)
			}
		}
		return r, nil
	}
}

// ferryMetrics is the part of the engine's metrics JSON the report shows.
type ferryMetrics struct {
	SRTTms           float64 `json:"srtt_ms"`
	CongestionEvents int64   `json:"congestion_events"`
	DatagramsSent    int64   `json:"datagrams_sent"`
	SendCalls        int64   `json:"send_calls"`
}

// parseListening reads "listening quic=HOST:PORT tcp=HOST:PORT".
func parseListening(line string) (quicAddr, tcpAddr string) {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "quic="); ok {
			if _, err := net.ResolveUDPAddr("udp", v); err == nil {
				quicAddr = v
			}
		}
		if v, ok := strings.CutPrefix(f, "tcp="); ok {
			if _, err := net.ResolveTCPAddr("tcp", v); err == nil {
				tcpAddr = v
			}
		}
	}
	return quicAddr, tcpAddr
}
