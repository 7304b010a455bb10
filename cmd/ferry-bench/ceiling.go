package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/ferrydrop/ferry/engine/identity"
)

func init() {
	register(command{name: "ceiling-server", summary: "(internal) the receiving end of a bare-stream ceiling run", run: runCeilingServer})
	register(command{name: "ceiling", summary: "one bare TLS or QUIC stream run on loopback, memory to memory", run: runCeilingCmd})
}

// runCeilingCmd runs one bare-stream ceiling by itself, e.g. to profile it or
// to measure its CPU cost next to Ferry's.
func runCeilingCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ceiling", flag.ContinueOnError)
	proto := fs.String("proto", "quic", "tls or quic")
	mib := fs.Int64("mib", 1024, "MiB to move")
	if err := fs.Parse(args); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	r, err := runCeiling(ctx, self, *proto, *mib<<20)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: %.0f MB/s, %.2f s, receiver peak RSS %d KiB\n", *proto, r.mbps, r.seconds, r.rssRecvKB)
	return nil
}

// ceilingTLS gives both ends of a ceiling run a throwaway certificate.
func ceilingTLS(server bool) (*tls.Config, error) {
	dir, err := os.MkdirTemp("", "ferry-ceiling-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	id, err := identity.LoadOrCreate(dir)
	if err != nil {
		return nil, err
	}
	return id.TLSConfig(server, nil), nil
}

// quicCeilingConfig mirrors what the engine asks of quic-go (large windows).
func quicCeilingConfig() *quic.Config {
	return &quic.Config{InitialStreamReceiveWindow: 2 << 20, MaxStreamReceiveWindow: 8 << 20,
		InitialConnectionReceiveWindow: 8 << 20, MaxConnectionReceiveWindow: 32 << 20}
}

// runCeilingServer accepts one stream, reads n bytes, answers one byte.
func runCeilingServer(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ceiling-server", flag.ContinueOnError)
	proto := fs.String("proto", "tls", "tls or quic")
	n := fs.Int64("bytes", 0, "bytes to read")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tlsConf, err := ceilingTLS(true)
	if err != nil {
		return err
	}
	var rw io.ReadWriter
	switch *proto {
	case "tls":
		ln, err := tls.Listen("tcp", "127.0.0.1:0", tlsConf)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "addr=%s\n", ln.Addr())
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		defer c.Close()
		rw = c
	case "quic":
		uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return err
		}
		uc.SetReadBuffer(4 << 20)
		uc.SetWriteBuffer(4 << 20)
		tr := &quic.Transport{Conn: uc}
		ln, err := tr.Listen(tlsConf, quicCeilingConfig())
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "addr=%s\n", uc.LocalAddr())
		c, err := ln.Accept(ctx)
		if err != nil {
			return err
		}
		s, err := c.AcceptStream(ctx)
		if err != nil {
			return err
		}
		defer c.CloseWithError(0, "")
		rw = s
	default:
		return fmt.Errorf("unknown proto %q", *proto)
	}
	if _, err := io.CopyN(io.Discard, rw, *n); err != nil {
		return err
	}
	if _, err := rw.Write([]byte{1}); err != nil {
		return err
	}
	// Let the byte leave before the process (and its socket) goes.
	time.Sleep(100 * time.Millisecond)
	return nil
}

// runCeiling moves n bytes over one bare stream to a child process.
func runCeiling(ctx context.Context, self, proto string, n int64) (loopResult, error) {
	srv := exec.CommandContext(ctx, self, "ceiling-server", "--proto", proto, "--bytes", strconv.FormatInt(n, 10))
	sout, err := srv.StdoutPipe()
	if err != nil {
		return loopResult{}, err
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return loopResult{}, err
	}
	defer srv.Process.Kill()
	line, err := bufio.NewReader(sout).ReadString('\n')
	if err != nil {
		return loopResult{}, fmt.Errorf("ceiling server: %w", err)
	}
	addr := strings.TrimSpace(strings.TrimPrefix(line, "addr="))
	tlsConf, err := ceilingTLS(false)
	if err != nil {
		return loopResult{}, err
	}
	start := time.Now()
	var rw io.ReadWriter
	var done func()
	switch proto {
	case "tls":
		c, err := tls.Dial("tcp", addr, tlsConf)
		if err != nil {
			return loopResult{}, err
		}
		rw, done = c, func() { c.Close() }
	case "quic":
		ra, _ := net.ResolveUDPAddr("udp", addr)
		uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return loopResult{}, err
		}
		uc.SetReadBuffer(4 << 20)
		uc.SetWriteBuffer(4 << 20)
		tr := &quic.Transport{Conn: uc}
		c, err := tr.Dial(ctx, ra, tlsConf, quicCeilingConfig())
		if err != nil {
			return loopResult{}, err
		}
		s, err := c.OpenStreamSync(ctx)
		if err != nil {
			return loopResult{}, err
		}
		rw, done = s, func() { c.CloseWithError(0, ""); tr.Close() }
	}
	defer done()
	buf := make([]byte, 1<<20)
	for left := n; left > 0; {
		k := min(left, int64(len(buf)))
		if _, err := rw.Write(buf[:k]); err != nil {
			return loopResult{}, err
		}
		left -= k
	}
	var ack [1]byte
	if _, err := io.ReadFull(rw, ack[:]); err != nil {
		return loopResult{}, fmt.Errorf("no acknowledgement: %w", err)
	}
	secs := time.Since(start).Seconds()
	if err := srv.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return loopResult{}, err
	}
	return loopResult{seconds: secs, mbps: float64(n) / secs / 1e6, rssRecvKB: loopMaxRSS(srv.ProcessState)}, nil
}
