//go:build linux || freebsd || openbsd || netbsd

package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"fyne.io/fyne/v2"

	"github.com/ferrydrop/ferry/ui"
	"github.com/godbus/dbus/v5"
)

// The XDG desktop: tray icons, notifications and "open folder" all go
// through D-Bus or xdg-utils, and any of them may be missing.

// trayPlatformOK: the XDG tray speaks D-Bus; without a session bus Fyne's
// systray fails and App.Quit then panics.
func trayPlatformOK() bool { return os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" }

// watcherName is the D-Bus name of the tray host (StatusNotifierWatcher).
// Fyne's tray registers with it; where nobody owns the name (a bare window
// manager, a GNOME without the AppIndicator extension) no icon shows.
const watcherName = "org.kde.StatusNotifierWatcher"

// trayHost reports whether a tray host shows icons right now.
func trayHost() bool {
	conn, err := dbus.SessionBus() // shared with Fyne: never closed here
	if err != nil {
		return false
	}
	var has bool
	err = conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, watcherName).Store(&has)
	return err == nil && has
}

// waitTrayHost reports whether a tray host shows icons, waiting until ctx
// ends for one to appear (at login Ferry may start before the panel does).
func waitTrayHost(ctx context.Context) bool {
	conn, err := dbus.SessionBus()
	if err != nil {
		return false
	}
	opts := []dbus.MatchOption{dbus.WithMatchInterface("org.freedesktop.DBus"), dbus.WithMatchMember("NameOwnerChanged"),
		dbus.WithMatchArg(0, watcherName)}
	if err := conn.AddMatchSignalContext(ctx, opts...); err != nil {
		return trayHost()
	}
	defer conn.RemoveMatchSignalContext(context.Background(), opts...)
	ch := make(chan *dbus.Signal, 4)
	conn.Signal(ch)
	defer conn.RemoveSignal(ch)
	// Asked after subscribing, so an owner that appears in between is seen.
	if trayHost() {
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case sig := <-ch:
			if sig != nil && sig.Name == "org.freedesktop.DBus.NameOwnerChanged" && len(sig.Body) == 3 {
				if name, _ := sig.Body[0].(string); name == watcherName {
					if owner, _ := sig.Body[2].(string); owner != "" {
						return true
					}
				}
			}
		}
	}
}

// newNotifier sends desktop notifications from "Ferry": Fyne's own name
// the sender by the app ID ("io.ferrydrop.ferry") on Linux. Without a
// session bus it falls back to Fyne's.
func newNotifier(a fyne.App, icon []byte, log *slog.Logger) func(title, body string) {
	conn, err := dbus.SessionBus()
	if err != nil {
		return func(title, body string) { a.SendNotification(fyne.NewNotification(title, body)) }
	}
	iconPath := cachedIcon(icon)
	return func(title, body string) {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			obj := conn.Object("org.freedesktop.Notifications", "/org/freedesktop/Notifications")
			call := obj.CallWithContext(ctx, "org.freedesktop.Notifications.Notify", 0, "Ferry", uint32(0), iconPath,
				title, body, []string{}, map[string]dbus.Variant{}, int32(-1))
			if call.Err != nil {
				log.Warn("notification not shown", "title", title, "err", call.Err)
			}
		}()
	}
}

// cachedIcon writes the icon where the notification server can read it;
// "" when it cannot (the notification then has no icon).
func cachedIcon(icon []byte) string {
	if len(icon) == 0 {
		return ""
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	p := filepath.Join(dir, "Ferry", "ferry.png")
	if old, err := os.ReadFile(p); err == nil && string(old) == string(icon) {
		return p
	}
	if err := writeFileAtomic(p, icon); err != nil {
		return ""
	}
	return p
}

// errNoOpener means xdg-open is missing or found no app for folders.
var errNoOpener = errors.New("no app opens folders here")

// folderOpener opens folders with xdg-open. xdg-open returns at once when a
// file manager takes over and fails (exit 3 or 4) when none is set up, so
// its exit status is waited for in the background and reported to problem.
func folderOpener(_ fyne.App, problem func(what string, err error)) func(string) error {
	return func(dir string) error {
		path, err := exec.LookPath("xdg-open")
		if err != nil {
			return noOpener(dir, err)
		}
		cmd := exec.Command(path, dir)
		if err := cmd.Start(); err != nil {
			return noOpener(dir, err)
		}
		go func() {
			if err := cmd.Wait(); err != nil && problem != nil {
				problem("Could not open the folder", noOpener(dir, fmt.Errorf("xdg-open %s: %w", dir, err)))
			}
		}()
		return nil
	}
}

func noOpener(dir string, err error) error {
	return &ui.Problem{Text: fmt.Sprintf("No app is set up to open folders on this computer. The files are in %s.", dir),
		Err: errors.Join(errNoOpener, err)}
}
