package resume

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
)

func TestJournalRoundTripAndTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.log")
	j, err := createJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	leaf := merkle.Leaf([]byte("x"))
	j.Chunk(3, 7, 0xdeadbeef, leaf)
	j.Partial(3, 5<<20, "photos/b (1).jpg.partial", "803:1a2b:5f.3")
	j.Saved(4, "photos/a (1).jpg")
	// A partial record of before identities: the size and the name.
	old := make([]byte, 13+len("c.bin.partial"))
	old[0] = recBegun
	binary.BigEndian.PutUint32(old[1:], 5)
	binary.BigEndian.PutUint64(old[5:], 7)
	copy(old[13:], "c.bin.partial")
	j.write(old)
	j.Sync()
	j.Close()
	recs, err := readJournal(path)
	if err != nil || len(recs) != 4 {
		t.Fatalf("%d records, err %v", len(recs), err)
	}
	if r := recs[0]; r.typ != recChunk || r.file != 3 || r.chunk != 7 || r.crc != 0xdeadbeef || r.leaf != leaf {
		t.Errorf("chunk record %+v", r)
	}
	if r := recs[1]; r.typ != recMade || r.file != 3 || r.size != 5<<20 || r.name != "photos/b (1).jpg.partial" || r.id != "803:1a2b:5f.3" {
		t.Errorf("partial record %+v", r)
	}
	if r := recs[3]; r.typ != recBegun || r.file != 5 || r.size != 7 || r.name != "c.bin.partial" || r.id != "" {
		t.Errorf("partial record of before %+v", r)
	}
	if r := recs[2]; r.typ != recSaved || r.file != 4 || r.name != "photos/a (1).jpg" {
		t.Errorf("saved record %+v", r)
	}
}

// journalCases are damaged journals: every one must yield only its good prefix.
var journalCases = []struct {
	name string
	data []byte
	want int
}{
	{"empty", nil, 0},
	{"torn length", []byte{0, 0}, 0},
	{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3}, 0},
	{"tiny length", []byte{0, 0, 0, 1, 1, 0, 0, 0, 0}, 0},
	{"bad crc", append([]byte{0, 0, 0, 5, recSaved, 0, 0, 0, 1}, 1, 2, 3, 4), 0},
	{"unknown type", validRecord([]byte{9, 0, 0, 0, 1}), 0},
	// A newer Ferry's record type is skipped, what follows read on.
	{"unknown type then saved", append(validRecord([]byte{9, 0, 0, 0, 1}), validRecord([]byte{recSaved, 0, 0, 0, 1, 'a'})...), 1},
	{"unknown type torn", append(validRecord([]byte{200, 0, 0, 0, 1, 2})[:8], validRecord([]byte{recSaved, 0, 0, 0, 1, 'a'})...), 0},
	{"type 0", append(validRecord([]byte{0, 0, 0, 0, 1}), validRecord([]byte{recSaved, 0, 0, 0, 1, 'a'})...), 0},
	{"short chunk record", validRecord([]byte{recChunk, 0, 0, 0, 1, 2, 3}), 0},
	{"partial record", validRecord([]byte{recPartial, 0, 0, 0, 1, 'a', '.', 'p'}), 1},
	{"begun record", validRecord([]byte{recBegun, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 'a', '.', 'p'}), 1},
	{"short begun record", validRecord([]byte{recBegun, 0, 0, 0, 1, 0, 0, 0}), 0},
	{"begun record, negative size", validRecord([]byte{recBegun, 0, 0, 0, 1, 0xff, 0, 0, 0, 0, 0, 0, 9, 'a'}), 0},
	{"made record", validRecord([]byte{recMade, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 2, '1', ':', 'a', '.', 'p'}), 1},
	{"made record, no identity", validRecord([]byte{recMade, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 'a'}), 1},
	{"made record, identity past its end", validRecord([]byte{recMade, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 7, 'a'}), 0},
	{"short made record", validRecord([]byte{recMade, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9}), 0},
	{"head record", validRecord(append([]byte{recHead, 0, 0, 0, 0}, `{"version":3,"peer":"p","chunk_size":1048576,"files":null}`...)), 1},
	{"head record, garbled", validRecord([]byte{recHead, 0, 0, 0, 0, '{', 0xa5}), 1},
	{"held record", validRecord(append([]byte{recHeld, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 7}, make([]byte, 32)...)), 1},
	{"held record, no chunk", validRecord([]byte{recHeld, 0, 0, 0, 0}), 0},
	{"held record, a chunk cut short", validRecord(append([]byte{recHeld, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 7}, make([]byte, 31)...)), 0},
	{"good then torn", append(validRecord([]byte{recSaved, 0, 0, 0, 1, 'a'}), 0, 0, 0, 9, recSaved), 1},
}

func validRecord(p []byte) []byte {
	var b bytes.Buffer
	n := len(p)
	b.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	b.Write(p)
	sum := crc32.Checksum(p, castagnoli)
	b.Write([]byte{byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)})
	return b.Bytes()
}

func TestJournalDamage(t *testing.T) {
	for _, c := range journalCases {
		if got := len(parseJournal(bytes.NewReader(c.data))); got != c.want {
			t.Errorf("%s: %d records, want %d", c.name, got, c.want)
		}
	}
}

// FuzzParseJournal reads arbitrary bytes as a journal. What it reads
// writes back, frame by frame, as what reads the same; the journal cut at
// any byte reads as a prefix of those records, never one that was not
// there; and replayed onto a snapshot, what applies leaves a state whose
// files are the snapshot's and those the records name, each with bitmaps
// its size fits (checkApplied).
func FuzzParseJournal(f *testing.F) {
	for _, c := range journalCases {
		f.Add(c.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs := parseJournal(bytes.NewReader(data))
		if n := rewritten(t, recs); n > len(data) {
			t.Fatalf("%d bytes read as records that take %d", len(data), n)
		}
		step := max(1, len(data)/256) // every byte of a small journal
		for n := 0; n < len(data); n += step {
			cut := parseJournal(bytes.NewReader(data[:n]))
			if len(cut) > len(recs) || !sameRecords(cut, recs[:len(cut)]) {
				t.Fatalf("cut at byte %d of %d, the journal reads as %+v, not a prefix of %+v", n, len(data), cut, recs)
			}
		}
		checkApplied(t, recs)
	})
}

// FuzzJournalRecords frames arbitrary payloads as good records (each a
// uint16 length and its bytes; the CRC that would stop most mutations in
// FuzzParseJournal is written right) and checks what FuzzParseJournal
// does of what reads.
func FuzzJournalRecords(f *testing.F) {
	leaf := merkle.Leaf([]byte("x"))
	p, _ := made(1, 9, "a.partial", "1:2")
	for _, seed := range [][][]byte{
		{chunkRecord(0, 3, 7, leaf), named(recSaved, 2, "b (1)"), p},
		{append(named(recHeld, 0, ""), make([]byte, 2*heldEntry)...), named(recPartial, 0, "a.partial")},
		{named(recHead, 0, `{"version":3}`), append(named(recBegun, 5, "\x00\x00\x00\x00\x00\x00\x01\x00"), "c.partial"...)},
		{{recHeld + 1, 0, 0, 0, 0}, chunkRecord(0, 1, 2, leaf)},
	} {
		var b []byte
		for _, p := range seed {
			b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
			b = append(b, p...)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var j bytes.Buffer
		for len(data) >= 2 {
			n := min(int(binary.BigEndian.Uint16(data)), len(data)-2)
			frame(&j, data[2:2+n])
			data = data[2+n:]
		}
		recs := parseJournal(bytes.NewReader(j.Bytes()))
		rewritten(t, recs)
		checkApplied(t, recs)
	})
}

// rewritten writes recs back and checks that they read the same; it
// returns the bytes they take.
func rewritten(t *testing.T, recs []record) int {
	t.Helper()
	var again bytes.Buffer
	for _, r := range recs {
		frame(&again, payload(r))
	}
	n := again.Len()
	if back := parseJournal(&again); !sameRecords(back, recs) {
		t.Fatalf("%d records read, written back they read as %d: %+v, %+v", len(recs), len(back), recs, back)
	}
	return n
}

func sameRecords(a, b []record) bool {
	return slices.EqualFunc(a, b, func(x, y record) bool { return reflect.DeepEqual(x, y) })
}

// payload is r as the journal writes it (a partial record of before, which
// this build no longer writes, as it was written).
func payload(r record) []byte {
	switch r.typ {
	case recChunk:
		return chunkRecord(r.file, r.chunk, r.crc, r.leaf)
	case recHeld:
		return append(named(recHeld, r.file, ""), r.held...)
	case recBegun:
		p := named(recBegun, r.file, "\x00\x00\x00\x00\x00\x00\x00\x00"+r.name)
		binary.BigEndian.PutUint64(p[5:], uint64(r.size))
		return p
	case recMade:
		p, err := made(r.file, r.size, r.name, r.id)
		if err != nil {
			panic(err)
		}
		return p
	}
	return named(r.typ, r.file, r.name)
}

// checkApplied replays recs onto a snapshot that lists file 0 (four chunks
// of 1 MiB), and salvages them onto a state that lost everything: neither
// panics, and a replay that applies leaves each file of the snapshot, and
// only those and the files the records name, once, not saved with bitmaps
// its size fits (a file only a saved record names has no size yet: -1).
func checkApplied(t *testing.T, recs []record) {
	t.Helper()
	const cs = 1 << 20
	s := &State{ChunkSize: cs, Files: []File{NewFile(0, "a", 4*cs, 4)}}
	if err := applyJournal(s, recs); err == nil {
		named := map[uint32]bool{0: true}
		for _, r := range recs {
			named[r.file] = true
		}
		seen := map[uint32]bool{}
		for _, f := range s.Files {
			if !named[f.Index] || seen[f.Index] {
				t.Fatalf("after the journal, the state lists file %d (%+v)", f.Index, s.Files)
			}
			seen[f.Index] = true
			if f.Done {
				continue
			}
			if n := merkle.Chunks(f.Size, cs); f.Size < 0 || len(f.Have) != (n+7)/8 || len(f.Leaves) != 32*n || len(f.CRCs) != n {
				t.Fatalf("after the journal, file %d of %d bytes has bitmaps for %d chunks", f.Index, f.Size, len(f.CRCs))
			}
		}
		if !seen[0] {
			t.Fatal("after the journal, the state lost the snapshot's file")
		}
	}
	salvageJournal(&State{}, slices.Values(recs), false)
}

// TestJournalOfANewerFerry reads a journal that a newer Ferry wrote, with
// records of types this build does not know between records it knows (the
// user went back to this version while a transfer was unfinished): every
// record it knows is applied. Ferry of 2026-12-04 stopped at the first
// such record (type 5, then new) and lost every chunk and saved file after
// it: the older receiver fetched them again, saved the files a second time
// as "name (1)" and left the newer one's partial behind, listed nowhere
// (docs/compatibility.md).
func TestJournalOfANewerFerry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.log")
	j, err := createJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	leaf := merkle.Leaf([]byte("x"))
	j.write(append([]byte{recHeld + 1, 0, 0, 0, 0}, "what a newer Ferry knows"...))
	j.Chunk(0, 1, 0xdeadbeef, leaf)
	j.write([]byte{0xff, 0, 0, 0, 1})
	j.Saved(1, "b.txt")
	j.Close()
	recs, err := readJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	s := &State{Version: Version, ChunkSize: 1 << 20, Files: []File{NewFile(0, "a.bin", 3<<20, 3)}}
	if err := applyJournal(s, recs); err != nil {
		t.Fatalf("%d records: %v", len(recs), err)
	}
	if len(s.Files) != 2 || !s.Files[0].Has(1) || s.Files[0].CRCs[1] != 0xdeadbeef || !s.Files[1].Done || s.Files[1].SavedAs != "b.txt" {
		t.Errorf("read %d records into %+v; want chunk 1 of file 0 held and file 1 saved as b.txt", len(recs), s.Files)
	}
}

func TestApplyJournalRefusesUnknownFiles(t *testing.T) {
	s := &State{Files: []File{{Index: 0, Have: make([]byte, 1), Leaves: make([]byte, 32), CRCs: make([]uint32, 1)}}}
	if err := applyJournal(s, []record{{typ: recChunk, file: 5}}); err == nil {
		t.Error("a record for an unknown file was applied")
	}
	if err := applyJournal(s, []record{{typ: recChunk, file: 0, chunk: 1}}); err == nil {
		t.Error("a chunk out of range was applied")
	}
	if err := applyJournal(s, []record{{typ: recChunk, file: 0, chunk: 0, crc: 7}}); err != nil || !s.Files[0].Has(0) || s.Files[0].CRCs[0] != 7 {
		t.Errorf("good record: err %v, state %+v", err, s.Files[0])
	}
	if err := applyJournal(s, []record{{typ: recPartial, file: 0, name: "x (1).partial"}, {typ: recSaved, file: 0, name: "x (1)"}}); err != nil ||
		!s.Files[0].Done || s.Files[0].SavedAs != "x (1)" || s.Files[0].Partial != "" {
		t.Errorf("partial then saved: err %v, state %+v", err, s.Files[0])
	}
	if err := applyJournal(s, []record{{typ: recChunk, file: 0, chunk: 0}}); err == nil {
		t.Error("a chunk of a saved file was applied")
	}
}

// A snapshot lists only the files begun or saved: the journal's partial
// record of another file adds its entry (sized by the record), a lone saved
// record one whose size the offer gives; Check fills in the paths.
func TestJournalAddsFilesTheSnapshotDoesNotList(t *testing.T) {
	const cs = 1 << 20
	s := &State{Version: Version, Peer: "p", Manifest: "m", ChunkSize: cs, Dest: "/d", Accepted: 4,
		Files: []File{NewFile(0, "a", 3*cs, 3)}}
	leaf := merkle.Leaf([]byte("x"))
	err := applyJournal(s, []record{
		{typ: recBegun, file: 2, size: 2*cs + 1, name: "c.partial"},
		{typ: recChunk, file: 2, chunk: 2, crc: 9, leaf: leaf},
		{typ: recSaved, file: 3, name: "d (1)"},
	})
	if err != nil || len(s.Files) != 3 {
		t.Fatalf("err %v, %d files", err, len(s.Files))
	}
	if f := s.Files[1]; f.Index != 2 || f.Path != "" || f.Size != 2*cs+1 || f.Partial != "c.partial" || !f.Has(2) || f.Has(1) || f.Leaf(2) != leaf {
		t.Errorf("begun file %+v", f)
	}
	if f := s.Files[2]; f.Index != 3 || !f.Done || f.SavedAs != "d (1)" || f.Size != -1 {
		t.Errorf("saved file %+v", f)
	}
	offer := []OfferedFile{{"a", 3 * cs}, {"b", 1}, {"c", 2*cs + 1}, {"d", 7}}
	o := Offered{Peer: "p", Manifest: "m", ChunkSize: cs, Dest: "/d", Files: len(offer),
		File: func(i int) (OfferedFile, error) { return offer[i], nil }}
	if err := s.Check(o, func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if s.Files[1].Path != "c" || s.Files[2].Path != "d" || s.Files[2].Size != 7 {
		t.Errorf("after Check: %+v, %+v", s.Files[1], s.Files[2])
	}
	// A chunk of a file neither listed nor begun, a size that changed.
	for _, recs := range [][]record{
		{{typ: recChunk, file: 1}},
		{{typ: recBegun, file: 0, size: 5, name: "a.partial"}},
		{{typ: recBegun, file: 1, size: 1 << 62, name: "b.partial"}},
		{{typ: recMade, file: 1, size: math.MaxInt64, name: "b.partial"}}, // its chunks counted past int64 and made bitmaps of a negative size
		// Files that each fit, and together hold more chunks than a state
		// can: a few such records made gigabytes of bitmaps.
		{{typ: recBegun, file: 1, size: maxChunks / 2 * cs, name: "b.partial"}, {typ: recBegun, file: 2, size: maxChunks / 2 * cs, name: "c.partial"}},
	} {
		s := &State{ChunkSize: cs, Files: []File{NewFile(0, "a", 3*cs, 3)}}
		if err := applyJournal(s, recs); err == nil {
			t.Errorf("records %+v were applied", recs)
		}
	}
	// Another offer's sizes.
	s2 := &State{Version: Version, Peer: "p", Manifest: "m", ChunkSize: cs, Dest: "/d"}
	if err := applyJournal(s2, []record{{typ: recBegun, file: 2, size: 5, name: "c.partial"}}); err != nil {
		t.Fatal(err)
	}
	if err := s2.Check(o, func(string) error { return nil }); err == nil {
		t.Error("a journal's file of another size passed the check")
	}
}

// TestJournalAppendsWhileItSyncs checks that records are appended while the
// journal's fsync runs: every landing file appends one, and a slow fsync
// (tens of milliseconds on a busy disk) must not stall them. The records
// appended before Sync reach the file before its fsync starts; those
// appended during it are synced next time.
func TestJournalAppendsWhileItSyncs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.log")
	j, err := createJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	inSync, release := make(chan int64), make(chan struct{})
	j.fsync = func(f *os.File) error {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		inSync <- st.Size() // what this fsync commits
		<-release
		return f.Sync()
	}
	j.Chunk(1, 0, 1, merkle.Leaf([]byte("a")))
	j.Saved(2, "a.txt")
	synced := make(chan error)
	go func() { synced <- j.Sync() }()
	size := <-inSync
	if want := int64(2*8 + 45 + 5 + len("a.txt")); size != want {
		t.Errorf("the fsync commits %d bytes, want the %d of both records", size, want)
	}
	// The fsync is under way: appending must not wait for it.
	if !j.mu.TryLock() {
		close(release)
		<-synced
		t.Fatal("the journal's lock is held while it fsyncs: every landing file waits for the disk")
	}
	j.mu.Unlock()
	if err := j.Saved(3, "b.txt"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	go func() { synced <- j.Sync() }() // the record appended meanwhile
	if size := <-inSync; size != int64(3*8+45+2*(5+len("a.txt"))) {
		t.Errorf("the second fsync commits %d bytes, want all three records", size)
	}
	if err := <-synced; err != nil { // release is closed: it goes on at once
		t.Fatal(err)
	}
	j.Close()
	if recs, err := readJournal(path); err != nil || len(recs) != 3 {
		t.Fatalf("%d records, err %v", len(recs), err)
	}
}

// A chunk lands while the journal waits for the disk: the streams that
// record chunks must not wait for the once-a-second fsync (on a busy disk
// tens of milliseconds, every second, for every stream at once). Close
// waits for the fsync under way; what Sync flushed before it is in the file.
func TestJournalChunkDoesNotWaitForSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.log")
	j, err := createJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	inSync, release := make(chan struct{}), make(chan struct{})
	j.fsync = func(f *os.File) error {
		close(inSync)
		<-release
		return f.Sync()
	}
	leaf := merkle.Leaf([]byte("x"))
	j.Chunk(1, 0, 1, leaf)
	synced := make(chan error, 1)
	go func() { synced <- j.Sync() }()
	<-inSync
	landed := make(chan struct{})
	go func() {
		j.Chunk(1, 1, 2, leaf)
		close(landed)
	}()
	select {
	case <-landed:
	case <-time.After(10 * time.Second):
		t.Error("recording a chunk waited for the journal's fsync")
	}
	closed := make(chan struct{})
	go func() {
		j.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Error("Close did not wait for the fsync under way")
	default:
	}
	close(release)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	<-closed
	<-landed
	recs, err := readJournal(path)
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records, err %v", len(recs), err)
	}
}

// TestBusyWhileAJournalIsOpen: a receiver's open journal marks its state
// Busy to any other reader of the directory (another Dir, as another
// process on the same config would open it), and only while it is open.
func TestBusyWhileAJournalIsOpen(t *testing.T) {
	if !lockingJournals {
		t.Skip("no file locks on this platform: the engine knows its own receivers")
	}
	path := t.TempDir()
	d, other := Open(path, nil, nil), Open(path, nil, nil)
	j, err := d.Start("k", &State{Peer: "p", Manifest: "m", ChunkSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !other.Busy("k") {
		t.Error("not Busy while its journal is open")
	}
	if l := other.List(); len(l) != 1 || !l[0].Receiving {
		t.Errorf("listed as %+v, want Receiving", l)
	}
	j.Close()
	if other.Busy("k") || other.Busy("absent") {
		t.Error("Busy once the journal is closed, or with none")
	}
}

// Every record is in the journal's file once its call returns, with no Sync
// or Close: a receiver killed right after a file got its name (SIGKILL, a
// crash) must not fetch that file again at the next attempt and save it a
// second time as "name (1).ext" (seen: a 300 MB file, and 1 to 28 small
// files of a tree, killed at random points). The page cache keeps what was
// written; only a power cut needs the Sync.
func TestJournalRecordsReachTheFileAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.log")
	j, err := createJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	leaf := merkle.Leaf([]byte("x"))
	steps := []struct {
		name  string
		write func() error
	}{
		{"partial", func() error { return j.Partial(1, 5<<20, "big.bin.partial", "b1.2") }},
		{"chunk", func() error { return j.Chunk(1, 0, 7, leaf) }},
		{"saved", func() error { return j.Saved(1, "big.bin") }},
		{"saved small file", func() error { return j.Saved(2, "small.txt") }},
	}
	for i, s := range steps {
		if err := s.write(); err != nil {
			t.Fatal(err)
		}
		// What a process started after a kill reads, right away.
		recs, err := readJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != i+1 {
			t.Fatalf("after the %s record the file holds %d records, want %d", s.name, len(recs), i+1)
		}
	}
}

// A saved record of a file found by its identity (SavedFound) may wait for
// the next record's write, but no longer than lazyDelay on its own, and
// never past Sync or Close.
func TestJournalSavedFoundReachesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.log")
	j, err := createJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		t.Helper()
		recs, err := readJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	// On its own, within lazyDelay (a loaded machine may run the timer late).
	if err := j.SavedFound(1, "a.txt"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for count() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("a lazy saved record never reached the file by itself")
		}
		time.Sleep(time.Millisecond)
	}
	// With the next record, at once.
	j.SavedFound(2, "b.txt")
	if err := j.Partial(3, 10, "", "c3.1"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 3 {
		t.Fatalf("after the next record the file holds %d records, want 3", n)
	}
	// With Sync, and with Close.
	j.SavedFound(3, "c.txt")
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 4 {
		t.Fatalf("after Sync the file holds %d records, want 4", n)
	}
	j.SavedFound(4, "d.txt")
	j.Close()
	if n := count(); n != 5 {
		t.Fatalf("after Close the file holds %d records, want 5", n)
	}
	if err := j.SavedFound(5, "e.txt"); err == nil {
		t.Fatal("a closed journal took a record")
	}
	time.Sleep(2 * lazyDelay) // a timer of a closed journal writes nothing
	if n := count(); n != 5 {
		t.Fatalf("the closed journal holds %d records, want 5", n)
	}
}
