//go:build !unix

package bufpool

import "github.com/ferrydrop/ferry/internal/directio"

// alloc falls back to the Go heap (aligned for direct I/O); the garbage
// collector returns released buffers.
func alloc(n int) []byte { return directio.Buffer(n) }

func release(b []byte) {}
