// Package resume keeps what an unfinished transfer needs to continue later:
// on the receiving side, which chunks of which partial files are on disk
// (with their BLAKE3 leaves and CRC32C), and on the sending side the leaves
// it already computed. It knows nothing of the wire protocol or transports:
// callers describe the offer (peer, manifest ID, chunk size, files) and get
// back what was held.
//
// Receiving state lives in <dir>/<key>.json (a snapshot, written temp ->
// fsync -> rename) plus <key>.log (a journal that starts with what the
// snapshot says, in records, and adds one small record per landed chunk,
// per partial created and per saved file). It is only a hint:
// the caller re-checks every listed chunk against its CRC32C before trusting
// it, and the final BLAKE3 root still decides.
package resume

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/internal/atomicfile"
	"github.com/ferrydrop/ferry/internal/filelock"
)

// Version is the snapshot format. Version 2 records each partial's name:
// partials are created exclusively and may not carry the file's own name.
// Version 3 lists only the files begun or saved (issue 30: a snapshot of
// 10^6 files that have not begun listed them all) and counts the accepted
// ones; its journal's partial records carry the file's size. A version 2
// state is read as well.
const Version = 3

// maxStateFile bounds a snapshot we are willing to read.
const maxStateFile = 256 << 20

// State is the record of one unfinished incoming transfer.
type State struct {
	Version   int       `json:"version"`
	Peer      string    `json:"peer"`
	PeerName  string    `json:"peer_name"`
	Manifest  string    `json:"manifest"`
	ChunkSize int       `json:"chunk_size"`
	Dest      string    `json:"dest"`
	Updated   time.Time `json:"updated"`
	// Delivery is the sender's delivery ID (wire.Offer.Transfer) of the
	// accepted transfer: a later session of the same delivery continues
	// without asking the user again.
	Delivery string `json:"delivery,omitempty"`
	// Accepted is the number of files the transfer accepted; Files lists
	// those begun or saved (a file not listed is implied by the offer).
	Accepted int `json:"accepted,omitempty"`
	// Unremoved: the state resumes nothing; it lists partial files that
	// transfers from Peer into Dest gave up on and could not remove (on
	// Windows another program had them open; a read-only folder), so that
	// they are listed, discarded again and aged out (Dir.KeepUnremoved).
	// Before Files: the head is what precedes them (encode, readPartially).
	Unremoved bool   `json:"unremoved,omitempty"`
	Files     []File `json:"files"`
	// More, when set, yields further files that Compact writes after Files
	// (and then only when it yields one): the saved files of a large
	// transfer are written one by one, never held together.
	More iter.Seq[File] `json:"-"`
}

// File is one accepted file of a State.
type File struct {
	Index uint32 `json:"index"`
	Path  string `json:"path"`
	Size  int64  `json:"size"`
	// Partial is the partial file's slash path relative to Dest, once
	// created, and PartialID its store.Partial.Identity: only that file is
	// the partial (a file received under the name since is not).
	Partial   string   `json:"partial,omitempty"`
	PartialID string   `json:"partial_id,omitempty"`
	Done      bool     `json:"done,omitempty"`
	SavedAs   string   `json:"saved_as,omitempty"`
	Have      []byte   `json:"have,omitempty"`   // chunk bitmap
	Leaves    []byte   `json:"leaves,omitempty"` // 32 bytes per chunk
	CRCs      []uint32 `json:"crcs,omitempty"`
}

// NewFile returns the entry of a file with n chunks and nothing held yet.
func NewFile(index uint32, path string, size int64, n int) File {
	return File{Index: index, Path: path, Size: size,
		Have: make([]byte, (n+7)/8), Leaves: make([]byte, 32*n), CRCs: make([]uint32, n)}
}

// Has reports whether chunk c is held.
func (f *File) Has(c int) bool { return c/8 < len(f.Have) && bit(f.Have, c) }

// Leaf returns chunk c's leaf.
func (f *File) Leaf(c int) merkle.Hash {
	var l merkle.Hash
	copy(l[:], f.Leaves[32*c:32*c+32])
	return l
}

// Set records chunk c as held.
func (f *File) Set(c int, leaf merkle.Hash, crc uint32) {
	setBit(f.Have, c)
	copy(f.Leaves[32*c:], leaf[:])
	f.CRCs[c] = crc
}

// Held reports whether the state holds anything worth resuming.
func (s *State) Held() bool {
	if s.More != nil || s.Unremoved && len(s.Files) > 0 {
		return true
	}
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

// Offered describes the offer a state is checked against.
type Offered struct {
	Peer      string
	Manifest  string
	ChunkSize int
	Dest      string
	// Files is the number of the offer's files; File returns one by index
	// (the list may be kept on disk).
	Files int
	File  func(i int) (OfferedFile, error)
}

// OfferedFile is one file of an offer.
type OfferedFile struct {
	Path string
	Size int64
}

// Check refuses a loaded state that does not fit the offer it would resume
// (tampered, another peer, another folder, another offer), and completes
// the entries its journal added (their path, and a saved file's size, are
// the offer's). validName checks a path from the state the way the store
// checks a peer's names.
func (s *State) Check(o Offered, validName func(string) error) error {
	switch {
	case s.Version != Version && s.Version != 2:
		return fmt.Errorf("version %d", s.Version)
	case s.Peer != o.Peer:
		return errors.New("it belongs to another device")
	case s.Manifest != o.Manifest || s.ChunkSize != o.ChunkSize:
		return errors.New("it is for another offer")
	case filepath.Clean(s.Dest) != filepath.Clean(o.Dest):
		return errors.New("it is for another download folder")
	}
	seen := map[uint32]bool{}
	for i := range s.Files {
		f := &s.Files[i]
		if int(f.Index) >= o.Files || seen[f.Index] {
			return fmt.Errorf("file index %d", f.Index)
		}
		seen[f.Index] = true
		m, err := o.File(int(f.Index))
		if err != nil {
			return err
		}
		if f.Path == "" {
			f.Path = m.Path // an entry of the journal's
			if f.Size < 0 {
				f.Size = m.Size
			}
		}
		if f.Path != m.Path || f.Size != m.Size {
			return fmt.Errorf("file %d does not match the offer", f.Index)
		}
		if err := validName(f.Path); err != nil {
			return err
		}
		if f.Done {
			if err := validName(f.SavedAs); err != nil {
				return err
			}
			continue
		}
		if f.Partial != "" {
			if err := validPartialName(f.Partial, validName); err != nil {
				return err
			}
		}
		n := merkle.Chunks(f.Size, o.ChunkSize)
		if len(f.Have) != (n+7)/8 || len(f.Leaves) != 32*n || len(f.CRCs) != n {
			return fmt.Errorf("file %d has bitmaps of the wrong size", f.Index)
		}
	}
	return nil
}

// PartialSuffix ends every partial file's name (the store's convention).
const PartialSuffix = ".partial"

func validPartialName(name string, validName func(string) error) error {
	rel, ok := strings.CutSuffix(name, PartialSuffix)
	if !ok {
		return fmt.Errorf("partial %q has no %s suffix", name, PartialSuffix)
	}
	return validName(rel)
}

func bit(b []byte, i int) bool { return b[i/8]&(1<<(i%8)) != 0 }
func setBit(b []byte, i int)   { b[i/8] |= 1 << (i % 8) }

// Key names the state of one offer from one device.
func Key(peer, manifest string) string {
	h := sha256.Sum256([]byte(peer + "\x00" + manifest))
	return hex.EncodeToString(h[:16])
}

// Dir is the folder holding resume state (<config>/resume). Its methods are
// safe for concurrent use on different keys.
type Dir struct {
	path string
	log  *slog.Logger
	now  func() time.Time

	unremoved sync.Mutex // held while KeepUnremoved, Forget or DropDiscarded reads and writes a state (lockStates)
	// rewriting, when set (tests only), runs while KeepUnremoved or
	// DropDiscarded holds a state it has read and not yet written.
	rewriting func()
}

// Open returns the resume folder at path; log and now may be nil.
func Open(path string, log *slog.Logger, now func() time.Time) *Dir {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Dir{path: path, log: log, now: now}
}

// Path is the folder.
func (d *Dir) Path() string { return d.path }

func (d *Dir) snapshotPath(key string) string { return filepath.Join(d.path, key+".json") }
func (d *Dir) lockPath() string               { return filepath.Join(d.path, ".states.lock") } // keys skips it: a dot name
func (d *Dir) journalPath(key string) string  { return filepath.Join(d.path, key+".log") }

// Load reads the snapshot for key and replays its journal; a missing
// snapshot is (nil, nil). A state that cannot be read whole is a
// *DamagedError (Salvage reads what it can of it).
func (d *Dir) Load(key string) (*State, error) {
	s, err := d.loadSnapshot(key)
	if err != nil || s == nil {
		return s, err
	}
	p := newReplay(s)
	var bad error
	if err := eachRecord(d.journalPath(key), func(r record) bool {
		bad = p.apply(r)
		return bad == nil
	}); err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, &DamagedError{Key: key, Why: "its journal does not fit its snapshot", Err: bad}
	}
	return s, nil
}

// DamagedError is a resume state that cannot be read whole.
type DamagedError struct {
	Key string
	Why string // "its snapshot is damaged", in words a sentence can take
	Err error  // the cause, if any
}

func (e *DamagedError) Error() string {
	if e.Err == nil {
		return "resume state " + e.Key + ": " + e.Why
	}
	return "resume state " + e.Key + ": " + e.Why + ": " + e.Err.Error()
}

func (e *DamagedError) Unwrap() error { return e.Err }

// Words says what is wrong in words a user can read, without the
// decoder's, and without brackets of its own (a sentence puts them in
// some): "its snapshot is cut short".
func (e *DamagedError) Words() string {
	var syn *json.SyntaxError
	what := e.Why
	if what == snapshotDamaged {
		what = "its snapshot is"
	} else {
		what += ","
	}
	switch {
	case errors.Is(e.Err, io.ErrUnexpectedEOF), errors.Is(e.Err, io.EOF):
		return what + " cut short"
	case errors.As(e.Err, &syn):
		return fmt.Sprintf("%s garbled from byte %d", what, syn.Offset)
	}
	return e.Why
}

// snapshotDamaged is the Why of a snapshot that cannot be decoded.
const snapshotDamaged = "its snapshot is damaged"

// Salvage reads what it can of key's state, which Load found damaged (its
// error is returned with it): the fields of its snapshot and its whole
// file entries up to the damage, then what fits of its journal, which
// starts with what the last snapshot said (its head, used when the
// snapshot's was lost; its saved files; its partials with their chunks)
// and goes on with what happened since. Every chunk it lists is still only
// a hint, re-checked by its CRC32C. A journal written before journals
// carried all that (by an older Ferry) names only the partials: what the
// snapshot no longer lists is then not known. A state that loads is
// returned as Load returns it; a key with neither snapshot nor journal is
// (nil, nil).
func (d *Dir) Salvage(key string) (*State, error) {
	s, err := d.Load(key)
	if err == nil && s != nil {
		return s, nil
	}
	if err == nil { // no snapshot: the journal alone, if there is one
		if _, serr := os.Stat(d.journalPath(key)); serr != nil {
			return nil, nil
		}
		err = &DamagedError{Key: key, Why: "its snapshot is missing"}
	}
	var de *DamagedError
	if !errors.As(err, &de) {
		return nil, err // it could not be read at all (permissions): nothing to salvage
	}
	s = &State{}
	headWhole := false
	if f, ferr := os.Open(d.snapshotPath(key)); ferr == nil {
		if got, whole, _ := readPartially(io.LimitReader(f, maxStateFile), true); got != nil {
			s, headWhole = got, whole
		}
		f.Close()
	}
	salvageJournal(s, func(yield func(record) bool) { eachRecord(d.journalPath(key), yield) }, headWhole)
	return s, err
}

func (d *Dir) loadSnapshot(key string) (*State, error) {
	f, err := os.Open(d.snapshotPath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() > maxStateFile {
		return nil, &DamagedError{Key: key, Why: "its snapshot is too large"}
	}
	var s State
	if err := json.NewDecoder(f).Decode(&s); err != nil {
		return nil, &DamagedError{Key: key, Why: snapshotDamaged, Err: err}
	}
	return &s, nil
}

// readHead reads key's snapshot as far as its files: who, what, where.
func (d *Dir) readHead(key string) (*State, error) {
	f, err := os.Open(d.snapshotPath(key))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, _, err := readPartially(io.LimitReader(f, maxStateFile), false)
	return s, err
}

// readPartially decodes what it can of a snapshot, in the order it was
// written: the fields before its files (Version to Accepted), and with
// files each whole file entry, up to the first it cannot read. It returns
// the state so far (nil when not even its head could be read), whether its
// head was read whole (up to its files), and the error that stopped it, if
// any.
func readPartially(r io.Reader, files bool) (*State, bool, error) {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false, fmt.Errorf("not a resume state: %v", err)
	}
	head := map[string]json.RawMessage{}
	build := func() *State {
		b, err := json.Marshal(head)
		if err != nil {
			return nil
		}
		var s State
		if json.Unmarshal(b, &s) != nil {
			return nil
		}
		return &s
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return build(), false, err
		}
		k, _ := t.(string)
		if k != "files" {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return build(), false, err
			}
			head[k] = v
			continue
		}
		s := build()
		if s == nil || !files {
			return s, s != nil, nil
		}
		t, err = dec.Token()
		if err == nil && t == nil {
			return s, true, nil // "files":null, as a state of no files is written
		}
		if err != nil || t != json.Delim('[') {
			return s, true, fmt.Errorf("files: %v", err)
		}
		for dec.More() {
			var f File
			if err := dec.Decode(&f); err != nil {
				return s, true, err
			}
			s.Files = append(s.Files, f)
		}
		if _, err := dec.Token(); err != nil {
			return s, true, err
		}
		return s, true, nil
	}
	// More says no more at the input's end as at the '}': a head cut after
	// a field's value, or after its brace, is not whole.
	if _, err := dec.Token(); err != nil {
		return build(), false, err
	}
	s := build()
	return s, s != nil, nil
}

// Compact writes s as key's snapshot and empties its journal.
func (d *Dir) Compact(key string, s *State) error {
	s.Updated = d.now()
	return d.write(key, s)
}

// write is Compact keeping s.Updated.
func (d *Dir) write(key string, s *State) error {
	if err := os.MkdirAll(d.path, 0o700); err != nil {
		return err
	}
	s.Version = Version
	// The journal starts again with what the snapshot says, in records
	// (leading): its head, every partial with its chunks, every saved
	// file. A snapshot damaged since (a bad block, an edit, cut short)
	// leaves all of it there, record by record (Salvage): what it lost
	// was not named, listed nor resumed, and its saved files travelled
	// again, saved a second time as "name (1).ext". Both are written in
	// one pass, the snapshot renamed first.
	return atomicfile.WriteWith(d.journalPath(key), 0o600, func(j io.Writer) error {
		return atomicfile.WriteWith(d.snapshotPath(key), 0o600, func(w io.Writer) error { return s.encodeWith(w, j) })
	})
}

// encode writes s as JSON one file at a time: json.Marshal of a state of
// 10^6 files held a buffer of 256 MB (issue 30, docs/benchmarks/trees.md).
// What it writes is what json.Marshal(s) writes.
func (s *State) encode(w io.Writer) error { return s.encodeWith(w, nil) }

// encodeWith is encode that also writes, when j is not nil, s's journal
// records to j (leading).
func (s *State) encodeWith(w, j io.Writer) error {
	head := *s
	head.Files = nil
	head.More = nil
	b, err := json.Marshal(head)
	if err != nil {
		return err
	}
	if p := named(recHead, 0, string(b)); j != nil && len(p) <= maxRecord { // a longer one (a folder's path of 60 KB) is left out
		if err := frame(j, p); err != nil {
			return err
		}
	}
	// The head ends in "files":null}: the files go in its place.
	const null = `null}`
	if !bytes.HasSuffix(b, []byte(`"files":`+null)) {
		return fmt.Errorf("resume state: unexpected encoding of the head: %.40q", b)
	}
	if s.Files == nil && s.More == nil {
		_, err := w.Write(b)
		return err
	}
	if _, err := w.Write(b[:len(b)-len(null)]); err != nil {
		return err
	}
	sep := []byte{'['}
	put := func(f *File) error {
		if j != nil {
			if err := leading(j, f); err != nil {
				return err
			}
		}
		b, err := json.Marshal(f)
		if err != nil {
			return err
		}
		if _, err := w.Write(sep); err != nil {
			return err
		}
		_, err = w.Write(b)
		sep[0] = ','
		return err
	}
	for i := range s.Files {
		if err := put(&s.Files[i]); err != nil {
			return err
		}
	}
	if s.More != nil {
		for f := range s.More {
			if err := put(&f); err != nil {
				return err
			}
		}
	}
	if sep[0] == '[' {
		if _, err := w.Write(sep); err != nil {
			return err
		}
	}
	_, err = w.Write([]byte("]}"))
	return err
}

// Busy reports whether a receiver is writing key's journal now, in this
// process or another one with the same config (where the platform has
// file locks): its partial files are in use, not to be discarded.
func (d *Dir) Busy(key string) bool { return journalLocked(d.journalPath(key)) }

// Reserve holds key's reservation, in this process and any other on the
// same config (the app, ferry-cli receive, ferry-cli partials --discard),
// waiting while another holds it: a discard of key's partials holds it
// from its listing to its end, and a session that resumes key from before
// it reads key's state until its journal marks it receiving (Busy), so
// that neither removes nor restores partial files the other is on. The
// engine's own sessions and discards also wait for each other in memory;
// this is what another process sees. waiting, when not nil, runs if
// another holds it (tests). release lets it go, and removes its file (a
// dot name, which keys skips) once key has no state left. A key with no
// state on disk has nothing to discard or restore: it holds nothing then
// (a discard drops the state last, so its partials went already), and a
// new transfer opens no file for it. Best effort: where the lock cannot
// be had, it holds nothing.
func (d *Dir) Reserve(key string, waiting func()) (release func()) {
	if !d.has(key) {
		return func() {}
	}
	return d.reserve(key, waiting)
}

// Unreserve removes key's reservation file once key has no state left
// (done, delivered), taking it first, as another process may hold it.
func (d *Dir) Unreserve(key string) {
	if !d.has(key) && exists(d.reservePath(key)) {
		d.reserve(key, nil)()
	}
}

func (d *Dir) reservePath(key string) string { return filepath.Join(d.path, "."+key+".lock") }

// has reports whether key has a state on disk (snapshot or journal).
func (d *Dir) has(key string) bool { return exists(d.snapshotPath(key)) || exists(d.journalPath(key)) }

func (d *Dir) reserve(key string, waiting func()) (release func()) {
	path := d.reservePath(key)
	unlock, err := filelock.Hold(path, waiting)
	if err != nil {
		d.log.Warn("resume reservation", "err", err)
		return func() {}
	}
	return func() {
		if !d.has(key) {
			_ = os.Remove(path) // held still: a waiter then holds a new file (filelock.Hold)
		}
		unlock()
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Drop removes key's state.
func (d *Dir) Drop(key string) {
	for _, p := range []string{d.snapshotPath(key), d.journalPath(key)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("remove resume state", "err", err)
		}
	}
}

// Start writes s as where an attempt starts and opens an empty journal for
// what happens from now on.
func (d *Dir) Start(key string, s *State) (*Journal, error) {
	if err := d.Compact(key, s); err != nil {
		return nil, err
	}
	return openJournal(d.journalPath(key))
}

// Summary describes an unfinished incoming transfer.
type Summary struct {
	Key      string
	PeerID   string
	PeerName string
	Delivery string // the sender's delivery ID, when the state has it
	Dest     string
	Files    int
	Saved    int   // of Files, saved whole: a resume does not fetch them
	Bytes    int64 // verified bytes held on disk by the others' partial files
	// OnDisk is the space the partial files take (allocated: each was
	// preallocated whole, so more than Bytes), what discarding frees; the
	// engine fills it in (Engine.Partials).
	OnDisk  int64
	Updated time.Time
	// Partials are the partial files' slash paths relative to Dest, and
	// PartialIDs their identities (store.Partial.Identity; "" unknown).
	Partials   []string
	PartialIDs []string
	// Receiving: a receiver is writing into them now (Busy): they are not
	// to be discarded.
	Receiving bool
	// Damaged says why the state cannot be read whole ("its snapshot is
	// cut short"), or is empty. What Salvage still reads of
	// it is listed: its partials only where their identity is known (a
	// name alone could be a file received since), and PeerID, Dest and
	// the rest may be empty. A send of the same files resumes what it
	// still lists, else starts over; discarding it removes those partials.
	Damaged string
	// Unremoved: it resumes nothing; its partials are files that
	// transfers gave up on and could not remove (State.Unremoved).
	Unremoved bool
}

// PartialNames are the partial files s lists (slash paths relative to its
// Dest), and their identities.
func (s *State) PartialNames() (names, ids []string) {
	for _, f := range s.Files {
		if !f.Done && f.Partial != "" {
			names = append(names, f.Partial)
			ids = append(ids, f.PartialID)
		}
	}
	return names, ids
}

// Begun is a partial file that an unfinished transfer keeps.
type Begun struct {
	Key   string // the transfer's
	Index uint32 // the file's in its offer
	// Path is the file's offered path; for a file only the journal names
	// (its snapshot was written before it began), its partial's name less
	// the suffix.
	Path      string
	Partial   string
	PartialID string
}

// BegunIn lists the partial files the states of peer keep in the folder
// dest.
func (d *Dir) BegunIn(peer, dest string) []Begun {
	var out []Begun
	for _, key := range d.keys() {
		// The head first: a transfer's end asks this of every state, and
		// the snapshot of a large tree lists many saved files.
		if h, _ := d.readHead(key); h == nil || h.Peer != peer || filepath.Clean(h.Dest) != filepath.Clean(dest) {
			continue
		}
		s, err := d.Load(key)
		if err != nil || s == nil {
			continue
		}
		for _, f := range s.Files {
			if f.Done || f.Partial == "" {
				continue
			}
			p := f.Path
			if p == "" {
				p = strings.TrimSuffix(f.Partial, PartialSuffix)
			}
			out = append(out, Begun{Key: key, Index: f.Index, Path: p, Partial: f.Partial, PartialID: f.PartialID})
		}
	}
	return out
}

// Forget takes files out of key's state (their partial files are the
// caller's to remove), keeping when it was last touched; a state left
// holding nothing is dropped.
func (d *Dir) Forget(key string, files []uint32) error {
	defer d.lockStates()()
	s, err := d.Load(key)
	if err != nil || s == nil {
		return err
	}
	s.Files = slices.DeleteFunc(s.Files, func(f File) bool { return slices.Contains(files, f.Index) })
	if !s.Held() {
		d.Drop(key)
		return nil
	}
	return d.write(key, s)
}

// KeepUnremoved lists partial files that transfers from peer gave up on and
// could not remove from dest (their states, which named them, go), in the
// state of peer's unremoved partials there, which it creates or adds to:
// listed, they are discarded again (Engine.DiscardPartial) and aged out
// with it, where they stayed in the folder, listed nowhere. Each file
// needs its Partial (name) and PartialID; its Path and Size say what it
// was (BegunIn reads Path: the partial of an earlier version goes once
// the file is saved); the rest is left out. A file already listed is
// listed once; one without an identity is not listed (as a damaged
// state's: its name alone could be a file received since).
func (d *Dir) KeepUnremoved(peer, peerName, dest string, files []File) error {
	if len(files) == 0 {
		return nil
	}
	defer d.lockStates()()
	key := Key(peer, "unremoved\x00"+filepath.Clean(dest)) // one per device and folder
	s, _ := d.Salvage(key)                                 // what it lists already, even damaged
	if s == nil {
		s = &State{}
	}
	s.Peer, s.PeerName, s.Dest, s.Unremoved = peer, peerName, filepath.Clean(dest), true
	var next uint32
	for _, f := range s.Files {
		next = max(next, f.Index+1)
	}
	for _, f := range files {
		if f.PartialID == "" {
			continue // a name alone could be a file received since
		}
		if slices.ContainsFunc(s.Files, func(g File) bool { return g.Partial == f.Partial && g.PartialID == f.PartialID }) {
			continue
		}
		s.Files = append(s.Files, File{Index: next, Path: f.Path, Size: f.Size, Partial: f.Partial, PartialID: f.PartialID})
		next++
	}
	s.Accepted = len(s.Files)
	if d.rewriting != nil {
		d.rewriting()
	}
	return d.Compact(key, s)
}

// DropDiscarded drops key's state once the caller has discarded the
// partial files names (with identities ids) it listed, under the lock of
// KeepUnremoved and Forget (lockStates): a state of unremoved partials
// that a transfer here or in another process added to since it was listed
// keeps listing what was added, where dropping it whole lost those. A
// state of one transfer goes whole (nothing adds to it). With no names
// (the caller listed nothing under key) a state of unremoved partials
// stays as it is, and what else is under key goes.
func (d *Dir) DropDiscarded(key string, names, ids []string) error {
	defer d.lockStates()()
	s, _ := d.Salvage(key) // what it lists now, even damaged
	if s == nil || !s.Unremoved {
		d.Drop(key)
		return nil
	}
	discarded := func(f File) bool {
		for i, name := range names {
			if f.Partial == name && f.PartialID == ids[i] {
				return true
			}
		}
		return false
	}
	n := len(s.Files)
	s.Files = slices.DeleteFunc(s.Files, discarded)
	if len(s.Files) == 0 {
		d.Drop(key)
		return nil
	}
	if len(s.Files) == n {
		return nil
	}
	s.Accepted = len(s.Files)
	if d.rewriting != nil {
		d.rewriting()
	}
	return d.Compact(key, s)
}

// lockStates holds the lock under which a state that several transfers
// add to or take from (KeepUnremoved, Forget, DropDiscarded) is read and
// written again, so that none of them loses another's change: d.unremoved
// in this process and, where the platform has file locks (Unix, Windows),
// a lock on a file in the folder that the app and a ferry-cli on the same
// config both wait for (filelock). Elsewhere two processes can still lose one's
// change. It returns the func that lets go.
func (d *Dir) lockStates() (unlock func()) {
	d.unremoved.Lock()
	release := func() {}
	if os.MkdirAll(d.path, 0o700) == nil {
		// Best effort: without the lock (a read-only folder, a file
		// system without locks), the write that follows fails anyway or
		// goes unguarded.
		if u, err := filelock.Lock(d.lockPath()); err == nil {
			release = u
		}
	}
	return func() {
		release()
		d.unremoved.Unlock()
	}
}

// keys are the states' keys: of their snapshots, and of journals whose
// snapshot is gone.
func (d *Dir) keys() []string {
	entries, _ := os.ReadDir(d.path)
	var out []string
	seen := map[string]bool{}
	for _, de := range entries {
		if strings.HasPrefix(de.Name(), ".") || strings.HasPrefix(de.Name(), "send-") || strings.HasPrefix(de.Name(), "link-") {
			continue // a temporary file of an atomic write, a leaf cache, the log of uploads without resume (the engine's)
		}
		key, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok {
			key, ok = strings.CutSuffix(de.Name(), ".log")
		}
		if ok && !seen[key] {
			seen[key] = true
			out = append(out, key)
		}
	}
	return out
}

// List returns every state, most recently touched first.
func (d *Dir) List() []Summary {
	var out []Summary
	for _, key := range d.keys() {
		s, err := d.Salvage(key)
		if s == nil {
			continue
		}
		var damaged string
		if err != nil {
			damaged = err.Error()
			var de *DamagedError
			if errors.As(err, &de) {
				damaged = de.Words()
			}
			if st, serr := os.Stat(d.snapshotPath(key)); serr == nil && st.ModTime().After(s.Updated) {
				s.Updated = st.ModTime()
			}
			// Only partials known by their identity (a name alone could
			// be a file received since), and no chunk count to trust.
			s.Files = slices.DeleteFunc(s.Files, func(f File) bool { return !f.Done && f.Partial != "" && f.PartialID == "" })
		}
		p := Summary{Damaged: damaged, Unremoved: s.Unremoved, Key: key, PeerID: s.Peer, PeerName: s.PeerName, Delivery: s.Delivery, Dest: s.Dest, Files: max(s.Accepted, len(s.Files)), Updated: s.Updated,
			Receiving: d.Busy(key)}
		if st, err := os.Stat(d.journalPath(key)); err == nil && st.ModTime().After(p.Updated) {
			p.Updated = st.ModTime()
		}
		p.Partials, p.PartialIDs = s.PartialNames()
		for _, f := range s.Files {
			if f.Done {
				p.Saved++
				continue
			}
			for c := 0; c < len(f.CRCs); c++ {
				if f.Has(c) {
					p.Bytes += int64(merkle.ChunkLen(f.Size, s.ChunkSize, c))
				}
			}
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	return out
}

// Lock marks f, an open file of a receiver's, as in use now: an advisory
// lock that Locked sees from this process or another one, gone with the
// descriptor (or the process). Best effort, as the journals' (a file
// system without locks has none; on Windows there are none).
func Lock(f *os.File) { lockJournal(f) }

// Locked reports whether a receiver holds the file at path (Lock). False
// where files are not locked (Locking).
func Locked(path string) bool { return journalLocked(path) }

// Locking says whether Lock and Locked work here.
const Locking = lockingJournals

// Writable reports why resume state cannot be kept here (the folder cannot
// be made or written: a file in its place, a read-only config folder), or
// nil: each transfer would then start again from its beginning after an
// interruption, which a receiver should say when it starts.
func (d *Dir) Writable() error {
	if err := os.MkdirAll(d.path, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(d.path, ".writable-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}
