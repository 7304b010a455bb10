package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"time"
)

// wormholeCell runs magic-wormhole (`wormhole send` / `wormhole receive`)
// through a mailbox server and transit relay that are already running, as
// the public ones are for its users: --wormhole-relay and
// --wormhole-transit name them (`twist wormhole-mailbox`, `twist
// transitrelay`, both on loopback). Neither server's CPU is counted: on
// loopback the two sides connect directly, the transit relay is only a
// fallback, and the mailbox carries a few small messages.
//
// A workload of one file sends that file; more files, or a tree, send the
// source folder, which wormhole zips on the way (its default for a folder)
// and the receiver unpacks into its working folder.
func (e *loopEnv) wormholeCell(o loopOptions) loopCell {
	c := loopCell{key: "wormhole", baseline: true}
	bin, err := exec.LookPath("wormhole")
	if err != nil {
		c.skip = errors.New("magic-wormhole not installed (`wormhole` not in PATH)")
		return c
	}
	if o.wormholeRelay == "" {
		c.skip = errors.New("needs a mailbox server: --wormhole-relay ws://127.0.0.1:4000/v1 (and --wormhole-transit)")
		return c
	}
	if err := reachable(o.wormholeRelay); err != nil {
		c.skip = fmt.Errorf("mailbox server %s: %w", o.wormholeRelay, err)
		return c
	}
	if out, err := exec.Command(bin, "--version").Output(); err == nil {
		c.key = strings.TrimSpace(string(out)) // "magic-wormhole 0.24.0"
		c.key = strings.Replace(c.key, "magic-wormhole", "wormhole", 1)
	}
	common := []string{"--relay-url", o.wormholeRelay}
	if o.wormholeTransit != "" {
		common = append(common, "--transit-helper", o.wormholeTransit)
	}
	c.run = func(ctx context.Context, w loopWorkload, src, dst string) (loopResult, error) {
		what := src
		if w.tree == 0 && w.files == 1 {
			files, err := filesIn(src)
			if err != nil {
				return loopResult{}, err
			}
			if len(files) != 1 {
				return loopResult{}, fmt.Errorf("%d files in %s, want 1", len(files), src)
			}
			what = files[0]
		}
		code, err := wormholeCode()
		if err != nil {
			return loopResult{}, err
		}
		start := time.Now()
		sendCmd := exec.CommandContext(ctx, bin, append(append([]string{}, common...), "send", "--code", code, what)...)
		sender, err := startServer(ctx, sendCmd, "Wormhole code is", true)
		if err != nil {
			return loopResult{}, fmt.Errorf("wormhole send: %w", err)
		}
		defer sender.kill()
		sendPeak := watchPeak(sender.cmd.Process.Pid)
		recv := exec.CommandContext(ctx, bin, append(append([]string{}, common...), "receive", "--accept-file", code)...)
		recv.Dir = dst
		_, recvKB, err := runWatched(recv)
		if err != nil {
			return loopResult{}, err
		}
		if err := waitExit(ctx, sender); err != nil {
			return loopResult{}, fmt.Errorf("wormhole send: %w", err)
		}
		secs := time.Since(start).Seconds()
		if sender.werr != nil {
			return loopResult{}, fmt.Errorf("wormhole send: %v: %s", sender.werr, lastLines(sender.stderr.String(), 3))
		}
		return loopResult{seconds: secs, transport: "tcp",
			cpuSend: cpuSeconds(sender.cmd.ProcessState), cpuRecv: cpuSeconds(recv.ProcessState),
			rssSendKB: sendPeak(), rssRecvKB: recvKB}, nil
	}
	return c
}

// wormholeCode makes a code no earlier run used: a nameplate a mailbox
// server still holds from a run that failed would answer "crowded".
func wormholeCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(900000))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d-ferry-bench", 100000+n.Int64()), nil
}

// reachable says whether a ws:// or tcp: server address takes a TCP
// connection.
func reachable(addr string) error {
	host := addr
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		host = u.Host
	} else if parts := strings.Split(addr, ":"); len(parts) == 3 { // tcp:HOST:PORT
		host = net.JoinHostPort(parts[1], parts[2])
	}
	conn, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err != nil {
		return err
	}
	return conn.Close()
}
