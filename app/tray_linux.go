//go:build linux || freebsd || openbsd || netbsd

package app

import "os"

// trayPlatformOK: the XDG tray speaks D-Bus; without a session bus Fyne's
// systray fails and App.Quit then panics.
func trayPlatformOK() bool { return os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" }
