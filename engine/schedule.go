package engine

import (
	"sync"
	"sync/atomic"

	"github.com/ferrydrop/ferry/engine/wire"
)

// The chunk scheduler of a sending session: which chunk each data stream's
// worker sends next. Workers take chunks in file order; a switch of
// transport (transport/auto) ends the first transport's generation and
// queues again the chunks that may still be in flight on its streams; once
// the session spread over more flows (random loss), the endgame sends again
// the chunk another worker has been on longest, once, so a batch does not
// wait for the slowest of many loss-limited flows (the receiver keeps the
// first copy). It knows chunks and workers only: reading, hashing and
// writing are the sender's.
type scheduler struct {
	files    []int            // the accepted files, in sending order
	chunks   func(fi int) int // chunks of file fi to send (0: the receiver has it all)
	chunkLen func(fi, ci int) int
	// skip, when set, is the first chunk of file fi from ci on that is to
	// be sent: chunks the receiver is told of instead (a sparse file's
	// chunks of zeros) are never handed out. Set before the first take.
	skip func(fi, ci int) int
	// window is how far behind a stream's write offset a chunk may still
	// be unread by the receiver on the first transport of a switcher; set
	// before the first take.
	window int64
	gen    atomic.Int64 // bumped when the data moves to another transport
	// takenAll is closed when the endgame began: every chunk was taken, so
	// the receiver may hear SenderDone while copies still travel.
	takenAll     chan struct{}
	takenAllOnce sync.Once

	mu       sync.Mutex // guards the fields below
	cursor   struct{ file, chunk int }
	moved    []chunkRef         // chunks to send again after a switch, first
	inFlight map[int][]chunkRef // worker -> its recent chunks, while on the first transport
	resolved fileSet            // files the receiver settled
	dropped  fileSet            // files given up (unreadable here): none of their chunks is handed out again
	endgame  bool
	working  map[int]working // worker -> the chunk it took last
	takes    uint64          // chunks taken so far: the order of working's entries
	doubled  map[[2]int]bool // chunks the endgame sent again
}

// newScheduler shares out the chunks of files (indexes in sending order);
// chunks says how many of a file's chunks are to be sent, chunkLen how
// long one is.
func newScheduler(files []int, chunks func(fi int) int, chunkLen func(fi, ci int) int) *scheduler {
	return &scheduler{files: files, chunks: chunks, chunkLen: chunkLen, takenAll: make(chan struct{})}
}

// working is the chunk a worker took last, and when (in takes).
type working struct {
	file, chunk int
	since       uint64
}

// chunkRef is one chunk written on a stream, and where it ended there.
type chunkRef struct {
	file, chunk int
	end         int64
}

// workerState is what take needs to know of the worker asking.
type workerState struct {
	gen    int64 // the transport generation the worker sends on
	id     int
	track  bool  // record chunks in flight (first transport of a switcher)
	offset int64 // bytes written on the worker's stream
}

// generation is the transport generation the data is on: 0 on the first
// transport, 1 once it moved.
func (s *scheduler) generation() int64 { return s.gen.Load() }

// startEndgame lets workers that find no chunk left send stragglers again.
func (s *scheduler) startEndgame() {
	s.mu.Lock()
	s.endgame = true
	s.mu.Unlock()
}

// take returns the next (file, chunk) to send, or ok=false when all are
// taken or the data moved to another transport; moved chunks (sent again
// after a switch of transport) come first.
func (s *scheduler) take(ws *workerState) (file, chunk int, moved, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen.Load() != ws.gen {
		return 0, 0, false, false
	}
	for len(s.moved) > 0 {
		c := s.moved[0]
		s.moved = s.moved[1:]
		if !s.resolved.has(c.file) && !s.dropped.has(c.file) {
			return c.file, c.chunk, true, true
		}
	}
	for s.cursor.file < len(s.files) {
		fi := s.files[s.cursor.file]
		if s.skip != nil {
			s.cursor.chunk = s.skip(fi, s.cursor.chunk)
		}
		if s.cursor.chunk < s.chunks(fi) && !s.dropped.has(fi) {
			c := s.cursor.chunk
			s.cursor.chunk++
			if ws.track {
				s.noteInFlight(ws, fi, c)
			}
			s.noteWorking(ws, fi, c)
			return fi, c, false, true
		}
		s.cursor.file++
		s.cursor.chunk = 0
	}
	if s.endgame {
		s.takenAllOnce.Do(func() { close(s.takenAll) })
		if fi, ci, ok := s.straggler(ws); ok {
			s.noteWorking(ws, fi, ci)
			return fi, ci, true, true
		}
	}
	return 0, 0, false, false
}

// noteWorking records the chunk a worker took. Called with s.mu held.
func (s *scheduler) noteWorking(ws *workerState, fi, ci int) {
	if s.working == nil {
		s.working = map[int]working{}
	}
	s.takes++
	s.working[ws.id] = working{fi, ci, s.takes}
}

// straggler picks for ws the chunk another worker has been on longest, of
// a file not yet settled, that the endgame did not send again yet. Called
// with s.mu held.
func (s *scheduler) straggler(ws *workerState) (file, chunk int, ok bool) {
	var best working
	for id, w := range s.working {
		key := [2]int{w.file, w.chunk}
		if id == ws.id || s.doubled[key] || s.resolved.has(w.file) || s.dropped.has(w.file) {
			continue
		}
		if !ok || w.since < best.since {
			best, ok = w, true
		}
	}
	if !ok {
		return 0, 0, false
	}
	if s.doubled == nil {
		s.doubled = map[[2]int]bool{}
	}
	s.doubled[[2]int{best.file, best.chunk}] = true
	return best.file, best.chunk, true
}

// noteInFlight records a chunk a worker is about to write on its stream of
// the first transport, and forgets those that must have been read by now.
// Called with s.mu held.
func (s *scheduler) noteInFlight(ws *workerState, fi, ci int) {
	ws.offset += int64(wire.DataHeaderLen + s.chunkLen(fi, ci))
	if s.inFlight == nil {
		s.inFlight = map[int][]chunkRef{}
	}
	refs := append(s.inFlight[ws.id], chunkRef{fi, ci, ws.offset})
	for len(refs) > 1 && refs[0].end < ws.offset-s.window {
		refs = refs[1:]
	}
	s.inFlight[ws.id] = refs
}

// moveInFlight ends the first transport's generation and queues again every
// chunk that may still be in flight on its streams.
func (s *scheduler) moveInFlight() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen.Add(1)
	for _, refs := range s.inFlight {
		s.moved = append(s.moved, refs...)
	}
	s.inFlight = nil
	s.working = nil // sent again as moved chunks
}

// noteResolved records that the receiver settled file fi; false if it had
// already.
func (s *scheduler) noteResolved(fi int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resolved.has(fi) {
		return false
	}
	s.resolved.add(fi)
	return true
}

// drop takes file fi out of the send: none of its chunks is handed out
// again (it cannot be read here).
func (s *scheduler) drop(fi int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropped.add(fi)
}

// fileSet is a set of file indexes, a bit each: a map of the files settled
// grew to tens of megabytes over a tree of 10^6 files (issue 30).
type fileSet []uint64

func (s fileSet) has(i int) bool { return i/64 < len(s) && s[i/64]&(1<<(i%64)) != 0 }

func (s *fileSet) add(i int) {
	for i/64 >= len(*s) {
		*s = append(*s, 0)
	}
	(*s)[i/64] |= 1 << (i % 64)
}

// crew counts the workers of a transfer's first transport. More may join
// while any of them is at work; once the last one left (no chunk was left
// to take), done is closed and no more join.
type crew struct {
	done chan struct{}

	mu      sync.Mutex // guards the fields below
	running int
	ended   bool
}

func newCrew() *crew { return &crew{done: make(chan struct{})} }

// join counts one more worker, unless the crew ended.
func (c *crew) join() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return false
	}
	c.running++
	return true
}

// leave counts a worker out; the last one ends the crew.
func (c *crew) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running--; c.running == 0 {
		c.ended = true
		close(c.done)
	}
}
