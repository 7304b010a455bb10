package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ferrydrop/ferry/internal/directio"
)

// BenchmarkWritePath writes WP_N new files of WP_MIB MiB (default 500 x 2)
// each way a receiver can, to find what makes the store's page-cache writes
// dearer than a plain server's (docs/localsend.md, "Figures"). Run one
// variant per process, interleaved, from engine/store:
//
//	go test -c -o store.test . && WP_N=500 WP_MIB=2 ./store.test -test.run '^$' \
//	    -test.bench 'BenchmarkWritePath/<variant>$' -test.benchtime 1x
//
// cpu-s/op is this process's CPU (user and system); busy-s/op is the whole
// machine's (every CPU, other processes and the kernel's writeback threads
// included: only meaningful on a quiet machine); sync-s/op is how long a
// sync(2) after the files takes, the writeback they left behind.
func BenchmarkWritePath(b *testing.B) {
	n := envInt("WP_N", 500)
	size := int64(envInt("WP_MIB", 2)) << 20
	// plain: the plain server's way (os.Create, 32 KiB writes of one buffer,
	// Close) and its single changes toward the store's; store: through a
	// Dest exactly as the engine writes.
	variants := map[string]func(b *testing.B, dir string, i int) error{
		"plain":      func(b *testing.B, dir string, i int) error { return plainWrite(dir, i, size, wpOpts{}) },
		"plain-1m":   func(b *testing.B, dir string, i int) error { return plainWrite(dir, i, size, wpOpts{piece: 1 << 20}) },
		"plain-128k": func(b *testing.B, dir string, i int) error { return plainWrite(dir, i, size, wpOpts{piece: 128 << 10}) },
		"plain-256k": func(b *testing.B, dir string, i int) error { return plainWrite(dir, i, size, wpOpts{piece: 256 << 10}) },
		"plain-1m-pool": func(b *testing.B, dir string, i int) error {
			return plainWrite(dir, i, size, wpOpts{piece: 1 << 20, pool: true})
		},
		"plain-falloc":  func(b *testing.B, dir string, i int) error { return plainWrite(dir, i, size, wpOpts{falloc: true}) },
		"plain-kick":    func(b *testing.B, dir string, i int) error { return plainWrite(dir, i, size, wpOpts{kick: true}) },
		"plain-tmpfile": func(b *testing.B, dir string, i int) error { return plainWrite(dir, i, size, wpOpts{tmpfile: true}) },
		"plain-rename":  func(b *testing.B, dir string, i int) error { return plainWrite(dir, i, size, wpOpts{rename: true}) },
		"plain-drop":    func(b *testing.B, dir string, i int) error { return plainWrite(dir, i, size, wpOpts{drop: true}) },
		"plain-falloc-1m-pool": func(b *testing.B, dir string, i int) error {
			return plainWrite(dir, i, size, wpOpts{piece: 1 << 20, pool: true, falloc: true})
		},
		"plain-falloc-kick": func(b *testing.B, dir string, i int) error {
			return plainWrite(dir, i, size, wpOpts{falloc: true, kick: true})
		},
	}
	for name, fn := range variants {
		b.Run(name, func(b *testing.B) { runWritePath(b, n, size, fn) })
	}
	// The store's paths, as the engine uses them: native receive (named
	// partial, Reserve, 1 MiB chunks; a one-chunk file without a name) and
	// LocalSend (named partial, no Reserve), each direct and buffered.
	for _, buffered := range []bool{false, true} {
		for _, how := range []string{"native", "whole", "localsend"} {
			mode := "direct"
			if buffered {
				mode = "buffered"
			}
			b.Run("store-"+how+"-"+mode, func(b *testing.B) {
				var d *Dest
				runWritePath(b, n, size, func(b *testing.B, dir string, i int) error {
					if d == nil || d.Dir() != dir {
						if d != nil {
							d.Close()
						}
						var err error
						if d, err = Open(dir); err != nil {
							return err
						}
						d.SetBufferedIO(buffered)
						b.Cleanup(func() { d.Close() })
					}
					return storeWrite(d, i, size, how)
				})
			})
		}
	}
}

type wpOpts struct {
	piece   int  // write size; 0: 32 KiB
	pool    bool // write from 48 aligned 1 MiB buffers in turn (the engine's pool), not one
	falloc  bool // fallocate the size first (Partial.Reserve)
	kick    bool // sync_file_range(WRITE) of the file before close (fileio's close kick)
	drop    bool // after the kick, wait for it and fadvise(DONTNEED) (fileio's write-behind)
	tmpfile bool // O_TMPFILE, linkat at the end (store.CreateWhole)
	rename  bool // "<name>.partial", renameat2(NOREPLACE) at the end (store.Finalize)
}

var wpPool = func() [][]byte {
	bufs := make([][]byte, 48)
	for i := range bufs {
		bufs[i] = directio.Buffer(1 << 20)
		for j := range bufs[i] {
			bufs[i][j] = byte(i + j)
		}
	}
	return bufs
}()

var wpSmall = func() []byte {
	b := make([]byte, 32<<10)
	for j := range b {
		b[j] = byte(j)
	}
	return b
}()

var wpTurn int

func plainWrite(dir string, i int, size int64, o wpOpts) error {
	name := filepath.Join(dir, fmt.Sprintf("f%05d", i))
	var f *os.File
	switch {
	case o.tmpfile:
		fd, err := unix.Open(dir, unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		f = os.NewFile(uintptr(fd), "")
	case o.rename:
		var err error
		if f, err = os.OpenFile(name+".partial", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
			return err
		}
	default:
		var err error
		if f, err = os.Create(name); err != nil {
			return err
		}
	}
	if o.falloc {
		if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
			return err
		}
	}
	piece := int64(32 << 10)
	if o.piece > 0 {
		piece = int64(o.piece)
	}
	for off := int64(0); off < size; off += piece {
		buf := wpSmall
		if piece > int64(len(wpSmall)) || o.pool {
			buf = wpPool[wpTurn%len(wpPool)]
			wpTurn++
		}
		if _, err := f.WriteAt(buf[:min(piece, size-off)], off); err != nil {
			return err
		}
	}
	if o.kick || o.drop {
		unix.SyncFileRange(int(f.Fd()), 0, size, unix.SYNC_FILE_RANGE_WRITE)
	}
	if o.drop {
		unix.SyncFileRange(int(f.Fd()), 0, size, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
		unix.Fadvise(int(f.Fd()), 0, size, unix.FADV_DONTNEED)
	}
	switch {
	case o.tmpfile:
		if err := unix.Linkat(int(f.Fd()), "", unix.AT_FDCWD, name, unix.AT_EMPTY_PATH); err != nil {
			if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW); err != nil {
				return err
			}
		}
	case o.rename:
		if err := unix.Renameat2(unix.AT_FDCWD, name+".partial", unix.AT_FDCWD, name, unix.RENAME_NOREPLACE); err != nil {
			return err
		}
	}
	return f.Close()
}

func storeWrite(d *Dest, i int, size int64, how string) error {
	rel := fmt.Sprintf("f%05d", i)
	var p *Partial
	var err error
	if how == "whole" {
		p, err = d.CreateWhole(rel)
	} else {
		p, err = d.CreatePartial(rel)
	}
	if err != nil {
		return err
	}
	if how != "localsend" {
		if err := p.Reserve(context.Background(), size); err != nil {
			return err
		}
	}
	for off := int64(0); off < size; off += 1 << 20 {
		buf := wpPool[wpTurn%len(wpPool)]
		wpTurn++
		if _, err := p.WriteAt(buf[:min(1<<20, size-off)], off); err != nil {
			return err
		}
	}
	_, err = d.Finalize(p, rel, size)
	return err
}

func runWritePath(b *testing.B, n int, size int64, write func(b *testing.B, dir string, i int) error) {
	syscall.Sync() // no run pays for an earlier one's writeback
	prepare(b, os.Getenv("WP_PRE"))
	var wall, cpu, busy, syncs float64
	for it := 0; it < b.N; it++ {
		dir := b.TempDir()
		b0, c0, t0 := machineBusy(), selfCPU(), time.Now()
		for i := 0; i < n; i++ {
			if err := write(b, dir, i); err != nil {
				b.Fatal(err)
			}
		}
		wall += time.Since(t0).Seconds()
		cpu += selfCPU() - c0
		s0 := time.Now()
		syscall.Sync()
		syncs += time.Since(s0).Seconds()
		busy += machineBusy() - b0
	}
	N := float64(b.N)
	b.ReportMetric(wall/N/float64(n)*1e3, "ms/file")
	b.ReportMetric(float64(size)*float64(n)/(wall/N)/1e6, "MB/s")
	b.ReportMetric(cpu/N, "cpu-s/op")
	b.ReportMetric(syncs/N, "sync-s/op")
	b.ReportMetric(busy/N, "busy-s/op")
}

// prepare sets the page allocator's state before a run: "fresh" writes and
// deletes 1.5 GiB of files just before, so the run's page cache can reuse
// memory the guest freed an instant ago; "rested" does the same, then waits
// WP_REST seconds (default 20) with nothing freed, long enough for the
// guest to report the freed memory to the host (free page reporting, 8 MiB
// blocks on this VM: page_reporting.page_reporting_order=11), which takes it
// back; "" does nothing.
func prepare(b *testing.B, how string) {
	if how == "" {
		return
	}
	dir := b.TempDir()
	if how == "hog" {
		// Take the free blocks of 1 MiB and more that the guest still backs,
		// and keep them for the run: its large page-cache folios must then
		// come from blocks the guest reported free to the host.
		f, err := os.Create(filepath.Join(dir, "hog"))
		if err != nil {
			b.Fatal(err)
		}
		for off := 0; off < envInt("WP_HOG_MIB", 2048)<<20; off += 1 << 20 {
			f.Write(wpPool[0])
		}
		f.Close()
		syscall.Sync()
		time.Sleep(time.Duration(envInt("WP_REST", 0)) * time.Second)
		return
	}
	for i := 0; i < 6; i++ {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("pre%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		for off := 0; off < 256<<20; off += len(wpSmall) {
			f.Write(wpSmall)
		}
		f.Close()
	}
	syscall.Sync()
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	if how == "rested" {
		time.Sleep(time.Duration(envInt("WP_REST", 20)) * time.Second)
	}
}

func selfCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// machineBusy is the CPU seconds all CPUs spent not idle (/proc/stat).
func machineBusy() float64 {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	fields := strings.Fields(sc.Text())[1:]
	var busy float64
	for k, v := range fields {
		x, _ := strconv.ParseFloat(v, 64)
		if k == 3 || k == 4 { // idle, iowait
			continue
		}
		busy += x
	}
	return busy / 100 // USER_HZ
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}
