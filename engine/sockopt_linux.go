package engine

import (
	"encoding/binary"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// socketBuffers reports the receive and send buffer sizes the kernel granted.
// Linux reports double the requested value (it counts its own overhead); we
// halve it so the figure matches what was asked for.
func socketBuffers(c syscall.Conn) (recv, send int) {
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

// countDatagrams returns how many datagrams one sendmsg carried and the size
// of each but the last: with UDP_SEGMENT (GSO) the payload is split into
// segments of the given size.
func countDatagrams(payload int, oob []byte) (n, seg int) {
	if len(oob) == 0 {
		return 1, payload
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 1, payload
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_UDP && m.Header.Type == unix.UDP_SEGMENT && len(m.Data) >= 2 {
			if seg := int(binary.NativeEndian.Uint16(m.Data)); seg > 0 {
				return (payload + seg - 1) / seg, seg
			}
		}
	}
	return 1, payload
}

var _ net.Conn = (*net.UDPConn)(nil)
