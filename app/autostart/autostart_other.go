//go:build !linux && !freebsd && !openbsd && !netbsd && !darwin && !windows

package autostart

import "errors"

// ErrUnsupported is returned where no login-start mechanism is known.
var ErrUnsupported = errors.New("autostart: not supported on this platform")

// Path reports that there is no autostart mechanism here.
func Path() (string, error) { return "", ErrUnsupported }

// Enable fails: no autostart mechanism here.
func Enable(Entry) error { return ErrUnsupported }

// Disable has nothing to remove.
func Disable() error { return nil }

// Enabled is always false here.
func Enabled() bool { return false }
