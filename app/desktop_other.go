//go:build !linux && !freebsd && !openbsd && !netbsd

package app

import (
	"context"
	"log/slog"
	"net/url"

	"fyne.io/fyne/v2"

	"github.com/ferrydrop/ferry/ui"
)

// trayPlatformOK: macOS and Windows always have a tray.
func trayPlatformOK() bool { return true }

// trayHost: macOS and Windows always show tray icons.
func trayHost() bool { return true }

func waitTrayHost(context.Context) bool { return true }

// newNotifier uses Fyne's notifications, which name the app properly here.
func newNotifier(a fyne.App, _ []byte, _ *slog.Logger) func(title, body string) {
	return func(title, body string) { a.SendNotification(fyne.NewNotification(title, body)) }
}

// folderOpener opens folders through the OS (Finder, Explorer).
func folderOpener(a fyne.App, _ func(string, error)) func(string) error {
	return func(dir string) error {
		if err := a.OpenURL(&url.URL{Scheme: "file", Path: dir}); err != nil {
			return &ui.Problem{Text: "The folder could not be opened. The files are in " + dir + ".", Err: err}
		}
		return nil
	}
}
