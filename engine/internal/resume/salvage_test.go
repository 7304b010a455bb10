package resume

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// salvageState is a state of two begun files and one saved, as a receiver
// compacts it.
func salvageState() *State {
	a := NewFile(0, "a.bin", 3<<20, 3)
	a.Partial, a.PartialID = "a.bin.partial", "b1.2"
	a.Set(1, [32]byte{1}, 7)
	b := NewFile(2, "b.bin", 1<<20, 1)
	b.Partial, b.PartialID = "b (1).bin.partial", "b3.4"
	return &State{Peer: "PEER", PeerName: "Bob", Manifest: "m", ChunkSize: 1 << 20, Dest: "/dl", Accepted: 3,
		Files: []File{a, b, {Index: 1, Path: "c.txt", Size: 3, Done: true, SavedAs: "c.txt"}}}
}

// What a damaged snapshot still gives: its head and its whole entries up
// to the damage; nothing of garbage. These double as FuzzReadPartially's
// seeds.
var partialCases = []struct {
	name  string
	cut   func([]byte) []byte
	head  bool // Peer, Dest, ChunkSize read
	files int
}{
	{"whole", func(b []byte) []byte { return b }, true, 3},
	{"its end cut", func(b []byte) []byte { return b[:len(b)-2] }, true, 3},
	{"in its second file", func(b []byte) []byte { return b[:bytes.Index(b, []byte(`"b (1)`))] }, true, 1},
	{"right after its head", func(b []byte) []byte { return b[:bytes.Index(b, []byte(`"files"`))+9] }, true, 0},
	{"in its head", func(b []byte) []byte { return b[:bytes.Index(b, []byte(`"dest"`))] }, false, 0},
	{"at the end of a field in its head", func(b []byte) []byte { return b[:bytes.Index(b, []byte(`,"dest"`))] }, false, 0},
	{"after its first brace", func(b []byte) []byte { return b[:1] }, false, 0},
	{"garbage", func(b []byte) []byte { return bytes.Repeat([]byte{0xa5}, len(b)) }, false, 0},
	{"empty", func([]byte) []byte { return nil }, false, 0},
}

func TestReadPartially(t *testing.T) {
	var whole bytes.Buffer
	if err := salvageState().encode(&whole); err != nil {
		t.Fatal(err)
	}
	for _, c := range partialCases {
		s, headWhole, err := readPartially(bytes.NewReader(c.cut(whole.Bytes())), true)
		if c.name == "whole" && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if headWhole != c.head {
			t.Errorf("%s: head said whole: %v, want %v", c.name, headWhole, c.head)
		}
		if got := s != nil && s.Peer == "PEER" && s.Dest == "/dl" && s.ChunkSize == 1<<20; got != c.head {
			t.Errorf("%s: head read %v, want %v (%+v)", c.name, got, c.head, s)
		}
		if n := 0; s != nil {
			n = len(s.Files)
			if n != c.files {
				t.Errorf("%s: %d files, want %d", c.name, n, c.files)
			}
		}
	}
}

func FuzzReadPartially(f *testing.F) {
	var whole bytes.Buffer
	salvageState().encode(&whole)
	for _, c := range partialCases {
		f.Add(c.cut(whole.Bytes()))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		readPartially(bytes.NewReader(b), true)
		// A state that decodes, as its snapshot is written, reads back
		// whole and the same; cut anywhere, it reads back as its head (or
		// nothing) and a prefix of its files, never an entry it did not hold.
		var s State
		if json.Unmarshal(b, &s) != nil {
			return
		}
		if len(s.Files) == 0 {
			s.Files = nil // "files":[] and null are both no files
		}
		var enc bytes.Buffer
		if err := s.encode(&enc); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(&s)
		back, whole, err := readPartially(bytes.NewReader(enc.Bytes()), true)
		if got, _ := json.Marshal(back); err != nil || !whole || !bytes.Equal(got, want) {
			t.Fatalf("%s read back as %s (whole %v), %v", want, got, whole, err)
		}
		head := *back
		head.Files = nil
		wantHead, _ := json.Marshal(&head)
		// Cuts after its brace, before each of its first commas (the end
		// of a field or an entry), and every 16th of the way.
		cuts := []int{1}
		for i, c := range enc.Bytes() {
			if c == ',' && len(cuts) < 48 || i%max(1, enc.Len()/16) == 0 {
				cuts = append(cuts, i)
			}
		}
		for _, n := range cuts {
			cut, whole, _ := readPartially(bytes.NewReader(enc.Bytes()[:n]), true)
			if cut == nil {
				continue
			}
			files := cut.Files
			cut.Files = nil
			if got, _ := json.Marshal(cut); whole && !bytes.Equal(got, wantHead) {
				t.Fatalf("%s cut at %d: its head read as %s", want, n, got)
			}
			for i := range files {
				if i >= len(back.Files) || !reflect.DeepEqual(files[i], back.Files[i]) {
					t.Fatalf("%s cut at %d: file %d read as %+v", want, n, i, files[i])
				}
			}
		}
	})
}

// A compacted state's journal names its partials, so that one whose
// snapshot is damaged, or gone, is still listed with them, as damaged;
// its other fields are what the snapshot or the journal's head still
// gives.
func TestDamagedStateIsListedWithItsPartials(t *testing.T) {
	d := Open(t.TempDir(), nil, nil)
	s := salvageState()
	if err := d.Compact("k", s); err != nil {
		t.Fatal(err)
	}
	if l := d.List(); len(l) != 1 || l[0].Damaged != "" || len(l[0].Partials) != 2 {
		t.Fatalf("listed %+v", l)
	}
	snap := filepath.Join(d.Path(), "k.json")
	b, _ := os.ReadFile(snap)
	for _, c := range []struct {
		name   string
		damage func()
		peer   string
		why    string
	}{
		{"garbage", func() { os.WriteFile(snap, bytes.Repeat([]byte{0xa5}, len(b)), 0o600) }, "PEER", "its snapshot is garbled from byte 1"},
		{"cut in its second file", func() { os.WriteFile(snap, b[:bytes.Index(b, []byte(`"b (1)`))], 0o600) }, "PEER", "its snapshot is cut short"},
		{"gone", func() { os.Remove(snap) }, "PEER", "its snapshot is missing"},
		// A journal of before heads: the snapshot's head is lost with it.
		{"gone, its journal without a head", func() { withoutHead(t, filepath.Join(d.Path(), "k.log")) }, "", "its snapshot is missing"},
	} {
		c.damage()
		_, err := d.Load("k")
		var de *DamagedError
		if !strings.HasPrefix(c.name, "gone") && !errors.As(err, &de) {
			t.Errorf("%s: Load says %v", c.name, err)
		}
		l := d.List()
		if len(l) != 1 {
			t.Fatalf("%s: listed %+v", c.name, l)
		}
		if p := l[0]; p.Key != "k" || p.PeerID != c.peer || p.Damaged != c.why ||
			!slices.Equal(p.Partials, []string{"a.bin.partial", "b (1).bin.partial"}) || !slices.Equal(p.PartialIDs, []string{"b1.2", "b3.4"}) {
			t.Errorf("%s: listed %+v", c.name, p)
		}
	}
	d.Drop("k")
	if l := d.List(); len(l) != 0 {
		t.Errorf("listed after Drop: %+v", l)
	}
}

// Each compaction starts the journal with what the snapshot says, record
// by record: a snapshot damaged since (cut short, garbled, gone) is
// salvaged whole, its head, its saved files and its partials' chunks. The
// snapshot alone gave what it kept up to the damage: a saved file it no
// longer listed travelled again and was saved a second time as
// "name (1).ext", a partial whose entry was lost was fetched whole, and
// with the head lost nothing resumed.
func TestDamagedStateIsSalvagedWhole(t *testing.T) {
	d := Open(t.TempDir(), nil, nil)
	want := salvageState()
	if err := d.Compact("k", salvageState()); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(d.Path(), "k.json")
	b, _ := os.ReadFile(snap)
	offer := Offered{Peer: "PEER", Manifest: "m", ChunkSize: 1 << 20, Dest: "/dl", Files: 3,
		File: func(i int) (OfferedFile, error) {
			for _, f := range want.Files {
				if int(f.Index) == i {
					return OfferedFile{Path: f.Path, Size: f.Size}, nil
				}
			}
			return OfferedFile{}, errors.New("no such file")
		}}
	for _, c := range []struct {
		name   string
		damage func()
	}{
		{"cut in its saved file", func() { os.WriteFile(snap, b[:bytes.Index(b, []byte(`"c.txt"`))], 0o600) }},
		{"cut in its first file", func() { os.WriteFile(snap, b[:bytes.Index(b, []byte(`"a.bin.partial"`))], 0o600) }},
		{"cut in its head", func() { os.WriteFile(snap, b[:bytes.Index(b, []byte(`"dest"`))], 0o600) }},
		// Cut at the end of a field's value (before its comma) or after
		// its first brace, the head read so far was taken for the whole
		// head, and the journal's head, which is whole, was not used: the
		// salvaged state lost its download folder (until 2026-12-06).
		{"cut at the end of a field in its head", func() { os.WriteFile(snap, b[:bytes.Index(b, []byte(`,"dest"`))], 0o600) }},
		{"cut after its first brace", func() { os.WriteFile(snap, b[:1], 0o600) }},
		{"garbage", func() { os.WriteFile(snap, bytes.Repeat([]byte{0xa5}, len(b)), 0o600) }},
		{"gone", func() { os.Remove(snap) }},
	} {
		c.damage()
		s, err := d.Salvage("k")
		var de *DamagedError
		if !errors.As(err, &de) || s == nil {
			t.Fatalf("%s: Salvage says %v, %v", c.name, s, err)
		}
		if s.Peer != want.Peer || s.PeerName != want.PeerName || s.Manifest != want.Manifest || s.ChunkSize != want.ChunkSize ||
			s.Dest != want.Dest || s.Accepted != want.Accepted {
			t.Errorf("%s: head %+v", c.name, s)
		}
		if err := s.Check(offer, func(string) error { return nil }); err != nil {
			t.Errorf("%s: the salvaged state does not fit its offer: %v", c.name, err)
			continue
		}
		got := map[uint32]File{}
		for _, f := range s.Files {
			got[f.Index] = f
		}
		for _, w := range want.Files {
			g, ok := got[w.Index]
			if !ok {
				t.Errorf("%s: file %d (%s) lost", c.name, w.Index, w.Path)
				continue
			}
			if g.Path != w.Path || g.Size != w.Size || g.Done != w.Done || g.SavedAs != w.SavedAs || g.Partial != w.Partial ||
				g.PartialID != w.PartialID || !bytes.Equal(g.Have, w.Have) || !bytes.Equal(g.Leaves, w.Leaves) || !slices.Equal(g.CRCs, w.CRCs) {
				t.Errorf("%s: file %d salvaged as %+v, want %+v", c.name, w.Index, g, w)
			}
		}
		if len(s.Files) != len(want.Files) {
			t.Errorf("%s: %d files, want %d", c.name, len(s.Files), len(want.Files))
		}
		os.WriteFile(snap, b, 0o600)
	}
}

// withoutHead rewrites the journal at path as one written before journals
// had a head record.
func withoutHead(t *testing.T, path string) {
	t.Helper()
	recs, err := readJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, r := range recs {
		if r.typ == recMade {
			p, _ := made(r.file, r.size, r.name, r.id)
			frame(&b, p)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}
