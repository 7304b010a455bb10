package fileio

// ChunkRun is a run of Count chunks from chunk Start (HoleChunks).
type ChunkRun struct {
	Start, Count int64
}

// dataAfter finds a file's first run of data at or after off: [d, h), with
// off <= d < h. ok is false when no data follows off; an error means the
// file system cannot tell. Each platform has its own (seekData,
// rangesAfter); holeBytes and holeChunks read a file through it.
type dataAfter func(off int64) (d, h int64, ok bool, err error)

// holeBytes is HoleBytes through next.
func holeBytes(next dataAfter, size int64, chunk int) int64 {
	c := int64(chunk)
	if size <= 0 || c <= 0 {
		return 0
	}
	var data, counted int64 // bytes of chunks with data; chunks below counted are in data
	for off := int64(0); off < size; {
		d, h, ok, err := next(off)
		if err != nil {
			return 0
		}
		if !ok || d >= size {
			break
		}
		h = min(h, size)
		first := max(d/c*c, counted)
		last := min((h+c-1)/c*c, size)
		if last > first {
			data += last - first
			counted = last
		}
		off = h
	}
	return size - data
}

// holeChunks is HoleChunks through next.
func holeChunks(next dataAfter, size int64, chunk int, max int) []ChunkRun {
	c := int64(chunk)
	if size <= 0 || c <= 0 || max <= 0 {
		return nil
	}
	chunks := (size + c - 1) / c
	var runs []ChunkRun
	// first is the first chunk not known to hold data or listed; hole
	// lists chunks [first, end) as a run, and says whether more may follow.
	first := int64(0)
	hole := func(end int64) bool {
		if end > first {
			runs = append(runs, ChunkRun{Start: first, Count: end - first})
		}
		return len(runs) < max
	}
	for off := int64(0); off < size; {
		d, h, ok, err := next(off)
		if err != nil {
			return nil
		}
		if !ok || d >= size {
			break
		}
		h = min(h, size)
		if !hole(d / c) {
			return runs
		}
		first = (h + c - 1) / c
		off = h
	}
	hole(chunks)
	return runs
}
