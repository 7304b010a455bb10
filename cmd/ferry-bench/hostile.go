package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrydrop/ferry/engine/hostile"
	"github.com/ferrydrop/ferry/engine/wire"
)

func init() {
	register(command{name: "hostile", summary: "flood and overload a real ferry-cli receive; report its memory and whether a real send gets through", run: runHostile})
}

// The limits issue #14 sets for a receiver under hostile input.
const (
	hostilePeakLimitMiB  = 256 // VmHWM during the attack
	hostileAfterLimitMiB = 64  // VmRSS once the attack ended
)

// hostileScenario is one attack on a fresh receiver.
type hostileScenario struct {
	name   string
	what   string
	accept string // the receiver's --accept
	// attack runs until ctx ends; ready is called once its load is in place.
	attack func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error)
}

// hostileKnownSender names the scenarios whose real sender sends once
// before the attack, so that the receiver knows it (a laptop that sent
// there before, behind the flooder's NAT).
var hostileKnownSender = map[string]bool{"same-address-declines": true}

func hostileScenarios() []hostileScenario {
	all := hostileAttacks()
	byName := map[string]hostileScenario{}
	for _, sc := range all {
		byName[sc.name] = sc
	}
	// The worst: the memory attacks and the costliest flood at once.
	parts := []hostileScenario{byName["stalled-chunks"], byName["big-manifests"], byName["silent-quic-100-sources"], byName["windows-12-sources"]}
	return append(all, hostileScenario{"combined", "stalled-chunks, big-manifests, silent-quic-100-sources and windows-12-sources at once", "all",
		func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
			var wg sync.WaitGroup
			stats := make([]string, len(parts))
			errs := make([]error, len(parts))
			readies := make(chan struct{}, len(parts))
			for i, p := range parts {
				wg.Go(func() {
					stats[i], errs[i] = p.attack(ctx, rx, work, func() { readies <- struct{}{} })
				})
			}
			go func() {
				for range parts {
					select {
					case <-readies:
					case <-ctx.Done():
						return
					}
				}
				ready()
			}()
			wg.Wait()
			return strings.Join(stats, "; "), errors.Join(errs...)
		}})
}

func hostileAttacks() []hostileScenario {
	src := func(i int) string { return fmt.Sprintf("127.0.%d.%d", 1+i/250, 1+i%250) }
	peer := func(work string, i int) hostile.Peer { return hostile.Peer{From: src(i), Dir: work} }
	floodUntil := func(ctx context.Context, ready func(), warm time.Duration, run func(ctx context.Context)) {
		go func() {
			select {
			case <-time.After(warm):
				ready()
			case <-ctx.Done():
			}
		}()
		run(ctx)
	}
	spread := func(n, sources int, run func(i, n int)) {
		var wg sync.WaitGroup
		for i := range sources {
			wg.Go(func() { run(i, n/sources) })
		}
		wg.Wait()
	}
	return []hostileScenario{
		{"idle-tcp", "64 TCP connections that send nothing, from one address, renewed as they are dropped", "all",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				floodUntil(ctx, ready, 2*time.Second, func(ctx context.Context) { peer(work, 0).FloodIdleTCP(ctx, rx.tcp, 64, &st) })
				return st.String(), nil
			}},
		{"idle-tcp-64-sources", "64 TCP connections that send nothing, one from each of 64 addresses", "all",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				floodUntil(ctx, ready, 2*time.Second, func(ctx context.Context) {
					spread(64, 64, func(i, n int) { peer(work, i).FloodIdleTCP(ctx, rx.tcp, n, &st) })
				})
				return st.String(), nil
			}},
		{"silent-quic", "1000 QUIC connections that open no stream, from one address", "all",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				var err error
				floodUntil(ctx, ready, 3*time.Second, func(ctx context.Context) { err = peer(work, 0).FloodSilentQUIC(ctx, rx.quic, 1000, &st) })
				return st.String(), err
			}},
		{"silent-quic-100-sources", "1000 QUIC connections that open no stream, 10 from each of 100 addresses", "all",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				floodUntil(ctx, ready, 3*time.Second, func(ctx context.Context) {
					spread(1000, 100, func(i, n int) { peer(work, i).FloodSilentQUIC(ctx, rx.quic, n, &st) })
				})
				return st.String(), nil
			}},
		{"windows", "40 QUIC connections from one address, each with a join header one byte short and 5 streams filled as far as flow control lets", "all",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				var sent atomic.Int64
				var err error
				floodUntil(ctx, ready, 3*time.Second, func(ctx context.Context) { err = peer(work, 0).FloodWindows(ctx, rx.quic, 40, 5, &st, &sent) })
				return fmt.Sprintf("%s; %.0f MB let through", &st, float64(sent.Load())/1e6), err
			}},
		{"windows-12-sources", "40 QUIC connections from each of 12 addresses, each with a join header one byte short and 5 streams filled as far as flow control lets", "all",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				var sent atomic.Int64
				floodUntil(ctx, ready, 3*time.Second, func(ctx context.Context) {
					spread(480, 12, func(i, n int) { peer(work, 200+i).FloodWindows(ctx, rx.quic, n, 5, &st, &sent) })
				})
				return fmt.Sprintf("%s; %.0f MB let through", &st, float64(sent.Load())/1e6), nil
			}},
		{"grind", "tries at the verification code: 32 workers from 16 addresses (TCP and QUIC), a fresh identity each try, hanging up before the reveal", "ask",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				var tries atomic.Int64
				start := time.Now()
				floodUntil(ctx, ready, 3*time.Second, func(ctx context.Context) {
					spread(32, 16, func(i, n int) {
						peer(work, 300+i).GrindPairing(ctx, []string{"tcp", "quic"}[i%2], map[int]string{0: rx.tcp, 1: rx.quic}[i%2], n, &st, &tries)
					})
				})
				n, mins := tries.Load(), time.Since(start).Minutes()
				return fmt.Sprintf("%d tries in %.1f min (%.0f/min), %d refused; a MITM's chance with them: %.1e",
					n, mins, float64(n)/mins, st.Failed.Load(), 1-math.Pow(1-1e-6, float64(n))), nil
			}},
		{"same-address-idle-tcp", "1000 TCP connections that send nothing, from the real sender's own address", "all",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				floodUntil(ctx, ready, 2*time.Second, func(ctx context.Context) {
					hostile.Peer{From: "127.0.0.1", Dir: work}.FloodIdleTCP(ctx, rx.tcp, 1000, &st)
				})
				return st.String(), nil
			}},
		{"same-address-silent-quic", "1000 QUIC connections that open no stream, from the real sender's own address", "all",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				var err error
				floodUntil(ctx, ready, 3*time.Second, func(ctx context.Context) {
					err = hostile.Peer{From: "127.0.0.1", Dir: work}.FloodSilentQUIC(ctx, rx.quic, 1000, &st)
				})
				return st.String(), err
			}},
		{"same-address-stalled-handshakes", "1000 QUIC handshakes that never finish (a first flight, then silence), from the real sender's own address", "all",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				var err error
				floodUntil(ctx, ready, 3*time.Second, func(ctx context.Context) {
					err = hostile.Peer{From: "127.0.0.1", Dir: work}.FloodStalledHandshakes(ctx, rx.quic, 1000, &st)
				})
				return st.String(), err
			}},
		{"same-address-declines", "offers from a fresh identity each, 20 at once, from the real sender's own address (the user declines them; the real sender sent here before)", "ask",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				files := []wire.FileEntry{{Path: "flood.txt", Size: 1}}
				floodUntil(ctx, ready, 3*time.Second, func(ctx context.Context) {
					hostile.Peer{From: "127.0.0.1", Dir: work}.FloodOffers(ctx, "tcp", rx.tcp, 20, files, &st)
				})
				return st.String(), nil
			}},
		{"prompts", "offers from a fresh identity each, 20 waiting at once, from one address (the user declines them)", "ask",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				files := []wire.FileEntry{{Path: "flood.txt", Size: 1}}
				floodUntil(ctx, ready, 2*time.Second, func(ctx context.Context) { peer(work, 0).FloodOffers(ctx, "quic", rx.quic, 20, files, &st) })
				return st.String() + fmt.Sprintf("; trust.json %s", rx.trustSize()), nil
			}},
		{"prompts-8-sources", "offers from a fresh identity each, 4 waiting at once from each of 8 addresses (the user declines them)", "ask",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				files := []wire.FileEntry{{Path: "flood.txt", Size: 1}}
				floodUntil(ctx, ready, 2*time.Second, func(ctx context.Context) {
					spread(32, 8, func(i, n int) { peer(work, i).FloodOffers(ctx, "tcp", rx.tcp, n, files, &st) })
				})
				return st.String() + fmt.Sprintf("; trust.json %s", rx.trustSize()), nil
			}},
		{"stalled-chunks", "8 accepted sessions (4 QUIC, 4 TCP) from 8 addresses, each with 16 streams holding a 4 MiB chunk short of its last byte", "all",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var mu sync.Mutex
				ended := map[string]int{} // why the receiver ended a session early
				var wg sync.WaitGroup
				for i := range 8 {
					kind, addr := "quic", rx.quic
					if i%2 == 1 {
						kind, addr = "tcp", rx.tcp
					}
					wg.Go(func() {
						err := stallChunks(ctx, peer(work, i), kind, addr)
						if err != nil && ctx.Err() == nil {
							why := "other: " + err.Error()
							switch {
							case strings.Contains(err.Error(), "nothing arrived"):
								why = "idle session watchdog"
							case kind == "tcp":
								why = "TCP stall watchdog" // the receiver resets a stream that makes no progress
							}
							mu.Lock()
							ended[why]++
							mu.Unlock()
						}
					})
				}
				go func() {
					time.Sleep(3 * time.Second)
					ready()
				}()
				wg.Wait()
				var whys []string
				for why, n := range ended {
					whys = append(whys, fmt.Sprintf("%d by the %s", n, why))
				}
				sort.Strings(whys)
				return fmt.Sprintf("8 sessions holding 16 × 4 MiB each; ended by the receiver before the attack did: %s", strings.Join(whys, ", ")), nil
			}},
		{"big-manifests", "8 accepted offers at once from 8 addresses, each 100,000 files with 160-byte names (16 MB of names)", "all",
			func(ctx context.Context, rx *hostileReceiver, work string, ready func()) (string, error) {
				var st hostile.Stats
				files := make([]wire.FileEntry, 100_000)
				for i := range files {
					files[i] = wire.FileEntry{Path: fmt.Sprintf("d%03d/%0152d.bin", i%1000, i), Size: 1}
				}
				floodUntil(ctx, ready, 8*time.Second, func(ctx context.Context) {
					spread(8, 8, func(i, n int) { peer(work, i).FloodOffers(ctx, []string{"quic", "tcp"}[i%2], rx.quic, n, files, &st) })
				})
				return st.String(), nil
			}},
	}
}

// stallChunks opens one accepted session and stalls 16 chunks of 4 MiB on it.
func stallChunks(ctx context.Context, p hostile.Peer, kind, addr string) error {
	s, err := p.Connect(ctx, kind, addr, "stall")
	if err != nil {
		return err
	}
	defer s.Close()
	const chunk = wire.MaxChunkSize
	if err := s.Offer([]wire.FileEntry{{Path: "big.bin", Size: 64 * chunk}}, chunk); err != nil {
		return err
	}
	d, err := s.Decision(ctx)
	if err != nil {
		return err
	}
	if !d.Accept {
		return fmt.Errorf("declined: %s", d.Reason)
	}
	if err := s.StallChunks(ctx, 0, chunk, 16); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-s.Done():
	}
	return nil
}

func runHostile(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ferry-bench hostile", flag.ContinueOnError)
	cli := fs.String("cli", "", "ferry-cli binary (default: built from this checkout)")
	which := fs.String("scenarios", "", "comma-separated scenarios to run (default: all)")
	sendMB := fs.Int("send-mb", 50, "size of the real send during each attack, in MB")
	mdOut := fs.String("md", "", "also write the markdown table to this `FILE`")
	settle := fs.Duration("settle", 30*time.Second, "how long the receiver gets to give memory back after an attack")
	rxLog := fs.String("receiver-log", "", "append the receivers' standard error to this `FILE` (diagnosis; GODEBUG=gctrace=1 is passed on)")
	heapDir := fs.String("heap-profiles", "", "write the receiver's heap profile at its highest RSS during each attack to `DIR`/<scenario>.pprof, with the runtime's figures in .pprof.json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	work, bin, legit, err := hostileSetup(ctx, "ferry-hostile-", *cli, *sendMB)
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	rows := []string{"| scenario | receiver | attack | real send QUIC | real send TCP | receiver CPU (s) | peak RSS (MiB) | RSS after (MiB) | verdict |",
		"|---|---|---|---|---|---|---|---|---|"}
	failed := false
	for _, sc := range hostileScenarios() {
		if *which != "" && !strings.Contains(","+*which+",", ","+sc.name+",") {
			continue
		}
		fmt.Fprintf(out, "== %s: %s\n", sc.name, sc.what)
		r, err := runHostileScenario(ctx, bin, work, legit, sc, *settle, *rxLog, *heapDir)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		verdict := "ok"
		if !r.quicOK || !r.tcpOK || r.peakMiB >= hostilePeakLimitMiB || r.afterMiB >= hostileAfterLimitMiB {
			verdict, failed = "FAIL", true
		}
		fmt.Fprintf(out, "   attack: %s\n   real send quic: %s; tcp: %s\n   receiver CPU: %.1f s; RSS: peak %.0f MiB, %.0f MiB %.0fs after: %s\n",
			r.stats, r.quic, r.tcp, r.cpu.Seconds(), r.peakMiB, r.afterMiB, r.settled.Seconds(), verdict)
		if r.heap != "" {
			fmt.Fprintf(out, "   at the highest RSS sampled: %s\n", r.heap)
		}
		rows = append(rows, fmt.Sprintf("| %s | --accept %s | %s | %s | %s | %.1f | %.0f | %.0f | %s |", sc.name, sc.accept,
			strings.ReplaceAll(r.stats, "|", "/"), r.quic, r.tcp, r.cpu.Seconds(), r.peakMiB, r.afterMiB, verdict))
	}
	table := strings.Join(rows, "\n") + "\n"
	fmt.Fprint(out, "\n"+table)
	if *mdOut != "" {
		if err := os.WriteFile(*mdOut, []byte(table), 0o644); err != nil {
			return err
		}
	}
	if failed {
		return fmt.Errorf("a limit was not held: peak RSS under %d MiB, RSS after under %d MiB, and the real sends must succeed",
			hostilePeakLimitMiB, hostileAfterLimitMiB)
	}
	return nil
}

type hostileResult struct {
	stats             string
	quic, tcp         string
	quicOK, tcpOK     bool
	peakMiB, afterMiB float64
	settled           time.Duration // how long after the attack RSS was measured
	cpu               time.Duration // the receiver's CPU time (user + system) until the attack ended
	heap              string        // the runtime's memory figures at the highest RSS sampled (--heap-profiles)
}

// runHostileScenario starts a receiver, attacks it, sends the real file
// over each transport during the attack, ends the attack and measures.
func runHostileScenario(ctx context.Context, bin, work, legit string, sc hostileScenario, settle time.Duration, rxLog, heapDir string) (res hostileResult, err error) {
	dir, err := os.MkdirTemp(work, sc.name+"-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	var heapFile string
	if heapDir != "" {
		heapFile, err = filepath.Abs(filepath.Join(heapDir, sc.name+".pprof"))
		if err != nil {
			return res, err
		}
	}
	rx, err := startHostileReceiver(ctx, bin, dir, sc.accept, rxLog, heapFile)
	if err != nil {
		return res, err
	}
	defer rx.stop()
	if heapFile != "" && heapProfileSignal != nil {
		pctx, stopProfiles := context.WithCancel(ctx)
		profiled := make(chan struct{})
		go func() {
			defer close(profiled)
			res.heap = rx.profilePeaks(pctx, heapFile)
		}()
		defer func() { stopProfiles(); <-profiled }()
	}
	scfg := filepath.Join(dir, "cfg-send")
	if hostileKnownSender[sc.name] {
		if how, ok := hostileSend(ctx, bin, scfg, rx.tcp, "tcp", legit); !ok {
			return res, fmt.Errorf("the real sender's first send, before the attack: %s", how)
		}
	}

	actx, stopAttack := context.WithCancel(ctx)
	ready := make(chan struct{})
	var once sync.Once
	attacked := make(chan struct{})
	var attackErr error
	go func() {
		defer close(attacked)
		res.stats, attackErr = sc.attack(actx, rx, dir, func() { once.Do(func() { close(ready) }) })
	}()
	select {
	case <-ready:
	case <-attacked:
	case <-ctx.Done():
		stopAttack()
		return res, ctx.Err()
	}
	res.quic, res.quicOK = hostileSend(ctx, bin, scfg, rx.quic, "quic", legit)
	res.tcp, res.tcpOK = hostileSend(ctx, bin, scfg, rx.tcp, "tcp", legit)
	peak := rx.status("VmHWM")
	res.cpu = rx.cpu()
	stopAttack()
	<-attacked
	if attackErr != nil {
		return res, attackErr
	}
	// What the attack held goes back: sessions end, buffers are returned.
	ended := time.Now()
	after := rx.status("VmRSS")
	for after >= hostileAfterLimitMiB<<10 && time.Since(ended) < settle {
		time.Sleep(250 * time.Millisecond)
		after = rx.status("VmRSS")
	}
	res.settled = time.Since(ended)
	res.peakMiB, res.afterMiB = float64(max(peak, rx.status("VmHWM")))/1024, float64(after)/1024
	return res, nil
}

// profilePeaks has the receiver write a heap profile each time its RSS
// grew by 8 MiB over the last one taken (at most one a second), until ctx
// ends; what stays in file is the profile at the highest RSS sampled. It
// returns the runtime's figures written beside that profile.
func (rx *hostileReceiver) profilePeaks(ctx context.Context, file string) string {
	var last int64
	var lastAt time.Time
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			b, err := os.ReadFile(file + ".json")
			if err != nil {
				return ""
			}
			var m map[string]float64
			json.Unmarshal(b, &m)
			mib := func(k string) float64 { return m[k] / (1 << 20) }
			// What the Go runtime holds and has not returned; the rest of
			// RSS is the binary and memory mapped outside the runtime (the
			// chunk buffers, internal/bufpool).
			held := mib("Sys") - mib("HeapReleased")
			return fmt.Sprintf("RSS %.0f MiB: Go runtime %.0f MiB (heap in use %.0f MiB: objects %.0f, of which live %.0f; idle not returned %.0f MiB; next GC at %.0f MiB; stacks %.0f MiB; %.0f goroutines), outside it %.0f MiB (binary, chunk buffers); profile %s",
				mib("RSS"), held, mib("HeapInuse"), mib("HeapAlloc"), mib("LiveHeap"), mib("HeapIdle")-mib("HeapReleased"), mib("NextGC"),
				mib("StackInuse"), m["Goroutines"], mib("RSS")-held, file)
		case <-tick.C:
		}
		if rss := rx.status("VmRSS"); rss > last+8<<10 && time.Since(lastAt) >= time.Second {
			last, lastAt = rss, time.Now()
			rx.cmd.Process.Signal(heapProfileSignal)
		}
	}
}

// hostileSetup makes the work folder, the ferry-cli binary (cli, or built
// from this checkout) and the real sender's file of sendMB random MB.
func hostileSetup(ctx context.Context, prefix, cli string, sendMB int) (work, bin, legit string, err error) {
	if work, err = os.MkdirTemp("", prefix); err != nil {
		return "", "", "", err
	}
	bin = cli
	if bin == "" {
		bin = filepath.Join(work, "ferry-cli")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ferry-cli")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			os.RemoveAll(work)
			return "", "", "", fmt.Errorf("build ferry-cli (run from the repository root or pass --cli): %w", err)
		}
	}
	legit = filepath.Join(work, "legit.bin")
	data := make([]byte, sendMB*1_000_000)
	rand.Read(data)
	if err := os.WriteFile(legit, data, 0o644); err != nil {
		os.RemoveAll(work)
		return "", "", "", err
	}
	return work, bin, legit, nil
}

// sendOutcome reads how a ferry-cli send --json went from its output.
func sendOutcome(outb []byte, err error, start time.Time) (string, bool) {
	var ev struct {
		Result struct {
			State string `json:"state"`
			Err   string `json:"error"`
		} `json:"result"`
	}
	json.Unmarshal([]byte(loopLastLine(outb)), &ev)
	if err != nil || ev.Result.State != "done" {
		why := ev.Result.Err
		if why == "" && err != nil {
			why = err.Error()
		}
		return "FAILED: " + why, false
	}
	return fmt.Sprintf("done in %.1fs", time.Since(start).Seconds()), true
}

// hostileSend sends the real file with ferry-cli send; it reports how it went.
func hostileSend(ctx context.Context, bin, cfg, addr, transport, file string) (string, bool) {
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "send", "--config", cfg, "--name", "legit", "--to", addr, "--transport", transport, "--json", file)
	outb, err := cmd.Output()
	return sendOutcome(outb, err, start)
}

// hostileReceiver is a ferry-cli receive process under attack.
type hostileReceiver struct {
	cmd       *exec.Cmd
	cfg       string
	quic, tcp string
	stdin     io.WriteCloser
}

func startHostileReceiver(ctx context.Context, bin, dir, accept, logFile, heapFile string) (*hostileReceiver, error) {
	cfg := filepath.Join(dir, "cfg-recv")
	cmd := exec.CommandContext(ctx, bin, "receive", "--config", cfg, "--dir", filepath.Join(dir, "in"),
		"--listen", "127.0.0.1:0", "--accept", accept, "--no-discovery", "--localsend=false", "--json")
	if heapFile != "" {
		cmd.Env = append(os.Environ(), "FERRY_HEAPPROFILE="+heapFile)
	}
	rx := &hostileReceiver{cmd: cmd, cfg: cfg}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	stderr := io.Reader(pipe)
	if logFile != "" {
		f, err := os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		stderr = io.TeeReader(pipe, f)
	}
	if rx.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if f, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
			for _, kv := range strings.Fields(f) {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "quic":
					rx.quic = v
				case "tcp":
					rx.tcp = v
				}
			}
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	if rx.quic == "" || rx.tcp == "" {
		rx.stop()
		return nil, errors.New("the receiver did not start listening on both transports")
	}
	go rx.answer(stderr)
	return rx, nil
}

// answer plays the user: it accepts the real sender's offers and declines
// the others, in the order the prompts come.
func (rx *hostileReceiver) answer(stderr io.Reader) {
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, " wants to send ") {
			continue
		}
		answer := "n\n"
		if strings.HasPrefix(line, "legit (") {
			answer = "y\n"
		}
		io.WriteString(rx.stdin, answer)
	}
}

// status reads a field of /proc/PID/status, in KiB (0 when unknown).
func (rx *hostileReceiver) status(field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", rx.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// cpu is the receiver's CPU time so far, user and system (0 when unknown).
func (rx *hostileReceiver) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", rx.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which ends with the last ')':
	// utime and stime are the 12th and 13th, in clock ticks (100 a second).
	_, rest, ok := strings.Cut(string(b[strings.LastIndexByte(string(b), ')')+1:]), " ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// trustSize says how big the receiver's trust store is.
func (rx *hostileReceiver) trustSize() string {
	st, err := os.Stat(filepath.Join(rx.cfg, "trust.json"))
	if err != nil {
		return "absent"
	}
	return fmt.Sprintf("%d bytes", st.Size())
}

func (rx *hostileReceiver) stop() {
	rx.cmd.Process.Kill()
	rx.cmd.Wait()
}
