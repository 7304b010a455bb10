package transport

import (
	"errors"
	"syscall"
)

// wsaeconnrefused is Winsock's "connection refused" (package syscall has
// no name for it, and syscall.ECONNREFUSED is not what Windows returns).
const wsaeconnrefused = syscall.Errno(10061)

// Refused reports whether a dial met a host where nothing listened.
func Refused(err error) bool {
	return errors.Is(err, wsaeconnrefused) || errors.Is(err, syscall.ECONNREFUSED)
}
