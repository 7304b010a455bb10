package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/ferrydrop/ferry/engine/wire"
)

// manifestIDBefore is manifestID as first written: a resumed delivery
// matches its partial data by this ID, so it must not change between
// builds.
func manifestIDBefore(files []localFile, chunkSize int, text string) string {
	h := sha256.New()
	if text != "" {
		t := sha256.Sum256([]byte(text))
		h.Write([]byte("text\x00"))
		h.Write(t[:])
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(chunkSize))
	h.Write(b[:])
	idx := make([]int, len(files))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool { return files[idx[i]].Path < files[idx[j]].Path })
	for _, i := range idx {
		f := files[i]
		h.Write([]byte(f.Path))
		h.Write([]byte{0})
		binary.BigEndian.PutUint64(b[:], uint64(f.Size))
		h.Write(b[:])
		binary.BigEndian.PutUint64(b[:], uint64(f.MTime))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestManifestIDUnchanged(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var files []localFile
	for i := range 3000 {
		files = append(files, localFile{FileEntry: wire.FileEntry{
			Path: fmt.Sprintf("d%d/é%d/f%d", r.IntN(20), r.IntN(50), i), Size: r.Int64N(1<<40) - 5, MTime: r.Int64() - r.Int64()}})
	}
	for _, text := range []string{"", "a link"} {
		for _, n := range []int{0, 1, len(files)} {
			if got, want := manifestID(files[:n], nil, 1<<20, text), manifestIDBefore(files[:n], 1<<20, text); got != want {
				t.Errorf("%d files, text %q: ID %s, was %s", n, text, got, want)
			}
			// Empty folders make another offer, whatever their order.
			a := manifestID(files[:n], []string{"x/empty", "y"}, 1<<20, text)
			if b := manifestID(files[:n], []string{"y", "x/empty"}, 1<<20, text); a != b || a == manifestIDBefore(files[:n], 1<<20, text) {
				t.Errorf("%d files, text %q: with folders %s and %s (without %s)", n, text, a, b, manifestIDBefore(files[:n], 1<<20, text))
			}
		}
	}
}

// A file's change time counts only where it differs from its mtime: a
// file written and left alone (both the same instant) keeps the ID it had
// before change times counted; one whose ctime moved (rewritten with its
// mtime set back, renamed, chmod) makes another offer.
func TestManifestIDCountsTheChangeTime(t *testing.T) {
	files := []localFile{
		{FileEntry: wire.FileEntry{Path: "a.bin", Size: 5 << 20, MTime: 1_700_000_000_000_000_001}},
		{FileEntry: wire.FileEntry{Path: "b.txt", Size: 10, MTime: 1_700_000_000_000_000_002}},
	}
	before := manifestIDBefore(files, 1<<20, "")
	with := func(ctime int64) string {
		c := slices.Clone(files)
		c[0].ctime = ctime
		return manifestID(c, nil, 1<<20, "")
	}
	for _, c := range []struct {
		name  string
		ctime int64
		same  bool
	}{
		{"none (Windows)", 0, true},
		{"the mtime's", files[0].MTime, true},
		{"later", files[0].MTime + 7, false},
		{"later still", files[0].MTime + 8, false},
	} {
		if got := with(c.ctime); (got == before) != c.same {
			t.Errorf("ctime %s: ID %s, before %s; want the same: %v", c.name, got, before, c.same)
		}
	}
	if with(files[0].MTime+7) == with(files[0].MTime+8) {
		t.Error("two change times make one ID")
	}
}

// BenchmarkManifestID: the ID of one copy of workload D's list, now and
// as first written.
func BenchmarkManifestID(b *testing.B) {
	var files []localFile
	for i := range 15036 { // one copy of workload D
		files = append(files, localFile{FileEntry: wire.FileEntry{Path: fmt.Sprintf("go-1/src/pkg%d/sub%d/file%d.go", i%97, i%13, i), Size: int64(i), MTime: int64(i) << 20}})
	}
	for _, c := range []struct {
		name string
		id   func([]localFile, int, string) string
	}{{"now", func(f []localFile, c int, t string) string { return manifestID(f, nil, c, t) }}, {"before", manifestIDBefore}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.id(files, 1<<20, "")
			}
		})
	}
}
