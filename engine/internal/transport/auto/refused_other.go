//go:build !windows

package auto

import (
	"errors"
	"syscall"
)

// refused reports whether a dial met a host where nothing listened.
func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
