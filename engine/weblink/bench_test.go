package weblink

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/testutil"
)

// Benchmarks of a link beside a plain file server on loopback, in the same
// run (docs/weblink.md has the figures and the command). The size is 1 GiB
// unless FERRY_BENCH_BYTES says otherwise.

func benchSize(b *testing.B) int64 {
	if s := os.Getenv("FERRY_BENCH_BYTES"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	return 1 << 30
}

// benchFile writes size pseudo-random bytes once per benchmark.
func benchFile(b *testing.B, size int64) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "big.bin")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyN(f, rand.NewChaCha8([32]byte{1}), size); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return p
}

// plainServer serves dir with http.FileServer and takes PUTs into it: the
// baseline.
func plainServer(b *testing.B, dir string) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	fs := http.FileServer(http.Dir(dir))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			f, err := os.Create(filepath.Join(dir, "put.bin"))
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			io.Copy(f, r.Body)
			f.Close()
			w.WriteHeader(http.StatusCreated)
			return
		}
		fs.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func fetch(b *testing.B, u string, want int64) {
	res, err := http.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if err != nil || n != want {
		b.Fatalf("%s: %d bytes, %v", u, n, err)
	}
}

func curl(b *testing.B, args ...string) {
	out, err := exec.Command("curl", append([]string{"-sS", "--fail"}, args...)...).CombinedOutput()
	if err != nil {
		b.Fatalf("curl %v: %v: %s", args, err, out)
	}
}

// downloadPair shares a file of benchSize through a link and a plain file
// server, and returns its size and both URLs.
func downloadPair(b *testing.B) (size int64, link, plain string) {
	size = benchSize(b)
	file := benchFile(b, size)
	s, err := Listen("127.0.0.1:0", Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	l, err := s.Share(context.Background(), []string{file}, ShareOptions{LinkOptions: LinkOptions{MaxDevices: 1}})
	if err != nil {
		b.Fatal(err)
	}
	drain(l)
	return size, base(s) + l.Path() + "f/0/big.bin", plainServer(b, filepath.Dir(file)) + "/big.bin"
}

// BenchmarkDownload fetches one file through a share link and through a
// plain file server, with Go's client and with curl.
func BenchmarkDownload(b *testing.B) {
	size, link, plain := downloadPair(b)
	_, haveCurl := exec.LookPath("curl")
	for _, c := range []struct {
		name string
		run  func()
	}{
		{"weblink/go", func() { fetch(b, link, size) }},
		{"plain/go", func() { fetch(b, plain, size) }},
		{"weblink/curl", func() { curl(b, "-o", "/dev/null", link) }},
		{"plain/curl", func() { curl(b, "-o", "/dev/null", plain) }},
	} {
		if strings.HasSuffix(c.name, "curl") && haveCurl != nil {
			continue
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			cpu := cpuTime()
			for b.Loop() {
				c.run()
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkDownloadPaired fetches the file from the link and from the plain
// server in turns with Go's client, so both see the same load, and reports
// each one's wall and CPU seconds per GiB and their ratios (CPU: client
// and server together, both in this process).
func BenchmarkDownloadPaired(b *testing.B) {
	size, link, plain := downloadPair(b)
	fetch(b, plain, size) // the page cache holds the file for both
	var wall, cpu [2]time.Duration
	b.SetBytes(2 * size)
	for b.Loop() {
		for i, u := range []string{link, plain} {
			t0, c0 := time.Now(), cpuTime()
			fetch(b, u, size)
			wall[i] += time.Since(t0)
			cpu[i] += cpuTime() - c0
		}
	}
	gib := float64(b.N) * float64(size) / (1 << 30)
	b.ReportMetric(wall[0].Seconds()/gib, "link-s/GiB")
	b.ReportMetric(wall[1].Seconds()/gib, "plain-s/GiB")
	b.ReportMetric(cpu[0].Seconds()/gib, "link-cpu-s/GiB")
	b.ReportMetric(cpu[1].Seconds()/gib, "plain-cpu-s/GiB")
	b.ReportMetric(wall[0].Seconds()/wall[1].Seconds(), "wall-link/plain")
	b.ReportMetric(cpu[0].Seconds()/cpu[1].Seconds(), "cpu-link/plain")
}

// BenchmarkUpload sends one file through a receive link with a tus client
// (the page's protocol and chunk size) and as one PUT to a plain server,
// with Go's client and with curl.
func BenchmarkUpload(b *testing.B) {
	size := benchSize(b)
	file := benchFile(b, size)
	plainDir := b.TempDir()
	plain := plainServer(b, plainDir) + "/put.bin"
	_, haveCurl := exec.LookPath("curl")
	b.Run("weblink/go-tus", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			b.StopTimer()
			s, err := Listen("127.0.0.1:0", Options{})
			if err != nil {
				b.Fatal(err)
			}
			in, _ := NewFolderInbox(b.TempDir())
			l, _ := s.Receive(in, ReceiveOptions{})
			drain(l)
			b.StartTimer()
			tusUpload(b, base(s)+l.Path()+"tus/", file, size)
			b.StopTimer()
			s.Close()
			in.Close()
			b.StartTimer()
		}
	})
	b.Run("plain/go-put", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			f, _ := os.Open(file)
			req, _ := http.NewRequest(http.MethodPut, plain, f)
			req.ContentLength = size
			res, err := http.DefaultClient.Do(req)
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
			res.Body.Close()
		}
	})
	if haveCurl == nil {
		b.Run("plain/curl-put", func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				curl(b, "-o", "/dev/null", "-T", file, plain)
			}
		})
	}
}

// tusUpload sends file through a tus endpoint in ChunkSize requests, each
// body read from the file as it goes.
func tusUpload(b testing.TB, endpoint, file string, size int64) {
	req, _ := http.NewRequest(http.MethodPost, endpoint, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", strconv.FormatInt(size, 10))
	req.Header.Set("Upload-Metadata", "filename "+base64.StdEncoding.EncodeToString([]byte(filepath.Base(file))))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		b.Fatalf("create: %d", res.StatusCode)
	}
	loc := res.Header.Get("Location")
	f, err := os.Open(file)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for off := int64(0); off < size; off += ChunkSize {
		n := min(ChunkSize, size-off)
		req, _ := http.NewRequest(http.MethodPatch, loc, io.NewSectionReader(f, off, n))
		req.ContentLength = n
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Upload-Offset", strconv.FormatInt(off, 10))
		req.Header.Set("Content-Type", "application/offset+octet-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNoContent {
			b.Fatalf("patch at %d: %d", off, res.StatusCode)
		}
	}
}

// BenchmarkMemory50Clients has 50 tus clients upload at once into one
// receive link (bodies generated as they are sent, so the clients hold
// little) and reports the process's peak RSS (VmHWM; run it alone:
// `go test -run '^$' -bench Memory50 ./engine/weblink`).
func BenchmarkMemory50Clients(b *testing.B) {
	const clients = 50
	per := benchSize(b) / clients
	s, err := Listen("127.0.0.1:0", Options{MaxConnsPerAddr: 2 * clients})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		in, _ := NewFolderInbox(b.TempDir())
		l, err := s.Receive(in, ReceiveOptions{})
		if err != nil {
			b.Fatal(err)
		}
		drain(l)
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tusStream(b, base(s)+l.Path()+"tus/", fmt.Sprintf("c%d.bin", i), per)
			}()
		}
		wg.Wait()
		l.Stop()
		in.Close()
	}
	b.SetBytes(per * clients)
	if hwm := peakRSS(); hwm > 0 {
		b.ReportMetric(float64(hwm)/(1<<20), "peak-RSS-MiB")
	}
}

// tusStream uploads size generated bytes.
func tusStream(b testing.TB, endpoint, name string, size int64) {
	req, _ := http.NewRequest(http.MethodPost, endpoint, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", strconv.FormatInt(size, 10))
	req.Header.Set("Upload-Metadata", "filename "+base64.StdEncoding.EncodeToString([]byte(name)))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	res.Body.Close()
	loc := res.Header.Get("Location")
	src := rand.NewChaCha8([32]byte{2})
	for off := int64(0); off < size; off += ChunkSize {
		n := min(ChunkSize, size-off)
		req, _ := http.NewRequest(http.MethodPatch, loc, io.LimitReader(src, n))
		req.ContentLength = n
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Upload-Offset", strconv.FormatInt(off, 10))
		req.Header.Set("Content-Type", "application/offset+octet-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Error(err)
			return
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNoContent {
			b.Errorf("patch at %d: %d", off, res.StatusCode)
			return
		}
	}
}

// cpuTime is the CPU time (user+sys) of this process and its waited-for
// children (curl) so far: on a loaded machine it says more than the
// wall clock.
func cpuTime() time.Duration {
	return testutil.CPUTime() + testutil.ChildrenCPUTime()
}

// reportCPU reports the CPU seconds per operation since since (client and
// server together: both run here).
func reportCPU(b *testing.B, since time.Duration) {
	b.ReportMetric((cpuTime()-since).Seconds()/float64(b.N), "cpu-s/op")
}

// peakRSS is the process's peak resident set (Linux VmHWM), 0 elsewhere.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(string(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkShareTable opens a share link on a tree and reports the heap its
// table of files holds (bytes per file, measured after a collection) and
// how long making it took. The tree is FERRY_BENCH_TREE when set (such as
// workload D: `scripts/workload-d.sh /tmp/wd`), else 20,000 empty files in
// 100 folders made here.
func BenchmarkShareTable(b *testing.B) {
	tree := os.Getenv("FERRY_BENCH_TREE")
	if tree == "" {
		tree = b.TempDir()
		for d := range 100 {
			dir := filepath.Join(tree, fmt.Sprintf("album %03d", d))
			if err := os.Mkdir(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := range 200 {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("IMG_%05d.jpg", d*200+f)), nil, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	s, err := Listen("127.0.0.1:0", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var ms runtime.MemStats
	var perFile float64
	var files int
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		l, err := s.Share(context.Background(), []string{tree}, ShareOptions{MaxFiles: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		held := ms.HeapAlloc - before
		names, _ := l.Files()
		files = len(names)
		perFile = float64(held) / float64(files)
		runtime.KeepAlive(l)
		l.Stop()
	}
	b.ReportMetric(perFile, "B/file")
	b.ReportMetric(float64(files), "files")
}

// BenchmarkZip downloads a share's zip whole with Go's client: one file of
// benchSize, and a tree of 20,000 files of 4 KiB (its per-file cost: the
// stat of each before the first byte, since 2026-12-05, as well as its
// header, descriptor and CRC). It reports wall and CPU (client and server)
// seconds per GiB and per file.
func BenchmarkZip(b *testing.B) {
	for _, c := range []struct {
		name  string
		files int
		size  int64
	}{
		{"one-file", 1, benchSize(b)},
		{"20000-files", 20000, 4096},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "tree")
			buf := make([]byte, c.size)
			rand.NewChaCha8([32]byte{2}).Read(buf)
			for i := range c.files {
				p := filepath.Join(dir, strconv.Itoa(i%100), strconv.Itoa(i)+".bin")
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, buf, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			s, err := Listen("127.0.0.1:0", Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			l, err := s.Share(context.Background(), []string{dir}, ShareOptions{})
			if err != nil {
				b.Fatal(err)
			}
			drain(l)
			u := base(s) + l.Path() + "all.zip"
			res, err := http.Get(u) // the page cache holds the files
			if err != nil {
				b.Fatal(err)
			}
			size, err := io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			t0, cpu := time.Now(), cpuTime()
			for b.Loop() {
				fetch(b, u, size)
			}
			wall, used := time.Since(t0), cpuTime()-cpu
			gib := float64(b.N) * float64(size) / (1 << 30)
			b.ReportMetric(wall.Seconds()/gib, "s/GiB")
			b.ReportMetric(used.Seconds()/gib, "cpu-s/GiB")
			b.ReportMetric(float64(used.Microseconds())/float64(b.N*c.files), "cpu-µs/file")
		})
	}
}

// BenchmarkShareSearch times one search of a share page (?q=) over a table
// of 100,000 and 1,000,000 (MaxShareFiles) rows named like a photo library
// ("Photos/2019/album 123/IMG_012345.jpg"): every name is read once per
// search, its memory one page of rows and one name.
func BenchmarkShareSearch(b *testing.B) {
	for _, n := range []int{100_000, MaxShareFiles} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			sh := &share{}
			for i := range n {
				sh.files = append(sh.files, shared{name: fmt.Sprintf("Photos/%d/album %03d/IMG_%06d.jpg", 2000+i/50000, i/500%1000, i)})
			}
			for b.Loop() {
				if _, found := sh.find("img_0123", 1); found != 100 {
					b.Fatalf("found %d", found)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/row")
		})
	}
}
