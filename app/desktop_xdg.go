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
	"slices"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver"
	"fyne.io/systray"

	"github.com/ferrydrop/ferry/app/portal"
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

// trayItemPath is where Fyne's tray (fyne.io/systray) exports its
// StatusNotifierItem on the shared session bus connection.
const trayItemPath = "/StatusNotifierItem"

// stayInTray registers Ferry's tray icon again with every new tray host
// (NameOwnerChanged of the StatusNotifierWatcher name: the panel was
// restarted) until ctx ends. fyne.io/systray has such a loop too, but it
// reads every signal of the shared connection and ends at the first one
// with fewer than three arguments, such as a notification's ActionInvoked
// or NotificationClosed: after the first notification Ferry's icon never
// came back (issue 26, finding 6).
func stayInTray(ctx context.Context, log *slog.Logger) error {
	conn, err := dbus.SessionBus() // shared with Fyne's tray: the item lives on it
	if err != nil {
		return nil
	}
	opts := []dbus.MatchOption{dbus.WithMatchInterface("org.freedesktop.DBus"), dbus.WithMatchMember("NameOwnerChanged"),
		dbus.WithMatchArg(0, watcherName)}
	if err := conn.AddMatchSignalContext(ctx, opts...); err != nil {
		return fmt.Errorf("tray host watch: %w", err)
	}
	defer conn.RemoveMatchSignalContext(context.Background(), opts...)
	ch := make(chan *dbus.Signal, 16)
	conn.Signal(ch)
	defer conn.RemoveSignal(ch)
	go keepTrayTitle(ctx, conn)
	for {
		select {
		case <-ctx.Done():
			return nil
		case sig := <-ch:
			if !newTrayHost(sig) {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := conn.Object(watcherName, "/StatusNotifierWatcher").CallWithContext(rctx,
				watcherName+".RegisterStatusNotifierItem", 0, trayItemPath).Err
			cancel()
			if err != nil {
				log.Warn("tray icon not registered with the new tray host", "err", err)
			} else {
				log.Info("tray icon registered with a new tray host")
			}
		}
	}
}

// keepTrayTitle gives the tray item its title if Fyne's tray lost it.
// fyne.io/systray starts the tray's onReady, which sets the title, before
// it exports the item's properties: a title set after the properties were
// built and before they were published is dropped, and the item stays
// untitled (seen at load 10 in the GUI end-to-end test; some XDG tray hosts
// crash on an untitled item, which is why Fyne sets one). It reads the
// item's Title as a tray host does and sets it again while it is empty,
// until it is not, ctx ends, or a minute passed (a tray that never
// exported its item is not asked about forever).
func keepTrayTitle(ctx context.Context, conn *dbus.Conn) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	title := fyne.CurrentApp().Metadata().Name
	if title == "" {
		title = fyne.CurrentApp().UniqueID()
	}
	names := conn.Names()
	if len(names) == 0 {
		return
	}
	item := conn.Object(names[0], trayItemPath)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		if v, err := item.GetProperty("org.kde.StatusNotifierItem.Title"); err == nil {
			if got, _ := v.Value().(string); got != "" {
				return
			}
			systray.SetTitle(title) // published now: the properties exist
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// newTrayHost reports whether sig says a tray host took the watcher name.
func newTrayHost(sig *dbus.Signal) bool {
	if sig == nil || sig.Name != "org.freedesktop.DBus.NameOwnerChanged" || len(sig.Body) != 3 {
		return false
	}
	name, _ := sig.Body[0].(string)
	owner, _ := sig.Body[2].(string)
	return name == watcherName && owner != ""
}

// notifier sends desktop notifications from "Ferry" over D-Bus (Fyne's own
// name the sender by the app ID, "io.ferrydrop.ferry", on Linux), with
// buttons where the notification server shows them (its capabilities list
// "actions"): Accept and Decline on an offer, Open on what arrived. Without
// a session bus it falls back to Fyne's.
type notifier struct {
	a        fyne.App
	conn     *dbus.Conn // nil: no session bus
	iconPath string
	log      *slog.Logger

	capsOnce sync.Once
	actions  bool // the server shows buttons

	// sendMu lets one Notify call run at a time, so that a tag's ID is
	// known before the next notification with that tag replaces it.
	sendMu sync.Mutex

	mu      sync.Mutex                   // guards the fields below
	pending map[uint32][]ui.NoticeAction // notification ID -> its buttons
	tags    map[string]uint32            // a tagged notification's ID, while it is up
	closing map[string]bool              // tags withdrawn before the server gave their ID
	// newest is the number of a tag's latest notification: one still on
	// its way when a newer one came is not shown over it.
	newest map[string]uint64
	seq    uint64
}

const (
	notifyDest = "org.freedesktop.Notifications"
	notifyPath = "/org/freedesktop/Notifications"
	notifyIfc  = "org.freedesktop.Notifications"
)

func newNotifier(a fyne.App, icon []byte, log *slog.Logger) *notifier {
	n := &notifier{a: a, log: log, pending: map[uint32][]ui.NoticeAction{}, tags: map[string]uint32{}, closing: map[string]bool{},
		newest: map[string]uint64{}}
	if conn, err := dbus.SessionBus(); err == nil { // shared with Fyne: never closed here
		n.conn = conn
		n.iconPath = cachedIcon(icon)
	}
	return n
}

// plain shows a notification without buttons.
func (n *notifier) plain(title, body string) { n.withActions(title, body, nil) }

// withActions shows a notification with buttons where the server has them.
func (n *notifier) withActions(title, body string, actions []ui.NoticeAction) {
	n.tagged("", title, body, actions)
}

// close withdraws the notification tagged tag (freedesktop
// CloseNotification): an offer answered in the window leaves no "Incoming
// files" behind. Fyne's notification API cannot close one.
func (n *notifier) close(tag string) {
	if n.conn == nil || tag == "" {
		return
	}
	n.mu.Lock()
	id, ok := n.tags[tag]
	delete(n.tags, tag)
	if !ok {
		n.closing[tag] = true // still being shown: closed once its ID is known
	}
	n.mu.Unlock()
	if ok {
		go n.closeID(id)
	}
}

func (n *notifier) closeID(id uint32) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.conn.Object(notifyDest, notifyPath).CallWithContext(ctx, notifyIfc+".CloseNotification", 0, id).Err; err != nil {
		n.log.Debug("notification not closed", "id", id, "err", err)
	}
}

// tagged shows a notification with buttons where the server has them; a
// tag ("" for none) lets close withdraw it, and a later notification with
// the same tag replaces it while it is up (freedesktop replaces_id: a
// summary of the transfers received from one device takes the place of
// the first's notification). Fyne's notifications can do neither.
func (n *notifier) tagged(tag, title, body string, actions []ui.NoticeAction) {
	if n.conn == nil {
		n.a.SendNotification(fyne.NewNotification(title, body))
		return
	}
	var seq uint64
	if tag != "" {
		n.mu.Lock()
		n.seq++
		seq = n.seq
		n.newest[tag] = seq
		n.mu.Unlock()
	}
	go func() {
		n.sendMu.Lock()
		defer n.sendMu.Unlock()
		var replaces uint32
		if tag != "" {
			n.mu.Lock()
			newer := n.newest[tag] != seq
			replaces = n.tags[tag]
			n.mu.Unlock()
			if newer {
				return // a newer notification with this tag is on its way
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		obj := n.conn.Object(notifyDest, notifyPath)
		n.capsOnce.Do(func() {
			var caps []string
			if obj.CallWithContext(ctx, notifyIfc+".GetCapabilities", 0).Store(&caps) == nil {
				n.actions = slices.Contains(caps, "actions")
			}
		})
		keys := []string{}
		if n.actions {
			for _, a := range actions {
				keys = append(keys, a.Key, a.Label)
			}
		} else {
			actions = nil
		}
		var id uint32
		err := obj.CallWithContext(ctx, notifyIfc+".Notify", 0, "Ferry", replaces, n.iconPath,
			title, body, keys, map[string]dbus.Variant{}, int32(-1)).Store(&id)
		if err != nil {
			n.log.Warn("notification not shown", "title", title, "err", err)
			n.mu.Lock()
			if n.newest[tag] == seq {
				delete(n.newest, tag)
			}
			n.mu.Unlock()
			return
		}
		n.mu.Lock()
		delete(n.pending, id) // a replaced notification's buttons go with it
		n.mu.Unlock()
		if tag != "" {
			n.mu.Lock()
			if n.newest[tag] == seq {
				delete(n.newest, tag)
			}
			closed := n.closing[tag]
			delete(n.closing, tag)
			if !closed {
				n.tags[tag] = id
			}
			n.mu.Unlock()
			if closed {
				n.closeID(id)
				return
			}
		}
		if len(actions) > 0 {
			n.mu.Lock()
			n.pending[id] = actions
			for k := range n.pending {
				if len(n.pending) <= 64 {
					break
				}
				if k != id { // the server never said these closed: bound what is kept
					delete(n.pending, k)
				}
			}
			n.mu.Unlock()
		}
	}()
}

// listen runs the buttons the user presses on Ferry's notifications until
// ctx ends.
func (n *notifier) listen(ctx context.Context) error {
	if n.conn == nil {
		return nil
	}
	opts := []dbus.MatchOption{dbus.WithMatchObjectPath(notifyPath), dbus.WithMatchInterface(notifyIfc)}
	if err := n.conn.AddMatchSignalContext(ctx, opts...); err != nil {
		return fmt.Errorf("notification buttons: %w", err)
	}
	defer n.conn.RemoveMatchSignalContext(context.Background(), opts...)
	ch := make(chan *dbus.Signal, 16)
	n.conn.Signal(ch)
	defer n.conn.RemoveSignal(ch)
	for {
		select {
		case <-ctx.Done():
			return nil
		case sig := <-ch:
			if sig == nil || len(sig.Body) != 2 {
				continue
			}
			id, _ := sig.Body[0].(uint32)
			switch sig.Name {
			case notifyIfc + ".ActionInvoked":
				key, _ := sig.Body[1].(string)
				n.mu.Lock()
				acts := n.pending[id]
				n.mu.Unlock()
				for _, a := range acts {
					if a.Key == key && a.Do != nil {
						ui.Do(a.Do)
						break
					}
				}
			case notifyIfc + ".NotificationClosed":
				n.mu.Lock()
				delete(n.pending, id)
				for tag, tid := range n.tags {
					if tid == id {
						delete(n.tags, tag)
					}
				}
				n.mu.Unlock()
			}
		}
	}
}

// newPicker asks the XDG desktop portal for files (the desktop's own
// dialog: several files, typed paths, the usual places); where no portal
// answers, the UI shows Fyne's dialog.
func newPicker(ctx context.Context, w fyne.Window, log *slog.Logger) ui.Picker {
	return func(req ui.PickRequest, done func([]string, error)) {
		conn, err := dbus.SessionBus()
		if err != nil {
			done(nil, ui.ErrNoPicker)
			return
		}
		parent := ""
		if nw, ok := w.(driver.NativeWindow); ok {
			nw.RunNative(func(c any) {
				if x, ok := c.(driver.X11WindowContext); ok && x.WindowHandle != 0 {
					parent = fmt.Sprintf("x11:%x", x.WindowHandle)
				}
			})
		}
		go func() {
			paths, err := portal.OpenFiles(ctx, conn, portal.Request{Parent: parent, Title: req.Title, Folders: req.Folders,
				Multiple: req.Multiple})
			if errors.Is(err, portal.ErrUnavailable) {
				log.Info("no file chooser portal; using Fyne's dialog", "err", err)
				err = ui.ErrNoPicker
			}
			if ctx.Err() != nil {
				return
			}
			ui.Do(func() { done(paths, err) })
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
