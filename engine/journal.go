package engine

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
)

// journal appends one small record per landed chunk (and one per saved file)
// to <key>.log, next to the resume snapshot. A killed process loses nothing it
// wrote (the page cache keeps it), so a restart re-fetches only what was in
// flight; fsync at intervals bounds what a power cut can lose, and the
// CRC32C re-check on resume catches whatever did not reach the disk.
//
// Record: uint32 length, payload, uint32 CRC32C of the payload. Payload: a
// type byte and the file index, then for a chunk its index, CRC32C and leaf,
// for a saved file the name it was saved as. Reading stops at the first torn
// or damaged record: everything before it is good.
type journal struct {
	mu      sync.Mutex // guards the fields below
	f       *os.File
	w       *bufio.Writer
	dirty   bool
	pending bool // a lazy flush is scheduled
}

// lazyJournalDelay batches "saved" records: thousands of small files cost a
// handful of writes instead of one each (about 8 % of workload C).
const lazyJournalDelay = 2 * time.Millisecond

const (
	recChunk byte = 1
	recSaved byte = 2

	maxJournalRecord = 8 << 10
)

type journalRec struct {
	typ     byte
	file    uint32
	chunk   uint32
	crc     uint32
	leaf    merkle.Hash
	savedAs string
}

// createJournal starts an empty journal at path (replacing an old one).
func createJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return newJournal(f), nil
}

// newJournal appends to an open file.
func newJournal(f *os.File) *journal { return &journal{f: f, w: bufio.NewWriterSize(f, 4096)} }

func (j *journal) append(payload []byte) error { return j.write(payload, false) }

// write appends a record; lazy ones reach the file within lazyJournalDelay
// (or with the next record that is not lazy), the others at once.
func (j *journal) write(payload []byte, lazy bool) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(payload)))
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.Checksum(payload, castagnoli))
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("journal closed")
	}
	j.w.Write(hdr[:])
	j.w.Write(payload)
	j.w.Write(sum[:])
	j.dirty = true
	if lazy {
		if !j.pending {
			j.pending = true
			time.AfterFunc(lazyJournalDelay, func() {
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
	// Written at once: after a SIGKILL the page cache still has it.
	return j.w.Flush()
}

func (j *journal) chunk(file, chunk, crc uint32, leaf merkle.Hash) error {
	var p [1 + 4 + 4 + 4 + 32]byte
	p[0] = recChunk
	binary.BigEndian.PutUint32(p[1:], file)
	binary.BigEndian.PutUint32(p[5:], chunk)
	binary.BigEndian.PutUint32(p[9:], crc)
	copy(p[13:], leaf[:])
	return j.append(p[:])
}

// saved records that a file got its final name. It is written lazily: a
// crash within those milliseconds makes the next attempt fetch the file again
// (saved as "name (1).ext"); nothing is lost or overwritten.
func (j *journal) saved(file uint32, savedAs string) error {
	p := make([]byte, 5+len(savedAs))
	p[0] = recSaved
	binary.BigEndian.PutUint32(p[1:], file)
	copy(p[5:], savedAs)
	return j.write(p, true)
}

// sync makes the journal durable if anything was appended since the last sync.
func (j *journal) sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil || !j.dirty {
		return nil
	}
	j.dirty = false
	if err := j.w.Flush(); err != nil {
		return err
	}
	return j.f.Sync()
}

func (j *journal) close() {
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
func readJournal(path string) ([]journalRec, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseJournal(bufio.NewReader(f)), nil
}

func parseJournal(r io.Reader) []journalRec {
	var out []journalRec
	var hdr, sum [4]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return out
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n < 5 || n > maxJournalRecord {
			return out
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(r, p); err != nil {
			return out
		}
		if _, err := io.ReadFull(r, sum[:]); err != nil || binary.BigEndian.Uint32(sum[:]) != crc32.Checksum(p, castagnoli) {
			return out
		}
		rec := journalRec{typ: p[0], file: binary.BigEndian.Uint32(p[1:])}
		switch {
		case rec.typ == recChunk && n == 45:
			rec.chunk = binary.BigEndian.Uint32(p[5:])
			rec.crc = binary.BigEndian.Uint32(p[9:])
			copy(rec.leaf[:], p[13:])
		case rec.typ == recSaved:
			rec.savedAs = string(p[5:])
		default:
			return out
		}
		out = append(out, rec)
	}
}

// applyJournal replays records onto a snapshot. Records that do not fit the
// snapshot (unknown file, chunk out of range) make the whole state suspect.
func applyJournal(s *resumeState, recs []journalRec) error {
	byIdx := make(map[uint32]*resumeFile, len(s.Files))
	for i := range s.Files {
		byIdx[s.Files[i].Index] = &s.Files[i]
	}
	for _, r := range recs {
		f := byIdx[r.file]
		if f == nil {
			return fmt.Errorf("journal names file %d, which the snapshot does not have", r.file)
		}
		switch r.typ {
		case recChunk:
			if int(r.chunk) >= len(f.CRCs) || len(f.Have) < (len(f.CRCs)+7)/8 || len(f.Leaves) != 32*len(f.CRCs) {
				return fmt.Errorf("journal names chunk %d of file %d", r.chunk, r.file)
			}
			setBit(f.Have, int(r.chunk))
			f.CRCs[r.chunk] = r.crc
			copy(f.Leaves[32*r.chunk:], r.leaf[:])
		case recSaved:
			f.Done, f.SavedAs = true, r.savedAs
			f.Have, f.Leaves, f.CRCs = nil, nil, nil
		}
	}
	return nil
}

func crc32c(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }
