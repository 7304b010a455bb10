package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/atomicfile"
)

// Resume state: for every incoming transfer that did not finish, which chunks
// of which .partial files are on disk, with their BLAKE3 leaves and CRC32C.
// It lives in <config>/resume/<key>.json, written temp -> fsync -> rename at
// most once a second (never per chunk), and is only a hint: every chunk it
// lists is re-checked against its CRC32C before it is trusted, and the final
// BLAKE3 root still decides.

const (
	resumeDirName     = "resume"
	resumeVersion     = 1
	resumeSaveEvery   = time.Second
	maxResumeFileSize = 256 << 20 // a state file larger than this is not ours
)

// resumeState is the on-disk record of one unfinished incoming transfer.
type resumeState struct {
	Version   int          `json:"version"`
	Peer      string       `json:"peer"`
	PeerName  string       `json:"peer_name"`
	Manifest  string       `json:"manifest"`
	ChunkSize int          `json:"chunk_size"`
	Dest      string       `json:"dest"`
	Updated   time.Time    `json:"updated"`
	Files     []resumeFile `json:"files"`
}

type resumeFile struct {
	Index   uint32   `json:"index"`
	Path    string   `json:"path"`
	Size    int64    `json:"size"`
	Done    bool     `json:"done,omitempty"`
	SavedAs string   `json:"saved_as,omitempty"`
	Have    []byte   `json:"have,omitempty"`   // chunk bitmap
	Leaves  []byte   `json:"leaves,omitempty"` // 32 bytes per chunk
	CRCs    []uint32 `json:"crcs,omitempty"`
}

func resumeKey(peer identity.DeviceID, manifest string) string {
	h := sha256.Sum256([]byte(peer.String() + "\x00" + manifest))
	return hex.EncodeToString(h[:16])
}

func (e *Engine) resumeDir() string { return filepath.Join(e.opts.ConfigDir, resumeDirName) }

func (e *Engine) resumePath(key string) string { return filepath.Join(e.resumeDir(), key+".json") }

func (e *Engine) journalPath(key string) string { return filepath.Join(e.resumeDir(), key+".log") }

// loadResume reads the snapshot for key and replays its journal; a missing
// snapshot is (nil, nil).
func (e *Engine) loadResume(key string) (*resumeState, error) {
	s, err := e.loadSnapshot(key)
	if err != nil || s == nil {
		return s, err
	}
	recs, err := readJournal(e.journalPath(key))
	if err != nil {
		return nil, err
	}
	if err := applyJournal(s, recs); err != nil {
		return nil, fmt.Errorf("resume state %s is damaged: %w", key, err)
	}
	return s, nil
}

func (e *Engine) loadSnapshot(key string) (*resumeState, error) {
	f, err := os.Open(e.resumePath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() > maxResumeFileSize {
		return nil, fmt.Errorf("resume state %s is too large", key)
	}
	var s resumeState
	if err := json.NewDecoder(f).Decode(&s); err != nil {
		return nil, fmt.Errorf("resume state %s is damaged: %w", key, err)
	}
	return &s, nil
}

func (e *Engine) saveResume(key string, s *resumeState) error {
	if err := os.MkdirAll(e.resumeDir(), 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return atomicfile.Write(e.resumePath(key), data, 0o600)
}

func (e *Engine) dropResume(key string) {
	for _, p := range []string{e.resumePath(key), e.journalPath(key)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			e.log.Warn("remove resume state", "err", err)
		}
	}
}

// compactResume folds the journal into a fresh snapshot and empties it.
func (e *Engine) compactResume(key string, s *resumeState) error {
	if err := e.saveResume(key, s); err != nil {
		return err
	}
	if err := os.Remove(e.journalPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// validResume checks a loaded state against the offer it would resume. A
// state that does not fit (tampered, another peer, another folder) is refused.
func validResume(s *resumeState, peer identity.DeviceID, offer *wire.Offer, manifest []wire.FileEntry, dest string) error {
	switch {
	case s.Version != resumeVersion:
		return fmt.Errorf("version %d", s.Version)
	case s.Peer != peer.String():
		return errors.New("it belongs to another device")
	case s.Manifest != offer.Manifest || s.ChunkSize != offer.ChunkSize:
		return errors.New("it is for another offer")
	case filepath.Clean(s.Dest) != filepath.Clean(dest):
		return errors.New("it is for another download folder")
	}
	seen := map[uint32]bool{}
	for _, f := range s.Files {
		if int(f.Index) >= len(manifest) || seen[f.Index] {
			return fmt.Errorf("file index %d", f.Index)
		}
		seen[f.Index] = true
		m := manifest[f.Index]
		if f.Path != m.Path || f.Size != m.Size {
			return fmt.Errorf("file %d does not match the offer", f.Index)
		}
		if err := store.ValidatePath(f.Path); err != nil {
			return err
		}
		if f.Done {
			if err := store.ValidatePath(f.SavedAs); err != nil {
				return err
			}
			continue
		}
		n := merkle.Chunks(f.Size, offer.ChunkSize)
		if len(f.Have) != (n+7)/8 || len(f.Leaves) != 32*n || len(f.CRCs) != n {
			return fmt.Errorf("file %d has bitmaps of the wrong size", f.Index)
		}
	}
	return nil
}

func bit(b []byte, i int) bool { return b[i/8]&(1<<(i%8)) != 0 }
func setBit(b []byte, i int)   { b[i/8] |= 1 << (i % 8) }

// snapshotResume builds the state to save from the receiver's progress.
func (rx *receiver) snapshotResume() *resumeState {
	rx.mu.Lock()
	defer rx.mu.Unlock()
	s := &resumeState{Version: resumeVersion, Peer: rx.c.PeerID().String(), PeerName: rx.t.peer.Name,
		Manifest: rx.offer.Manifest, ChunkSize: rx.offer.ChunkSize, Dest: rx.destDir, Updated: time.Now()}
	idx := make([]uint32, 0, len(rx.files))
	for i := range rx.files {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		f := rx.files[i]
		rf := resumeFile{Index: f.idx, Path: f.entry.Path, Size: f.entry.Size}
		switch {
		case f.resolved && f.ok:
			rf.Done, rf.SavedAs = true, f.savedAs
		case f.resolved:
			continue // failed: it starts over
		default:
			// Every file still to come is listed, with or without data, so
			// that journal records always find their file.
			n := f.tree.Len()
			rf.Have = make([]byte, (n+7)/8)
			rf.Leaves = make([]byte, 32*n)
			rf.CRCs = make([]uint32, n)
			for c := 0; c < n; c++ {
				if f.tree.Has(c) {
					setBit(rf.Have, c)
					l := f.tree.Leaf(c)
					copy(rf.Leaves[32*c:], l[:])
					rf.CRCs[c] = f.crcs[c]
				}
			}
		}
		s.Files = append(s.Files, rf)
	}
	return s
}

// restore applies a valid resume state to the accepted files: chunks whose
// CRC32C still matches what is on disk count as received; the rest travel
// again. It returns the Have messages to send and the files already saved.
func (rx *receiver) restore(s *resumeState) (haves []*wire.Have, done []*rxFile) {
	buf := make([]byte, rx.offer.ChunkSize)
	for _, rf := range s.Files {
		f, ok := rx.files[rf.Index]
		if !ok {
			continue // not accepted this time
		}
		if rf.Done {
			// Saved in an earlier attempt: trust it only if it is still there, whole.
			if st, err := os.Lstat(filepath.Join(rx.destDir, filepath.FromSlash(rf.SavedAs))); err == nil && st.Mode().IsRegular() && st.Size() == rf.Size {
				f.savedAs = rf.SavedAs
				done = append(done, f)
			}
			continue
		}
		p, err := rx.dest.CreatePartial(f.entry.Path)
		if err != nil {
			continue
		}
		n := f.tree.Len()
		have := make([]byte, (n+7)/8)
		var any bool
		for c := 0; c < n; c++ {
			if !bit(rf.Have, c) {
				continue
			}
			l := merkle.ChunkLen(f.entry.Size, rx.offer.ChunkSize, c)
			data := buf[:l]
			if l > 0 {
				if k, err := p.ReadAt(data, int64(c)*int64(rx.offer.ChunkSize)); err != nil || k != l {
					continue
				}
			}
			// The storage assertion: what is on disk must be what we wrote.
			if crc32.Checksum(data, castagnoli) != rf.CRCs[c] {
				rx.e.log.Info("resume: chunk changed on disk, fetching it again", "file", f.entry.Path, "chunk", c)
				continue
			}
			var leaf merkle.Hash
			copy(leaf[:], rf.Leaves[32*c:32*c+32])
			f.tree.Set(c, leaf)
			f.crcs[c] = rf.CRCs[c]
			setBit(have, c)
			rx.bytes.Add(int64(l))
			any = true
		}
		if !any {
			p.Close()
			continue
		}
		f.part = p
		rx.open++
		haves = append(haves, &wire.Have{File: f.idx, Chunks: have})
	}
	return haves, done
}

// PartialTransfer describes an unfinished incoming transfer kept for resume.
type PartialTransfer struct {
	Key      string
	PeerID   string
	PeerName string
	Dest     string
	Files    int
	Bytes    int64 // verified bytes held on disk
	Updated  time.Time
}

// Partials lists unfinished incoming transfers and the disk space they hold.
func (e *Engine) Partials() []PartialTransfer {
	entries, _ := os.ReadDir(e.resumeDir())
	var out []PartialTransfer
	for _, de := range entries {
		key, ok := strings.CutSuffix(de.Name(), ".json")
		if strings.HasPrefix(de.Name(), ".") {
			continue // a temporary file of an atomic write
		}
		if !ok {
			continue
		}
		s, err := e.loadResume(key)
		if err != nil || s == nil {
			continue
		}
		p := PartialTransfer{Key: key, PeerID: s.Peer, PeerName: s.PeerName, Dest: s.Dest, Files: len(s.Files), Updated: s.Updated}
		if st, err := os.Stat(e.journalPath(key)); err == nil && st.ModTime().After(p.Updated) {
			p.Updated = st.ModTime()
		}
		for _, f := range s.Files {
			if f.Done {
				continue
			}
			for c := 0; c < len(f.CRCs); c++ {
				if bit(f.Have, c) {
					p.Bytes += int64(merkle.ChunkLen(f.Size, s.ChunkSize, c))
				}
			}
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	return out
}

// DiscardPartial removes an unfinished transfer's .partial files and state.
func (e *Engine) DiscardPartial(key string) error {
	s, err := e.loadResume(key)
	if err != nil || s == nil {
		e.dropResume(key)
		return err
	}
	d, err := store.Open(s.Dest)
	if err == nil {
		for _, f := range s.Files {
			if f.Done || store.ValidatePath(f.Path) != nil {
				continue
			}
			if name, err := d.PartialPath(f.Path); err == nil {
				os.Remove(filepath.Join(s.Dest, filepath.FromSlash(name)))
			}
		}
		d.Close()
	}
	e.dropResume(key)
	return nil
}

// CleanPartials discards unfinished transfers not touched for longer than
// maxAge (and the sender-side leaf caches of the same age).
func (e *Engine) CleanPartials(maxAge time.Duration) int {
	e.cleanLeafCaches(maxAge)
	n := 0
	for _, p := range e.Partials() {
		if time.Since(p.Updated) > maxAge {
			if e.DiscardPartial(p.Key) == nil {
				n++
			}
		}
	}
	return n
}

// held reports whether the state holds anything worth resuming.
func (s *resumeState) held() bool {
	for _, f := range s.Files {
		if f.Done {
			return true
		}
		for _, b := range f.Have {
			if b != 0 {
				return true
			}
		}
	}
	return false
}
