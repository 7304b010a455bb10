package store

import (
	"os"
	"time"
)

// Meta is what a received file keeps of the one it copies besides its
// bytes, as cp -p, rsync -a and AirDrop keep it: photos keep their dates,
// a script stays executable.
type Meta struct {
	// ModTime is the modification time to give it; zero leaves the time
	// it arrived.
	ModTime time.Time
	// Executable makes it executable where it is readable (as git keeps
	// a file's mode: executable or not, the rest is this device's umask).
	// Nothing on Windows, which has no such bit.
	Executable bool
}

// SetMeta records what Finalize gives the file once its bytes are all
// written, before it gets its name.
func (p *Partial) SetMeta(m Meta) { p.meta = m }

// applyMeta gives the file its Meta, through its descriptor while it is
// open, else by its partial's name. It is best effort: the bytes are what
// a transfer promises, and a file system that keeps no times (some FUSE
// ones) still keeps the file.
func (p *Partial) applyMeta() {
	m := p.meta
	if m == (Meta{}) {
		return
	}
	if r := p.raw; r != nil {
		r.mu.RLock()
		if p.f == nil && !r.closed {
			setMeta(uintptr(r.fd), m)
			r.mu.RUnlock()
			return
		}
		r.mu.RUnlock()
	}
	if p.f != nil {
		if fd := p.f.Fd(); fd != ^uintptr(0) { // open (a closed File says -1)
			setMeta(fd, m)
			return
		}
	}
	if p.name != "" {
		setMetaAt(p.d.root, p.name, m)
	}
}

// setMetaAt gives the file name in root its Meta (a partial closed before
// it was finalized).
func setMetaAt(root *os.Root, name string, m Meta) {
	if m.Executable {
		if fi, err := root.Lstat(name); err == nil && fi.Mode().IsRegular() {
			mode := fi.Mode().Perm()
			root.Chmod(name, mode|(mode&0o444)>>2)
		}
	}
	if !m.ModTime.IsZero() {
		root.Chtimes(name, time.Now(), m.ModTime)
	}
}
