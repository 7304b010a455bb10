//go:build !linux

package engine

import "syscall"

// socketBuffers is unknown on this platform; quic-go still sizes the buffers.
func socketBuffers(c syscall.Conn) (recv, send int) { return 0, 0 }

// countDatagrams: only Linux batches datagrams with UDP_SEGMENT.
func countDatagrams(payload int, oob []byte) (n, seg int) { return 1, payload }
