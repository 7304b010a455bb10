package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func init() {
	register(command{name: "hostile-localsend", summary: "flood a real ferry-cli receive's LocalSend server; report its memory and whether a real LocalSend send gets through", run: runHostileLocalSend})
}

// lsFlood is one attack on the LocalSend server of a fresh receiver.
type lsFlood struct {
	name, what, accept string
	attack             func(ctx context.Context, rx *lsReceiver, st *lsStats)
}

// lsStats counts what the attackers got back.
type lsStats struct {
	mu     sync.Mutex // guards codes
	codes  map[int]int
	errs   atomic.Int64
	opened atomic.Int64
}

func (s *lsStats) code(c int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.codes == nil {
		s.codes = map[int]int{}
	}
	s.codes[c]++
}

func (s *lsStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for _, c := range []int{200, 204, 400, 401, 403, 409, 413, 429, 500} {
		if n := s.codes[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d x %d", n, c))
		}
	}
	if n := s.opened.Load(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d connections opened", n))
	}
	if n := s.errs.Load(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d cut or refused", n))
	}
	return strings.Join(parts, ", ")
}

// lsAttacker is an HTTPS client from one source address (127.0.0.0/8 on
// loopback), that presents no certificate and checks none.
func lsAttacker(src string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DialContext: d.DialContext,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns}}
}

// bigOffer is a prepare-upload body of n files (about 110 bytes each).
func bigOffer(n int) []byte {
	files := map[string]any{}
	for i := range n {
		id := fmt.Sprintf("f%06d", i)
		files[id] = map[string]any{"id": id, "fileName": fmt.Sprintf("flood/dir%03d/file%06d.bin", i%100, i), "size": 1 << 20, "fileType": "application/octet-stream"}
	}
	b, _ := json.Marshal(map[string]any{"info": map[string]any{"alias": "flood", "version": "2.1", "deviceModel": "bench", "deviceType": "desktop",
		"fingerprint": "flood", "port": 53317, "protocol": "https"}, "files": files})
	return b
}

func lsFloods() []lsFlood {
	src := func(i int) string { return fmt.Sprintf("127.0.%d.%d", 100+i/250, 1+i%250) }
	post := func(ctx context.Context, c *http.Client, url string, body io.Reader, size int64, st *lsStats) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				st.errs.Add(1)
				time.Sleep(10 * time.Millisecond)
			}
			return
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		st.code(resp.StatusCode)
	}
	workers := func(ctx context.Context, n int, run func(i int)) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				for ctx.Err() == nil {
					run(i)
				}
			})
		}
		wg.Wait()
	}
	// oversized streams 64 MiB offers (of unknown length) from 16 clients
	// spread over addrs addresses.
	oversized := func(ctx context.Context, rx *lsReceiver, st *lsStats, addrs int) {
		clients := make([]*http.Client, addrs)
		for i := range clients {
			clients[i] = lsAttacker(src(i), 16/addrs)
		}
		chunk := bytes.Repeat([]byte(" "), 1<<20)
		workers(ctx, 16, func(i int) {
			pr, pw := io.Pipe()
			go func() {
				pw.Write([]byte(`{"info":{"alias":"x","fingerprint":"x"},"files":{"a":{"id":"a","fileName":"a","size":1,"fileType":"x","preview":"`))
				for range 64 {
					if _, err := pw.Write(chunk); err != nil {
						return
					}
				}
				pw.Close()
			}()
			post(ctx, clients[i%addrs], rx.url("prepare-upload"), pr, -1, st)
			pr.Close()
		})
	}
	return []lsFlood{
		{"ls-prepare-flood", "64 clients from one address posting 2000-file offers without end (the user declines; muted after two)", "ask",
			func(ctx context.Context, rx *lsReceiver, st *lsStats) {
				body := bigOffer(2000)
				c := lsAttacker(src(0), 64)
				workers(ctx, 64, func(int) { post(ctx, c, rx.url("prepare-upload"), bytes.NewReader(body), int64(len(body)), st) })
			}},
		{"ls-prepare-flood-100-sources", "100 addresses posting 2000-file offers without end (the user declines; each muted after two)", "ask",
			func(ctx context.Context, rx *lsReceiver, st *lsStats) {
				body := bigOffer(2000)
				clients := make([]*http.Client, 100)
				for i := range clients {
					clients[i] = lsAttacker(src(i), 2)
				}
				workers(ctx, 100, func(i int) {
					post(ctx, clients[i], rx.url("prepare-upload"), bytes.NewReader(body), int64(len(body)), st)
				})
			}},
		{"ls-accepted-never-uploaded-100-sources", "100 addresses whose 2000-file offers are accepted (--accept all) and never uploaded", "all",
			func(ctx context.Context, rx *lsReceiver, st *lsStats) {
				body := bigOffer(2000)
				clients := make([]*http.Client, 100)
				for i := range clients {
					clients[i] = lsAttacker(src(i), 2)
				}
				workers(ctx, 100, func(i int) {
					post(ctx, clients[i], rx.url("prepare-upload"), bytes.NewReader(body), int64(len(body)), st)
				})
			}},
		{"ls-oversized-bodies", "16 clients from one address streaming 64 MiB offers (the cap is 32 MiB)", "ask",
			func(ctx context.Context, rx *lsReceiver, st *lsStats) { oversized(ctx, rx, st, 1) }},
		{"ls-oversized-bodies-4-sources", "16 clients from 4 addresses streaming 64 MiB offers (the cap is 32 MiB)", "ask",
			func(ctx context.Context, rx *lsReceiver, st *lsStats) { oversized(ctx, rx, st, 4) }},
		{"ls-idle-https", "1000 TCP connections that send nothing (no TLS hello), from 100 addresses, renewed as they are dropped", "ask",
			func(ctx context.Context, rx *lsReceiver, st *lsStats) {
				workers(ctx, 1000, func(i int) {
					d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src(i % 100))}, Timeout: 5 * time.Second}
					c, err := d.DialContext(ctx, "tcp", rx.addr)
					if err != nil {
						if ctx.Err() == nil {
							st.errs.Add(1)
							time.Sleep(50 * time.Millisecond)
						}
						return
					}
					st.opened.Add(1)
					c.Read(make([]byte, 1)) // until the server drops it
					c.Close()
				})
			}},
	}
}

// lsReceiver is a ferry-cli receive whose LocalSend server is attacked.
type lsReceiver struct {
	*hostileReceiver
	addr, fingerprint string
}

func (rx *lsReceiver) url(route string) string {
	return "https://" + rx.addr + "/api/localsend/v2/" + route
}

var lsPortLine = regexp.MustCompile(`LocalSend devices can send here on port (\d+).*fingerprint ([0-9A-F]{64})`)

func startLSReceiver(ctx context.Context, bin, dir, accept, heapFile string) (*lsReceiver, error) {
	cfg := filepath.Join(dir, "cfg-recv")
	cmd := exec.CommandContext(ctx, bin, "receive", "--config", cfg, "--dir", filepath.Join(dir, "in"),
		"--listen", "127.0.0.1:0", "--accept", accept, "--no-discovery", "--localsend-port", "0", "--json")
	if heapFile != "" {
		cmd.Env = append(os.Environ(), "FERRY_HEAPPROFILE="+heapFile)
	}
	rx := &lsReceiver{hostileReceiver: &hostileReceiver{cmd: cmd, cfg: cfg}}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if rx.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go io.Copy(io.Discard, stdout)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := lsPortLine.FindStringSubmatch(sc.Text()); m != nil {
			rx.addr, rx.fingerprint = "127.0.0.1:"+m[1], m[2]
			break
		}
	}
	if rx.addr == "" {
		rx.stop()
		return nil, errors.New("the receiver did not say where LocalSend listens")
	}
	pr, pw := io.Pipe()
	go func() { io.Copy(pw, stderr); pw.Close() }()
	go rx.answer(pr)
	return rx, nil
}

// lsSend sends the real file over LocalSend with ferry-cli send.
func lsSend(ctx context.Context, bin, cfg string, rx *lsReceiver, file string) (string, bool) {
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "send", "--config", cfg, "--name", "legit", "--protocol", "localsend",
		"--to", rx.addr, "--localsend-fingerprint", rx.fingerprint, "--json", file)
	outb, err := cmd.Output()
	return sendOutcome(outb, err, start)
}

func runHostileLocalSend(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ferry-bench hostile-localsend", flag.ContinueOnError)
	cli := fs.String("cli", "", "ferry-cli binary (default: built from this checkout)")
	which := fs.String("scenarios", "", "comma-separated scenarios to run (default: all)")
	sendMB := fs.Int("send-mb", 50, "size of the real send during each attack, in MB")
	warm := fs.Duration("warm", 3*time.Second, "how long each attack runs before the real send starts")
	settle := fs.Duration("settle", 30*time.Second, "how long the receiver gets to give memory back after an attack")
	mdOut := fs.String("md", "", "also write the markdown table to this `FILE`")
	heapDir := fs.String("heap-profiles", "", "write the receiver's heap profile at its highest RSS during each attack to `DIR`/<scenario>.pprof, with the runtime's figures in .pprof.json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	work, bin, legit, err := hostileSetup(ctx, "ferry-hostile-ls-", *cli, *sendMB)
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	rows := []string{"| scenario | receiver | attack | real LocalSend send | peak RSS (MiB) | RSS after (MiB) | verdict |", "|---|---|---|---|---|---|---|"}
	failed := false
	for _, sc := range lsFloods() {
		if *which != "" && !strings.Contains(","+*which+",", ","+sc.name+",") {
			continue
		}
		fmt.Fprintf(out, "== %s: %s\n", sc.name, sc.what)
		dir, err := os.MkdirTemp(work, sc.name+"-")
		if err != nil {
			return err
		}
		var heapFile string
		if *heapDir != "" {
			if heapFile, err = filepath.Abs(filepath.Join(*heapDir, sc.name+".pprof")); err != nil {
				return err
			}
		}
		rx, err := startLSReceiver(ctx, bin, dir, sc.accept, heapFile)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		var heap string
		profiled := make(chan struct{})
		pctx, stopProfiles := context.WithCancel(ctx)
		go func() {
			defer close(profiled)
			if heapFile != "" && heapProfileSignal != nil {
				heap = rx.profilePeaks(pctx, heapFile)
			}
		}()
		var st lsStats
		actx, stop := context.WithCancel(ctx)
		attacked := make(chan struct{})
		go func() { defer close(attacked); sc.attack(actx, rx, &st) }()
		select {
		case <-time.After(*warm):
		case <-ctx.Done():
		}
		how, ok := lsSend(ctx, bin, filepath.Join(dir, "cfg-send"), rx, legit)
		peak := rx.status("VmHWM")
		stop()
		<-attacked
		stopProfiles()
		<-profiled
		ended := time.Now()
		after := rx.status("VmRSS")
		for after >= hostileAfterLimitMiB<<10 && time.Since(ended) < *settle {
			time.Sleep(250 * time.Millisecond)
			after = rx.status("VmRSS")
		}
		peakMiB, afterMiB := float64(max(peak, rx.status("VmHWM")))/1024, float64(after)/1024
		rx.stop()
		os.RemoveAll(dir)
		verdict := "ok"
		if !ok || peakMiB >= hostilePeakLimitMiB || afterMiB >= hostileAfterLimitMiB {
			verdict, failed = "FAIL", true
		}
		fmt.Fprintf(out, "   attack: %s\n   real send: %s\n   receiver RSS: peak %.0f MiB, %.0f MiB %.0fs after: %s\n",
			st.String(), how, peakMiB, afterMiB, time.Since(ended).Seconds(), verdict)
		if heap != "" {
			fmt.Fprintf(out, "   at the highest RSS sampled: %s\n", heap)
		}
		rows = append(rows, fmt.Sprintf("| %s | --accept %s | %s | %s | %.0f | %.0f | %s |", sc.name, sc.accept, st.String(), how, peakMiB, afterMiB, verdict))
	}
	table := strings.Join(rows, "\n") + "\n"
	fmt.Fprint(out, "\n"+table)
	if *mdOut != "" {
		if err := os.WriteFile(*mdOut, []byte(table), 0o644); err != nil {
			return err
		}
	}
	if failed {
		return fmt.Errorf("a limit was not held: peak RSS under %d MiB, RSS after under %d MiB, and the real send must succeed",
			hostilePeakLimitMiB, hostileAfterLimitMiB)
	}
	return nil
}
