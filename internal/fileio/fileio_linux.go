package fileio

import (
	"errors"
	"math"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

var platformOps = sysOps{
	fallocate: func(f *os.File, size int64) error {
		return control(f, func(fd int) error {
			err := unix.Fallocate(fd, 0, 0, size)
			if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
				return errors.ErrUnsupported
			}
			return err
		})
	},
	punchHole: func(f *os.File, off, n int64) error {
		return control(f, func(fd int) error {
			err := unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
			if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
				return errors.ErrUnsupported
			}
			return err
		})
	},
	startWriteback: func(f *os.File, off, n int64) {
		control(f, func(fd int) error { return unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE) })
	},
	dropCached: func(f *os.File, off, n int64) {
		control(f, func(fd int) error {
			unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
			return unix.Fadvise(fd, off, n, unix.FADV_DONTNEED)
		})
	},
}

func isNoSpace(err error) bool { return errors.Is(err, unix.ENOSPC) }

// control runs fn with f's descriptor.
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// haveCachestat reports whether the kernel has cachestat(2) (Linux 6.5) and
// lets us call it: asked about no file at all, it then says EBADF. Elsewhere
// mincore(2) on a mapping of the file answers instead.
var haveCachestat = sync.OnceValue(func() bool {
	var cs unix.Cachestat_t
	return errors.Is(unix.Cachestat(math.MaxUint32, &unix.CachestatRange{}, &cs, 0), unix.EBADF)
})

// pageResidency asks the kernel which pages of a file are cached.
type pageResidency struct {
	f         *os.File
	cachestat bool

	mu      sync.Mutex // guards the fields below (the mincore fallback)
	mapped  []byte     // the whole file mapped read-only, never touched
	mapFail bool
}

func newResidency(f *os.File) residency {
	return &pageResidency{f: f, cachestat: haveCachestat()}
}

var pageSize = int64(os.Getpagesize())

func (p *pageResidency) cachedShare(off, n int64) (float64, bool) {
	if n <= 0 {
		return 1, true
	}
	pages := (off+n+pageSize-1)/pageSize - off/pageSize
	if p.cachestat {
		var cs unix.Cachestat_t
		err := control(p.f, func(fd int) error {
			return unix.Cachestat(uint(fd), &unix.CachestatRange{Off: uint64(off), Len: uint64(n)}, &cs, 0)
		})
		if err == nil {
			return float64(cs.Cache) / float64(pages), true
		}
	}
	return p.mincore(off, n, pages)
}

// mincore counts cached pages through a mapping of the file. (Since Linux
// 5.0 it only sees the cache of files the process could write; for others
// it reports pages as not cached, and reads are direct as before.)
func (p *pageResidency) mincore(off, n, pages int64) (float64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mapped == nil && !p.mapFail {
		fi, err := p.f.Stat()
		if err == nil && fi.Size() > 0 {
			err = control(p.f, func(fd int) error {
				m, err := unix.Mmap(fd, 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
				p.mapped = m
				return err
			})
		}
		p.mapFail = err != nil || p.mapped == nil
	}
	first := off / pageSize * pageSize
	if p.mapFail || first >= int64(len(p.mapped)) {
		return 0, false
	}
	vec := make([]byte, pages)
	end := min(first+pages*pageSize, int64(len(p.mapped)))
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&p.mapped[first])), uintptr(end-first),
		uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return 0, false
	}
	var in int64
	for _, v := range vec {
		in += int64(v & 1)
	}
	return float64(in) / float64(pages), true
}

func (p *pageResidency) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mapped != nil {
		unix.Munmap(p.mapped)
		p.mapped = nil
	}
	p.mapFail = true
}

// LeavesHoles reports whether a Writer leaves chunks of zeros as holes in
// files of the folder dir: it punches one into a block written in a file
// made there without a name (O_TMPFILE), which leaves nothing behind. A
// file system that cannot make such a file is taken as one without holes.
func LeavesHoles(dir string) bool {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), "hole probe")
	defer f.Close()
	if _, err := f.WriteAt(zeros[:holeMin], 0); err != nil {
		return false
	}
	return platformOps.punchHole(f, 0, holeMin) == nil
}
