package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// CreateWhole is CreatePartial for a file that is kept only if it arrives
// whole (one chunk: there is nothing of it to resume). Where the file system
// can (Linux O_TMPFILE), the file has no name at all until Finalize links it
// under its final one: nothing of it is ever visible under any name, a crash
// leaves nothing behind, and no local process can move it (it has no name),
// so its writes need no check that it is still inside the destination; the
// one that matters, that its folder is still inside when the file gets its
// name, Finalize makes as for any partial. It costs about half the system
// calls of a named partial (no name to create, check or remove), which is
// most of what a tree of small files costs the receiver (see
// docs/benchmarks/trees.md). Elsewhere, and on a file system without
// O_TMPFILE, it is CreatePartial. Partial.Name is empty for a file without a
// name.
func (d *Dest) CreateWhole(rel string) (*Partial, error) {
	if d.noUnnamed.Load() {
		return d.CreatePartial(rel)
	}
	dirs, base, err := d.split(rel)
	if err != nil {
		return nil, err
	}
	fo, err := d.resolveFolder(dirs)
	if err != nil {
		return nil, fmt.Errorf("store: create %q: %w", rel, err)
	}
	fd, err := fo.createUnnamed()
	if errors.Is(err, errors.ErrUnsupported) {
		d.release(fo)
		d.noUnnamed.Store(true)
		return d.CreatePartial(rel)
	}
	if err != nil {
		d.release(fo)
		return nil, fmt.Errorf("store: create %q: %w", rel, err)
	}
	p := d.adoptUnnamed(fd)
	p.fo, p.rel, p.file = fo, rel, base
	return p, nil
}

// finalizeUnnamed is Finalize for a partial without a name (CreateWhole):
// its folder checked to be still inside the destination, it is linked
// under the first free name of rel's numbered ones (link never replaces
// anything), and closed. On failure it is closed and gone: nothing is left.
func (d *Dest) finalizeUnnamed(p *Partial, rel string, size int64) (savedAs string, err error) {
	defer p.letGo()
	defer p.Close()
	var dirs string
	base := p.file
	created := rel == p.rel // the name it was created for, validated then
	if !created {
		if dirs, base, err = d.split(rel); err != nil {
			return "", err
		}
	}
	if size < 0 {
		return "", fmt.Errorf("store: finalize %q: negative size %d", rel, size)
	}
	if p.length.Load() != size {
		if err := p.Truncate(size); err != nil {
			return "", fmt.Errorf("store: finalize %q: %w", rel, err)
		}
	}
	p.applyMeta()
	if d.SyncOnFinalize {
		if err := p.Sync(); err != nil {
			return "", fmt.Errorf("store: finalize %q: %w", rel, err)
		}
	}
	to, err := d.finalFolder(p, created, dirs)
	if err != nil {
		return "", fmt.Errorf("store: finalize %q: %w", rel, err)
	}
	defer d.release(to)
	if !to.inside(d) {
		return "", fmt.Errorf("store: finalize %q: %s: %w", rel, filepath.ToSlash(to.path), ErrMovedOut)
	}
	copies := d.slots(p, rel)
	defer copies.done()
	retried := false // under the name Windows takes, the file system having refused base
	for n := 0; n < maxNumbered; n++ {
		name := numbered(base, n, true)
		if n == 0 && d.yieldsIn(rel, to, "") {
			continue // another file's name where case is ignored (Reserve)
		}
		if n > 0 && d.avoids(rel, name) {
			continue // another of the offer's names (Avoid)
		}
		if twinTaken(to, name) || copies.skip(to, name) {
			continue
		}
		err := d.refusedByFS("link", name)
		if err == nil {
			err = p.link(to, name)
		}
		if errors.Is(err, fs.ErrExist) {
			if !retried && d.holdsSame(p, to, name, size) {
				p.kept = true
				return keptSame(to, name), nil // there already: the partial goes as it closes
			}
			continue
		}
		if alt, ok := windowsName(base, err); ok && !retried {
			base, n, retried, copies.slot = alt, -1, true, 0
			continue
		}
		if err != nil {
			return "", fmt.Errorf("store: finalize %q: %w", rel, err)
		}
		savedAs := filepath.ToSlash(filepath.Join(to.path, name))
		copies.saved(savedAs)
		return savedAs, nil
	}
	return "", fmt.Errorf("store: finalize %q: %w", rel, ErrTooManyCopies)
}

// errNoUnnamed is what createUnnamed returns where files cannot be created
// without a name.
var errNoUnnamed = fmt.Errorf("files without a name: %w", errors.ErrUnsupported)

// adoptUnnamed registers a file just created without a name, by its bare
// descriptor (rawFile). Unlike adopt it needs no check: a new file without a
// name is regular, empty, has no other link and cannot be another partial.
func (d *Dest) adoptUnnamed(fd int) *Partial {
	p := &Partial{d: d, unnamed: true, raw: &rawFile{fd: fd, mode: d.writeMode()}}
	d.mu.Lock()
	d.open[p] = nil
	d.mu.Unlock()
	return p
}

// link gives p, a partial without a name, the name name in to
// (linkUnnamed), through its descriptor, bare or wrapped.
func (p *Partial) link(to *folder, name string) error {
	r := p.raw
	r.mu.RLock()
	defer r.mu.RUnlock()
	switch {
	case p.f != nil:
		err := to.linkUnnamed(int(p.f.Fd()), name)
		runtime.KeepAlive(p.f)
		return err
	case r.closed:
		return os.ErrClosed
	}
	return to.linkUnnamed(r.fd, name)
}
