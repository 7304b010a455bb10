//go:build !(linux || darwin || freebsd || windows)

package fileio

import "os"

// HoleBytes is how many of the first size bytes of f lie in chunks of chunk
// bytes that hold no data at all: 0 here, where holes are not looked for:
// all of it is data.
func HoleBytes(f *os.File, size int64, chunk int) int64 { return 0 }

// HoleChunks lists the chunks of f that hold no data: none here, where
// holes are not looked for.
func HoleChunks(f *os.File, size int64, chunk int, max int) []ChunkRun { return nil }
