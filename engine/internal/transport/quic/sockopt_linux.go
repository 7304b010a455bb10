package quic

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

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
