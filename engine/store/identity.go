package store

import (
	"errors"
	"fmt"
	"path/filepath"
)

// Identity names the file p is, not its name: its birth time to the
// nanosecond where the file system keeps one (a later file under the same
// name has a later one), else its file number; on Windows the file index
// and creation time. Not the device number, nor on Linux the file number
// beside a birth time: those of a USB stick or a FAT file system can change
// from one mount to the next, and a resume after a restart must find its
// partial. A transfer's resume state keeps it beside the partial's name,
// and OpenPartial reopens only the same file: a partial deleted since and
// a finished file saved under its name (a peer may send "notes.partial")
// are never written into nor removed. Empty where the platform cannot tell.
// It is read once, while the partial is open; a partial without a name
// (CreateWhole) has none, and costs no system call.
func (p *Partial) Identity() string {
	p.identOnce.Do(func() {
		if p.f != nil && !p.unnamed {
			p.ident, _ = fileIdentity(p.f)
		}
	})
	return p.ident
}

// NamedIdentity is the Identity that p, a partial without a name
// (CreateWhole), has once Finalize gives it one; "" for a partial with a
// name (Identity is its) or where it cannot be read. It costs a system
// call. A receiver journals it before Finalize, so that a resume after a
// crash between the file's naming and the record that it was saved finds
// the file by it (Renamed) rather than saving it again as "name (1)".
func (p *Partial) NamedIdentity() string {
	if !p.unnamed {
		return ""
	}
	id, _ := p.unnamedIdentity()
	return id
}

// ErrNotThePartial means the file at a partial's name is another file than
// the partial a transfer created there (its Identity differs).
var ErrNotThePartial = errors.New("another file than the partial this transfer created")

// checkIdentity reports whether p is the file identity names ("": not
// known, any file is).
func checkIdentity(p *Partial, identity string) error {
	if identity == "" {
		return nil
	}
	if got := p.Identity(); got != identity {
		return fmt.Errorf("%s: %w", p.Name(), ErrNotThePartial)
	}
	return nil
}

// Renamed finds the file that a partial of this identity became when
// Finalize gave it rel's name, for a transfer whose record of that was lost
// (the process ended between the rename and the record): rel's name, or
// one of the numbered names Finalize tries after it, that is a regular file
// of size bytes and this identity. It is how a crash right after a file
// got its name does not fetch and save it a second time ("name (1).ext").
func (d *Dest) Renamed(rel, identity string, size int64) (savedAs string, ok bool) {
	if identity == "" {
		return "", false
	}
	if savedAs, ok := d.renamed(rel, identity, size); ok {
		return savedAs, true
	}
	// Where the file system refused the name, Finalize gave it the one
	// Windows takes (windowsName).
	if alt := localName(rel, true); alt != rel {
		return d.renamed(alt, identity, size)
	}
	return "", false
}

// renamed is Renamed for the names of rel itself.
func (d *Dest) renamed(rel, identity string, size int64) (savedAs string, ok bool) {
	dirs, base, err := d.split(rel)
	if err != nil {
		return "", false
	}
	dir, err := d.resolveDir(dirs)
	if err != nil {
		return "", false
	}
	for n := 0; n < maxRenamedLook; n++ {
		name := filepath.Join(dir, numbered(base, n, true))
		st, err := d.root.Lstat(name)
		if err != nil {
			return "", false // Finalize takes the first free name: none after it
		}
		if !st.Mode().IsRegular() || st.Size() != size {
			continue
		}
		f, err := d.root.Open(name)
		if err != nil {
			continue
		}
		id, err := fileIdentity(f)
		f.Close()
		if err == nil && id == identity {
			return filepath.ToSlash(name), true
		}
	}
	return "", false
}

// maxRenamedLook bounds the names Renamed looks at.
const maxRenamedLook = 16
