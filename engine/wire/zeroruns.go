package wire

import "encoding/binary"

// A root frame (RootChunk) to a receiver whose hello lists FeatureZeroChunks
// may carry a payload: the file's chunks that hold only zeros, which the
// sender did not send (a sparse file's holes). The payload is a list of
// runs, each 8 bytes: the run's first chunk and its number of chunks,
// big-endian uint32s, in ascending order, not overlapping, inside the file.
// The receiver takes each chunk of a run as all zeros (its leaf is the leaf
// of that many zero bytes) and verifies the whole file against the root as
// ever, so a run that names a chunk with data fails the file's root.

// ZeroRun is a run of chunks that hold only zeros.
type ZeroRun struct {
	Start, Count uint32
}

// ZeroRunLen is the size of one run in a root frame's payload.
const ZeroRunLen = 8

// MaxZeroRuns bounds the runs of one root frame (512 KiB of payload); a
// file with more runs of zeros sends the chunks beyond as data.
const MaxZeroRuns = 64 << 10

// ZeroRunsFit is how many runs a root frame of an offer with chunkSize may
// carry: at most MaxZeroRuns, and no more bytes than one chunk (what a
// receiver holds for a frame's payload).
func ZeroRunsFit(chunkSize int) int { return min(MaxZeroRuns, chunkSize/ZeroRunLen) }

// AppendZeroRuns appends runs to b as a root frame's payload.
func AppendZeroRuns(b []byte, runs []ZeroRun) []byte {
	for _, r := range runs {
		b = binary.BigEndian.AppendUint32(b, r.Start)
		b = binary.BigEndian.AppendUint32(b, r.Count)
	}
	return b
}

// ParseZeroRuns reads a root frame's payload of runs for a file of chunks
// chunks whose offer has chunkSize. Peer input: a payload that is not whole
// runs, more runs than fit (ZeroRunsFit) or than the file has chunks, an
// empty run, runs out of order or overlapping, or a run beyond the file's
// last chunk is ErrProtocol. Runs that touch are allowed (a sender may cut
// a run where it likes).
func ParseZeroRuns(p []byte, chunks, chunkSize int) ([]ZeroRun, error) {
	if len(p)%ZeroRunLen != 0 {
		return nil, protoErr("zero runs: a payload of %d bytes is not whole runs", len(p))
	}
	n := len(p) / ZeroRunLen
	if n > ZeroRunsFit(chunkSize) {
		return nil, protoErr("zero runs: %d runs, over the %d a root frame carries", n, ZeroRunsFit(chunkSize))
	}
	if n > chunks {
		return nil, protoErr("zero runs: %d runs for %d chunks", n, chunks)
	}
	runs := make([]ZeroRun, n)
	var end uint64 // the chunk after the previous run
	for i := range runs {
		r := ZeroRun{Start: binary.BigEndian.Uint32(p[i*ZeroRunLen:]), Count: binary.BigEndian.Uint32(p[i*ZeroRunLen+4:])}
		switch {
		case r.Count == 0:
			return nil, protoErr("zero runs: run %d is empty", i)
		case uint64(r.Start) < end:
			return nil, protoErr("zero runs: run %d at chunk %d overlaps or precedes the run before it, which ends at %d", i, r.Start, end)
		case uint64(r.Start)+uint64(r.Count) > uint64(chunks):
			return nil, protoErr("zero runs: run %d (chunks %d to %d) goes beyond the file's %d chunks", i, r.Start, uint64(r.Start)+uint64(r.Count)-1, chunks)
		}
		end = uint64(r.Start) + uint64(r.Count)
		runs[i] = r
	}
	return runs, nil
}
