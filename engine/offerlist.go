package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/manifeststore"
	"github.com/ferrydrop/ferry/engine/wire"
)

// An incoming Ferry offer's file list is kept in bounded memory (issue 30):
// the first listMemory bytes of entries in memory, the rest in a spill file
// under the config folder (package manifeststore), charged to a budget of
// disk per address and in all. What stays in memory per file is charged to
// the manifest budget (core.ManifestFileCost), so a tree of 10^6 files is
// taken while a flood of hostile manifests stays bounded in memory and on
// disk. docs/benchmarks/trees.md has the figures.

const (
	// defaultManifestDisk is Options.ManifestDisk's default.
	defaultManifestDisk = 1 << 30
	// listMemory is how many bytes of one offer's entries (names included)
	// stay in memory before the rest is spilled. Small: every offer held
	// at once keeps this much (docs/hostile.md, "Large offers after the
	// spill", has what 8 MiB cost under a flood).
	listMemory = 256 << 10
)

// offerLists makes the stores of incoming offers' file lists.
type offerLists struct {
	dir    string
	budget *manifeststore.Budget
	memory int64 // listMemory (tests spill sooner)
}

// newOfferLists keeps spill files in dir, within perAddress bytes of disk
// for each address and twice that in all. A spill file is unlinked as soon
// as it is created, so a process that dies leaves nothing; where the system
// cannot (Windows), one left by a process that died is removed here.
func newOfferLists(dir string, perAddress int64, log *slog.Logger) *offerLists {
	stale, _ := filepath.Glob(filepath.Join(dir, "manifest-*.spill"))
	for _, f := range stale {
		if err := os.Remove(f); err != nil {
			log.Warn("remove a stale offer list", "file", f, "err", err)
		}
	}
	return &offerLists{dir: dir, budget: manifeststore.NewBudget(perAddress, 2*perAddress), memory: listMemory}
}

// open returns an empty list for an offer from source (an address).
func (l *offerLists) open(source string) (*manifeststore.Store, error) {
	return manifeststore.New(manifeststore.Options{Dir: l.dir, Memory: l.memory, Budget: l.budget, Peer: source})
}

// offeredList is a spilled manifest as the inbox reads it.
type offeredList struct{ s *manifeststore.Store }

func (l offeredList) Len() int { return l.s.Len() }

func (l offeredList) Get(i int) (core.OfferedFile, error) {
	e, err := l.s.Get(i)
	return core.OfferedFile{Path: e.Path, Size: e.Size, Holes: e.Holes}, err
}

func (l offeredList) Each(f func(i int, f core.OfferedFile) error) error {
	return l.s.Each(func(i int, e manifeststore.Entry) error {
		return f(i, core.OfferedFile{Path: e.Path, Size: e.Size, Holes: e.Holes})
	})
}

var _ core.FileList = offeredList{}

// entry is offered file i as the wire described it.
func (rx *receiver) entry(i uint32) (wire.FileEntry, error) {
	e, err := rx.list.Get(int(i))
	return wire.FileEntry{Path: e.Path, Size: e.Size, Mode: e.Mode, MTime: e.MTime, Holes: e.Holes}, err
}

// appendEntry adds the next entry of the manifest to the session's list.
func (rx *receiver) appendEntry(f wire.FileEntry) error {
	return rx.kept(rx.list.Append(manifeststore.Entry{Path: f.Path, Size: f.Size, Mode: f.Mode, MTime: f.MTime, Holes: f.Holes}))
}

// readFolders reads the offer's empty folders (OfferFolders after its
// files) into a list of their own, kept as the files' is; entries and held
// are as holdNames takes them.
func (rx *receiver) readFolders(entries int, held int64) error {
	var err error
	if rx.folders, err = rx.e.lists.open(rx.Ticket().Source()); err != nil {
		return err
	}
	for rx.folders.Len() < rx.offer.Folders {
		part, err := expect[*wire.OfferFolders](rx.ctl.recvTimeout(offerTimeout))
		if err != nil {
			return err
		}
		if n := rx.folders.Len(); part.Start != n || n+len(part.Paths) > rx.offer.Folders {
			return fmt.Errorf("%w: folders part at %d with %d folders does not continue the %d received (of %d)",
				wire.ErrProtocol, part.Start, len(part.Paths), n, rx.offer.Folders)
		}
		for _, p := range part.Paths {
			if err := rx.kept(rx.folders.Append(manifeststore.Entry{Path: p})); err != nil {
				return err
			}
		}
		if held, err = rx.holdNames(entries, held); err != nil {
			return err
		}
	}
	return nil
}

// kept is what the receiver tells the sender when appending to an offer's
// list failed with err (nil when it did not).
func (rx *receiver) kept(err error) error {
	if err == nil {
		return nil
	}
	var be *manifeststore.BudgetError
	switch {
	case errors.As(err, &be) && be.All:
		return core.Refusal(core.ErrManifestsFull).Err()
	case errors.As(err, &be):
		return &core.RefusedError{Code: wire.CodeTooLarge, Reason: fmt.Sprintf(
			"%s keeps file lists of at most %s on its disk for one network address, and this one is larger (send the folder in parts or as an archive)",
			rx.e.Name(), core.HumanBytes(be.Limit))}
	}
	rx.e.log.Warn("keep an offer's file list", "err", err)
	return &core.RefusedError{Code: wire.CodeIO, Reason: rx.e.Name() + " could not keep the offer's file list on its disk"}
}

// closeList removes the session's file list (its spill file) and gives
// its disk back.
func (rx *receiver) closeList() {
	for _, l := range []*manifeststore.Store{rx.list, rx.folders} {
		if l != nil {
			if err := l.Close(); err != nil {
				rx.e.log.Warn("remove an offer's file list", "err", err)
			}
		}
	}
}
