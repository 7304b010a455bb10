package main

// The "lab-tls" helper is the TLS-over-TCP baseline of the lab suite: one
// TCP connection, TLS 1.3, files framed back to back, with the congestion
// control chosen through TCP_CONGESTION. The lab runs it as two processes,
// one per namespace.

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/ferrydrop/ferry/internal/stallmeter"
)

func init() {
	register(command{
		name:    "lab-tls",
		summary: "(internal) TLS-over-TCP baseline sender/receiver run by `lab`",
		run:     runLabTLS,
	})
}

// tlsResult is what either side of lab-tls prints as one JSON line when done.
type tlsResult struct {
	Bytes            int64   `json:"bytes"`
	Files            int     `json:"files"`
	Seconds          float64 `json:"duration_seconds"`
	FirstFileSeconds float64 `json:"first_file_seconds,omitempty"`
	CC               string  `json:"cc"`
	// Stalls of the one stream, by the rule Ferry's receiver uses.
	Stalls *stallmeter.Stats `json:"stalls,omitempty"`
}

func runLabTLS(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: lab-tls recv|send [flags]")
	}
	fs := flag.NewFlagSet("lab-tls "+args[0], flag.ContinueOnError)
	cc := fs.String("cc", "", "TCP congestion control (cubic, bbr, ...); empty keeps the kernel default")
	switch args[0] {
	case "recv":
		listen := fs.String("listen", "", "address to listen on")
		dir := fs.String("dir", "", "directory to write the files into")
		rtt := fs.Duration("rtt", 0, "the path's RTT, for the stall threshold (0: count no stalls)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return tlsRecv(ctx, *listen, *dir, *rtt, out)
	case "send":
		to := fs.String("to", "", "receiver address")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return tlsSend(ctx, *to, *cc, fs.Args(), out)
	}
	return fmt.Errorf("lab-tls: unknown mode %q", args[0])
}

// selfSigned makes a throwaway certificate: the baseline measures transport
// cost, not authentication, and the client does not verify it.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func tlsRecv(ctx context.Context, listen, dir string, rtt time.Duration, out io.Writer) error {
	cert, err := selfSigned()
	if err != nil {
		return fmt.Errorf("lab-tls recv: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("lab-tls recv: %w", err)
	}
	defer root.Close()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", listen)
	if err != nil {
		return fmt.Errorf("lab-tls recv: %w", err)
	}
	defer ln.Close()
	fmt.Fprintf(out, "listening %s\n", ln.Addr())
	if f, ok := out.(*os.File); ok {
		f.Sync()
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	raw, err := ln.Accept()
	if err != nil {
		return fmt.Errorf("lab-tls recv: accept: %w", err)
	}
	start := time.Now()
	conn := tls.Server(raw, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
	defer conn.Close()
	stopConn := context.AfterFunc(ctx, func() { conn.Close() })
	defer stopConn()
	var meter *stallmeter.Meter
	if rtt > 0 {
		meter = stallmeter.New(stallmeter.Threshold(rtt))
	} else {
		meter = stallmeter.New(0)
	}
	br := bufio.NewReaderSize(meter.Reader(conn), 256<<10)
	res := tlsResult{}
	for {
		var nl [2]byte
		if _, err := io.ReadFull(br, nl[:]); err != nil {
			return fmt.Errorf("lab-tls recv: header: %w", err)
		}
		n := binary.BigEndian.Uint16(nl[:])
		if n == 0 {
			break
		}
		hdr := make([]byte, int(n)+8)
		if _, err := io.ReadFull(br, hdr); err != nil {
			return fmt.Errorf("lab-tls recv: header: %w", err)
		}
		name := filepath.Base(string(hdr[:n]))
		size := int64(binary.BigEndian.Uint64(hdr[n:]))
		f, err := root.Create(name)
		if err != nil {
			return fmt.Errorf("lab-tls recv: %w", err)
		}
		_, err = io.CopyN(f, br, size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("lab-tls recv: %s: %w", name, err)
		}
		res.Files++
		res.Bytes += size
		if res.Files == 1 {
			res.FirstFileSeconds = time.Since(start).Seconds()
		}
	}
	res.Seconds = time.Since(start).Seconds()
	if rtt > 0 {
		st := meter.Stats()
		res.Stalls = &st
	}
	if _, err := conn.Write([]byte{1}); err != nil {
		return fmt.Errorf("lab-tls recv: ack: %w", err)
	}
	return json.NewEncoder(out).Encode(res)
}

func tlsSend(ctx context.Context, to, cc string, paths []string, out io.Writer) error {
	start := time.Now()
	d := &net.Dialer{Control: setCC(cc)}
	raw, err := d.DialContext(ctx, "tcp", to)
	if err != nil {
		return fmt.Errorf("lab-tls send: %w", err)
	}
	// Not verified on purpose: a throwaway certificate in a lab.
	conn := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	bw := bufio.NewWriterSize(conn, 256<<10)
	res := tlsResult{CC: cc}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("lab-tls send: %w", err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("lab-tls send: %w", err)
		}
		name := filepath.Base(p)
		hdr := binary.BigEndian.AppendUint16(nil, uint16(len(name)))
		hdr = append(hdr, name...)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(st.Size()))
		if _, err := bw.Write(hdr); err != nil {
			f.Close()
			return fmt.Errorf("lab-tls send: %w", err)
		}
		n, err := io.Copy(bw, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("lab-tls send: %s: %w", p, err)
		}
		res.Bytes += n
		res.Files++
	}
	if _, err := bw.Write([]byte{0, 0}); err != nil {
		return fmt.Errorf("lab-tls send: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("lab-tls send: %w", err)
	}
	var ack [1]byte
	if _, err := io.ReadFull(conn, ack[:]); err != nil {
		return fmt.Errorf("lab-tls send: waiting for the receiver: %w", err)
	}
	res.Seconds = time.Since(start).Seconds()
	return json.NewEncoder(out).Encode(res)
}
