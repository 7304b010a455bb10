package engine

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/trace"
	"strconv"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/internal/lspeer"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// BenchmarkLocalSend moves the two workloads (1 GiB in one file;
// 500 x 2 MiB) on loopback, in one process: Ferry receiving from the
// independent test peer, Ferry sending to it, and beside them a plain
// net/http HTTPS upload of the same files (files read from and written to
// disk, sequential uploads, nothing hashed on either side: like against
// like). It reports peak-MiB, the process's peak RSS so far (VmHWM, Linux):
// run one sub-benchmark per process to read it for that one; and cpu-s/op,
// the CPU time of both ends. hash-first is what a pass hashing every file
// before the offer would add. plain-https-sha256 is the plain upload with
// the client hashing each file as it uploads it, as Ferry's sender does
// for its sha256 cache: ferry-sends is measured against it. Each workload
// starts from a clean page cache (its source written and synced), so no
// run pays for an earlier one's writeback. FERRY_BUFFERED_IO=1 gives the
// receiving engine Options.BufferedIO, as it does the CLI. Both servers
// trace each upload as a task with its steps as regions: run one
// sub-benchmark with -test.trace FILE and read the per-file steps with
// ferry-bench regions FILE (docs/localsend.md, "Figures").
//
//	go test -run '^$' -bench 'BenchmarkLocalSend/1GiB' -benchtime 1x ./engine
func BenchmarkLocalSend(b *testing.B) {
	for _, w := range []struct {
		name  string
		files int
		size  int64
	}{{"1GiB", 1, 1 << 30}, {"500x2MiB", 500, 2 << 20}} {
		src := b.TempDir()
		var names []string
		buf := make([]byte, 1<<20)
		for i := range buf {
			buf[i] = byte(i*131 + 7)
		}
		for i := range w.files {
			name := fmt.Sprintf("set/f%04d.bin", i)
			path := filepath.Join(src, filepath.FromSlash(name))
			os.MkdirAll(filepath.Dir(path), 0o755)
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			for n := int64(0); n < w.size; n += int64(len(buf)) {
				f.Write(buf[:min(int64(len(buf)), w.size-n)])
			}
			f.Close()
			names = append(names, name)
		}
		total := int64(w.files) * w.size
		testutil.SyncDisks()
		b.Run(w.name+"/plain-https", func(b *testing.B) { benchPlainHTTPS(b, src, names, total, false) })
		b.Run(w.name+"/plain-https-sha256", func(b *testing.B) { benchPlainHTTPS(b, src, names, total, true) })
		b.Run(w.name+"/ferry-receives", func(b *testing.B) { benchFerryReceives(b, src, names, total) })
		b.Run(w.name+"/ferry-sends", func(b *testing.B) { benchFerrySends(b, src, total) })
		b.Run(w.name+"/hash-first", func(b *testing.B) { benchHashFirst(b, src, names, total) })
	}
}

// benchHashFirst is what a pass that hashes every file before the offer
// (to give LocalSend's sha256 without a cache) would add: read and SHA-256
// each file, from the page cache as a send right after it would.
func benchHashFirst(b *testing.B, src string, names []string, total int64) {
	cpu0 := cpuSeconds()
	b.SetBytes(total)
	buf := make([]byte, 1<<20)
	for b.Loop() {
		for _, n := range names {
			f, err := os.Open(filepath.Join(src, filepath.FromSlash(n)))
			if err != nil {
				b.Fatal(err)
			}
			h := sha256.New()
			if _, err := io.CopyBuffer(h, f, buf); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	}
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	peakRSS(b)
}

// cpuSeconds is the CPU time (user and system) this process used so far:
// both ends of each benchmark run in it, so cpu-s/op is what one transfer
// costs both sides, a figure that holds on a loaded machine where the
// wall-clock MB/s do not.
func cpuSeconds() float64 {
	return testutil.CPUTime().Seconds()
}

// peakRSS reports the process's peak resident set (VmHWM) in MiB.
func peakRSS(b *testing.B) {
	s, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(s), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			b.ReportMetric(float64(kb)/1024, "peak-MiB")
		}
	}
}

// benchPlainHTTPS uploads the files one at a time with net/http; with
// hashing the client hashes each file (SHA-256) as it uploads it, as
// Ferry's sender does for its sha256 cache: like against like for
// ferry-sends.
func benchPlainHTTPS(b *testing.B, src string, names []string, total int64, hashing bool) {
	dst := b.TempDir()
	certPEM, keyPEM, err := localsend.NewCertPEM()
	if err != nil {
		b.Fatal(err)
	}
	cert, _ := tls.X509KeyPair(certPEM, keyPEM)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Traced as Ferry's uploads are (localsend.upload and its
		// regions): ferry-bench regions compares the two per file.
		ctx, task := trace.NewTask(r.Context(), "plain.upload")
		defer task.End()
		region := trace.StartRegion(ctx, "plain.create")
		path := filepath.Join(dst, filepath.FromSlash(r.URL.Query().Get("name")))
		os.MkdirAll(filepath.Dir(path), 0o755)
		f, err := os.Create(path)
		region.End()
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		region = trace.StartRegion(ctx, "plain.copy")
		_, err = io.Copy(f, r.Body)
		region.End()
		region = trace.StartRegion(ctx, "plain.close")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		region.End()
		if err != nil {
			http.Error(w, err.Error(), 500)
		}
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go srv.ServeTLS(ln, "", "")
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	cpu0 := cpuSeconds()
	b.SetBytes(total)
	for b.Loop() {
		os.RemoveAll(dst)
		for _, n := range names {
			f, err := os.Open(filepath.Join(src, filepath.FromSlash(n)))
			if err != nil {
				b.Fatal(err)
			}
			st, _ := f.Stat()
			var body io.Reader = f
			h := sha256.New()
			if hashing {
				body = io.TeeReader(f, h)
			}
			req, _ := http.NewRequest(http.MethodPost, "https://"+ln.Addr().String()+"/?name="+n, body)
			req.ContentLength = st.Size()
			resp, err := hc.Do(req)
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatal(resp.Status)
			}
			if hashing {
				h.Sum(nil)
			}
		}
	}
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	peakRSS(b)
}

func benchFerryReceives(b *testing.B, src string, names []string, total int64) {
	e, err := New(Options{ConfigDir: b.TempDir(), DownloadDir: b.TempDir(), Accept: AcceptAll, Listen: "127.0.0.1:0", BufferedIO: os.Getenv("FERRY_BUFFERED_IO") == "1"})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	srv, err := e.AddLocalSend(LocalSendOptions{Listener: ln})
	if err != nil {
		b.Fatal(err)
	}
	p, err := lspeer.New("bench")
	if err != nil {
		b.Fatal(err)
	}
	var files []lspeer.SendFile
	for _, n := range names {
		files = append(files, lspeer.SendFile{Name: n, Path: filepath.Join(src, filepath.FromSlash(n))})
	}
	events, unsub := e.Subscribe(1 << 14)
	defer unsub()
	cpu0 := cpuSeconds()
	b.SetBytes(total)
	for b.Loop() {
		os.RemoveAll(e.DownloadDir())
		os.MkdirAll(e.DownloadDir(), 0o755)
		res, err := p.Send(context.Background(), ln.Addr().String(), srv.Fingerprint(), true, "", "", files, nil)
		if err != nil || res.PrepareStatus != 200 {
			b.Fatalf("%+v %v", res, err)
		}
		for ev := range events {
			if ev.Kind == EventResult && ev.Direction == Receiving {
				if ev.Result.State != StateDone || ev.Result.Verified != len(names) {
					b.Fatalf("%+v", ev.Result)
				}
				break
			}
		}
	}
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	peakRSS(b)
}

func benchFerrySends(b *testing.B, src string, total int64) {
	e, err := New(Options{ConfigDir: b.TempDir(), RetryFor: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	p, err := lspeer.New("bench")
	if err != nil {
		b.Fatal(err)
	}
	dst := b.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	p.SaveDir = dst
	go p.Serve(ln)
	defer p.Close()
	to := LocalSendTarget{Addr: ln.Addr().String(), Fingerprint: p.Fingerprint}
	cpu0 := cpuSeconds()
	b.SetBytes(total)
	for b.Loop() {
		os.RemoveAll(dst)
		tr, err := e.SendLocalSend(context.Background(), to, Items{Paths: []string{filepath.Join(src, "set")}}, LocalSendSendOptions{})
		if err != nil {
			b.Fatal(err)
		}
		<-tr.Done()
		if r := tr.Result(); r.State != StateDone {
			b.Fatalf("%+v", r)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	peakRSS(b)
}
