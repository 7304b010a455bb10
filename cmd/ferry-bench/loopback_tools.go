package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The loopback bench's baselines: tools people compare a LAN transfer
// against, run in the same rounds as Ferry. Each cell's seconds run from
// launching the first process (the sshd, croc's sender) to the sender's exit,
// as Ferry's do from launching its receiver.

// loopBaselines makes each baseline's cell; a cell that cannot run here
// carries the reason in skip.
var loopBaselines = map[string]func(ctx context.Context, e *loopEnv, o loopOptions) loopCell{
	"rsync": func(ctx context.Context, e *loopEnv, _ loopOptions) loopCell {
		return e.sshCell(ctx, "rsync -e ssh", "rsync")
	},
	"scp":      func(ctx context.Context, e *loopEnv, _ loopOptions) loopCell { return e.sshCell(ctx, "scp", "scp") },
	"croc":     func(ctx context.Context, e *loopEnv, o loopOptions) loopCell { return e.crocCell(o.croc) },
	"wormhole": func(ctx context.Context, e *loopEnv, o loopOptions) loopCell { return e.wormholeCell(o) },
}

var loopback = netip.MustParseAddr("127.0.0.1")

// sshCell runs tool ("rsync" or "scp") to a private sshd on loopback. The
// sshd runs in debug mode, which serves one connection in one process tree
// and exits: its CPU time is the receiving side's (sshd, the scp or rsync
// server it starts), the client's the sending side's (with its ssh).
func (e *loopEnv) sshCell(ctx context.Context, key, tool string) loopCell {
	c := loopCell{key: key, baseline: true}
	if e.ssh == nil {
		kit, err := newSSHKit(ctx, filepath.Join(e.work, "ssh"))
		if err != nil {
			c.skip = err
			return c
		}
		e.ssh = kit
	}
	kit := e.ssh
	c.run = func(ctx context.Context, w loopWorkload, src, dst string) (loopResult, error) {
		port, err := freePorts(1)
		if err != nil {
			return loopResult{}, err
		}
		start := time.Now()
		srv, err := startServer(ctx, exec.CommandContext(ctx, kit.sshd, kit.sshdArgs(loopback, port[0], true)...), "Server listening", true)
		if err != nil {
			return loopResult{}, err
		}
		defer srv.kill()
		var args []string
		switch tool {
		case "scp":
			list := filesIn
			if w.tree > 0 {
				list = topEntries // the tree's folders, with -r
			}
			files, err := list(src)
			if err != nil {
				return loopResult{}, err
			}
			if w.tree > 0 {
				files = append([]string{"-r"}, files...)
			}
			args = kit.scpArgs(port[0], files, loopback, dst)
		case "rsync":
			args = kit.rsyncArgs(port[0], src, loopback, dst)
		}
		srvPeak := watchPeak(srv.cmd.Process.Pid)
		client := exec.CommandContext(ctx, tool, args...)
		_, sendKB, err := runWatched(client)
		if err != nil {
			return loopResult{}, err
		}
		secs := time.Since(start).Seconds()
		// sshd -d exits (with status 255) once its connection closed.
		if err := waitExit(ctx, srv); err != nil {
			return loopResult{}, fmt.Errorf("sshd: %w", err)
		}
		return loopResult{seconds: secs, transport: "ssh",
			cpuSend: cpuSeconds(client.ProcessState), cpuRecv: cpuSeconds(srv.cmd.ProcessState),
			rssSendKB: sendKB, rssRecvKB: srvPeak()}, nil
	}
	return c
}

// crocCell runs croc through a croc relay of its own on loopback, the way
// croc moves files when a relay is reachable. The relay starts before the
// clock, as a public relay would be running already; its CPU time counts on
// the receiving side.
func (e *loopEnv) crocCell(bin string) loopCell {
	c := loopCell{key: "croc", baseline: true}
	bin, err := findCroc(bin)
	if err != nil {
		c.skip = err
		return c
	}
	if out, err := exec.Command(bin, "--version").Output(); err == nil {
		c.key = strings.TrimSpace(string(out)) // "croc version 10.7.0"
		c.key = strings.Replace(c.key, " version ", " ", 1)
	}
	c.run = func(ctx context.Context, _ loopWorkload, src, dst string) (loopResult, error) {
		ports, err := freePorts(5)
		if err != nil {
			return loopResult{}, err
		}
		relay, err := startCrocRelay(ctx, bin, ports)
		if err != nil {
			return loopResult{}, err
		}
		defer relay.kill()
		secret := make([]byte, 8)
		rand.Read(secret)
		env := append(os.Environ(), "CROC_SECRET=ferrybench-"+hex.EncodeToString(secret))
		common := []string{"--relay", "127.0.0.1:" + ports[0], "--yes"}
		start := time.Now()
		// The receiver may only come once the sender holds its room at the
		// relay (else "could not secure channel"): in debug mode the sender
		// logs the relay's banner then.
		sendCmd := exec.CommandContext(ctx, bin, append(append([]string{"--debug"}, common...), "send", "--no-local", src)...)
		sendCmd.Env = env
		sender, err := startServer(ctx, sendCmd, "banner:", true)
		if err != nil {
			return loopResult{}, fmt.Errorf("croc send: %w", err)
		}
		defer sender.kill()
		sendPeak := watchPeak(sender.cmd.Process.Pid)
		recv := exec.CommandContext(ctx, bin, append(common, "--out", dst)...)
		recv.Env = env
		_, recvKB, err := runWatched(recv)
		if err != nil {
			return loopResult{}, err
		}
		if err := waitExit(ctx, sender); err != nil {
			return loopResult{}, fmt.Errorf("croc send: %w", err)
		}
		secs := time.Since(start).Seconds()
		if sender.werr != nil {
			return loopResult{}, fmt.Errorf("croc send: %v: %s", sender.werr, lastLines(sender.stderr.String(), 3))
		}
		relay.kill()
		return loopResult{seconds: secs, transport: "relay",
			cpuSend: cpuSeconds(sender.cmd.ProcessState), cpuRecv: cpuSeconds(recv.ProcessState),
			cpuOther:  cpuSeconds(relay.cmd.ProcessState),
			rssSendKB: sendPeak(), rssRecvKB: recvKB}, nil
	}
	return c
}

// findCroc returns the croc binary to run: given, in PATH, or where `go
// install github.com/schollz/croc/v10@VERSION` puts it.
func findCroc(given string) (string, error) {
	if given != "" {
		if _, err := os.Stat(given); err != nil {
			return "", err
		}
		return given, nil
	}
	if p, err := exec.LookPath("croc"); err == nil {
		return p, nil
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "croc")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("croc not installed (the newest is 11.2.5: scripts/install-croc.sh, or --croc)")
}

// startCrocRelay starts `croc relay` on ports and waits until it listens on
// all of them.
func startCrocRelay(ctx context.Context, bin string, ports []string) (*server, error) {
	cmd := exec.CommandContext(ctx, bin, "relay", "--host", "127.0.0.1", "--ports", strings.Join(ports, ","))
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	s := &server{cmd: cmd, done: make(chan struct{}), scanned: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.werr = cmd.Wait()
		pw.Close()
		close(s.done)
	}()
	ready := make(chan struct{})
	go func() {
		defer close(s.scanned)
		sc := bufio.NewScanner(pr)
		n := 0
		for sc.Scan() {
			if strings.Contains(sc.Text(), "starting TCP server") {
				if n++; n == len(ports) {
					close(ready)
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case <-ready:
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("croc relay exited: %v", s.werr)
	case <-ctx.Done():
		s.kill()
		return nil, ctx.Err()
	}
}

// runWatched runs cmd like runCmd and also returns its peak RSS in KiB
// (watchPeak).
func runWatched(cmd *exec.Cmd) ([]byte, int64, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	peak := watchPeak(cmd.Process.Pid)
	err := cmd.Wait()
	kb := peak()
	if err != nil {
		return stdout.Bytes(), kb, fmt.Errorf("%s: %v: %s", filepath.Base(cmd.Args[0]), err, oneLine(stderr.String()))
	}
	return stdout.Bytes(), kb, nil
}

// waitExit waits up to 30 s for a server process to exit by itself.
func waitExit(ctx context.Context, s *server) error {
	select {
	case <-s.done:
		<-s.scanned
		return nil
	case <-time.After(30 * time.Second):
		s.kill()
		return errors.New("did not exit after the transfer")
	case <-ctx.Done():
		s.kill()
		return ctx.Err()
	}
}

// freePorts returns n TCP ports that were free on 127.0.0.1 a moment ago,
// for servers that cannot listen on port 0 and report the port.
func freePorts(n int) ([]string, error) {
	var ports []string
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	return ports, nil
}

// filesIn lists the regular files directly inside dir.
func filesIn(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files, nil
}
