//go:build linux || freebsd || openbsd || netbsd

package opener

import (
	"context"
	"net/url"
	"path/filepath"
	"time"

	"github.com/godbus/dbus/v5"
)

// Open opens path with the app the desktop uses for it.
func Open(path string) (*Started, error) { return start("xdg-open", path) }

// OpenFolder opens a folder in the file manager.
func OpenFolder(dir string) (*Started, error) { return start("xdg-open", dir) }

// Reveal shows path in its folder, selected, through the file manager's
// org.freedesktop.FileManager1 interface (Nautilus, Dolphin, Nemo, Thunar
// answer it); where none answers, xdg-open opens the folder.
func Reveal(path string) (*Started, error) {
	if conn, err := dbus.SessionBus(); err == nil { // shared with the app: never closed here
		var has bool
		if conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, "org.freedesktop.FileManager1").Store(&has) == nil && has {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			uri := (&url.URL{Scheme: "file", Path: path}).String()
			call := conn.Object("org.freedesktop.FileManager1", "/org/freedesktop/FileManager1").CallWithContext(ctx,
				"org.freedesktop.FileManager1.ShowItems", 0, []string{uri}, "")
			if call.Err == nil {
				return nil, nil
			}
		}
	}
	return start("xdg-open", filepath.Dir(path))
}
