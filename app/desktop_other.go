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

// notifier uses Fyne's notifications, which name the app properly here;
// they have no buttons.
type notifier struct{ a fyne.App }

func newNotifier(a fyne.App, _ []byte, _ *slog.Logger) *notifier { return &notifier{a: a} }

func (n *notifier) plain(title, body string) { n.a.SendNotification(fyne.NewNotification(title, body)) }

func (n *notifier) withActions(title, body string, _ []ui.NoticeAction) { n.plain(title, body) }

func (n *notifier) listen(context.Context) error { return nil }

// tagged shows a notification; Fyne's cannot be withdrawn (close does nothing).
func (n *notifier) tagged(_, title, body string, _ []ui.NoticeAction) { n.plain(title, body) }

func (n *notifier) close(string) {}

// newPicker: Windows' and macOS's own file dialogs are not wired in yet
// (they need cgo against their SDKs, which this project cannot build or
// test here); the UI shows Fyne's dialog.
func newPicker(context.Context, fyne.Window, *slog.Logger) ui.Picker { return nil }

// folderOpener opens folders through the OS (Finder, Explorer).
func folderOpener(a fyne.App, _ func(string, error)) func(string) error {
	return func(dir string) error {
		if err := a.OpenURL(&url.URL{Scheme: "file", Path: dir}); err != nil {
			return &ui.Problem{Text: "The folder could not be opened. The files are in " + dir + ".", Err: err}
		}
		return nil
	}
}

// stayInTray: the tray hosts here need no registration again.
func stayInTray(context.Context, *slog.Logger) error { return nil }
