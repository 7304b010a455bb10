// Command anywhere-eval measures NAT-traversal engines in Ferry's NAT lab
// (internal/netlab.NewNAT) for docs/beyond-the-lan.md. It is a module of
// its own so that neither engine enters Ferry's go.mod before one is
// chosen. Run as root: `go run . lab` builds each lab, starts the servers
// in the lab's internet namespace and the two peers behind their NATs (this
// same binary, re-executed inside the namespaces), and prints one line per
// case. Environment: EVAL_ONLY=text runs the cases whose "NATs engine"
// line contains text; EVAL_VERBOSE=1 prints the peers' and servers' output;
// EVAL_TCPDUMP=prefix captures RouterA's two sides (needs tcpdump).
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// result is what a dialling peer prints as its last line (JSON).
type result struct {
	Engine    string  `json:"engine"`
	Path      string  `json:"path"`               // "direct", "relayed" or "none"
	Detail    string  `json:"detail,omitempty"`   // the engine's own words for the path
	Connect   float64 `json:"connect_s"`          // seconds until the path carried data
	MBps      float64 `json:"mb_per_s,omitempty"` // one stream, Bytes moved
	Bytes     int64   `json:"bytes,omitempty"`    // moved over the path
	Err       string  `json:"error,omitempty"`
	UserSysMs int64   `json:"cpu_ms,omitempty"` // this process's user+sys
}

func (r result) print() {
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
}

// exchange writes this side's blob to dir/me and waits for dir/peer: the
// lab's stand-in for a rendezvous channel (processes in different
// namespaces share the file system).
func exchange(ctx context.Context, dir, me, peer string, blob any) ([]byte, error) {
	b, err := json.Marshal(blob)
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, me+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, me)); err != nil {
		return nil, err
	}
	return waitFile(ctx, filepath.Join(dir, peer))
}

func waitFile(ctx context.Context, name string) ([]byte, error) {
	for {
		b, err := os.ReadFile(name)
		if err == nil {
			return b, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s: %w", name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func tlsPair() (*tls.Config, *tls.Config) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"ferry"}}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	srv := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, NextProtos: []string{"ferry-eval"}}
	cli := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"ferry-eval"}} // the eval measures paths, not authentication
	return srv, cli
}

// pump writes n bytes of zeros to w.
func pump(w io.Writer, n int64) error {
	buf := make([]byte, 64<<10)
	for n > 0 {
		m := int64(len(buf))
		if m > n {
			m = n
		}
		k, err := w.Write(buf[:m])
		if err != nil {
			return err
		}
		n -= int64(k)
	}
	return nil
}
