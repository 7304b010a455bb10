package quic

import (
	"errors"
	"syscall"
)

// pathGone reports whether a send failed because the path is gone for now
// (no route to the peer, our address removed, the link down, or a firewall
// refusing it), not because the socket is broken.
func pathGone(err error) bool {
	for _, e := range []error{syscall.ENETUNREACH, syscall.EHOSTUNREACH, syscall.EADDRNOTAVAIL,
		syscall.ENETDOWN, syscall.EHOSTDOWN, syscall.EPERM, syscall.EACCES} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
