package store

import (
	"errors"
	"fmt"
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
// It is read once, while the partial is open.
func (p *Partial) Identity() string {
	p.identOnce.Do(func() {
		if p.f != nil {
			p.ident, _ = fileIdentity(p.f)
		}
	})
	return p.ident
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
