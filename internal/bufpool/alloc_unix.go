//go:build unix

package bufpool

import "syscall"

// alloc maps n bytes of anonymous memory: page-aligned (so good for direct
// I/O) and outside the Go heap, so release gives it back at once.
func alloc(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic("bufpool: cannot map memory: " + err.Error()) // like make() running out of memory
	}
	return b[:n:n]
}

func release(b []byte) { syscall.Munmap(b[:cap(b)]) }
