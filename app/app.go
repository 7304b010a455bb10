// Package app wires Ferry's desktop app together: the engine, discovery,
// the UI, the tray, settings and history. It is the only package of the GUI
// that imports fyne.io/fyne/v2/app (and with it the OpenGL driver).
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/driver/desktop"

	"github.com/ferrydrop/ferry/app/autostart"
	"github.com/ferrydrop/ferry/app/instance"
	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/internal/peerresolve"
	"github.com/ferrydrop/ferry/ui"
	"github.com/ferrydrop/ferry/ui/transfer"
)

// AppID is the application ID Fyne uses (notifications, preferences).
const AppID = "io.ferrydrop.ferry"

// Options configure the desktop app.
type Options struct {
	// ConfigDir holds identity, trust, settings and history; empty means
	// os.UserConfigDir()/Ferry. Separate dirs give separate instances.
	ConfigDir string
	// Minimized starts hidden in the tray (when there is a tray).
	Minimized bool
	// Files to send: the device chooser opens for them. When Ferry already
	// runs with this config dir, they are handed to it and Run returns.
	Files []string
	// Icon is the app and tray icon (PNG).
	Icon []byte
	// Logger receives diagnostics; nil means warnings and errors to stderr.
	Logger *slog.Logger
}

// DefaultConfigDir is os.UserConfigDir()/Ferry.
func DefaultConfigDir() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("config dir: %w", err)
	}
	return filepath.Join(d, "Ferry"), nil
}

// Run starts the app and returns when the user quits.
func Run(opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: smokeLogLevel()}))
	}
	// Deferred first, so it is disarmed last: it bounds everything quitting does.
	quitting := &quitWatch{log: log, out: os.Stderr, exit: os.Exit}
	defer quitting.stop()
	dir, autostartArgs, err := configDir(opts.ConfigDir)
	if err != nil {
		return err
	}
	files, err := absFiles(opts.Files)
	if err != nil {
		return err
	}
	// One Ferry per config dir: a second launch hands its files over.
	inst, err := instance.Claim(dir)
	if errors.Is(err, instance.ErrRunning) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := instance.HandOver(ctx, dir, instance.Request{Files: files}); err != nil {
			return fmt.Errorf("ferry is already running with %s but did not answer: %w", dir, err)
		}
		log.Info("handed over to the running instance", "files", len(files))
		return nil
	}
	if err != nil {
		return err
	}
	defer inst.Close()

	settings, history, names, sends, problems := openStores(dir, log)
	// Sends follow their device by ID (a receiver that moved or restarted
	// on another port is found again): the engine asks discovery's table.
	resolver := &peerresolve.Resolver{}
	eng, s, trustProblem, err := startEngine(dir, settings, resolver, log)
	if err != nil {
		return err
	}
	if trustProblem != nil {
		problems = errors.Join(problems, trustProblem)
	}
	defer eng.Close()
	// Subscribed before receiving starts: an offer that comes at once (a
	// sender retrying the moment this device announces itself) is shown,
	// not lost with its sender waiting for the prompt's timeout.
	engineEvents, unsubscribe := eng.Subscribe(256)
	defer unsubscribe()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dopts := discovery.Options{SelfID: eng.ID(), Prober: prober(eng), Remembered: remembered(eng)}
	advOpts := smokeIsolate(&dopts)
	disc, err := discovery.New(dopts)
	if err != nil {
		return fmt.Errorf("start discovery: %w", err)
	}
	resolver.Use(disc)

	// The window comes back at the size it had when last closed, within
	// the screen, which is known once the app runs.
	var w fyne.Window
	// Once the app runs, Fyne quits on these signals; the watch bounds the
	// quit from then on. (Before, they end the process at once.)
	sigs := make(chan os.Signal, 1)
	defer signal.Stop(sigs)
	a, icon := newFyneApp(opts.Icon, func() {
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		if fit := windowSize(s, screenSize(w.Canvas().Scale())); fit != windowSize(s, fyne.Size{}) {
			w.Resize(fit)
		}
	})
	w = a.NewWindow(windowClass)
	w.Resize(windowSize(s, fyne.Size{}))
	w.SetMaster()
	mw := newMainWindow(w, "Ferry — "+ui.EscapeName(s.DeviceName))

	transfers := make(chan ui.TransferEvent, 256)
	devices := make(chan ui.DeviceEvent, 256)
	b := &backend{ctx: ctx, eng: eng, disc: disc, settings: settings, history: history, devices: names, sends: sends,
		autostartArgs: autostartArgs, names: map[string]ui.Peer{}, advertiseOpts: advOpts, portDir: dir,
		ls: lsHub{isolated: smokeIsolated(), onDevice: disc.SeeLocalSend}}
	b.synthetic = func(ev ui.TransferEvent) {
		select {
		case transfers <- ev:
		case <-ctx.Done():
		}
	}
	defer b.close()

	notes := newNotifier(a, opts.Icon, log)
	u := newUI(ctx, a, w, b, notes, log)
	u.OnShow = func() { mw.Show(); w.RequestFocus() }
	u.OnSettingsSaved = func(s ui.Settings) { mw.SetTitle("Ferry — " + ui.EscapeName(s.DeviceName)) }

	tray := installTray(a, u, icon)
	keepSize := func() {
		if err := saveWindowSize(settings, w.Canvas().Size()); err != nil {
			log.Warn("could not keep the window's size", "err", err)
		}
	}
	quit := func() {
		quitting.start(quitBound)
		a.Quit()
	}
	u.OnQuit = func() { keepSize(); quit() }
	w.SetCloseIntercept(func() {
		keepSize()
		if !u.HandleClose(tray && trayHost()) {
			quit()
		}
	})

	if s.Policy != ui.PolicyOff {
		startReceiving(a, b, u, log)
	}

	// Before discovery runs: the sends wait for their devices first.
	b.resumeSends()
	l := &loops{ctx: ctx, log: log}
	l.run("quit signal", func(ctx context.Context) error { quitting.startOn(ctx, sigs); return nil })
	l.run("discovery", disc.Run)
	l.run("engine events", func(ctx context.Context) error { return pumpEvents(ctx, engineEvents, b, transfers, devices) })
	l.run("discovery events", func(ctx context.Context) error { return pumpDevices(ctx, eng, disc, b.named, b.deviceBack, devices) })
	l.run("ui", func(ctx context.Context) error { return u.Run(ctx, devices, transfers) })
	l.run("smoke hooks", func(ctx context.Context) error { return smokeHooks(ctx, b, u) })
	l.run("network", func(ctx context.Context) error {
		return followNetwork(ctx, eng.NetworkChanged, func() { ui.Do(u.SelfChanged) })
	})
	l.run("notification buttons", notes.listen)
	if tray {
		l.run("tray host", func(ctx context.Context) error { return stayInTray(ctx, log) })
	}
	l.run("instance", func(ctx context.Context) error {
		return inst.Serve(ctx, func(r instance.Request) { ui.Do(func() { u.OpenFiles(r.Files) }) })
	})

	showAtStart(ctx, mw, u, tray && len(files) == 0 && (opts.Minimized || s.StartMinimized))
	if problems != nil {
		// Shown with the window (at once, or when it is opened from the tray).
		u.ShowError("Ferry started without some of what it had saved", problems)
	}
	if len(files) > 0 {
		u.OpenFiles(files)
	}
	a.Run()
	quitting.start(quitBound)
	cancel()
	l.wg.Wait()
	return nil
}

// newUI makes the UI over b in window w, with its hooks into the window,
// the app and the backend.
func newUI(ctx context.Context, a fyne.App, w fyne.Window, b *backend, notes *notifier, log *slog.Logger) *ui.UI {
	u := ui.New(a, w, b, ui.Device{ID: b.eng.ID(), Name: b.eng.Name()}, ui.Options{Notify: notes.plain, NotifyActions: notes.withActions,
		NotifyTagged: notes.tagged, CloseNotice: notes.close, Picker: newPicker(ctx, w, log),
		OpenURL: func(l *url.URL) error { return linkOpener(b.problem)(l) }})
	u.OnQuit = a.Quit
	b.askPIN = u.AskPIN
	b.problem = func(what string, err error) { ui.Do(func() { u.ShowError(what, err) }) }
	b.anywhere.setChanged(func() { ui.Do(u.SelfChanged) }) // the relay's state, in Settings and the status line
	b.openFolder = folderOpener(a, b.problem)
	return u
}

// startReceiving starts listening and advertising; a failure is told in a
// notification, and the app runs on without receiving. A download folder
// that cannot be written is said in the window: every offer would be
// refused before its user is asked, so nothing else would tell them.
func startReceiving(a fyne.App, b *backend, u *ui.UI, log *slog.Logger) {
	if err := b.setReceiving(true); err != nil {
		log.Error("receiving could not start", "err", err)
		ui.Do(func() {
			a.SendNotification(fyne.NewNotification("Ferry cannot receive", err.Error()))
		})
	} else {
		if p := unwritableFolder(b.eng.DownloadDir(), "files sent to this device are refused before you are asked"); p != nil {
			log.Warn("the download folder cannot be written", "err", p.Err)
			ui.Do(func() { u.ShowError("Received files cannot be saved", p) })
		}
		if err := b.applyLocalSend(b.settings.get()); err != nil {
			log.Warn("LocalSend", "err", err)
		}
		if err := b.applyAnywhere(b.settings.get()); err != nil {
			log.Warn("beyond the LAN", "err", err)
		}
	}
	u.SelfChanged() // the addresses it receives on
}

// loops runs the app's long-lived goroutines until ctx ends; wg waits for
// them.
type loops struct {
	ctx context.Context
	log *slog.Logger
	wg  sync.WaitGroup
}

// run starts f; an error other than the end of ctx is logged as name's.
func (l *loops) run(name string, f func(context.Context) error) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if err := f(l.ctx); err != nil && !errors.Is(err, context.Canceled) {
			l.log.Warn(name+" stopped", "err", err)
		}
	}()
}

// configDir makes the config dir (given, or the platform's default)
// absolute and present; a given one is passed on to the login item.
func configDir(given string) (dir string, autostartArgs []string, err error) {
	if given == "" {
		if dir, err = DefaultConfigDir(); err != nil {
			return "", nil, err
		}
	} else {
		if dir, err = filepath.Abs(given); err != nil {
			return "", nil, fmt.Errorf("config dir: %w", err)
		}
		autostartArgs = []string{"--config", dir}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("config dir: %w", err)
	}
	return dir, autostartArgs, nil
}

// openStores opens the app's own files in dir. One that cannot be read
// does not stop the app: it starts without what the file held, the file
// kept aside when it is damaged, and the returned error says so in the
// user's words (a *ui.Problem for each such file).
func openStores(dir string, log *slog.Logger) (*settingsStore, *historyStore, *deviceStore, *sendStore, error) {
	home, _ := os.UserHomeDir()
	var problems []error
	settings, err := openSettings(dir, ui.Settings{DownloadDir: filepath.Join(home, "Downloads"), Policy: ui.PolicyEveryone, AutoAcceptTrusted: true})
	if err != nil {
		log.Warn("settings unreadable; using defaults", "err", err)
		problems = append(problems, unreadable("Your settings", "so Ferry started with the default ones", dir, err))
	}
	history, err := openHistory(dir)
	if err != nil {
		log.Warn("history unreadable; starting a new one", "err", err)
		problems = append(problems, unreadable("The history of transfers", "so it starts empty", dir, err))
	}
	names, err := openDevices(dir)
	if err != nil {
		log.Warn("device names unreadable; using the names devices announce", "err", err)
		problems = append(problems, unreadable("The names you gave devices", "so devices show the names they announce", dir, err))
	}
	sends, err := openSends(dir)
	if err != nil {
		log.Warn("unfinished sends unreadable; they do not go on", "err", err)
		problems = append(problems, unreadable("The sends that were under way when Ferry closed", "so they do not go on by themselves: send those files again", dir, err))
	}
	return settings, history, names, sends, errors.Join(problems...)
}

// unreadable says that what (a file of the app's, in the user's words)
// could not be read and what Ferry does instead, and where a damaged one
// was kept: "Your settings could not be read, so Ferry started with the
// default ones. The file was kept as settings.json.damaged in DIR."
func unreadable(what, instead, dir string, err error) *ui.Problem {
	text := what + " could not be read, " + instead + "."
	var de *damagedError
	switch {
	case !errors.As(err, &de):
	case de.keptAs != "":
		text += " The file was kept as " + de.keptAs + " in " + dir + "."
	default:
		text += " The damaged file " + de.file + " in " + dir + " could not be set aside, and is replaced the next time Ferry saves."
	}
	return &ui.Problem{Text: text, Err: err}
}

// startEngine starts the engine with the settings, and brings the settings
// up to date with what is true outside them (the engine's default name, a
// login item made or removed elsewhere); it returns them as they are now.
func startEngine(dir string, settings *settingsStore, resolver engine.Resolver, log *slog.Logger) (eng *engine.Engine, s ui.Settings, problem *ui.Problem, err error) {
	s = settings.get()
	if s.DeviceName != "" && engine.CheckName(s.DeviceName) != nil {
		// A name saved before names were checked: the app starts under
		// the default one rather than not at all.
		log.Warn("the saved device name cannot be used; using the default", "err", engine.CheckName(s.DeviceName))
		s.DeviceName = ""
	}
	if s.DeviceName == "" {
		if n := friendlyName(); engine.CheckName(n) == nil {
			s.DeviceName = n // else the engine takes the host name
		}
	}
	// A stable port: 47800, else the last one used (issue 26, finding 9).
	listen := smokeListen(func() string {
		pc := choosePort(dir, portFree)
		log.Info("listen port", "port", pc.Port, "why", pc.Why)
		return ":" + strconv.Itoa(pc.Port)
	})
	opts := engine.Options{ConfigDir: dir, Name: s.DeviceName, DownloadDir: s.DownloadDir,
		Listen: listen, ListenAnyIfTaken: true, RetryFor: smokeRetryFor(),
		Accept: acceptPolicy(s.Policy), AutoAcceptTrusted: s.AutoAcceptTrusted, Logger: log, Resolver: resolver}
	eng, err = engine.New(opts)
	var damaged *identity.DamagedError
	if errors.As(err, &damaged) {
		// The engine does not forget whom it trusted on its own (the CLI
		// stops and says so); the app sets the damaged list aside, starts
		// knowing no device, and tells the user, rather than not opening.
		keptAs, kerr := keepAside(damaged.Path)
		log.Warn("trust store damaged; starting with no known devices", "err", err, "kept_as", keptAs, "keep_err", kerr)
		if kerr == nil {
			problem = unreadable("The list of devices Ferry knew",
				"so Ferry starts knowing none: devices you trusted or paired show a verification code again, and their offers ask first",
				dir, &damagedError{file: filepath.Base(damaged.Path), keptAs: keptAs, err: damaged.Err})
			eng, err = engine.New(opts)
		}
	}
	if err != nil {
		return nil, s, nil, err // the engine's own sentence, shown as it is (ShowStartError)
	}
	if s.DeviceName == "" {
		s.DeviceName = eng.Name()
		_ = settings.save(s)
	}
	// The login item can be made or removed outside the app too (the Windows
	// installer writes the same Run value): the setting shows what is there.
	if on := autostart.Enabled(); on != s.StartAtLogin {
		s.StartAtLogin = on
		_ = settings.save(s)
	}
	return eng, s, problem, nil
}

// newFyneApp makes the Fyne app with Ferry's metadata and icon (nil when
// iconPNG is empty).
// started, when not nil, runs on the Fyne goroutine once the app runs.
func newFyneApp(iconPNG []byte, started func()) (fyne.App, fyne.Resource) {
	a := fyneapp.NewWithID(AppID)
	// Ferry's theme (state colours readable in light and dark) is set once
	// the app runs: a theme set before Run stops Fyne from following the
	// desktop's light or dark setting (its settings watcher is not started
	// then); one set after keeps following it.
	a.Lifecycle().SetOnStarted(func() {
		a.Settings().SetTheme(ui.Theme())
		if started != nil {
			started()
		}
	})
	if m := a.Metadata(); m.Name == "" {
		// Built without `fyne package`: the tray would show the app ID.
		m.Name = "Ferry"
		if m.ID == "" {
			m.ID = AppID
		}
		fyneapp.SetMetadata(m)
	}
	var icon fyne.Resource
	if len(iconPNG) > 0 {
		icon = fyne.NewStaticResource("ferry.png", iconPNG)
		a.SetIcon(icon)
	}
	return a, icon
}

// installTray puts u's tray menu (and icon) in the system tray where there
// is one, and reports whether it did. The tray needs a D-Bus session bus on
// Linux: without one Fyne's systray fails and App.Quit later panics.
// Whether a tray host shows the icon is asked each time it matters: panels
// come and go.
func installTray(a fyne.App, u *ui.UI, icon fyne.Resource) bool {
	desk, ok := a.(desktop.App)
	if !ok || !trayAvailable() {
		return false
	}
	desk.SetSystemTrayMenu(u.Tray())
	if icon != nil {
		desk.SetSystemTrayIcon(icon)
	}
	// The menu changes in place; installing it again redraws it.
	u.OnTrayChanged = desk.SetSystemTrayMenu
	return true
}

// showAtStart shows the window, unless minimized is asked and a tray host
// can bring the window back (at login the panel may come up a moment after
// Ferry).
func showAtStart(ctx context.Context, w *mainWindow, u *ui.UI, minimized bool) {
	hidden := false
	if minimized {
		wctx, cancel := context.WithTimeout(ctx, trayWait)
		hidden = waitTrayHost(wctx)
		cancel()
	}
	if !hidden {
		w.Show()
	}
	u.SetWindowShown(!hidden)
}

// windowClass is the title the main window is created with. GLFW creates
// an X11 window at its first Show and names its class (WM_CLASS) after its
// title then; desktops match a window to its launcher by that class, which
// the desktop entry names (packaging/linux/io.ferrydrop.ferry.desktop:
// StartupWMClass=Ferry). Created as "Ferry — <device name>", the window
// stood in the dock as an unnamed app beside Ferry's launcher.
const windowClass = "Ferry"

// mainWindow holds back the main window's title until the window exists
// (its first Show), so that it is created titled windowClass. Used on the
// Fyne goroutine only.
type mainWindow struct {
	w     fyne.Window
	title string // the title to show once the window exists
	shown bool
}

func newMainWindow(w fyne.Window, title string) *mainWindow {
	w.SetTitle(windowClass)
	return &mainWindow{w: w, title: title}
}

// Show shows the window, and gives it its title the first time.
func (m *mainWindow) Show() {
	m.w.Show()
	if !m.shown {
		m.shown = true
		m.w.SetTitle(m.title)
	}
}

// SetTitle sets the window's title, or the one it gets at its first Show.
func (m *mainWindow) SetTitle(title string) {
	m.title = title
	if m.shown {
		m.w.SetTitle(title)
	}
}

// trayAvailable reports whether a system tray can work here.
func trayAvailable() bool { return trayPlatformOK() }

// trayWait bounds how long a --minimized start waits for a tray host.
const trayWait = 5 * time.Second

// absFiles makes the files given on the command line absolute (the running
// instance has another working directory) and checks that they exist.
func absFiles(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("cannot send %s: %w", p, err)
		}
		out = append(out, abs)
	}
	return out, nil
}

// remembered lists trusted peers for discovery's direct probes.
func remembered(eng *engine.Engine) func() []discovery.Remembered {
	return func() []discovery.Remembered {
		var out []discovery.Remembered
		for _, t := range eng.Trusted() {
			r := discovery.Remembered{ID: t.ID, Name: t.Name}
			if t.LastAddr != "" {
				r.Addrs = []string{t.LastAddr}
			}
			out = append(out, r)
		}
		return out
	}
}

// pumpTransfers forwards engine events to the UI, recording finished
// transfers in the history first (so the UI's reload sees them) and
// refreshing the trust state of the peer.
func pumpTransfers(ctx context.Context, eng *engine.Engine, b *backend, out chan<- ui.TransferEvent, devices chan<- ui.DeviceEvent) error {
	evs, stop := eng.Subscribe(256)
	defer stop()
	return pumpEvents(ctx, evs, b, out, devices)
}

// pumpEvents is pumpTransfers with the engine's events subscribed already.
func pumpEvents(ctx context.Context, evs <-chan engine.Event, b *backend, out chan<- ui.TransferEvent, devices chan<- ui.DeviceEvent) error {
	// History is written from the same transfer model the rows render.
	model := transfer.New()
	for {
		var ev engine.Event
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-evs:
			if !ok {
				return nil
			}
			ev = e
		}
		if ev.Kind == engine.EventRefused && ev.Refused != nil {
			// Offers refused before they were read: no transfer, but
			// History's sum of offers declined while busy counts them.
			if err := b.history.add(b.refusedEntry(ev)); err != nil {
				slog.Warn("history", "err", err)
			}
			select {
			case out <- ui.TransferEvent{Kind: ui.TransferRefused, Time: ev.Time}:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if ev.Kind == engine.EventListener && ev.Listener != nil && ev.Listener.Transport == engine.RelayListener {
			// The relay served through stopped answering, or answers again.
			b.anywhere.heard(*ev.Listener)
			continue
		}
		uev, ok := toUITransfer(ev)
		if !ok {
			continue
		}
		b.markPairing(&uev)
		b.fillPeer(&uev)
		if n := b.devices.nickname(uev.Peer.ID); n != "" {
			uev.Peer.Name = n
		}
		if k := uev.KeyChange; k != nil {
			if n := b.devices.nickname(k.Known.ID); n != "" {
				k.Known.Name = n
			}
		}
		know := b.explain(&uev)
		b.rejoin.mark(&uev)
		if r := uev.Result; uev.Kind == ui.TransferState && r != nil && r.Code == ui.CodeGoingAway && uev.Peer.ID != "" {
			// Its Ferry was closed there (it said so): the device is
			// gone now, not when discovery would notice (a second after
			// its goodbye; a probed device's TTL).
			b.disc.Closed(uev.Peer.ID)
		}
		if !uev.Pairing {
			for _, me := range ui.DeliveryEvents(uev) {
				model.Apply(me)
			}
		}
		if b.rejoin.ended(uev, model.Get(uev.ID)) {
			// Not reached again for RetryFor: what discovery lists is
			// stale (a killed Ferry says no goodbye) or out of reach. Off
			// the list, the device heard again appears again, which is
			// what the rejoin waits for; listed, it would be a change
			// of address, or nothing.
			b.disc.Unreached(uev.Peer.ID)
		}
		if uev.Kind == ui.TransferResult && uev.Result != nil && !uev.Pairing {
			if err := b.history.add(historyEntry(uev, know, model.Get(uev.ID))); err != nil {
				slog.Warn("history", "err", err)
			}
			// A send stopped by quitting is kept: it comes back at the
			// next start.
			if uev.Direction == ui.Outgoing && sendEnds(uev.Result) && ctx.Err() == nil && b.ctx.Err() == nil {
				b.sendEnded(uev.ID)
			}
		}
		select {
		case out <- uev:
		case <-ctx.Done():
			return ctx.Err()
		}
		if uev.Kind == ui.TransferResult && uev.Peer.ID != "" {
			// Accepting ("always accept") or a first transfer may have changed trust.
			for _, p := range b.disc.Peers() {
				if p.ID == uev.Peer.ID {
					select {
					case devices <- ui.DeviceEvent{Kind: ui.DeviceChanged, Device: b.named(toUIDevice(p, b.trust(p.ID), true))}:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			}
		}
	}
}

// pumpDevices forwards discovery events and lists remembered devices;
// back hears of every device that appears (again), by its ID.
func pumpDevices(ctx context.Context, eng *engine.Engine, disc *discovery.Discovery, named func(ui.Device) ui.Device, back func(id string), out chan<- ui.DeviceEvent) error {
	evs, stop := disc.Subscribe(128)
	defer stop()
	trusted := func(id string) trust { return trustOf(eng.Trusted(), id) }
	send := func(ev ui.DeviceEvent) error {
		ev.Device = named(ev.Device) // the user's own name for it, if any
		select {
		case out <- ev:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	seen := map[string]bool{}
	for _, p := range disc.Peers() {
		seen[p.ID] = true
		if err := send(ui.DeviceEvent{Kind: ui.DeviceAppeared, Device: toUIDevice(p, trusted(p.ID), true)}); err != nil {
			return err
		}
	}
	for _, t := range eng.Trusted() {
		if !seen[t.ID] {
			if err := send(ui.DeviceEvent{Kind: ui.DeviceAppeared, Device: rememberedDevice(t)}); err != nil {
				return err
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-evs:
			if !ok {
				return nil
			}
			var err error
			switch ev.Kind {
			case discovery.PeerAppeared:
				err = send(ui.DeviceEvent{Kind: ui.DeviceAppeared, Device: toUIDevice(ev.Peer, trusted(ev.Peer.ID), true)})
				back(ev.Peer.ID)
			case discovery.PeerChanged:
				err = send(ui.DeviceEvent{Kind: ui.DeviceChanged, Device: toUIDevice(ev.Peer, trusted(ev.Peer.ID), true)})
			case discovery.PeerGone, discovery.PeerRefused:
				err = send(ui.DeviceEvent{Kind: ui.DeviceGone, Device: toUIDevice(ev.Peer, trusted(ev.Peer.ID), false)})
			case discovery.EventsLost:
				for _, p := range disc.Peers() {
					if err = send(ui.DeviceEvent{Kind: ui.DeviceChanged, Device: toUIDevice(p, trusted(p.ID), true)}); err != nil {
						break
					}
				}
			}
			if err != nil {
				return err
			}
		}
	}
}
