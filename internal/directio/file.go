package directio

import (
	"os"
	"sync"
)

// File adds direct I/O to an open file: ReadAt and WriteAt of large aligned
// buffers go through a second, direct descriptor, opened on first use;
// everything else, and everything once the file system refused, goes
// through f as usual. Safe for concurrent use, like os.File.
type File struct {
	f    *os.File
	flag int // os.O_RDONLY or os.O_WRONLY: what the direct descriptor is for

	mu     sync.Mutex
	direct *os.File
	off    bool // no (more) direct I/O on this file
}

// New returns f with direct I/O for flag (os.O_RDONLY or os.O_WRONLY), or
// without any when on is false. The caller still owns and closes f; Close
// closes only what File opened.
func New(f *os.File, flag int, on bool) *File { return &File{f: f, flag: flag, off: !on} }

// ReadAt reads like os.File.ReadAt.
func (d *File) ReadAt(b []byte, off int64) (int, error) {
	if df := d.directFor(b, off); df != nil {
		n, err := df.ReadAt(b, off)
		if err == nil || !Refused(err) {
			return n, err
		}
		// A short read at the end of the file leaves an unaligned offset,
		// which direct I/O refuses: finish it through the cache.
		if n == 0 {
			d.refuse()
		}
		m, err := d.f.ReadAt(b[n:], off+int64(n))
		return n + m, err
	}
	return d.f.ReadAt(b, off)
}

// WriteAt writes like os.File.WriteAt.
func (d *File) WriteAt(b []byte, off int64) (int, error) {
	if df := d.directFor(b, off); df != nil {
		n, err := df.WriteAt(b, off)
		if err == nil || n > 0 || !Refused(err) {
			return n, err
		}
		d.refuse()
	}
	return d.f.WriteAt(b, off)
}

// Direct reports whether direct I/O is in use: a direct descriptor is open
// and the file system did not refuse it (tests, metrics, callers that treat
// cached writes differently).
func (d *File) Direct() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.direct != nil && !d.off
}

// Close closes the direct descriptor, if any; f stays open.
func (d *File) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.off = true
	if d.direct == nil {
		return nil
	}
	err := d.direct.Close()
	d.direct = nil
	return err
}

func (d *File) refuse() {
	d.mu.Lock()
	d.off = true
	d.mu.Unlock()
}

// directFor returns the direct descriptor if b at off qualifies.
func (d *File) directFor(b []byte, off int64) *os.File {
	if !Aligned(b, off) {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.off {
		return nil // refused or closed; a direct descriptor stays open until Close
	}
	if d.direct != nil {
		return d.direct
	}
	df, err := Reopen(d.f, d.flag)
	if err != nil {
		d.off = true
		return nil
	}
	d.direct = df
	return df
}
