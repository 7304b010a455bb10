//go:build linux || freebsd || openbsd || netbsd || darwin

package autostart

import (
	"errors"
	"fmt"
	"os"
)

// Where the login item is a file (XDG .desktop, macOS LaunchAgent), turning
// it off and checking it are the same on every platform.

// Disable removes the login item; a missing one is not an error.
func Disable() error {
	p, err := Path()
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("autostart: %w", err)
	}
	return nil
}

// Enabled reports whether the login item exists.
func Enabled() bool {
	p, err := Path()
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}
