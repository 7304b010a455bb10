package engine

import (
	"fmt"
	"testing"

	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
)

func TestBatchChunkSize(t *testing.T) {
	files := func(sizes ...int64) []localFile {
		var fs []localFile
		for _, s := range sizes {
			fs = append(fs, localFile{FileEntry: wire.FileEntry{Size: s}})
		}
		return fs
	}
	for _, c := range []struct {
		name  string
		files []localFile
		limit int
		want  int
	}{
		{"a big batch keeps the limit", files(1 << 30), 1 << 20, 1 << 20},
		{"64 MiB is not small", files(32<<20, 32<<20), 1 << 20, 1 << 20},
		{"just under 64 MiB", files(64<<20 - 1), 1 << 20, 128 << 10},
		{"36 MiB in 256 chunks or more", files(36 << 20), 1 << 20, 128 << 10},
		{"20 MiB", files(20 << 20), 1 << 20, 64 << 10},
		{"6 MiB", files(6 << 20), 1 << 20, 64 << 10},
		{"never under 64 KiB", files(1000), 1 << 20, 64 << 10},
		{"an empty batch", nil, 1 << 20, 64 << 10},
		{"a limit under the floor stays", files(1000), 4096, 4096},
		{"a 4 MiB limit", files(100 << 20), 4 << 20, 4 << 20},
		{"a 4 MiB limit, a small batch", files(60 << 20), 4 << 20, 128 << 10},
		{"halving keeps alignment", files(1000), 1<<20 + 4096, 1<<20 + 4096},
		{"halving keeps alignment partway", files(1000), 3 << 20, 96 << 10},
	} {
		if got := batchChunkSize(c.files, c.limit); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// Endgame: once the session spread over more flows, a worker that finds no
// chunk left sends again the chunk another worker has been on longest, each
// once, skipping files the receiver already settled; without the spread it
// simply stops.
func TestEndgameSendsStragglersAgain(t *testing.T) {
	const chunk = 64 << 10
	tx := &sender{chunkSize: chunk, leaves: map[int]*fileLeaves{}, takenAll: make(chan struct{})}
	for i, size := range []int64{3 * chunk, chunk} {
		tx.files = append(tx.files, localFile{FileEntry: wire.FileEntry{Path: fmt.Sprint(i), Size: size}})
		tx.accepted = append(tx.accepted, i)
		tx.leaves[i] = &fileLeaves{tree: merkle.NewTree(int(size / chunk))}
	}
	ws := []*workerState{{id: 0}, {id: 1}, {id: 2}, {id: 3}}
	var got [][2]int
	for _, w := range ws { // four chunks, four workers: (0,0) (0,1) (0,2) (1,0)
		fi, ci, moved, ok := tx.take(w)
		if !ok || moved {
			t.Fatal("ran out of chunks")
		}
		got = append(got, [2]int{fi, ci})
	}
	if _, _, _, ok := tx.take(ws[0]); ok {
		t.Fatal("without the endgame a worker took a chunk twice")
	}
	tx.endgame = true
	tx.noteResolved(1) // file 1 is settled: its chunk is not a straggler
	fi, ci, moved, ok := tx.take(ws[0])
	if !ok || !moved || [2]int{fi, ci} != got[1] {
		t.Fatalf("endgame took (%d,%d) moved=%v ok=%v; want the oldest other chunk %v", fi, ci, moved, ok, got[1])
	}
	select {
	case <-tx.takenAll:
	default:
		t.Error("takenAll not closed once every chunk was taken")
	}
	fi, ci, _, ok = tx.take(ws[1])
	if !ok || [2]int{fi, ci} != got[2] {
		t.Fatalf("second straggler (%d,%d), want %v", fi, ci, got[2])
	}
	// (0,1) and (0,2) went twice, (1,0) is settled, and worker 0 left (0,0)
	// behind for another chunk, which counts as written: nothing is left.
	if fi, ci, _, ok := tx.take(ws[2]); ok {
		t.Fatalf("a chunk went a third time: (%d,%d)", fi, ci)
	}
}
