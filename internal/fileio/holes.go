package fileio

// ChunkRun is a run of Count chunks from chunk Start (HoleChunks).
type ChunkRun struct {
	Start, Count int64
}
