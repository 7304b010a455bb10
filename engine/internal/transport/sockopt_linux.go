package transport

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// SocketBuffers reports the receive and send buffer sizes the kernel granted.
// Linux reports double the requested value (it counts its own overhead); we
// halve it so the figure matches what was asked for.
func SocketBuffers(c syscall.Conn) (recv, send int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0
	}
	rc.Control(func(fd uintptr) {
		recv, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		send, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
	})
	return recv / 2, send / 2
}
