//go:build unix

package tcp

import (
	"net"

	"golang.org/x/sys/unix"
)

// arrived reports whether bytes wait to be read on c, without reading them
// or blocking: the accept loop asks it so that a connection whose TLS
// handshake began (a real sender writes its ClientHello with its connect)
// starts a stage above an idle one (join.Stage).
func arrived(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		return true // never wait
	})
	return err == nil && n > 0
}
