//go:build !linux

package transport

import "syscall"

// SocketBuffers is unknown on this platform; quic-go still sizes the buffers.
func SocketBuffers(c syscall.Conn) (recv, send int) { return 0, 0 }
