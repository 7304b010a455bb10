package resume

import (
	"slices"
	"testing"
)

// TestKeepUnremoved: partial files that transfers from a device could not
// remove from a folder are listed together, each once, as unremoved; a
// file taken out of the list (its partial removed since) leaves the others
// listed, and the last one taken out drops the state.
func TestKeepUnremoved(t *testing.T) {
	d := Open(t.TempDir(), nil, nil)
	a := NewFile(4, "a.bin", 5<<20, 2)
	a.Set(0, [32]byte{1}, 7)
	a.Partial, a.PartialID = "a.bin.partial", "b1.2"
	b := File{Index: 4, Path: "b.bin", Size: 10, Partial: "b.bin.partial", PartialID: "b3.4"}
	if err := d.KeepUnremoved("PEER", "Bob", "/dl", []File{a}); err != nil {
		t.Fatal(err)
	}
	if err := d.KeepUnremoved("PEER", "Bob", "/dl/", []File{a, b}); err != nil {
		t.Fatal(err)
	}
	if err := d.KeepUnremoved("PEER", "Bob", "/elsewhere", []File{b}); err != nil {
		t.Fatal(err)
	}
	l := d.List()
	if len(l) != 2 {
		t.Fatalf("listed %+v", l)
	}
	var p Summary
	for _, s := range l {
		if s.Dest == "/dl" {
			p = s
		}
	}
	if !p.Unremoved || p.PeerID != "PEER" || p.PeerName != "Bob" || p.Files != 2 || p.Bytes != 0 || p.Damaged != "" ||
		!slices.Equal(p.Partials, []string{"a.bin.partial", "b.bin.partial"}) || !slices.Equal(p.PartialIDs, []string{"b1.2", "b3.4"}) {
		t.Fatalf("listed %+v", p)
	}
	begun := d.BegunIn("PEER", "/dl")
	if len(begun) != 2 || begun[0].Path != "a.bin" || begun[1].Path != "b.bin" || begun[0].Index == begun[1].Index {
		t.Fatalf("BegunIn: %+v", begun)
	}
	if err := d.Forget(p.Key, []uint32{begun[0].Index}); err != nil {
		t.Fatal(err)
	}
	if s, err := d.Load(p.Key); err != nil || s == nil || len(s.Files) != 1 || s.Files[0].Partial != "b.bin.partial" {
		t.Fatalf("after one was forgotten: %+v, %v", s, err)
	}
	if err := d.Forget(p.Key, []uint32{begun[1].Index}); err != nil {
		t.Fatal(err)
	}
	if s, err := d.Load(p.Key); err != nil || s != nil {
		t.Fatalf("after both were forgotten: %+v, %v", s, err)
	}
}

// TestKeepUnremovedLocksOtherProcessesOut: KeepUnremoved holds a file
// lock, which another process on the same config (the app beside a
// ferry-cli receive) waits for, from reading the state it adds to until
// it has written it; only a lock within the process was held, so two
// processes adding to the same device's and folder's state at once could
// each write what it read without the other's file, and one was lost.
func TestKeepUnremovedLocksOtherProcessesOut(t *testing.T) {
	if !lockingJournals {
		t.Skip("no file locks here")
	}
	d := Open(t.TempDir(), nil, nil)
	var held bool
	d.rewriting = func() { held = journalLocked(d.lockPath()) } // another open of the file: as another process sees it
	f := File{Index: 4, Path: "b.bin", Size: 10, Partial: "b.bin.partial", PartialID: "b3.4"}
	if err := d.KeepUnremoved("PEER", "Bob", "/dl", []File{f}); err != nil {
		t.Fatal(err)
	}
	if !held {
		t.Error("KeepUnremoved wrote its state without a lock another process would wait for")
	}
	if journalLocked(d.lockPath()) {
		t.Error("the lock is still held after KeepUnremoved")
	}
	if l := d.List(); len(l) != 1 || len(l[0].Partials) != 1 {
		t.Errorf("listed %+v", l)
	}
}

// TestDropDiscardedKeepsWhatWasAddedSince: dropping an unremoved state
// whose listed partials were discarded keeps those added to it since, and
// holds the file lock KeepUnremoved holds while it rewrites the state; a
// state left with none is dropped.
func TestDropDiscardedKeepsWhatWasAddedSince(t *testing.T) {
	d := Open(t.TempDir(), nil, nil)
	a := File{Index: 1, Path: "a.bin", Size: 10, Partial: "a.bin.partial", PartialID: "a1.2"}
	b := File{Index: 2, Path: "b.bin", Size: 10, Partial: "b.bin.partial", PartialID: "b3.4"}
	if err := d.KeepUnremoved("PEER", "Bob", "/dl", []File{a}); err != nil {
		t.Fatal(err)
	}
	l := d.List()
	if len(l) != 1 {
		t.Fatalf("listed %+v", l)
	}
	if err := d.KeepUnremoved("PEER", "Bob", "/dl", []File{b}); err != nil { // since the listing
		t.Fatal(err)
	}
	var held bool
	d.rewriting = func() { held = !lockingJournals || journalLocked(d.lockPath()) }
	if err := d.DropDiscarded(l[0].Key, l[0].Partials, l[0].PartialIDs); err != nil {
		t.Fatal(err)
	}
	if !held {
		t.Error("DropDiscarded rewrote the state without the lock another process would wait for")
	}
	if l := d.List(); len(l) != 1 || !slices.Equal(l[0].Partials, []string{"b.bin.partial"}) {
		t.Fatalf("after a's discard: listed %+v", l)
	}
	if err := d.DropDiscarded(l[0].Key, []string{"b.bin.partial"}, []string{"b3.4"}); err != nil {
		t.Fatal(err)
	}
	if l := d.List(); len(l) != 0 {
		t.Fatalf("after b's discard: listed %+v", l)
	}
}
