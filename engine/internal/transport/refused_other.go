//go:build !windows

package transport

import (
	"errors"
	"syscall"
)

// Refused reports whether a dial met a host where nothing listened.
func Refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
