//go:build !linux && !freebsd && !openbsd && !netbsd

package app

// trayPlatformOK: macOS and Windows always have a tray.
func trayPlatformOK() bool { return true }
