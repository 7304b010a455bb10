package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ferrydrop/ferry/internal/netlab"
	"github.com/quic-go/quic-go"
)

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: anywhere-eval lab [-bytes N] | (the roles the lab starts)")
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	side := fs.String("side", "a", "a (dials, sends) or b (listens, receives)")
	dir := fs.String("dir", "", "rendezvous folder shared by the peers")
	server := fs.String("server", "7.0.0.1:3478", "STUN/TURN server")
	listen := fs.String("listen", "/ip4/7.0.0.1/udp/4001/quic-v1", "relay listen address")
	infinite := fs.Bool("infinite", false, "relay without per-circuit limits")
	n := fs.Int64("bytes", 256<<20, "bytes to move")
	shared := fs.Bool("shared", false, "ice-peer: ICE and QUIC share one UDP socket")
	fs.Parse(os.Args[2:])
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var r result
	switch os.Args[1] {
	case "lab":
		if err := lab(*n); err != nil {
			log.Fatal(err)
		}
		return
	case "ice-peer":
		r = icePeer(ctx, *side, *dir, *server, *n, *shared)
	case "p2p-peer":
		r = p2pPeer(ctx, *side, *dir, *n)
	case "p2p-relay":
		ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer cancel()
		if err := p2pRelay(ctx, *dir, *listen, *infinite); err != nil {
			log.Fatal(err)
		}
		return
	case "quic-peer":
		r = quicPeer(ctx, *side, *dir, *n)
	default:
		log.Fatalf("unknown role %q", os.Args[1])
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	r.UserSysMs = (ru.Utime.Nano() + ru.Stime.Nano()) / 1e6
	r.print()
}

// quicPeer is the baseline: plain quic-go from host A to a server in the
// internet namespace (through A's NAT), no engine in between.
func quicPeer(ctx context.Context, side, dir string, n int64) result {
	res := result{Engine: "quic-go alone", Path: "direct", Detail: "host A -> internet server through A's NAT"}
	srvTLS, cliTLS := tlsPair()
	if side == "b" {
		ln, err := quic.ListenAddr("7.0.0.1:4500", srvTLS, nil)
		if err != nil {
			res.Err = err.Error()
			return res
		}
		defer ln.Close()
		if _, err := exchange(ctx, dir, "quic-b", "quic-b", "up"); err != nil {
			res.Err = err.Error()
			return res
		}
		qc, err := ln.Accept(ctx)
		if err == nil {
			var st *quic.Stream
			if st, err = qc.AcceptStream(ctx); err == nil {
				res.Bytes, err = io.Copy(io.Discard, st)
				st.Close()
				<-qc.Context().Done()
			}
		}
		if err != nil {
			res.Err = err.Error()
		}
		return res
	}
	start := time.Now()
	if _, err := waitFile(ctx, dir+"/quic-b"); err != nil {
		res.Err = err.Error()
		return res
	}
	qc, err := quic.DialAddr(ctx, "7.0.0.1:4500", cliTLS, nil)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	st, err := qc.OpenStreamSync(ctx)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	res.Connect = time.Since(start).Seconds()
	t0 := time.Now()
	if err := pump(st, n); err != nil {
		res.Err = err.Error()
		return res
	}
	st.Close()
	io.Copy(io.Discard, st)
	res.Bytes = n
	res.MBps = float64(n) / 1e6 / time.Since(t0).Seconds()
	qc.CloseWithError(0, "")
	return res
}

// lab runs every case in a fresh NAT lab and prints one line per case.
func lab(n int64) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	kinds := []struct{ a, b netlab.NATKind }{
		{netlab.EndpointIndependent, netlab.EndpointIndependent},
		{netlab.EndpointIndependent, netlab.PortRandom},
		{netlab.PortRandom, netlab.PortRandom},
	}
	for _, k := range kinds {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		l, err := netlab.NewNAT(ctx, netlab.NATConfig{A: k.a, B: k.b})
		if err != nil {
			cancel()
			return err
		}
		defer cancel()
		defer l.Close()
		name := fmt.Sprintf("A %v, B %v", k.a, k.b)
		for _, c := range []struct {
			engine string
			infra  [][]string
			peer   string
		}{
			{"quic-go alone", nil, "quic-peer"},
			{"pion/ice + coturn", [][]string{{"turnserver", "-n", "--listening-ip=7.0.0.1", "--relay-ip=7.0.0.1", "--listening-port=3478",
				"--lt-cred-mech", "--user=ferry:ferry", "--realm=ferry.lab", "--no-tls", "--no-dtls", "--no-cli", "--fingerprint",
				"--log-file=stdout", "--verbose", "--min-port=50000", "--max-port=50999"}}, "ice-peer"},
			{"pion/ice + coturn, shared socket", [][]string{{"turnserver", "-n", "--listening-ip=7.0.0.1", "--relay-ip=7.0.0.1", "--listening-port=3478",
				"--lt-cred-mech", "--user=ferry:ferry", "--realm=ferry.lab", "--no-tls", "--no-dtls", "--no-cli", "--fingerprint",
				"--log-file=stdout", "--verbose", "--min-port=50000", "--max-port=50999"}}, "ice-peer -shared"},
			{"go-libp2p (relay limits default)", [][]string{{self, "p2p-relay"}}, "p2p-peer"},
			{"go-libp2p (relay unlimited)", [][]string{{self, "p2p-relay", "-infinite"}}, "p2p-peer"},
		} {
			if c.peer == "quic-peer" && k.b != netlab.EndpointIndependent {
				continue // the baseline does not depend on B
			}
			if f := os.Getenv("EVAL_ONLY"); f != "" && !strings.Contains(name+" "+c.engine, f) {
				continue
			}
			dir, _ := os.MkdirTemp("", "anywhere-eval-")
			var infra []*exec.Cmd
			for _, argv := range c.infra {
				if argv[0] == self {
					argv = append(argv, "-dir", dir)
				}
				cmd := l.Command(ctx, netlab.Internet, argv[0], argv[1:]...)
				if os.Getenv("EVAL_VERBOSE") != "" {
					cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
				}
				if err := cmd.Start(); err != nil {
					return fmt.Errorf("%s: %w", argv[0], err)
				}
				infra = append(infra, cmd)
			}
			if strings.HasPrefix(c.peer, "ice-peer") {
				waitUDP(ctx, l, "7.0.0.1:3478")
			}
			if f := os.Getenv("EVAL_TCPDUMP"); f != "" {
				for _, ifc := range []string{"lan", "wan"} {
					td := l.Command(ctx, netlab.RouterA, "tcpdump", "-n", "-i", ifc, "-w", f+"-"+ifc+".pcap", "udp")
					td.Start()
					defer td.Process.Signal(syscall.SIGTERM)
				}
				time.Sleep(300 * time.Millisecond)
			}
			peers := map[string]*exec.Cmd{}
			outs := map[string]*bytes.Buffer{}
			for _, side := range []string{"b", "a"} {
				role := netlab.HostA
				if side == "b" {
					role = netlab.HostB
				}
				if c.peer == "quic-peer" && side == "b" {
					role = netlab.Internet
				}
				args := append(strings.Fields(c.peer), "-side", side, "-dir", dir, "-bytes", fmt.Sprint(n))
				cmd := l.Command(ctx, role, self, args...)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					return err
				}
				peers[side], outs[side] = cmd, &out
			}
			peers["a"].Wait()
			peers["b"].Wait()
			for _, cmd := range infra {
				cmd.Process.Signal(syscall.SIGTERM)
				cmd.Wait()
			}
			r := lastResult(outs["a"].String())
			fmt.Printf("%-22s | %-32s | %-7s | connect %5.2f s | %7.1f MB/s | cpu %5d ms | %s %s\n",
				name, c.engine, r.Path, r.Connect, r.MBps, r.UserSysMs, r.Detail, r.Err)
			if os.Getenv("EVAL_VERBOSE") != "" {
				fmt.Println(outs["a"].String(), outs["b"].String())
			}
			os.RemoveAll(dir)
		}
		l.Close()
		cancel()
	}
	return nil
}

func lastResult(out string) result {
	var r result
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var x result
		if json.Unmarshal(sc.Bytes(), &x) == nil && x.Engine != "" {
			r = x
		}
	}
	if r.Engine == "" {
		r.Path = "none"
		r.Err = "no result: " + strings.TrimSpace(out[max(0, len(out)-400):])
	}
	return r
}

// waitUDP waits until something answers a STUN binding request at addr
// (coturn is up).
func waitUDP(ctx context.Context, l *netlab.NAT, addr string) {
	c, err := l.ListenUDP(netlab.Internet, netip.MustParseAddrPort("7.0.0.2:0"))
	if err != nil {
		return
	}
	defer c.Close()
	req := []byte{0, 1, 0, 0, 0x21, 0x12, 0xa4, 0x42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	buf := make([]byte, 1500)
	for ctx.Err() == nil {
		c.WriteToUDPAddrPort(req, netip.MustParseAddrPort(addr))
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, _, err := c.ReadFromUDPAddrPort(buf); err == nil {
			return
		}
	}
}
