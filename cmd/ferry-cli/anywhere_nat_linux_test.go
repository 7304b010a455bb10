package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/netlab"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// The NAT lab cases of issue #29: ferry-cli relay in the lab's internet,
// ferry-cli receive --anywhere behind one NAT, ferry-cli send --relay
// behind the other, each in its own network namespace (internal/netlab:
// NAT routers that masquerade, and let in only replies).

// relayAt is where the lab's relay listens.
const relayAt = "7.0.0.1:3478"

// natLab builds a NAT lab for one test, or skips it where none can run.
func natLab(t testing.TB, cfg netlab.NATConfig) *netlab.NAT {
	t.Helper()
	if testing.Short() {
		t.Skip("NAT lab: not with -short")
	}
	if err := netlab.NATAvailable(); err != nil {
		t.Skipf("NAT lab not available: %v (run as root on Linux with iproute2 and iptables)", err)
	}
	if cfg.NamePrefix == "" {
		cfg.NamePrefix = os.Getenv("FERRY_NAT_PREFIX") // "": netlab's own
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lab, err := netlab.NewNAT(ctx, cfg)
	if err != nil {
		t.Fatalf("netlab.NewNAT: %v", err)
	}
	t.Cleanup(func() { lab.Close() })
	return lab
}

// startRelayAndReceiver starts the relay on the lab's internet and dev's
// receiver on host B, reachable from anywhere through it, taking what its
// trusted devices send into inbox.
func startRelayAndReceiver(t testing.TB, lab *netlab.NAT, bin string, dev device, inbox string) (relay, recv *exec.Cmd) {
	relay = startIn(t, lab, netlab.Internet, bin, "relay listening", "relay", "--listen", relayAt)
	recv = startIn(t, lab, netlab.HostB, bin, "reachable from anywhere", "receive", "--config", dev.dir, "--name", dev.name, "--dir", inbox,
		"--listen", ":47800", "--accept", "trusted", "--no-discovery", "--localsend=false", "--anywhere", "--relay", relayAt)
	return relay, recv
}

// randomFile writes mib MiB of random bytes into a new file.
func randomFile(t testing.TB, mib int) string {
	src := filepath.Join(t.TempDir(), "big.bin")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for range mib {
		rand.Read(chunk)
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return src
}

// startIn starts bin in ns and waits for a line of its output that
// contains ready; it is killed when the test ends.
func startIn(t testing.TB, lab *netlab.NAT, ns, bin, ready string, args ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := lab.Command(ctx, ns, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("FERRY_LOG") != "" && ns == netlab.HostB { // the receiver's log, once it ended
		t.Cleanup(func() { t.Logf("%s's log:\n%s", ns, stderr.String()) })
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, out)
	}()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s %v ended before %q: %s", ns, args, ready, stderr.String())
			}
			if strings.Contains(l, ready) {
				go func() {
					for range lines {
					}
				}()
				return cmd
			}
		case <-timeout:
			t.Fatalf("%s %v: no %q within 20 s: %s", ns, args, ready, stderr.String())
		}
	}
}

// runIn runs bin in ns to its end, bounded.
func runIn(t testing.TB, lab *netlab.NAT, ns, bin string, args ...string) (string, error) {
	t.Helper()
	return runInEnv(t, lab, ns, nil, bin, args...)
}

// runInEnv is runIn with more environment variables.
func runInEnv(t testing.TB, lab *netlab.NAT, ns string, env []string, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := lab.Command(ctx, ns, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %.1f s", ns, args[0], time.Since(start).Seconds())
	return out.String(), err
}

// anywhereLab starts a relay and B receiving from anywhere, paired with A;
// it returns the binary, the devices and B's download folder.
func anywhereLab(t testing.TB, cfg netlab.NATConfig) (lab *netlab.NAT, bin string, a, b device, inbox string) {
	t.Helper()
	return anywhereLabWith(t, cfg, "")
}

// anywhereLabWith is anywhereLab with a relay secret ("": none), in a file
// for the relay and B (A takes it from FERRY_RELAY_SECRET, sendAnywhereWith).
func anywhereLabWith(t testing.TB, cfg netlab.NATConfig, secret string) (lab *netlab.NAT, bin string, a, b device, inbox string) {
	t.Helper()
	var relayArgs, recvArgs []string
	if secret != "" {
		f := filepath.Join(t.TempDir(), "relay.secret")
		if err := os.WriteFile(f, []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		relayArgs, recvArgs = []string{"--secret-file", f}, []string{"--relay-secret-file", f}
	}
	start := time.Now()
	lab = natLab(t, cfg)
	t.Logf("lab: %.1f s", time.Since(start).Seconds())
	bin = buildCLI(t)
	t.Logf("lab and build: %.1f s", time.Since(start).Seconds())
	a, b = newDevice(t, "Laptop"), newDevice(t, "Desktop")
	pairAnywhere(t, a, b, false)
	inbox = t.TempDir()
	startIn(t, lab, netlab.Internet, bin, "relay listening", append([]string{"relay", "--listen", relayAt}, relayArgs...)...)
	startIn(t, lab, netlab.HostB, bin, "reachable from anywhere", append([]string{"receive", "--config", b.dir, "--name", b.name, "--dir", inbox,
		"--listen", ":0", "--accept", "trusted", "--no-discovery", "--localsend=false", "--anywhere", "--relay", relayAt}, recvArgs...)...)
	return lab, bin, a, b, inbox
}

// sendAnywhere sends a fresh file from A to B through the relay and
// checks it arrived whole; it returns the sender's output.
func sendAnywhere(t testing.TB, lab *netlab.NAT, bin string, a, b device, inbox string) string {
	t.Helper()
	return sendAnywhereWith(t, lab, bin, a, b, inbox, "")
}

// sendAnywhereWith is sendAnywhere with the relay's secret ("": none), in
// FERRY_RELAY_SECRET.
func sendAnywhereWith(t testing.TB, lab *netlab.NAT, bin string, a, b device, inbox, secret string) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "report.bin")
	data := make([]byte, 3<<20+17)
	rand.Read(data)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runInEnv(t, lab, netlab.HostA, []string{"FERRY_LOG=info", "FERRY_RELAY_SECRET=" + secret}, bin, "send", "--config", a.dir, "--name", a.name, "--json", "--to", b.name, "--relay", relayAt, src)
	if err != nil {
		t.Fatalf("send: %v\n%s", err, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "device reached from anywhere") {
			t.Log(l[strings.Index(l, "path="):])
		}
	}
	got, err := os.ReadFile(filepath.Join(inbox, "report.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file did not arrive whole (%d of %d bytes, %v)\n%s", len(got), len(data), err, out)
	}
	return out
}

// TestAnywhereDirect: two endpoint-independent NATs: ICE punches a hole
// and the file goes direct; a device that is not paired, or paired only
// on its own side, and a relay that is down, each fail with a clear error.
func TestAnywhereDirect(t *testing.T) {
	lab, bin, a, b, inbox := anywhereLab(t, netlab.NATConfig{})
	out := sendAnywhere(t, lab, bin, a, b, inbox)
	if !strings.Contains(out, "through the internet, direct") {
		t.Errorf("the path is not direct:\n%s", out)
	}

	// A stranger with no pairing learns nothing.
	c := newDevice(t, "Stranger")
	src := filepath.Join(t.TempDir(), "x")
	os.WriteFile(src, []byte("x"), 0o644)
	out, err := runIn(t, lab, netlab.HostA, bin, "send", "--config", c.dir, "--to", b.name, "--relay", relayAt, src)
	if err == nil || !strings.Contains(out, "no paired device is called") {
		t.Errorf("an unpaired device: %v\n%s", err, out)
	}
	// One that claims the pairing (its own store only) is not answered.
	pairAnywhere(t, c, b, true)
	out, err = runIn(t, lab, netlab.HostA, bin, "send", "--config", c.dir, "--to", b.name, "--relay", relayAt, src)
	if err == nil || !strings.Contains(out, "not receiving through relay") {
		t.Errorf("a device paired on its own side only: %v\n%s", err, out)
	}
	// A relay that is not there: said at once, naming it.
	start := time.Now()
	out, err = runIn(t, lab, netlab.HostA, bin, "send", "--config", a.dir, "--to", b.name, "--relay", "7.0.0.2:3478", src)
	if err == nil || !strings.Contains(out, "the relay 7.0.0.2:3478 does not answer") {
		t.Errorf("relay down: %v\n%s", err, out)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("relay down took %s to say so", d)
	}
	if _, err := os.Stat(filepath.Join(inbox, "x")); err == nil {
		t.Error("a refused sender's file arrived")
	}
	// And a receiver whose relay is not there says so, and exits.
	out, err = runIn(t, lab, netlab.HostA, bin, "receive", "--config", a.dir, "--dir", t.TempDir(), "--listen", ":0",
		"--no-discovery", "--localsend=false", "--anywhere", "--relay", "7.0.0.2:3478")
	if err == nil || !strings.Contains(out, "the relay 7.0.0.2:3478 does not answer") {
		t.Errorf("receive with the relay down: %v\n%s", err, out)
	}
}

// TestAnywhereRelayed: behind a port-randomising NAT no hole can be
// punched; the file goes through the relay's TURN server, which takes
// only devices with its relay secret: the one a device without it is
// told about.
func TestAnywhereRelayed(t *testing.T) {
	const secret = "a relay secret for the NAT lab"
	lab, bin, a, b, inbox := anywhereLabWith(t, netlab.NATConfig{A: netlab.PortRandom}, secret)
	out := sendAnywhereWith(t, lab, bin, a, b, inbox, secret)
	if !strings.Contains(out, "through the internet, relayed") {
		t.Errorf("the path is not relayed:\n%s", out)
	}
	src := filepath.Join(t.TempDir(), "x")
	os.WriteFile(src, []byte("x"), 0o644)
	out, err := runIn(t, lab, netlab.HostA, bin, "send", "--config", a.dir, "--to", b.name, "--relay", relayAt, src)
	if err == nil || !strings.Contains(out, "the relay "+relayAt+" takes only devices that hold its relay secret") {
		t.Errorf("a sender without the relay secret: %v\n%s", err, out)
	}
}

// TestAnywhereBothRelayed: both devices behind port-randomising NATs (two
// phones on carrier-grade NAT): neither one's address is reachable, so
// each side's relayed candidate talks to the other's, the relay relaying
// to its own public address, and the file arrives through TURN.
func TestAnywhereBothRelayed(t *testing.T) {
	const secret = "a relay secret for the NAT lab"
	lab, bin, a, b, inbox := anywhereLabWith(t, netlab.NATConfig{A: netlab.PortRandom, B: netlab.PortRandom}, secret)
	out := sendAnywhereWith(t, lab, bin, a, b, inbox, secret)
	if !strings.Contains(out, "through the internet, relayed") {
		t.Errorf("the path is not relayed:\n%s", out)
	}
}

// procCPU is a process's CPU time so far (user+system), from /proc.
func procCPU(b testing.TB, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name (which may hold spaces).
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// BenchmarkAnywhere moves FERRY_ANYWHERE_MIB (default 256) MiB from A to B
// in the NAT lab: over the shared LAN (plain QUIC, the baseline), direct
// through two endpoint-independent NATs, and relayed (A behind a
// port-randomising NAT), and reports each process's CPU seconds per GiB.
//
//	go test -run '^$' -bench Anywhere -benchtime 1x ./cmd/ferry-cli
func BenchmarkAnywhere(b *testing.B) {
	mib := 256
	if v, err := strconv.Atoi(os.Getenv("FERRY_ANYWHERE_MIB")); err == nil && v > 0 {
		mib = v
	}
	for _, tc := range []struct {
		name string
		cfg  netlab.NATConfig
		lan  bool
		path string
	}{
		{"lan", netlab.NATConfig{SharedLAN: true}, true, ""},
		{"direct", netlab.NATConfig{}, false, "direct"},
		{"relayed", netlab.NATConfig{A: netlab.PortRandom}, false, "relayed"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			lab := natLab(b, tc.cfg)
			bin := buildCLI(b)
			a, bdev := newDevice(b, "Laptop"), newDevice(b, "Desktop")
			pairAnywhere(b, a, bdev, false)
			inbox := b.TempDir()
			relay, recv := startRelayAndReceiver(b, lab, bin, bdev, inbox)
			src := randomFile(b, mib)
			args := []string{"send", "--config", a.dir, "--name", a.name, "--json", "--to", bdev.name, "--relay", relayAt, src}
			if tc.lan {
				args = []string{"send", "--config", a.dir, "--name", a.name, "--json", "--transport", "quic", "--to", "10.99.0.2:47800", src}
			}
			r0, v0 := procCPU(b, recv.Process.Pid), procCPU(b, relay.Process.Pid)
			b.ResetTimer()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := lab.Command(ctx, netlab.HostA, bin, args...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatalf("send: %v\n%s", err, out.String())
			}
			wall := time.Since(start)
			b.StopTimer()
			if tc.path != "" && !strings.Contains(out.String(), "through the internet, "+tc.path) {
				b.Fatalf("not %s:\n%s", tc.path, out.String())
			}
			gib := float64(mib) / 1024
			sender := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			b.ReportMetric(sender.Seconds()/gib, "sender-CPU-s/GiB")
			b.ReportMetric((procCPU(b, recv.Process.Pid)-r0).Seconds()/gib, "receiver-CPU-s/GiB")
			b.ReportMetric((procCPU(b, relay.Process.Pid)-v0).Seconds()/gib, "relay-CPU-s/GiB")
			b.ReportMetric(float64(mib)/wall.Seconds(), "MiB/s")
		})
	}
}

// TestAnywhereLeaveLAN: a send that starts on the shared LAN goes on
// through the internet when the LAN goes away mid-transfer: the sender
// reconnects by itself (the LAN address first, then the relay), resumes
// with at most what was in flight sent twice, and the file arrives whole.
func TestAnywhereLeaveLAN(t *testing.T) {
	lab := natLab(t, netlab.NATConfig{SharedLAN: true})
	bin := buildCLI(t)
	a, b := newDevice(t, "Laptop"), newDevice(t, "Desktop")
	pairAnywhereAt(t, a, b, false, "10.99.0.2:47800") // where A last reached B: the shared LAN
	inbox := t.TempDir()
	startRelayAndReceiver(t, lab, bin, b, inbox)
	src := filepath.Join(t.TempDir(), "big.bin")
	data := make([]byte, 128<<20)
	rand.Read(data)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := lab.Command(ctx, netlab.HostA, bin, "send", "--config", a.dir, "--name", a.name, "--json", "--to", b.name, "--relay", relayAt, src)
	cmd.Env = append(os.Environ(), "FERRY_PROGRESS_INTERVAL=20ms")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type event struct {
		Time      time.Time `json:"time"`
		Kind      string    `json:"kind"`
		State     string    `json:"state"`
		Transport *struct {
			Reason string `json:"reason"`
		} `json:"transport"`
		Progress *struct {
			Bytes int64 `json:"bytes"`
		} `json:"progress"`
		Result *struct {
			State string `json:"state"`
			Bytes int64  `json:"bytes"`
			Total int64  `json:"total_bytes"`
		} `json:"result"`
	}
	var lines []string
	var cut, reconnecting, resumed time.Time
	var reason string
	var sent int64 = -1
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch {
		case cut.IsZero() && ev.Kind == "progress" && ev.Progress != nil && ev.Progress.Bytes > 0:
			if err := lab.SetSharedLAN(ctx, false); err != nil {
				t.Fatal(err)
			}
			cut = time.Now()
		case ev.Kind == "state" && ev.State == "reconnecting" && reconnecting.IsZero():
			reconnecting = ev.Time
		case ev.Kind == "state" && ev.State == "active" && !reconnecting.IsZero() && resumed.IsZero():
			resumed = ev.Time
		case ev.Kind == "transport" && ev.Transport != nil:
			reason = ev.Transport.Reason
		case ev.Kind == "result" && ev.Result != nil && ev.Result.State == "done":
			sent = ev.Result.Bytes - ev.Result.Total
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("send: %v\n%s\n%s", err, strings.Join(lines, "\n"), stderr.String())
	}
	if cut.IsZero() || reconnecting.IsZero() {
		t.Fatalf("the transfer did not lose the LAN mid-way:\n%s", strings.Join(lines, "\n"))
	}
	t.Logf("stall from reconnecting to active again: %.1f s; re-sent %d bytes; path %q", resumed.Sub(reconnecting).Seconds(), sent, reason)
	if !strings.HasPrefix(reason, "through the internet") {
		t.Errorf("the last path is %q, not through the internet", reason)
	}
	if sent < 0 || sent > 32<<20 {
		t.Errorf("re-sent %d bytes: not a resume", sent)
	}
	got, err := os.ReadFile(filepath.Join(inbox, "big.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file did not arrive whole (%d of %d bytes, %v)", len(got), len(data), err)
	}
}

// relayedSend is a send of 64 MiB from Laptop to Desktop, paired,
// through a relay in the NAT lab, whose receiver a test stops or kills.
type relayedSend struct {
	lab      *netlab.NAT
	bin      string
	recv     *exec.Cmd
	recvArgs []string // to start the receiver again
	recvCfg  string   // the receiver's config folder, where it journals what landed
	lines    chan string
}

// startRelayedSend starts the relay, Desktop's receiver serving through it
// on listen, and Laptop's send (with sendArgs), and waits for the send's
// relayed path.
func startRelayedSend(t *testing.T, listen string, sendArgs ...string) *relayedSend {
	t.Helper()
	r := &relayedSend{lab: natLab(t, netlab.NATConfig{A: netlab.PortRandom}), bin: buildCLI(t), lines: make(chan string, 64)}
	a, b := newDevice(t, "Laptop"), newDevice(t, "Desktop")
	pairAnywhere(t, a, b, false)
	startIn(t, r.lab, netlab.Internet, r.bin, "relay listening", "relay", "--listen", relayAt)
	r.recvArgs = []string{"receive", "--config", b.dir, "--name", b.name, "--dir", t.TempDir(), "--listen", listen, "--accept", "trusted",
		"--no-discovery", "--localsend=false", "--anywhere", "--relay", relayAt}
	r.recvCfg = b.dir
	r.recv = startIn(t, r.lab, netlab.HostB, r.bin, "reachable from anywhere", r.recvArgs...)
	src := randomFile(t, 64)
	ctx, cancel := context.WithCancel(context.Background())
	send := r.lab.Command(ctx, netlab.HostA, r.bin, append(append([]string{"send", "--config", a.dir, "--name", a.name, "--to", b.name, "--relay", relayAt}, sendArgs...), src)...)
	out, err := send.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	send.Stderr = send.Stdout
	if err := send.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); send.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	if l := r.next(t, "transport:", 30*time.Second); !strings.Contains(l, "relayed") {
		t.Fatalf("not relayed: %s", l)
	}
	return r
}

// next returns the send's next line that begins with prefix.
func (r *relayedSend) next(t *testing.T, prefix string, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("the send ended before a line %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			t.Fatalf("no line %q within %v", prefix, within)
		}
	}
}

// underWay waits until the receiver has journaled a chunk of the file: a
// part of it has arrived, and the rest (most of it: the relayed path
// carries tens of MiB a second, the wait looks every 100 ms at most) is
// on its way.
func (r *relayedSend) underWay(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, "a chunk of the file at the receiver", func() bool {
		logs, _ := filepath.Glob(filepath.Join(r.recvCfg, "resume", "*.log"))
		return len(logs) == 1 && landed(logs[0]) > 0
	})
}

// restartReceiver starts Desktop's receiver again, as it was.
func (r *relayedSend) restartReceiver(t *testing.T) {
	t.Helper()
	startIn(t, r.lab, netlab.HostB, r.bin, "reachable from anywhere", r.recvArgs...)
}

// TestAnywhereReceiverStops: a receiver stopped (Ctrl-C, SIGTERM) while a
// file comes to it through the relay's TURN tells the sender at once, as
// on the LAN ("Desktop went away: Ferry was closed there."), and the
// sender goes on once it is back. receive stopped serving through the
// relay, which closed the session's bridge to the relayed path, before its
// engine ended the session: the goodbye went nowhere and the sender said
// "the connection went silent for 10s".
func TestAnywhereReceiverStops(t *testing.T) {
	r := startRelayedSend(t, ":47800")
	r.underWay(t)
	stopped := time.Now()
	if err := r.recv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	l := r.next(t, "reconnecting:", 30*time.Second)
	if took := time.Since(stopped); !strings.Contains(l, "Ferry was closed there") || took > 5*time.Second {
		t.Errorf("%v after the receiver stopped, the sender said: %s", took.Round(time.Millisecond), l)
	}
	r.recv.Process.Wait() // its port free again (its cleanup's Wait then only reaps its output)
	r.restartReceiver(t)
	r.next(t, "done:", 2*time.Minute)
}

// TestAnywhereKilledReceiverRestarted: a receiver killed (SIGKILL) while a
// file comes to it through the relay's TURN, and started again at once,
// announces itself anew at the relay; the sender, whose path fell silent,
// reads there that the device restarted and calls the new one, instead of
// waiting for QUIC's idle timeout: its reconnect said "the connection
// went silent for 10s", the dead receiver's TURN allocation (the path's
// remote end) outliving it by minutes. The reason of the one reconnect,
// not a time, is what is checked.
func TestAnywhereKilledReceiverRestarted(t *testing.T) {
	r := startRelayedSend(t, ":0")
	r.underWay(t)
	if err := r.recv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	r.recv.Process.Wait()
	r.restartReceiver(t)
	l := r.next(t, "reconnecting:", 30*time.Second)
	t.Logf("%.1f s after the kill: %s", time.Since(killed).Seconds(), l)
	if !strings.Contains(l, "restarted") {
		t.Errorf("the sender reconnected for another reason than the receiver's restart: %s", l)
	}
	l = r.next(t, "reconnected", 30*time.Second)
	t.Logf("%.1f s after the kill: %s", time.Since(killed).Seconds(), l)
	r.next(t, "done:", 2*time.Minute)
}

// TestAnywhereKilledReceiverStaysDown: a receiver killed (SIGKILL) while a
// file comes to it through the relay, and not started again, leaves its
// presence at the relay for minutes. The sender's retries found it each
// time, called and waited 10 s for an answer that never came; then only
// the first call waited, the tries after it saying at once that the
// device did not answer its last call. Now the relay says that the
// device dropped its wait for calls (its system closed the connection)
// and has not looked since: the silent session ends (about 3 s after the
// kill, where QUIC's idle timeout took 10 s), no call waits, and every
// retry says at once that the device has not looked for calls (the first
// in a sentence about the device, "Desktop (…) has not looked for calls
// at relay …", not "Control stream: the device has …"). What is
// checked is the words and the number of calls that waited for an
// answer, not a time; the times are logged. --retry-for 5s leaves three
// retries (0.5, 1 and 2 s apart); a call that waits for its answer (10 s)
// takes the rest of those 5 s, so the send's last word is then the
// deadline's ("no connection before the time for reconnecting ran out"),
// not the relay's.
func TestAnywhereKilledReceiverStaysDown(t *testing.T) {
	r := startRelayedSend(t, ":0", "--retry-for", "5s")
	r.underWay(t)
	if err := r.recv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waited, fast, attempts := 0, 0, 0
	var why, first, last string
	said := func(l string) bool {
		return strings.Contains(l, "has not looked for calls") || strings.Contains(l, "did not answer its last call")
	}
	for l := range r.lines {
		t.Logf("%5.1f s: %s", time.Since(killed).Seconds(), l)
		last = l
		switch {
		case strings.HasPrefix(l, "reconnecting: "):
			why = strings.TrimPrefix(l, "reconnecting: ")
			if first == "" {
				first = why
			}
		case strings.HasPrefix(l, "reconnecting (attempt"):
		default:
			continue
		}
		attempts++
		switch {
		case said(why):
			fast++
		case strings.Contains(why, "not receiving through relay"):
			waited++ // a call that waited for its answer (or no presence at all)
		}
	}
	t.Logf("%.1f s after the kill the send ended (%d retries: %d calls waited for an answer, %d ended at once): %s",
		time.Since(killed).Seconds(), attempts, waited, fast, last)
	if !strings.Contains(first, "has not looked for calls") {
		t.Errorf("the session ended for another reason than the relay's word that the device dropped its wait for calls: %s", first)
	} else if !strings.HasPrefix(first, "Desktop") || !strings.Contains(first, "Ferry is probably not running there") {
		// Not "Control stream: the device has not looked for calls ...":
		// the name of the stream that read the connection's end.
		t.Errorf("the session's end is not said as a sentence about the device: %s", first)
	}
	if waited > 0 {
		t.Errorf("%d calls waited for an answer from the dead receiver's presence; want none", waited)
	}
	if fast == 0 || !strings.Contains(last, "has not looked for calls") {
		t.Errorf("the send's last word is not that the device stopped looking for calls: %s", last)
	}
}

// TestAnywhereStallIsNotALoss: a path beyond the LAN that carries nothing
// for 3 s (a Wi-Fi stall, both WAN links dropping every packet), at 80 ms
// round trip, holds its session: the transfer goes on on the same
// connection once the path is back, with no reconnect. What ends it is
// QUIC's idle timeout (TransportConfig.QUICIdleTimeout, 10 s), which is
// also how long a sender takes to notice a receiver killed beyond the LAN;
// a shorter one turns such stalls into reconnects (docs/beyond-the-lan.md,
// "A receiver killed beyond the LAN"): with FERRY_QUIC_IDLE_TIMEOUT=4s in
// the environment this test fails.
func TestAnywhereStallIsNotALoss(t *testing.T) {
	const stall = 3 * time.Second
	lab := natLab(t, netlab.NATConfig{Impaired: true})
	path := netlab.Impairment{Delay: 20 * time.Millisecond} // each WAN link, both ways: 80 ms A <-> B
	for _, l := range []string{netlab.NATLinkWANA, netlab.NATLinkWANB} {
		if err := lab.SetImpairment(l, path); err != nil {
			t.Fatal(err)
		}
	}
	bin := buildCLI(t)
	a, b := newDevice(t, "Laptop"), newDevice(t, "Desktop")
	pairAnywhere(t, a, b, false)
	inbox := t.TempDir()
	startRelayAndReceiver(t, lab, bin, b, inbox)
	src := randomFile(t, 48)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := lab.Command(ctx, netlab.HostA, bin, "send", "--config", a.dir, "--name", a.name, "--json", "--to", b.name, "--relay", relayAt, src)
	cmd.Env = append(os.Environ(), "FERRY_PROGRESS_INTERVAL=20ms")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	var began, flowing time.Time
	var lastBytes int64
	done := false
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		var ev struct {
			Kind     string `json:"kind"`
			State    string `json:"state"`
			Progress *struct {
				Bytes int64 `json:"bytes"`
			} `json:"progress"`
			Result *struct {
				State string `json:"state"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch {
		case ev.Kind == "state" && ev.State == "reconnecting":
			t.Errorf("the stall of %v ended the session: %s", stall, sc.Text())
		case ev.Kind == "progress" && ev.Progress != nil:
			if began.IsZero() && ev.Progress.Bytes > 4<<20 {
				for _, l := range []string{netlab.NATLinkWANA, netlab.NATLinkWANB} {
					if err := lab.SetImpairment(l, netlab.Impairment{Delay: path.Delay, Loss: 1}); err != nil {
						t.Fatal(err)
					}
				}
				began = time.Now()
				time.AfterFunc(stall, func() {
					for _, l := range []string{netlab.NATLinkWANA, netlab.NATLinkWANB} {
						lab.SetImpairment(l, path)
					}
				})
				lastBytes = ev.Progress.Bytes
			} else if !began.IsZero() && flowing.IsZero() && ev.Progress.Bytes > lastBytes+1<<20 && time.Since(began) > stall {
				flowing = time.Now()
			}
		case ev.Kind == "result" && ev.Result != nil:
			done = ev.Result.State == "done"
		}
	}
	if err := cmd.Wait(); err != nil || !done {
		t.Fatalf("send: %v\n%s\n%s", err, strings.Join(lines, "\n"), stderr.String())
	}
	if began.IsZero() {
		t.Fatalf("the transfer ended before the stall:\n%s", strings.Join(lines, "\n"))
	}
	if !flowing.IsZero() {
		t.Logf("a stall of %v: the file flowed again %.1f s after it began", stall, flowing.Sub(began).Seconds())
	}
}

// TestAnywhereKilledReceiverNewSend: a receiver killed (SIGKILL) and not
// started again leaves its presence at the relay for two minutes, and a
// new ferry-cli send (a new process: no memory of calls gone unanswered)
// found it, called, and waited 10 s for an answer, then said only that
// the device was not receiving through the relay. The relay now says how
// long no one looked at the device's call box, and that its last wait
// was dropped (a receiver alive always waits there; a killed one's system
// closes the connection): a send started just after the kill stops
// waiting once that is anywhere.DroppedLookingAfter old, and the next
// send says at once, before any call, that the device has not looked for
// calls. What is checked is the words; the times are logged.
func TestAnywhereKilledReceiverNewSend(t *testing.T) {
	lab := natLab(t, netlab.NATConfig{})
	bin := buildCLI(t)
	a, b := newDevice(t, "Laptop"), newDevice(t, "Desktop")
	pairAnywhere(t, a, b, false)
	_, recv := startRelayAndReceiver(t, lab, bin, b, t.TempDir())
	src := randomFile(t, 1)
	send := func() (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		began := time.Now()
		out, err := lab.Command(ctx, netlab.HostA, bin, "send", "--config", a.dir, "--name", a.name, "--to", b.name,
			"--relay", relayAt, "--retry-for", "0", src).CombinedOutput()
		last := strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(last, '\n'); i >= 0 {
			last = last[i+1:]
		}
		t.Logf("send took %.1f s: %v: %s", time.Since(began).Seconds(), err, last)
		return last, err
	}
	if _, err := send(); err != nil {
		t.Fatalf("a send to the receiver alive: %v", err)
	}
	if err := recv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for _, when := range []string{"just after the kill", "after that one"} {
		last, err := send()
		t.Logf("%s (%.1f s after the kill): %s", when, time.Since(killed).Seconds(), last)
		if err == nil || !strings.Contains(last, "has not looked for calls at relay "+relayAt) {
			t.Errorf("a send %s does not say that the device stopped looking for calls: %v: %s", when, err, last)
		}
	}
}
