package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/zeebo/blake3"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/internal/directio"
	"github.com/ferrydrop/ferry/internal/fileio"
)

func init() {
	register(command{name: "ceiling-server", summary: "(internal) the receiving end of a bare-stream ceiling run", run: runCeilingServer})
	register(command{name: "ceiling", summary: "one bare TLS or QUIC stream run on loopback, memory to memory", run: runCeilingCmd})
}

// ceilingSpec says what a bare-stream ceiling run moves and how.
type ceilingSpec struct {
	proto string // "tls" or "quic"
	bytes int64
	conns int  // parallel connections, one stream each, bytes split evenly
	hash  bool // BLAKE3 every byte on both sides, as Ferry's integrity check must
	// files, when set, is a folder: the sender reads the bytes from
	// files/src and the receiver writes them to files/dst-N, in 1 MiB blocks
	// the way Ferry does (package fileio), the file work Ferry cannot skip.
	files string
}

func (s ceilingSpec) args() []string {
	return []string{"--proto", s.proto, "--bytes", strconv.FormatInt(s.bytes, 10),
		"--conns", strconv.Itoa(s.conns), "--hash=" + strconv.FormatBool(s.hash), "--files", s.files}
}

// base is where connection i's share starts in the source file.
func (s ceilingSpec) base(i int) int64 {
	if i == 0 {
		return 0
	}
	return int64(i)*(s.bytes/int64(s.conns)) + s.bytes%int64(s.conns)
}

// share is how many bytes connection i moves.
func (s ceilingSpec) share(i int) int64 {
	n := s.bytes / int64(s.conns)
	if i == 0 {
		n += s.bytes % int64(s.conns)
	}
	return n
}

func ceilingFlags(fs *flag.FlagSet, s *ceilingSpec) {
	fs.StringVar(&s.proto, "proto", "quic", "tls or quic")
	fs.IntVar(&s.conns, "conns", 1, "parallel connections (one stream each)")
	fs.BoolVar(&s.hash, "hash", false, "BLAKE3 every byte on both sides")
	fs.StringVar(&s.files, "files", "", "read from and write to real files in this `DIR`, as Ferry does (package fileio)")
}

// runCeilingCmd runs one bare-stream ceiling by itself, e.g. to profile it or
// to measure its CPU cost next to Ferry's.
func runCeilingCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ceiling", flag.ContinueOnError)
	var spec ceilingSpec
	ceilingFlags(fs, &spec)
	mib := fs.Int64("mib", 1024, "MiB to move")
	if err := fs.Parse(args); err != nil {
		return err
	}
	spec.bytes = *mib << 20
	if spec.conns < 1 {
		return errors.New("--conns must be at least 1")
	}
	if spec.files != "" {
		// A folder of our own inside the one given: it is removed afterwards.
		dir, err := os.MkdirTemp(spec.files, "ferry-ceiling-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		spec.files = dir
		if err := ceilingSource(dir, spec.bytes); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	r, err := runCeiling(ctx, self, spec)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s x%d hash=%v files=%v: %.0f MB/s, %.2f s, receiver peak RSS %d KiB\n",
		spec.proto, spec.conns, spec.hash, spec.files != "", r.mbps, r.seconds, r.rssRecvKB)
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

func ceilingUDP() (*net.UDPConn, error) {
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	uc.SetReadBuffer(4 << 20)
	uc.SetWriteBuffer(4 << 20)
	return uc, nil
}

// runCeilingServer accepts spec.conns streams, reads each one's share and
// answers one byte on each.
func runCeilingServer(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ceiling-server", flag.ContinueOnError)
	var spec ceilingSpec
	ceilingFlags(fs, &spec)
	fs.Int64Var(&spec.bytes, "bytes", 0, "bytes to read")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tlsConf, err := ceilingTLS(true)
	if err != nil {
		return err
	}
	var accept func() (io.ReadWriter, error)
	switch spec.proto {
	case "tls":
		ln, err := tls.Listen("tcp", "127.0.0.1:0", tlsConf)
		if err != nil {
			return err
		}
		defer ln.Close()
		fmt.Fprintf(out, "addr=%s\n", ln.Addr())
		accept = func() (io.ReadWriter, error) { return ln.Accept() }
	case "quic":
		uc, err := ceilingUDP()
		if err != nil {
			return err
		}
		tr := &quic.Transport{Conn: uc}
		defer tr.Close()
		ln, err := tr.Listen(tlsConf, quicCeilingConfig())
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "addr=%s\n", uc.LocalAddr())
		accept = func() (io.ReadWriter, error) {
			c, err := ln.Accept(ctx)
			if err != nil {
				return nil, err
			}
			return c.AcceptStream(ctx)
		}
	default:
		return fmt.Errorf("unknown proto %q", spec.proto)
	}
	errs := make(chan error, spec.conns)
	for i := range spec.conns {
		rw, err := accept()
		if err != nil {
			return err
		}
		go func() { errs <- ceilingRead(rw, spec, i) }()
	}
	for range spec.conns {
		if err := <-errs; err != nil {
			return err
		}
	}
	// Let the answers leave before the process (and its sockets) goes.
	time.Sleep(100 * time.Millisecond)
	return nil
}

// ceilingRead reads connection i's share (hashing it and writing it to a
// file if asked) and answers one byte.
func ceilingRead(rw io.ReadWriter, spec ceilingSpec, i int) error {
	n := spec.share(i)
	if spec.files == "" {
		var dst io.Writer = io.Discard
		if spec.hash {
			dst = blake3.New()
		}
		buf := make([]byte, 256<<10)
		if _, err := io.CopyBuffer(dst, io.LimitReader(rw, n), buf); err != nil {
			return err
		}
	} else {
		f, err := os.Create(filepath.Join(spec.files, "dst-"+strconv.Itoa(i)))
		if err != nil {
			return err
		}
		defer f.Close()
		out := fileio.NewWriter(f, fileio.Auto)
		defer out.Close()
		if err := out.Reserve(n); err != nil {
			return err
		}
		h := blake3.New()
		buf := directio.Buffer(1 << 20)
		for off := int64(0); off < n; {
			b := buf[:min(int64(len(buf)), n-off)]
			if _, err := io.ReadFull(rw, b); err != nil {
				return err
			}
			if spec.hash {
				h.Write(b)
			}
			if _, err := out.WriteAt(b, off); err != nil {
				return err
			}
			off += int64(len(b))
		}
	}
	_, err := rw.Write([]byte{1})
	return err
}

// ceilingSource writes the file a --files ceiling run sends.
func ceilingSource(dir string, n int64) error {
	f, err := os.Create(filepath.Join(dir, "src"))
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	rand.Read(buf)
	for left := n; left > 0; left -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(left, int64(len(buf)))]); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runCeiling moves spec.bytes over bare streams to a child process.
func runCeiling(ctx context.Context, self string, spec ceilingSpec) (loopResult, error) {
	if spec.conns < 1 {
		spec.conns = 1
	}
	srv := exec.CommandContext(ctx, self, append([]string{"ceiling-server"}, spec.args()...)...)
	sout, err := srv.StdoutPipe()
	if err != nil {
		return loopResult{}, err
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return loopResult{}, err
	}
	defer srv.Process.Kill()
	srvPeak := watchPeak(srv.Process.Pid)
	line, err := bufio.NewReader(sout).ReadString('\n')
	if err != nil {
		return loopResult{}, fmt.Errorf("ceiling server: %w", err)
	}
	addr := strings.TrimSpace(strings.TrimPrefix(line, "addr="))
	tlsConf, err := ceilingTLS(false)
	if err != nil {
		return loopResult{}, err
	}
	start, cpu0 := time.Now(), selfCPU()
	errs := make(chan error, spec.conns)
	for i := range spec.conns {
		go func() { errs <- ceilingSend(ctx, addr, tlsConf, spec, i) }()
	}
	for range spec.conns {
		if err := <-errs; err != nil {
			return loopResult{}, err
		}
	}
	secs, cpuSend := time.Since(start).Seconds(), selfCPU()-cpu0
	err = srv.Wait()
	recvKB := srvPeak()
	if err != nil && !errors.Is(err, context.Canceled) {
		return loopResult{}, err
	}
	// The sending side is this process, which does nothing else meanwhile.
	return loopResult{seconds: secs, mbps: float64(spec.bytes) / secs / 1e6, rssRecvKB: recvKB,
		cpuSend: cpuSend, cpuRecv: cpuSeconds(srv.ProcessState)}, nil
}

// ceilingSend dials one connection, writes n bytes on one stream (hashing
// each buffer first if asked) and waits for the answer.
func ceilingSend(ctx context.Context, addr string, tlsConf *tls.Config, spec ceilingSpec, i int) error {
	proto, n, hash := spec.proto, spec.share(i), spec.hash
	var src *fileio.Reader
	if spec.files != "" {
		f, err := os.Open(filepath.Join(spec.files, "src"))
		if err != nil {
			return err
		}
		defer f.Close()
		src = fileio.NewReader(f, fileio.Auto)
		defer src.Close()
	}
	var rw io.ReadWriter
	switch proto {
	case "tls":
		c, err := tls.Dial("tcp", addr, tlsConf)
		if err != nil {
			return err
		}
		defer c.Close()
		rw = c
	case "quic":
		ra, err := net.ResolveUDPAddr("udp", addr)
		if err != nil {
			return err
		}
		uc, err := ceilingUDP()
		if err != nil {
			return err
		}
		tr := &quic.Transport{Conn: uc}
		defer tr.Close()
		c, err := tr.Dial(ctx, ra, tlsConf, quicCeilingConfig())
		if err != nil {
			return err
		}
		defer c.CloseWithError(0, "")
		s, err := c.OpenStreamSync(ctx)
		if err != nil {
			return err
		}
		rw = s
	default:
		return fmt.Errorf("unknown proto %q", proto)
	}
	h := blake3.New()
	buf := directio.Buffer(1 << 20)
	for left := n; left > 0; {
		k := min(left, int64(len(buf)))
		if src != nil {
			if _, err := src.ReadAt(buf[:k], spec.base(i)+n-left); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
		}
		if hash {
			h.Write(buf[:k])
		}
		if _, err := rw.Write(buf[:k]); err != nil {
			return err
		}
		left -= k
	}
	var ack [1]byte
	if _, err := io.ReadFull(rw, ack[:]); err != nil {
		return fmt.Errorf("no acknowledgement: %w", err)
	}
	return nil
}
