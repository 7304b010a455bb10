package engine

import (
	"testing"

	"github.com/ferrydrop/ferry/engine/wire"
)

// testScheduler shares out files of the given chunk counts, chunk bytes each.
func testScheduler(chunk int, counts ...int) *scheduler {
	files := make([]int, len(counts))
	for i := range counts {
		files[i] = i
	}
	return newScheduler(files, func(fi int) int { return counts[fi] }, func(int, int) int { return chunk })
}

// Chunks go out in file order, each once; a file the receiver has whole
// (no chunk to send) is skipped; the accepted order is the sending order.
func TestSchedulerTakesInOrder(t *testing.T) {
	counts := map[int]int{4: 2, 1: 0, 7: 3}
	s := newScheduler([]int{4, 1, 7}, func(fi int) int { return counts[fi] }, func(int, int) int { return 1 })
	w := []*workerState{{id: 0}, {id: 1}}
	var got [][2]int
	for i := 0; ; i++ {
		fi, ci, moved, ok := s.take(w[i%2])
		if !ok {
			break
		}
		if moved {
			t.Fatalf("chunk (%d,%d) taken as moved without a switch", fi, ci)
		}
		got = append(got, [2]int{fi, ci})
	}
	want := [][2]int{{4, 0}, {4, 1}, {7, 0}, {7, 1}, {7, 2}}
	if len(got) != len(want) {
		t.Fatalf("took %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("took %v, want %v", got, want)
		}
	}
	select {
	case <-s.takenAll:
		t.Error("takenAll closed without the endgame")
	default:
	}
	if !s.noteResolved(7) || s.noteResolved(7) {
		t.Error("noteResolved did not tell the second result of a file from the first")
	}
}

// Endgame: once the session spread over more flows, a worker that finds no
// chunk left sends again the chunk another worker has been on longest, each
// once, skipping files the receiver already settled; without the spread it
// simply stops.
func TestEndgameSendsStragglersAgain(t *testing.T) {
	s := testScheduler(64<<10, 3, 1)
	ws := []*workerState{{id: 0}, {id: 1}, {id: 2}, {id: 3}}
	var got [][2]int
	for _, w := range ws { // four chunks, four workers: (0,0) (0,1) (0,2) (1,0)
		fi, ci, moved, ok := s.take(w)
		if !ok || moved {
			t.Fatal("ran out of chunks")
		}
		got = append(got, [2]int{fi, ci})
	}
	if _, _, _, ok := s.take(ws[0]); ok {
		t.Fatal("without the endgame a worker took a chunk twice")
	}
	s.startEndgame()
	s.noteResolved(1) // file 1 is settled: its chunk is not a straggler
	fi, ci, moved, ok := s.take(ws[0])
	if !ok || !moved || [2]int{fi, ci} != got[1] {
		t.Fatalf("endgame took (%d,%d) moved=%v ok=%v; want the oldest other chunk %v", fi, ci, moved, ok, got[1])
	}
	select {
	case <-s.takenAll:
	default:
		t.Error("takenAll not closed once every chunk was taken")
	}
	fi, ci, _, ok = s.take(ws[1])
	if !ok || [2]int{fi, ci} != got[2] {
		t.Fatalf("second straggler (%d,%d), want %v", fi, ci, got[2])
	}
	// (0,1) and (0,2) went twice, (1,0) is settled, and worker 0 left (0,0)
	// behind for another chunk, which counts as written: nothing is left.
	if fi, ci, _, ok := s.take(ws[2]); ok {
		t.Fatalf("a chunk went a third time: (%d,%d)", fi, ci)
	}
}

// A switch stops the first transport's workers, and the new ones first send
// again what may still be in flight there (at most a flow-control window per
// stream), then carry on where the first ones stopped; chunks of files the
// receiver already saved are not sent again.
func TestSwitchMovesChunksInFlight(t *testing.T) {
	t.Parallel()
	const chunk, inFlightWindow = 1 << 20, 12 << 20
	s := testScheduler(chunk, 40, 2)
	s.window = inFlightWindow
	first := []*workerState{{id: 0, track: true}, {id: 1, track: true}}
	for range 15 {
		for _, ws := range first {
			if _, _, _, ok := s.take(ws); !ok {
				t.Fatal("ran out of chunks")
			}
		}
	}
	s.moveInFlight()
	if s.generation() != 1 {
		t.Fatalf("generation %d after the switch", s.generation())
	}
	if _, _, _, ok := s.take(first[0]); ok {
		t.Fatal("a worker of the first transport took a chunk after the switch")
	}
	// Per stream, what lies more than a window behind its write offset was read.
	perStream := int(inFlightWindow/(chunk+wire.DataHeaderLen)) + 1
	if len(s.moved) < 2 || len(s.moved) > 2*perStream {
		t.Fatalf("%d chunks moved, want at most %d per stream", len(s.moved), perStream)
	}
	wantMoved := len(s.moved)
	next := &workerState{gen: 1, id: 2}
	seen := map[[2]int]bool{}
	for i := range wantMoved {
		fi, ci, moved, ok := s.take(next)
		if !ok || !moved || fi != 0 || ci < 30-2*perStream || ci >= 30 {
			t.Fatalf("take %d after the switch: file %d chunk %d moved=%v ok=%v", i, fi, ci, moved, ok)
		}
		seen[[2]int{fi, ci}] = true
	}
	if len(seen) != wantMoved {
		t.Errorf("moved chunks repeat: %v", seen)
	}
	if fi, ci, moved, ok := s.take(next); !ok || moved || fi != 0 || ci != 30 {
		t.Errorf("after the moved chunks: file %d chunk %d moved=%v, want file 0 chunk 30", fi, ci, moved)
	}
	// Moved chunks of a file the receiver saved meanwhile are dropped.
	s.moved = []chunkRef{{file: 1, chunk: 0}, {file: 0, chunk: 29}}
	s.noteResolved(1)
	if fi, ci, moved, _ := s.take(next); fi != 0 || ci != 29 || !moved {
		t.Errorf("took file %d chunk %d moved=%v, want file 0 chunk 29", fi, ci, moved)
	}
}

// A crew ends when its last worker leaves, and takes no one after that.
func TestCrew(t *testing.T) {
	c := newCrew()
	if !c.join() || !c.join() {
		t.Fatal("a new crew refused a worker")
	}
	c.leave()
	select {
	case <-c.done:
		t.Fatal("ended with a worker still at work")
	default:
	}
	if !c.join() {
		t.Fatal("a running crew refused a worker")
	}
	c.leave()
	c.leave()
	select {
	case <-c.done:
	default:
		t.Fatal("not ended when the last worker left")
	}
	if c.join() {
		t.Error("an ended crew took a worker")
	}
}
