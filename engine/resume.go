package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/resume"
	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/fileio"
)

// The receiving side of resume: what a session holds goes into a
// resume.State (package resume keeps it on disk), and a later session of
// the same offer from the same device restores from it whatever still checks
// out on disk.

// resumeFrom takes over an earlier attempt at the same transfer: it ends a
// session that still holds it, then restores what its state lists.
func (rx *receiver) resumeFrom(dir string) {
	if rx.offer.Manifest == "" || rx.e.opts.DisableResume {
		return
	}
	e := rx.e
	rx.resumeKey = resume.Key(rx.c.PeerID().String(), rx.offer.Manifest)
	e.takeOverResume(rx)
	// A discard in another process on this config (ferry-cli partials
	// --discard, the age check of another receiver) ends first as well; a
	// later one sees this session's journal (Busy) and leaves it alone.
	defer e.resume.Reserve(rx.resumeKey, e.resumeWaits)()
	defer rx.startJournal() // before the reservation goes (deferred last, runs first)
	s, err := e.resume.Salvage(rx.resumeKey)
	record := false
	if s == nil && err == nil {
		s, record = rx.deliveredBefore(), true // this delivery, done here before: its saved files count
	}
	if err != nil && s != nil && s.Check(rx.offeredFiles(dir), validLocal) == nil {
		// Damaged, but what it still lists fits this offer: that much
		// resumes (its chunks re-checked as always); files it no longer
		// lists travel again.
		e.log.Warn("resume state damaged: resuming what it still lists", "err", err)
	} else if err != nil {
		e.log.Warn("ignoring resume state", "err", err)
		if s != nil {
			// Its partials, where it still names them, go with it: nothing
			// would list them once it is dropped.
			from := dir
			if s.Dest != "" {
				from = s.Dest
			}
			rx.dropPartials(s, from)
		}
		rx.discardStale(nil)
		return
	}
	if s == nil {
		return
	}
	if err := s.Check(rx.offeredFiles(dir), validLocal); err != nil {
		e.log.Warn("ignoring resume state", "reason", err)
		if s.Dest != "" && s.Check(rx.offeredFiles(s.Dest), validLocal) == nil {
			// This offer, begun in another download folder (changed
			// since): it starts afresh here, and its partials there go
			// with the state, which alone lists them and ages them out.
			rx.dropPartials(s, s.Dest)
		}
		rx.discardStale(nil)
		return
	}
	if rx.e.restoring != nil {
		rx.e.restoring()
	}
	rx.fromRecord = record
	rx.haves, rx.preDone = rx.restore(s)
	rx.discardStale(s)
	if rx.e.restored != nil {
		rx.e.restored(rx)
	}
}

// heldFor is the disk an earlier attempt at this offer holds in dir, of the
// files accepted reports, which this attempt reuses or gives back
// (resumeFrom): the saved files it will not fetch again, and every partial
// (preallocated whole when it was created; one not reused is removed). The
// space check does not ask for it again: a transfer that stopped at 90 % of
// a file larger than the disk's free space resumes.
func (rx *receiver) heldFor(dir string, accepted func(int) bool) int64 {
	if rx.offer.Manifest == "" || rx.e.opts.DisableResume {
		return 0
	}
	s, err := rx.e.resume.Salvage(resume.Key(rx.c.PeerID().String(), rx.offer.Manifest)) // what resumeFrom will take
	record := false
	if s == nil && err == nil {
		s, record = rx.deliveredBefore(), true
	}
	if s == nil || s.Check(rx.offeredFiles(dir), validLocal) != nil {
		return 0
	}
	var held int64
	for _, f := range s.Files {
		switch {
		case f.Done && accepted(int(f.Index)):
			e, err := rx.entry(f.Index)
			if st, serr := os.Lstat(filepath.Join(dir, filepath.FromSlash(f.SavedAs))); err == nil && serr == nil && unchanged(st, e, record) {
				held += store.OnDisk(f.Size)
			}
		case !f.Done && f.Partial != "":
			if st, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f.Partial))); err == nil && st.Mode().IsRegular() {
				held += min(store.Allocated(st), store.OnDisk(f.Size))
			}
		}
	}
	return held
}

// acceptedBefore returns the folder of the transfer that this offer
// continues, when the user accepted it before: the same delivery from the
// same device (a session after a pause, a sleep, a network change, a
// crash, or after it finished here while its sender did not hear so:
// deliveredBefore), every file it offers taken, and its folder still
// there. The offer is then not asked about again (core.Inbox.Continues).
// A new send of the same files is a delivery of its own, and is asked
// about.
func (rx *receiver) acceptedBefore() string {
	if rx.offer.Manifest == "" || rx.offer.Transfer == "" || rx.e.opts.DisableResume {
		return ""
	}
	s, err := rx.e.resume.Load(resume.Key(rx.c.PeerID().String(), rx.offer.Manifest))
	if s == nil && err == nil {
		s = rx.deliveredBefore()
	}
	if err != nil || s == nil || s.Delivery != rx.offer.Transfer || !s.Held() ||
		s.Accepted != rx.list.Len()-len(rx.Refused)-rx.TooLargeFor(s.Dest) || s.Check(rx.offeredFiles(s.Dest), validLocal) != nil {
		return "" // not that delivery accepted whole here (which files a prompt left out is not kept): asked
	}
	if st, err := os.Stat(s.Dest); err != nil || !st.IsDir() {
		return ""
	}
	return s.Dest
}

// deliveredBefore is the record of this offer's delivery when it finished
// here before (resume.Dir.Deliver) and has no unfinished state since: its
// sender did not hear the end (killed, or cut off, as the receiver said
// every file was saved) and offers the same delivery again. Its files
// still there unchanged count as saved (restore); nothing is saved twice
// as "name (1)". The record is found by this device's peer and the
// offer's files, and must name the offer's delivery: another device
// naming the delivery, or a new delivery of the same files, finds none.
func (rx *receiver) deliveredBefore() *resume.State {
	if rx.offer.Manifest == "" || rx.offer.Transfer == "" || rx.e.opts.DisableResume {
		return nil
	}
	return rx.e.resume.Delivered(resume.Key(rx.c.PeerID().String(), rx.offer.Manifest), rx.offer.Transfer)
}

// unchanged reports whether st, what is on disk under a saved file's name,
// is still the file e saved there: a regular file of its size and, for a
// finished delivery's file (record), of the modification time it was given
// as it was saved (the offer's), within the 2 s of the coarsest file
// systems (FAT). A file changed since (its mtime is when it was) travels
// again, beside it.
func unchanged(st fs.FileInfo, e wire.FileEntry, record bool) bool {
	if !st.Mode().IsRegular() || st.Size() != e.Size {
		return false
	}
	if !record || e.MTime == 0 {
		return true
	}
	d := st.ModTime().UnixNano() - e.MTime
	return d > -int64(2*time.Second) && d < int64(2*time.Second)
}

// offeredFiles describes the offer for resume.State.Check.
func (rx *receiver) offeredFiles(dir string) resume.Offered {
	return resume.Offered{Peer: rx.c.PeerID().String(), Manifest: rx.offer.Manifest, ChunkSize: rx.offer.ChunkSize, Dest: dir,
		Files: rx.list.Len(), File: func(i int) (resume.OfferedFile, error) {
			e, err := rx.entry(uint32(i))
			return resume.OfferedFile{Path: e.Path, Size: e.Size}, err
		}}
}

// discardStale drops the state of rx's resume key, and the partial files it
// names that the session did not take over; those that cannot be removed
// stay listed (keepUnremoved). s may be nil: the caller saw to its
// partials (dropPartials).
func (rx *receiver) discardStale(s *resume.State) {
	if s != nil {
		var left []resume.File
		var first error
		for _, f := range s.Files {
			if f.Partial == "" || rx.holdsPartial(f.Partial) {
				continue
			}
			if err := rx.removePartial(f.Partial, f.PartialID); err != nil {
				left = append(left, f)
				first = cmp.Or(first, err)
			}
		}
		rx.keepUnremoved(rx.DestDir, left, first)
	}
	rx.e.resume.Drop(rx.resumeKey)
}

// dropPartials removes the partial files that s, a state of rx's resume
// key that goes (damaged, or for another folder), names in dest; those
// still there that cannot be removed stay listed (keepUnremoved).
func (rx *receiver) dropPartials(s *resume.State, dest string) {
	var files []resume.File
	var names, ids []string
	for _, f := range s.Files {
		if !f.Done && f.Partial != "" {
			files = append(files, f)
			names, ids = append(names, f.Partial), append(ids, f.PartialID)
		}
	}
	_, left, err := discardPartials(dest, names, ids)
	kept := make([]resume.File, len(left))
	for i, k := range left {
		kept[i] = files[k]
	}
	rx.keepUnremoved(dest, kept, err)
}

// keepUnremoved lists the partial files in dest that this transfer gives
// up on and could not remove (err says why the first could not) among the
// unfinished transfers, with the other partials of the same device that
// could not be removed from there (resume.Dir.KeepUnremoved): partials
// --discard, Settings' Discard and the age limit try again. They stayed in
// the folder, listed nowhere, and never aged out.
func (rx *receiver) keepUnremoved(dest string, files []resume.File, err error) {
	if len(files) == 0 {
		return
	}
	rx.e.log.Warn("partial files could not be removed: they stay listed among the unfinished transfers", "files", len(files), "err", err)
	if err := rx.e.resume.KeepUnremoved(rx.c.PeerID().String(), rx.t.peer.Name, dest, files); err != nil {
		rx.e.log.Warn("resume state", "err", err)
	}
}

func (rx *receiver) holdsPartial(name string) bool {
	rx.mu.Lock()
	defer rx.mu.Unlock()
	for _, f := range rx.files {
		if f.partName == name {
			return true
		}
	}
	return false
}

// dropSuperseded removes the partials that other unfinished transfers
// from the same device keep in this download folder for a file this
// transfer saved under the same offered path: an earlier version of it
// (the file changed at its source, so its offer, and its resume state, are
// other ones), which no send resumes once the source holds the new one,
// and which stayed on disk until it aged out (a week). A transfer being
// received now keeps its partials; so do other devices'. The rule cannot
// tell a changed file from another file of the same name offered from
// elsewhere on the sender: if that one is sent again, it starts over.
func (rx *receiver) dropSuperseded() {
	if rx.resumeKey == "" || rx.Dest == nil || rx.Dest.Gone() {
		return
	}
	var cands []resume.Begun
	for _, b := range rx.e.resume.BegunIn(rx.c.PeerID().String(), rx.DestDir) {
		if b.Key != rx.resumeKey && !rx.e.receivingInto(b.Key) {
			cands = append(cands, b)
		}
	}
	if len(cands) == 0 {
		return
	}
	byPath := map[string][]resume.Begun{}
	for _, b := range cands {
		byPath[b.Path] = append(byPath[b.Path], b)
	}
	forget := map[string][]uint32{}
	for _, i := range rx.Accepted {
		rx.mu.Lock()
		saved := rx.status[i] == fileSaved
		rx.mu.Unlock()
		if !saved {
			continue
		}
		e, err := rx.entry(uint32(i))
		if err != nil {
			continue
		}
		for _, b := range byPath[e.Path] {
			if err := rx.removePartial(b.Partial, b.PartialID); err != nil {
				// Its state keeps listing it: discarded again, or aged
				// out, with it.
				rx.e.log.Warn("the partial of an earlier version", "err", err)
				continue
			}
			forget[b.Key] = append(forget[b.Key], b.Index)
		}
		delete(byPath, e.Path)
		if len(byPath) == 0 {
			break
		}
	}
	for key, files := range forget {
		rx.e.log.Info("removed the partial of an earlier version", "files", len(files), "key", key)
		if err := rx.e.resume.Forget(key, files); err != nil {
			rx.e.log.Warn("resume state", "err", err)
		}
	}
}

// receivingInto reports whether a receiver (here, or another process on
// the same config) is writing into key's partials now.
func (e *Engine) receivingInto(key string) bool {
	e.mu.Lock()
	busy := e.resuming[key] != nil
	e.mu.Unlock()
	return busy || e.resume.Busy(key)
}

// removePartial deletes a partial that only the dropped state knew of (by
// its name and identity). It returns an ErrPartialNotRemoved when the
// partial is still there and could not be opened or removed (a name gone,
// or now another file's, is not ours to remove: nil).
func (rx *receiver) removePartial(name, id string) error {
	p, err := rx.Dest.OpenPartial(name, id)
	if err == nil {
		err = rx.Dest.Discard(p)
	}
	if err != nil && !notOurs(err) {
		return notRemoved(rx.DestDir, name, err)
	}
	return nil
}

// startJournal writes a snapshot of where this attempt starts (listing every
// accepted file) and opens an empty journal for what lands from now on.
func (rx *receiver) startJournal() {
	j, err := rx.e.resume.Start(rx.resumeKey, rx.snapshotResume())
	if err != nil {
		rx.e.log.Warn("resume journal", "err", err)
		return
	}
	rx.journal = j
}

// snapshotResume builds the state to save from the receiver's progress. It
// lists the files begun (a partial held) and yields the saved ones (More:
// written one by one, never held together), not the accepted files that
// have not begun: those are implied by the offer, and a journal record of
// one makes its entry (issue 30: a snapshot of 10^6 files listed them all).
func (rx *receiver) snapshotResume() *resume.State {
	rx.mu.Lock()
	defer rx.mu.Unlock()
	s := &resume.State{Peer: rx.c.PeerID().String(), PeerName: rx.t.peer.Name, Delivery: rx.offer.Transfer,
		Manifest: rx.offer.Manifest, ChunkSize: rx.offer.ChunkSize, Dest: rx.DestDir, Accepted: len(rx.Accepted)}
	saved := false
	for _, i := range rx.Accepted {
		f, live := rx.files[uint32(i)]
		switch {
		case rx.status[i] == fileSaved:
			saved = true
		case live && f.partName != "":
			n := f.tree.Len()
			rf := resume.NewFile(f.idx, f.entry.Path, f.entry.Size, n)
			rf.Partial, rf.PartialID = f.partName, f.partID
			for c := 0; c < n && f.partName != ""; c++ { // a file without a name (store.CreateWhole) holds nothing to resume
				if f.tree.Has(c) {
					rf.Set(c, f.tree.Leaf(c), f.crcs[c])
				}
			}
			s.Files = append(s.Files, rf)
		}
		// Failed: it starts over. Not begun: implied by the offer.
	}
	if saved {
		s.More = rx.savedFiles
	}
	return s
}

// savedFiles yields the files saved so far, in offer order, as the resume
// state lists them.
func (rx *receiver) savedFiles(yield func(resume.File) bool) {
	for _, i := range rx.Accepted {
		idx := uint32(i)
		rx.mu.Lock()
		ok := rx.status[i] == fileSaved
		as, renamed := rx.savedAs[idx]
		rx.mu.Unlock()
		if !ok {
			continue
		}
		e, err := rx.entry(idx)
		if err != nil {
			rx.e.log.Warn("resume state", "err", err)
			continue // fetched again if it is missing then
		}
		if !renamed {
			as = e.Path
		}
		if !yield(resume.File{Index: idx, Path: e.Path, Size: e.Size, Done: true, SavedAs: as}) {
			return
		}
	}
}

// restore applies a valid resume state to the accepted files: chunks whose
// CRC32C still matches what is on disk count as received; the rest travel
// again. It returns the Have messages to send and the files already saved.
// A finished delivery's record (rx.fromRecord) counts its saved files
// only if unchanged since.
func (rx *receiver) restore(s *resume.State) (haves []*wire.Have, done []*rxFile) {
	buf := make([]byte, rx.offer.ChunkSize)
	for _, rf := range s.Files {
		if int(rf.Index) >= len(rx.status) || rx.status[rf.Index] != fileAccepted {
			continue // not accepted this time
		}
		if rf.Done {
			// Saved in an earlier attempt: trust it only if it is still there,
			// whole. Its state lives until resolve, outside the files in flight.
			e, err := rx.entry(rf.Index)
			if err != nil {
				continue // fetched again
			}
			if st, err := os.Lstat(filepath.Join(rx.DestDir, filepath.FromSlash(rf.SavedAs))); err == nil && unchanged(st, e, rx.fromRecord) {
				done = append(done, rx.keptSaved(rf.Index, e, rf.SavedAs))
				rx.Bytes.Add(e.Size) // here whole: progress and the result count it, as the sender does
				rx.Kept.Add(e.Size)
			}
			continue
		}
		if rf.Partial == "" {
			// A file created without a name (store.CreateWhole) that was
			// about to be named: saved if a file of its identity has its
			// name, or a numbered one.
			if e, err := rx.entry(rf.Index); err == nil && rf.PartialID != "" {
				if as, ok := rx.Dest.Renamed(e.Path, rf.PartialID, e.Size); ok {
					done = append(done, rx.keptSaved(rf.Index, e, as))
					rx.Bytes.Add(e.Size)
					rx.Kept.Add(e.Size)
				}
			}
			continue
		}
		// Only the partial this transfer created, still a plain file.
		p, err := rx.Dest.OpenPartial(rf.Partial, rf.PartialID)
		if err != nil {
			if e, eerr := rx.entry(rf.Index); eerr == nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, store.ErrLinked)) {
				// Saved in an earlier attempt that ended before it could
				// record so: the partial, by its identity, under its name.
				if as, ok := rx.Dest.Renamed(e.Path, rf.PartialID, e.Size); ok {
					done = append(done, rx.keptSaved(rf.Index, e, as))
					rx.Bytes.Add(e.Size)
					rx.Kept.Add(e.Size)
					continue
				}
			}
			rx.e.log.Info("resume: partial not reusable, fetching the file again", "file", rf.Path, "err", err)
			continue
		}
		rx.mu.Lock()
		f, _ := rx.fileLocked(rf.Index, false)
		rx.mu.Unlock()
		n := f.tree.Len()
		have := make([]byte, (n+7)/8)
		var any bool
		// A chunk of a sparse file that lies in a hole of the partial reads
		// as zeros: its CRC32C is that of zeros, without reading it back
		// (reading the zeros of 20 GiB of holes took about a second).
		var holes holeSet
		if f.entry.Holes > 0 {
			holes.runs = p.HoleChunks(f.entry.Size, rx.offer.ChunkSize)
		}
		for c := 0; c < n; c++ {
			if !rf.Has(c) {
				continue
			}
			l := merkle.ChunkLen(f.entry.Size, rx.offer.ChunkSize, c)
			data := buf[:l]
			hole := l > 0 && holes.has(c)
			crc := zeroCRC(l)
			if l > 0 && !hole {
				if rx.e.readingBack != nil {
					rx.e.readingBack(f.entry.Path, c)
				}
				if k, err := p.ReadAt(data, int64(c)*int64(rx.offer.ChunkSize)); err != nil || k != l {
					continue
				}
				crc = crc32.Checksum(data, castagnoli)
			}
			// The storage assertion: what is on disk must be what we wrote.
			if crc != rf.CRCs[c] {
				rx.e.log.Info("resume: chunk changed on disk, fetching it again", "file", f.entry.Path, "chunk", c)
				continue
			}
			if f.entry.Holes > 0 && !hole && !fileio.AllZero(data) {
				f.chargeData(uint32(c), l) // data kept counts against what the offer says it holds
			}
			f.tree.Set(c, rf.Leaf(c))
			f.crcs[c] = rf.CRCs[c]
			have[c/8] |= 1 << (c % 8)
			rx.Bytes.Add(int64(l))
			rx.Kept.Add(int64(l))
			any = true
		}
		if !any {
			// Nothing of it to reuse: it goes. One that cannot be removed
			// now is tried again with the other partials the old state
			// names that this session does not take over, and kept listed
			// if it still cannot be (discardStale, right after restore).
			if err := rx.Dest.Discard(p); err != nil {
				rx.e.log.Info("resume: partial not reusable and not removed", "file", rf.Path, "err", err)
			}
			continue
		}
		f.part, f.partName, f.partID = p, p.Name(), p.Identity()
		rx.open++
		haves = append(haves, &wire.Have{File: f.idx, Chunks: have})
	}
	return haves, done
}

// holeSet answers whether chunks, asked in increasing order, lie in runs
// (fileio.HoleChunks: in order, apart).
type holeSet struct {
	runs []fileio.ChunkRun
	i    int // the first run that may hold the chunks asked from now on
}

// has reports whether chunk c lies in a run; c must not be below the
// chunk asked before.
func (h *holeSet) has(c int) bool {
	for h.i < len(h.runs) && h.runs[h.i].Start+h.runs[h.i].Count <= int64(c) {
		h.i++
	}
	return h.i < len(h.runs) && h.runs[h.i].Start <= int64(c)
}

// keptSaved marks accepted file idx, which an earlier attempt saved as
// savedAs, saved at once, and returns its state for the resolve that tells
// the sender. Marked only at that resolve, a session that ended before it
// (its sender killed, a newer session taking over while it checked what
// was kept) left a state that listed none of the files saved before, and
// the next attempt fetched them all again as "name (1)".
func (rx *receiver) keptSaved(idx uint32, e wire.FileEntry, savedAs string) *rxFile {
	rx.mu.Lock()
	defer rx.mu.Unlock()
	rx.status[idx] = fileSaved
	if savedAs != e.Path {
		if rx.savedAs == nil {
			rx.savedAs = map[uint32]string{}
		}
		rx.savedAs[idx] = savedAs
	}
	return &rxFile{idx: idx, entry: e, savedAs: savedAs}
}

// ResumeProblem says why unfinished incoming transfers cannot be kept for a
// resume (their state's folder under the config folder cannot be written),
// or nil.
func (e *Engine) ResumeProblem() error { return e.resume.Writable() }

// PartialTransfer describes an unfinished incoming transfer kept for resume:
// who sent it, where it goes, and the verified bytes its partial files hold.
type PartialTransfer = resume.Summary

// Partials lists unfinished incoming transfers and the disk space they hold,
// most recently touched first. One being received now (by this engine, or
// another process on the same config where file locks tell) is marked
// Receiving.
func (e *Engine) Partials() []PartialTransfer {
	ps := e.resume.List()
	e.mu.Lock()
	for i := range ps {
		if e.resuming[ps[i].Key] != nil {
			ps[i].Receiving = true
		}
	}
	e.mu.Unlock()
	for i := range ps {
		if ps[i].Damaged != "" {
			e.findDamaged(&ps[i])
		}
		for _, name := range ps[i].Partials {
			if st, err := os.Lstat(filepath.Join(ps[i].Dest, filepath.FromSlash(name))); err == nil && st.Mode().IsRegular() {
				ps[i].OnDisk += store.Allocated(st)
			}
		}
	}
	return ps
}

// findDamaged keeps, of the partials a damaged state still names, those
// that are there, by their identity: in its folder, or when that was lost
// with the snapshot, in the download folder (the journal that named them
// does not say where they are).
func (e *Engine) findDamaged(p *PartialTransfer) {
	dest := p.Dest
	if dest == "" {
		dest = e.DownloadDir()
	}
	var names, ids []string
	if d, err := store.Open(dest); err == nil {
		for i, name := range p.Partials {
			if f, err := d.OpenPartial(name, p.PartialIDs[i]); err == nil {
				f.Close()
				names, ids = append(names, name), append(ids, p.PartialIDs[i])
			}
		}
		d.Close()
	}
	if len(names) > 0 {
		p.Dest = dest
	}
	p.Partials, p.PartialIDs = names, ids
}

// ErrPartialNotRemoved: a partial file of the unfinished transfer to
// discard is still there and could not be removed (on Windows, another
// program has it open). The transfer stays listed, to be discarded again.
var ErrPartialNotRemoved = errors.New("a partial file could not be removed")

// ErrPartialInUse: the unfinished transfer to discard is being received now.
var ErrPartialInUse = errors.New("that transfer is being received now: cancel it first, then discard what it kept")

// DiscardPartial removes an unfinished transfer's .partial files and state.
// It refuses one being received now (ErrPartialInUse): its files would be
// deleted under it, and it would fail at its end.
func (e *Engine) DiscardPartial(key string) error {
	_, err := e.DiscardPartialFiles(key)
	return err
}

// Discarded is what discarding an unfinished transfer removed.
type Discarded struct {
	Files int   // partial files removed (those gone already, or now another file's, are not)
	Freed int64 // the disk space they took
}

// DiscardPartialFiles is DiscardPartial, and says what it removed.
func (e *Engine) DiscardPartialFiles(key string) (Discarded, error) {
	return e.discardPartialFiles(key, -1)
}

// errPartialTouched: the unfinished transfer to discard for its age made
// progress since it was listed (its sender came back meanwhile).
var errPartialTouched = errors.New("the unfinished transfer was resumed since it was listed")

// discardPartialFiles is DiscardPartialFiles; olderThan, when not
// negative, discards key only if it is still older than that once no
// session can take it over (CleanPartials listed it as old, and its sender
// may have come back since), and nothing when nothing is listed under it.
func (e *Engine) discardPartialFiles(key string, olderThan time.Duration) (Discarded, error) {
	// Listed and discarded while no session of this engine holds it, and
	// none can take it over until it is done (takeOverResume waits): a
	// session that began before is left alone, one that comes meanwhile
	// restores nothing, not files being removed under it.
	release, ok := e.holdForDiscard(key)
	if !ok {
		return Discarded{}, ErrPartialInUse
	}
	defer release()
	// The same between processes on this config: a session of another
	// resuming key either marked it receiving already (Busy, below) or
	// waits for this discard to end.
	defer e.resume.Reserve(key, nil)()
	for _, s := range e.Partials() {
		if s.Key != key {
			continue
		}
		if s.Receiving {
			return Discarded{}, ErrPartialInUse
		}
		if olderThan >= 0 && e.now().Sub(s.Updated) <= olderThan {
			return Discarded{}, errPartialTouched
		}
		if e.discardListed != nil {
			e.discardListed()
		}
		d, _, err := discardPartials(s.Dest, s.Partials, s.PartialIDs)
		if err != nil {
			// Its state alone lists the file: kept, it is listed (and aged
			// out) still, and discarded again once the file can go.
			return d, err
		}
		if e.discarding != nil {
			e.discarding()
		}
		// Under the lock KeepUnremoved takes: a partial it lists in an
		// unremoved state since the listing above stays listed.
		if err := e.resume.DropDiscarded(key, s.Partials, s.PartialIDs); err != nil {
			e.log.Warn("resume state", "err", err)
		}
		e.discarded(s)
		return d, nil
	}
	if olderThan >= 0 {
		return Discarded{}, errPartialTouched // resumed to its end, or discarded, since it was listed
	}
	// Nothing listed under key (discarded already, or never there): what
	// is left of it goes (a state that cannot be read), under the lock, so
	// that unremoved partials a transfer listed under it since stay listed.
	if e.discarding != nil {
		e.discarding()
	}
	if err := e.resume.DropDiscarded(key, nil, nil); err != nil {
		e.log.Warn("resume state", "err", err)
	}
	return Discarded{}, nil
}

// holdForDiscard reserves key's partials for a discard, after any other
// discard of them: false while a session of this engine holds them. The
// caller calls release when done, which lets a session waiting to resume
// them go on (takeOverResume).
func (e *Engine) holdForDiscard(key string) (release func(), ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.afterDiscardLocked(key, nil)
	if e.resuming[key] != nil {
		return nil, false
	}
	done := make(chan struct{})
	e.discardingKeys[key] = done
	return func() {
		e.mu.Lock()
		delete(e.discardingKeys, key)
		e.mu.Unlock()
		close(done)
	}, true
}

// afterDiscardLocked returns, with e.mu held as when called, once no
// discard of key's partials runs; it lets e.mu go while it waits. waiting,
// when not nil, runs as it waits (tests).
func (e *Engine) afterDiscardLocked(key string, waiting func()) {
	for done := e.discardingKeys[key]; done != nil; done = e.discardingKeys[key] {
		e.mu.Unlock()
		if waiting != nil {
			waiting()
		}
		<-done
		e.mu.Lock()
	}
}

// discarded ends the transfer whose partial files were discarded: its row
// and history said it would resume when its sender is back, and now it
// will not (a new send of the same files starts afresh).
func (e *Engine) discarded(s PartialTransfer) {
	if s.Delivery == "" {
		return // kept before states named their delivery: no row to end
	}
	t := &Transfer{id: "r-" + resume.Key(s.PeerID, s.Delivery), delivery: s.Delivery, dir: Receiving, done: make(chan struct{}),
		peer: PeerInfo{ID: s.PeerID, Name: s.PeerName}, state: StateCancelled}
	r := Result{State: StateCancelled, Code: string(wire.CodeCancelled), Files: s.Files, Verified: s.Saved, Destination: s.Dest,
		Err: "Discarded: what arrived of it was removed, so it will not resume."}
	e.publish(t, Event{Kind: EventResult, State: StateCancelled, Result: &r})
}

// discardPartials removes the partial files names (as resume states record
// them, with their identities ids) in the download folder dest, each only if
// it is still that partial (store.OpenPartial), and returns what it
// removed, the indexes in names of those still there that could not be
// opened or removed (a name gone, or now another file's, is not one; nor
// are the partials of a folder that cannot be opened), and an
// ErrPartialNotRemoved for the first of them.
func discardPartials(dest string, names, ids []string) (done Discarded, left []int, err error) {
	d, oerr := store.Open(dest)
	if oerr != nil {
		return done, nil, nil // nothing of it can be reached, nor ever removed
	}
	defer d.Close()
	for i, name := range names {
		p, perr := d.OpenPartial(name, ids[i])
		if perr == nil {
			var took int64
			if st, serr := os.Lstat(filepath.Join(dest, filepath.FromSlash(name))); serr == nil {
				took = store.Allocated(st)
			}
			if perr = d.Discard(p); perr == nil {
				done.Files++
				done.Freed += took
				continue
			}
		}
		if !notOurs(perr) {
			left = append(left, i)
			if err == nil {
				err = notRemoved(dest, name, perr)
			}
		}
	}
	return done, left, err
}

// notOurs reports whether OpenPartial's err means there is no partial of
// ours to remove under the name: gone, or another file (never removed).
func notOurs(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, store.ErrNotThePartial) ||
		errors.Is(err, store.ErrNotRegular) || errors.Is(err, store.ErrLinked) || errors.Is(err, store.ErrNotPartial)
}

// notRemoved says which partial file could not be removed, and the
// system's cause without the paths it repeats.
func notRemoved(dest, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	return fmt.Errorf("%w: %s in %s (%v); the unfinished transfer stays listed: close any program that has it open, then discard it again",
		ErrPartialNotRemoved, filepath.FromSlash(name), dest, err)
}

// CleanPartials discards unfinished transfers not touched for longer than
// maxAge (and the sender-side leaf caches and kept deliveries of the same
// age, and the records of finished deliveries past theirs).
func (e *Engine) CleanPartials(maxAge time.Duration) int {
	e.resume.CleanLeafCaches(maxAge)
	e.resume.PruneDelivered()
	n := 0
	for _, p := range e.Partials() {
		if e.now().Sub(p.Updated) > maxAge {
			if e.agedListed != nil {
				e.agedListed(p.Key)
			}
			// Its sender may have come back since the listing (at the age
			// limit): discarded only if still as old once none can resume it.
			if _, err := e.discardPartialFiles(p.Key, maxAge); errors.Is(err, errPartialTouched) {
				continue
			} else if err != nil {
				// It stays listed, and is tried again at the next clean.
				e.log.Warn("an unfinished transfer past the age limit could not be discarded", "key", p.Key, "from", p.PeerName, "err", err)
				continue
			}
			n++
		}
	}
	return n
}

// validLocal checks a name resume state holds (a peer's path, or the name
// a file was saved or is arriving under here) as the store would save it.
func validLocal(name string) error { return store.ValidateHere(store.LocalName(name)) }

// agePartialsEvery is how often a receiver that keeps running discards the
// unfinished transfers past Options.MaxPartialAge, as it does when
// receiving starts: one left receiving from the tray for weeks kept every
// transfer interrupted since it started, with its preallocated .partial
// files, until it restarted.
const agePartialsEvery = time.Hour

// partialAge is Options.MaxPartialAge with its default: negative keeps
// unfinished transfers forever.
func (e *Engine) partialAge() time.Duration {
	if age := e.opts.MaxPartialAge; age != 0 {
		return age
	}
	return 7 * 24 * time.Hour
}

// cleanOldPartials discards the unfinished transfers older than age, and
// logs how many it did.
func (e *Engine) cleanOldPartials(age time.Duration) {
	if n := e.CleanPartials(age); n > 0 {
		e.log.Info("discarded old unfinished transfers", "count", n, "older than", age)
	}
}

// ageLoop discards unfinished transfers older than age at each tick while
// receiving is on, until ctx ends.
func (e *Engine) ageLoop(ctx context.Context, tick <-chan time.Time, age time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			e.mu.Lock()
			receiving := e.receiving
			e.mu.Unlock()
			if receiving {
				e.cleanOldPartials(age)
			}
		}
	}
}

// ageLeafCaches removes, when a send starts and at most every
// agePartialsEvery, the sender's leaf caches of unfinished sends older
// than Options.MaxPartialAge. Only Start cleaned them, so a config folder
// that only sends (ferry-cli send, one engine per send) kept one for every
// send ever cancelled or killed mid-way. It runs before the send's attempt
// looks for its own cache (a few directory entries): that one is removed
// first or not at all.
func (e *Engine) ageLeafCaches() {
	age := e.partialAge()
	if age < 0 {
		return
	}
	now := e.now()
	e.mu.Lock()
	due := e.leavesAged.IsZero() || now.Sub(e.leavesAged) >= agePartialsEvery
	if due {
		e.leavesAged = now
	}
	e.mu.Unlock()
	if due {
		e.resume.CleanLeafCaches(age)
	}
}
