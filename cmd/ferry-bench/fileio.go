package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/internal/directio"
	"github.com/ferrydrop/ferry/internal/fileio"
)

func init() {
	register(command{name: "fileio", summary: "the file I/O choices of a transfer, alone: reading a cached or uncached file, writing one file from several streams", run: runFileIO})
}

// An ioCase reads or writes one file of the bench's size in 1 MiB chunks
// from four goroutines, in the interleaved order four streams produce.
type ioCase struct {
	name   string
	write  bool
	cached bool // reads: the source is in the page cache before the run
	run    func(path string, size int64) error
}

func ioCases() []ioCase {
	read := func(mode string) func(string, int64) error {
		return func(path string, size int64) error {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			var r io.ReaderAt = f
			switch mode {
			case "direct":
				d := directio.New(f, os.O_RDONLY, true)
				defer d.Close()
				r = d
			case "auto":
				fr := fileio.NewReader(f, fileio.Auto)
				defer fr.Close()
				r = fr
			}
			return chunksInParallel(size, func(b []byte, off int64) error {
				_, err := r.ReadAt(b, off)
				if errors.Is(err, io.EOF) {
					err = nil
				}
				return err
			})
		}
	}
	write := func(mode string) func(string, int64) error {
		return func(path string, size int64) error {
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			defer f.Close()
			var mu sync.Mutex
			var w func(b []byte, off int64) error
			switch mode {
			case "direct-serial": // before fileio: direct writes, one at a time, no preallocation
				d := directio.New(f, os.O_WRONLY, true)
				defer d.Close()
				w = func(b []byte, off int64) error {
					mu.Lock()
					defer mu.Unlock()
					_, err := d.WriteAt(b, off)
					return err
				}
			case "cache-serial": // before fileio, FERRY_BUFFERED_IO=1: the page cache, no write-behind
				w = func(b []byte, off int64) error {
					mu.Lock()
					defer mu.Unlock()
					_, err := f.WriteAt(b, off)
					return err
				}
			default: // fileio: "auto" or "buffered"
				m := fileio.Auto
				if mode == "buffered" {
					m = fileio.Buffered
				}
				fw := fileio.NewWriter(f, m)
				defer fw.Close()
				if err := fw.Reserve(size); err != nil {
					return err
				}
				w = func(b []byte, off int64) error { _, err := fw.WriteAt(b, off); return err }
			}
			return chunksInParallel(size, w)
		}
	}
	return []ioCase{
		{name: "read, cached: page cache", cached: true, run: read("cache")},
		{name: "read, cached: direct", cached: true, run: read("direct")},
		{name: "read, cached: fileio auto", cached: true, run: read("auto")},
		{name: "read, not cached: page cache", run: read("cache")},
		{name: "read, not cached: direct", run: read("direct")},
		{name: "read, not cached: fileio auto", run: read("auto")},
		{name: "write: direct, serialised, no preallocation (before)", write: true, run: write("direct-serial")},
		{name: "write: page cache, serialised, no write-behind (before, buffered)", write: true, run: write("cache-serial")},
		{name: "write: fileio auto (direct, parallel, preallocated)", write: true, run: write("auto")},
		{name: "write: fileio buffered (page cache, write-behind)", write: true, run: write("buffered")},
	}
}

// chunksInParallel calls do for every 1 MiB chunk of size bytes from four
// goroutines, chunk i on goroutine i%4, each with its own aligned buffer.
func chunksInParallel(size int64, do func(b []byte, off int64) error) error {
	const chunk = 1 << 20
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			buf := directio.Buffer(chunk)
			for off := int64(g) * chunk; off < size; off += 4 * chunk {
				if err := do(buf[:min(chunk, size-off)], off); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func runFileIO(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ferry-bench fileio", flag.ContinueOnError)
	dir := fs.String("dir", "/var/tmp", "folder on the disk to measure")
	mib := fs.Int64("mib", 1024, "file size in MiB")
	rounds := fs.Int("rounds", 3, "rounds; each runs every case once, and the median is reported")
	if err := fs.Parse(args); err != nil {
		return err
	}
	work, err := os.MkdirTemp(*dir, "ferry-fileio-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	size := *mib << 20
	src := filepath.Join(work, "src")
	if err := chunksInParallelFile(src, size); err != nil {
		return err
	}
	cases := ioCases()
	secs := make([][]float64, len(cases))
	cpus := make([][]float64, len(cases))
	started := time.Now().UTC()
	for round := range *rounds {
		for i, c := range cases {
			if err := ctx.Err(); err != nil {
				return err
			}
			path := src
			if c.write {
				path = filepath.Join(work, "dst")
			} else if err := setCached(src, c.cached); err != nil {
				return err
			}
			flushDirty()
			start, cpu0 := time.Now(), selfCPU()
			if err := c.run(path, size); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			secs[i] = append(secs[i], time.Since(start).Seconds())
			cpus[i] = append(cpus[i], selfCPU()-cpu0)
			if c.write {
				os.Remove(path)
			}
		}
		fmt.Fprintf(out, "  round %d/%d done\n", round+1, *rounds)
	}
	gib := float64(size) / (1 << 30)
	fmt.Fprintf(out, "\nferry-bench fileio --dir %s --mib %d --rounds %d (%s): 4 goroutines, 1 MiB chunks, medians\n\n",
		*dir, *mib, *rounds, started.Format("2006-01-02 15:04 MST"))
	fmt.Fprintln(out, "| case | seconds | MB/s | CPU-s per GiB | runs (s) |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	for i, c := range cases {
		s := median(secs[i])
		fmt.Fprintf(out, "| %s | %.2f | %.0f | %.2f | %s |\n", c.name, s, float64(size)/s/1e6, median(cpus[i])/gib, joinFloats(secs[i]))
	}
	return nil
}

// chunksInParallelFile writes size random bytes to path and flushes them.
func chunksInParallelFile(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := chunksInParallel(size, func(b []byte, off int64) error { _, err := f.WriteAt(b, off); return err }); err != nil {
		return err
	}
	return f.Sync()
}

// setCached brings path into the page cache or drops it from there.
func setCached(path string, cached bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if cached {
		_, err = io.Copy(io.Discard, struct{ io.Reader }{f})
		return err
	}
	return dropCache(f)
}

func joinFloats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, " ")
}
