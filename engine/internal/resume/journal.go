package resume

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32" // CRC32C frames journal records against torn writes; not security.
	"io"
	"io/fs"
	"iter"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Journal appends one small record per landed chunk, per partial file
// created and per saved file to <key>.log, next to the snapshot. A killed
// process loses nothing it wrote (the page cache keeps it), so a restart
// re-fetches only what was in flight; Sync at intervals bounds what a power
// cut can lose, and the CRC32C re-check on resume catches whatever did not
// reach the disk.
//
// Record: uint32 length, payload, uint32 CRC32C of the payload. Payload: a
// type byte and the file index, then for a chunk its index, CRC32C and leaf,
// for a partial the file's size (int64), the length of the partial's
// identity (a byte), its identity and its name (a journal of before has
// partial records without the identity, or without the size), for a saved
// file the
// name it was saved as, for a head the snapshot's head (its fields before
// its files, in JSON; file index 0), for held chunks each one's index,
// CRC32C and leaf. The snapshot lists only the files begun or saved
// when it was written: a partial or saved record of a file it does not
// list makes the file's entry (State.Check completes it from the offer).
// Reading stops at the first torn or damaged record: everything before it is
// good; a record of a type this build does not know (a newer Ferry's) is
// skipped. Each compaction starts the journal again with what its snapshot
// says (leading): a head, then for each file its partial and the chunks
// it holds (recHeld, many to a record), or that it was saved.
type Journal struct {
	// syncMu serialises Sync and Close: one fsync at a time, and none
	// still running on a closed file.
	syncMu sync.Mutex
	// fsync commits f to stable storage ((*os.File).Sync; tests replace it).
	fsync func(*os.File) error

	mu      sync.Mutex // guards the fields below
	f       *os.File
	w       *bufio.Writer
	dirty   bool
	pending bool // a lazy record waits in w for its flush (SavedFound)
}

// lazyDelay bounds how long a lazy record (SavedFound) waits in memory for
// the next record's write to carry it.
const lazyDelay = 2 * time.Millisecond

const (
	recChunk   byte = 1
	recSaved   byte = 2
	recPartial byte = 3 // without the size: written before issue 30's snapshots
	recBegun   byte = 4 // a partial, with the file's size
	recMade    byte = 5 // a partial, with the file's size and the partial's identity
	recHead    byte = 6 // the snapshot's head (leading)
	recHeld    byte = 7 // chunks a partial held when the snapshot was written (leading)

	heldEntry = 4 + 4 + 32 // a recHeld chunk: its index, CRC32C and leaf

	maxRecord = 64 << 10
)

type record struct {
	typ   byte
	file  uint32
	chunk uint32
	crc   uint32
	leaf  merkle.Hash
	size  int64  // recBegun, recMade: the file's size
	name  string // recSaved: saved as; recPartial, recBegun, recMade: the partial's name; recHead: the head's JSON
	id    string // recMade: the partial's identity
	held  []byte // recHeld: heldEntry bytes per chunk
}

// createJournal starts an empty journal at path (replacing an old one).
func createJournal(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	lockJournal(f)
	return newJournal(f), nil
}

// newJournal appends to an open file.
func newJournal(f *os.File) *Journal {
	return &Journal{f: f, w: bufio.NewWriterSize(f, 4096), fsync: (*os.File).Sync}
}

// openJournal opens the journal at path for appending (creating it).
func openJournal(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	lockJournal(f)
	return newJournal(f), nil
}

// write appends a record and writes it to the file at once: after a
// SIGKILL the page cache still has it.
func (j *Journal) write(payload []byte) error { return j.append(payload, false) }

// writeLazy appends a record that reaches the file with the next record
// written, or within lazyDelay, or at Sync or Close: it saves a write(2)
// per small file saved (6.5 % of a receiver's CPU on 30,000 files of 1 KiB,
// docs/benchmarks/same-speed-2026-12-07.md). A failed flush here is kept
// by w and returned by the next record's.
func (j *Journal) writeLazy(payload []byte) error { return j.append(payload, true) }

// append frames payload into w and writes it out at once, or lazily.
func (j *Journal) append(payload []byte, lazy bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("journal closed")
	}
	frame(j.w, payload)
	j.dirty = true
	if !lazy {
		return j.w.Flush()
	}
	if !j.pending {
		j.pending = true
		time.AfterFunc(lazyDelay, func() {
			j.mu.Lock()
			defer j.mu.Unlock()
			j.pending = false
			if j.f != nil {
				j.w.Flush()
			}
		})
	}
	return nil
}

// frame writes one record: its length, payload and CRC32C.
func frame(w io.Writer, payload []byte) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(payload)))
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.Checksum(payload, castagnoli))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := w.Write(payload); err != nil {
		return err
	}
	_, err := w.Write(sum[:])
	return err
}

// Chunk records that chunk landed in file with this CRC32C and leaf.
func (j *Journal) Chunk(file, chunk, crc uint32, leaf merkle.Hash) error {
	return j.write(chunkRecord(file, chunk, crc, leaf))
}

// chunkRecord is a chunk's record.
func chunkRecord(file, chunk, crc uint32, leaf merkle.Hash) []byte {
	p := make([]byte, 1+4+4+4+32)
	p[0] = recChunk
	binary.BigEndian.PutUint32(p[1:], file)
	binary.BigEndian.PutUint32(p[5:], chunk)
	binary.BigEndian.PutUint32(p[9:], crc)
	copy(p[13:], leaf[:])
	return p
}

// Partial records the name and identity of file's partial (and the file's
// size), right after it was created and before any chunk of it is
// recorded.
func (j *Journal) Partial(file uint32, size int64, name, id string) error {
	p, err := made(file, size, name, id)
	if err != nil {
		return err
	}
	return j.write(p)
}

// made is a partial's record.
func made(file uint32, size int64, name, id string) ([]byte, error) {
	if len(id) > 255 {
		return nil, fmt.Errorf("partial identity of %d bytes", len(id))
	}
	p := make([]byte, 14+len(id)+len(name))
	p[0] = recMade
	binary.BigEndian.PutUint32(p[1:], file)
	binary.BigEndian.PutUint64(p[5:], uint64(size))
	p[13] = byte(len(id))
	copy(p[14:], id)
	copy(p[14+len(id):], name)
	return p, nil
}

// Saved records that a file got its final name, at once, like every
// record: batched to save a system call per file, a receiver killed before
// the batch was written fetched the files named meanwhile again at its next
// attempt, and saved each a second time as "name (1).ext".
func (j *Journal) Saved(file uint32, savedAs string) error {
	return j.write(named(recSaved, file, savedAs))
}

// SavedFound is Saved for a file whose identity was journaled (Partial)
// before it got its name, with the name its identity will be found under:
// its record may wait a few milliseconds for the next one's write
// (writeLazy), since a receiver killed before it reached the file finds
// the file by that identity at its next attempt (the engine's restore,
// store.Dest.Renamed), not fetches it again.
func (j *Journal) SavedFound(file uint32, savedAs string) error {
	return j.writeLazy(named(recSaved, file, savedAs))
}

func named(typ byte, file uint32, name string) []byte {
	p := make([]byte, 5+len(name))
	p[0] = typ
	binary.BigEndian.PutUint32(p[1:], file)
	copy(p[5:], name)
	return p
}

// leading writes f's records at the start of a journal (Dir.write): a
// saved file's name, a partial's name and identity with every chunk it
// holds; nothing for a file with neither.
func leading(w io.Writer, f *File) error {
	if f.Done {
		return frame(w, named(recSaved, f.Index, f.SavedAs))
	}
	if f.Partial == "" {
		return nil
	}
	p, err := made(f.Index, f.Size, f.Partial, f.PartialID)
	if err != nil {
		return err
	}
	if err := frame(w, p); err != nil {
		return err
	}
	// The chunks held go in records of their own type (recHeld), many to a
	// record: a chunk record says a chunk landed since.
	buf := make([]byte, 5, min(maxRecord, 5+heldEntry*len(f.CRCs)))
	buf[0] = recHeld
	binary.BigEndian.PutUint32(buf[1:], f.Index)
	for k := range f.CRCs {
		if !f.Has(k) || 32*k+32 > len(f.Leaves) {
			continue
		}
		if len(buf)+heldEntry > maxRecord {
			if err := frame(w, buf); err != nil {
				return err
			}
			buf = buf[:5]
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(k))
		buf = binary.BigEndian.AppendUint32(buf, f.CRCs[k])
		buf = append(buf, f.Leaves[32*k:32*k+32]...)
	}
	if len(buf) > 5 {
		return frame(w, buf)
	}
	return nil
}

// Sync makes the journal durable up to the last record appended before it
// was called, if anything was appended since the last sync. The fsync runs
// without the lock that appending takes: on a busy disk it can take tens of
// milliseconds or more (the journal's file system commits everything
// pending with it), and every file that lands appends a record, so held
// across the fsync the lock stalled the whole receiver once a second
// (docs/benchmarks/trees.md, "What the receiver waits on"). Records
// appended meanwhile are made durable by the next Sync.
func (j *Journal) Sync() error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	if j.f == nil || !j.dirty {
		j.mu.Unlock()
		return nil
	}
	j.dirty = false
	err := j.w.Flush()
	f := j.f
	j.mu.Unlock()
	if err != nil {
		return err
	}
	return j.fsync(f)
}

// Close flushes and closes the journal (after a Sync under way).
func (j *Journal) Close() {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f != nil {
		j.w.Flush()
		j.f.Close()
		j.f = nil
	}
}

// readJournal returns the good records of the journal at path (none if it
// does not exist), stopping at the first torn or damaged one.
func readJournal(path string) ([]record, error) {
	var out []record
	err := eachRecord(path, func(r record) bool {
		out = append(out, r)
		return true
	})
	return out, err
}

// eachRecord calls fn with each good record of the journal at path (none
// if it does not exist), one at a time, stopping at the first torn or
// damaged one or when fn says false: the journal of a tree of 10^6 files
// starts with a record for each saved file, never held together.
func eachRecord(path string, fn func(record) bool) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	for r := range records(bufio.NewReader(f)) {
		if !fn(r) {
			break
		}
	}
	return nil
}

func parseJournal(r io.Reader) []record { return slices.Collect(records(r)) }

// records yields the good records read from r, up to the first torn or
// damaged one.
func records(r io.Reader) iter.Seq[record] {
	return func(yield func(record) bool) {
		var hdr, sum [4]byte
		for {
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				return
			}
			n := binary.BigEndian.Uint32(hdr[:])
			if n < 5 || n > maxRecord {
				return
			}
			p := make([]byte, n)
			if _, err := io.ReadFull(r, p); err != nil {
				return
			}
			if _, err := io.ReadFull(r, sum[:]); err != nil || binary.BigEndian.Uint32(sum[:]) != crc32.Checksum(p, castagnoli) {
				return
			}
			rec := record{typ: p[0], file: binary.BigEndian.Uint32(p[1:])}
			switch {
			case rec.typ == recChunk && n == 45:
				rec.chunk = binary.BigEndian.Uint32(p[5:])
				rec.crc = binary.BigEndian.Uint32(p[9:])
				copy(rec.leaf[:], p[13:])
			case rec.typ == recHeld && n > 5 && (n-5)%heldEntry == 0:
				rec.held = p[5:]
			case rec.typ == recSaved, rec.typ == recPartial, rec.typ == recHead:
				rec.name = string(p[5:])
			case rec.typ == recBegun && n >= 13 && int64(binary.BigEndian.Uint64(p[5:])) >= 0:
				rec.size = int64(binary.BigEndian.Uint64(p[5:]))
				rec.name = string(p[13:])
			case rec.typ == recMade && n >= 14 && n >= 14+uint32(p[13]) && int64(binary.BigEndian.Uint64(p[5:])) >= 0:
				rec.size = int64(binary.BigEndian.Uint64(p[5:]))
				rec.id = string(p[14 : 14+int(p[13])])
				rec.name = string(p[14+int(p[13]):])
			case rec.typ > recHeld:
				// A type this build does not know, framed and checksummed:
				// written by a newer Ferry (the user went back to this
				// version). Skipped, not read as the journal's end, so the
				// records after it still count (docs/compatibility.md).
				continue
			default:
				return
			}
			if !yield(rec) {
				return
			}
		}
	}
}

// applyJournal replays records onto a snapshot. A partial (with its size)
// or saved record of a file the snapshot does not list adds its entry, its
// path left for Check to take from the offer (and a saved one's size,
// marked -1). Records that do not fit (a chunk of a file not begun, a
// chunk out of range, a size that changed, files past the chunks a state
// holds) make the whole state suspect.
func applyJournal(s *State, recs []record) error {
	p := newReplay(s)
	for _, r := range recs {
		if err := p.apply(r); err != nil {
			return err
		}
	}
	return nil
}

// salvageJournal replays what fits of records onto what was read of a
// damaged snapshot (Dir.Salvage), leaving out the records that do not.
// When the snapshot's head could not be read whole (headWhole false), the
// journal's head record, its first if it has one, gives it. A partial of a
// file the snapshot does not list, in a state whose chunk size was lost,
// is still named (for listing and discarding), without the bitmaps a
// resume needs.
func salvageJournal(s *State, recs iter.Seq[record], headWhole bool) {
	var p *replay
	for r := range recs {
		if p == nil {
			var h State
			if r.typ == recHead && !headWhole && json.Unmarshal([]byte(r.name), &h) == nil {
				h.Files, h.More = s.Files, nil
				*s = h
			}
			p = newReplay(s)
		}
		if _, ok := p.byIdx[r.file]; !ok && (r.typ == recBegun || r.typ == recMade) && s.ChunkSize <= 0 {
			s.Files = append(s.Files, File{Index: r.file, Size: r.size, Partial: r.name, PartialID: r.id})
			p.byIdx[r.file] = len(s.Files) - 1
			continue
		}
		p.apply(r)
	}
}

// maxChunks bounds the chunks a state's entries hold, the journal's files
// with the snapshot's: a snapshot of more could not be read back
// (maxStateFile), and each record of a damaged journal could otherwise
// ask for hundreds of megabytes of bitmaps.
const maxChunks = maxStateFile / 32

// replay is a journal being replayed onto a state.
type replay struct {
	s      *State
	byIdx  map[uint32]int // s's file indexes to their entries
	chunks int            // the chunks s's entries hold (maxChunks)
}

func newReplay(s *State) *replay {
	p := &replay{s: s, byIdx: make(map[uint32]int, len(s.Files))}
	for i := range s.Files {
		p.byIdx[s.Files[i].Index] = i
		p.chunks += len(s.Files[i].CRCs)
	}
	return p
}

// setChunk records chunk c of f (the entry of file) as held.
func setChunk(f *File, file, c, crc uint32, leaf merkle.Hash) error {
	if f.Done || int(c) >= len(f.CRCs) || len(f.Have) < (len(f.CRCs)+7)/8 || len(f.Leaves) != 32*len(f.CRCs) {
		return fmt.Errorf("journal names chunk %d of file %d", c, file)
	}
	f.Set(int(c), leaf, crc)
	return nil
}

// apply replays one record.
func (p *replay) apply(r record) error {
	s := p.s
	if r.typ == recHead {
		return nil // the snapshot's own head, read with it
	}
	k, ok := p.byIdx[r.file]
	if !ok {
		switch r.typ {
		case recBegun, recMade:
			if s.ChunkSize <= 0 {
				return fmt.Errorf("journal names file %d of a state without a chunk size", r.file)
			}
			n := merkle.Chunks(r.size, s.ChunkSize)
			if n > maxChunks-p.chunks {
				return fmt.Errorf("journal gives file %d %d bytes, past the %d chunks a state holds", r.file, r.size, maxChunks)
			}
			p.chunks += n
			s.Files = append(s.Files, NewFile(r.file, "", r.size, n))
		case recSaved:
			s.Files = append(s.Files, File{Index: r.file, Size: -1})
		default:
			return fmt.Errorf("journal names file %d, which the snapshot does not have", r.file)
		}
		k = len(s.Files) - 1
		p.byIdx[r.file] = k
	}
	f := &s.Files[k]
	switch r.typ {
	case recChunk:
		return setChunk(f, r.file, r.chunk, r.crc, r.leaf)
	case recHeld:
		for b := r.held; len(b) >= heldEntry; b = b[heldEntry:] {
			if err := setChunk(f, r.file, binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:]), merkle.Hash(b[8:heldEntry])); err != nil {
				return err
			}
		}
	case recBegun, recMade:
		if f.Size != r.size {
			return fmt.Errorf("journal gives file %d %d bytes, the snapshot %d", r.file, r.size, f.Size)
		}
		f.Partial, f.PartialID = r.name, r.id
	case recPartial:
		f.Partial, f.PartialID = r.name, ""
	case recSaved:
		p.chunks -= len(f.CRCs)
		f.Done, f.SavedAs = true, r.name
		f.Partial, f.PartialID, f.Have, f.Leaves, f.CRCs = "", "", nil, nil, nil
	}
	return nil
}
