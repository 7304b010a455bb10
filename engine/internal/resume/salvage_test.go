package resume

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
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
	{"garbage", func(b []byte) []byte { return bytes.Repeat([]byte{0xa5}, len(b)) }, false, 0},
	{"empty", func([]byte) []byte { return nil }, false, 0},
}

func TestReadPartially(t *testing.T) {
	var whole bytes.Buffer
	if err := salvageState().encode(&whole); err != nil {
		t.Fatal(err)
	}
	for _, c := range partialCases {
		s, err := readPartially(bytes.NewReader(c.cut(whole.Bytes())), true)
		if c.name == "whole" && err != nil {
			t.Errorf("%s: %v", c.name, err)
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
	})
}

// A compacted state's journal names its partials, so that one whose
// snapshot is damaged, or gone, is still listed with them, as damaged;
// its other fields are what the snapshot still gives.
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
		{"garbage", func() { os.WriteFile(snap, bytes.Repeat([]byte{0xa5}, len(b)), 0o600) }, "", "its snapshot is garbled from byte 1"},
		{"cut in its second file", func() { os.WriteFile(snap, b[:bytes.Index(b, []byte(`"b (1)`))], 0o600) }, "PEER", "its snapshot is cut short"},
		{"gone", func() { os.Remove(snap) }, "", "its snapshot is missing"},
	} {
		c.damage()
		_, err := d.Load("k")
		var de *DamagedError
		if c.name != "gone" && !errors.As(err, &de) {
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
