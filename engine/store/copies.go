package store

import (
	"path/filepath"
	"sync"
)

// An offer may name one file twice ("p/a.txt" picked from two folders, or
// a peer's list): core.Inbox takes up to MaxSameName copies of a name and
// each is saved, the later ones numbered. Numbered as they landed, the
// copy whose stream came first kept the name, so one offer arrived two
// ways. SetCopy tells Finalize which copy a partial is, in the offer's
// order, and copy k takes the k-th of the names its numbers try that no
// other file holds (those the copies hold counting as theirs): the
// offer's first keeps the name and the others are numbered in the offer's
// order whichever lands first, beside what the folder held before ("p/a
// (1).txt", "p/a (3).txt" past a "p/a (2).txt" already there). Copies of
// one name are named one at a time.

// SetCopy records that p is copy k (0 the first) of a file path the offer
// names more than once (store.Twins.Copies), for Finalize.
func (p *Partial) SetCopy(k int) { p.copy = k + 1 }

// CopySaved records that a copy of rel, a file path the offer names more
// than once, was saved as savedAs (slash-separated, relative to the
// destination) by an earlier attempt: the copies' numbers count it as a
// copy's, not another file's.
func (d *Dest) CopySaved(rel, savedAs string) {
	g := d.copiesOf(rel)
	g.mu.Lock()
	g.saved[savedAs] = true
	g.mu.Unlock()
}

// copyNames is what the copies of one name hold.
type copyNames struct {
	mu    sync.Mutex      // held while a copy is named; guards saved
	saved map[string]bool // the names they were saved as (slash-separated)
}

// copiesOf is the record of the copies of rel (a peer's path), by its
// name here, composed as Twins compares them (on a Mac, where names are
// kept as they came, the two forms find one file).
func (d *Dest) copiesOf(rel string) *copyNames {
	key := composed(d.localName(rel))
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.copies == nil {
		d.copies = map[string]*copyNames{}
	}
	g := d.copies[key]
	if g == nil {
		g = &copyNames{saved: map[string]bool{}}
		d.copies[key] = g
	}
	return g
}

// copySlots counts the names a copy's numbers try (Finalize,
// finalizeUnnamed); its zero value is for a file that is no copy.
type copySlots struct {
	g    *copyNames
	k    int // the copy's place among them
	slot int // the names tried so far that no other file holds
}

// slots locks the copies of p's name (rel) while it is named, when p is a
// copy (SetCopy); give them back with done.
func (d *Dest) slots(p *Partial, rel string) copySlots {
	if p.copy == 0 {
		return copySlots{}
	}
	g := d.copiesOf(rel)
	g.mu.Lock()
	return copySlots{g: g, k: p.copy - 1}
}

// skip reports whether name, the next number tried in folder to, is not the
// copy's: another file holds it, or it is an earlier copy's place.
func (c *copySlots) skip(to *folder, name string) bool {
	if c.g == nil {
		return false
	}
	if !c.g.saved[filepath.ToSlash(filepath.Join(to.path, name))] {
		if _, err := to.isDir(name); err == nil {
			return true // another file's: no copy's place
		}
	}
	c.slot++
	return c.slot <= c.k
}

// saved records the name the copy was saved as.
func (c *copySlots) saved(savedAs string) {
	if c.g != nil {
		c.g.saved[savedAs] = true
	}
}

// done gives the copies back.
func (c *copySlots) done() {
	if c.g != nil {
		c.g.mu.Unlock()
	}
}
