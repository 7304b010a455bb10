package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/clock"
	"github.com/ferrydrop/ferry/internal/safetext"
	qrcode "github.com/skip2/go-qrcode" // the app's "My address" draws its QR codes with it too
)

func init() {
	register(command{name: "share", summary: "share files with a browser through a link and a QR code", run: runShare})
}

// defaultLinkPort is tried first for links, so that a firewall rule made
// once keeps working; any free port is used when it is taken.
var defaultLinkPort = strconv.Itoa(engine.DefaultLinkPort)

// linkFlags are what share and receive --link have in common.
type linkFlags struct {
	listen, name, pin string
	expire            time.Duration
	json              bool
}

// listingNotice is how long share lists files before it says so.
var listingNotice = time.Second

func runShare(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, cfg := newFlagSet("share", errOut)
	var lf linkFlags
	fs.StringVar(&lf.pin, "pin", "", "ask browsers for this `PIN` first (it protects a link that leaked, not against someone reading the network)")
	fs.DurationVar(&lf.expire, "expire", time.Hour, "end the link after this `DURATION`")
	once := fs.Bool("once", false, "end the link once the first device has every file")
	fs.StringVar(&lf.listen, "listen", "", "`HOST:PORT` to serve on (default: port "+defaultLinkPort+" on every address, or any free port)")
	fs.StringVar(&lf.name, "name", "", "device `NAME` the page shows (default: the host name)")
	fs.BoolVar(&lf.json, "json", false, "print one JSON event per line")
	fs.Usage = func() {
		// To the set's output, which the flag package's own -h call
		// discards (parseFlags calls it once more).
		fmt.Fprintln(fs.Output(), "usage: ferry-cli share [--pin PIN] [--expire 1h] [--once] [--json] PATH...")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: name at least one file or folder to share", errUsage)
	}
	e, err := linkEngine(*cfg, lf, "")
	if err != nil {
		return err
	}
	defer e.Close()
	events, unsub := e.Subscribe(1024)
	defer unsub()
	opts := lf.options()
	opts.Once = *once
	// Listing a big folder's files takes seconds (a minute on a slow
	// disk): past listingNotice the user hears what is going on.
	notice := func() {
		if !lf.json {
			fmt.Fprintln(out, "Listing the files to share (folders with many files take a while; Ctrl-C stops)…")
		}
	}
	stop, said := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(said)
		if listingNotice <= 0 {
			notice()
			return
		}
		t := time.NewTimer(listingNotice)
		defer t.Stop()
		select {
		case <-t.C:
			notice()
		case <-stop:
		}
	}()
	if listingNotice <= 0 {
		<-said // said before the listing starts
	}
	l, err := e.ShareLink(ctx, fs.Args(), opts)
	close(stop)
	<-said
	if err != nil && ctx.Err() != nil {
		return nil // Ctrl-C while listing: stopped, as an open link stops
	}
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		// "/x: no such file or directory", not "share link: weblink:
		// share: stat /x: no such file or directory".
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	if err != nil {
		return err
	}
	what := fmt.Sprintf("Sharing %d files (%s)", l.FileCount, humanBytes(l.TotalBytes))
	if l.FileCount == 1 {
		what = fmt.Sprintf("Sharing %s (%s)", safetext.Name(l.Files[0].Path), humanBytes(l.TotalBytes))
	}
	if s := l.Skipped; s != nil && !lf.json {
		why := ""
		if s.Symlinks+s.Other > 0 {
			why = " (a link shares regular files)"
		}
		fmt.Fprintf(out, "not shared: %s%s: %s\n", s.Summary(), why, skippedExamples(s))
	}
	return followLink(ctx, e, events, l, lf, out, what)
}

// runReceiveLink is `receive --link`: a link whose page sends files here,
// through the engine's inbox (BrowserInbox: the space check, safe names,
// per-file refusal, a transfer and a result per file, no prompt).
func runReceiveLink(ctx context.Context, cfg string, lf linkFlags, dir string, out io.Writer) error {
	e, err := linkEngine(cfg, lf, dir)
	if err != nil {
		return err
	}
	defer e.Close()
	events, unsub := e.Subscribe(1024)
	defer unsub()
	if err := e.Start(ctx); err != nil {
		return err
	}
	l, err := e.ReceiveLink(lf.options())
	if err != nil {
		return err
	}
	return followLink(ctx, e, events, l, lf, out, "Receiving into "+safetext.Name(e.DownloadDir()))
}

func (lf linkFlags) options() engine.LinkOptions {
	return engine.LinkOptions{Expire: lf.expire, PIN: lf.pin}
}

// linkEngine is an engine that serves links only: on --listen, or on the
// default port, or any free one (Ferry's own transports do not listen).
// checkExpire refuses a link time that is none (0 or less quietly became
// an hour).
func checkExpire(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%w: --expire %v: a link needs a time to live, such as 30m or 24h", errUsage, d)
	}
	return nil
}

func linkEngine(cfg string, lf linkFlags, dir string) (*engine.Engine, error) {
	if err := checkExpire(lf.expire); err != nil {
		return nil, err
	}
	cdir, err := configDir(cfg)
	if err != nil {
		return nil, err
	}
	opts := envOptions(engine.Options{
		ConfigDir: cdir, Name: lf.name, DownloadDir: dir,
		NoListen:   []addr.Kind{addr.QUIC, addr.TCP},
		ServeLinks: true, LinkListen: lf.listen, ListenAnyIfTaken: lf.listen == "",
	})
	if opts.LinkListen == "" {
		opts.LinkListen = ":" + defaultLinkPort
	}
	e, err := engine.New(opts)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		if err := e.SetDownloadDir(dir); err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, nil
}

// linkEvent is one line of --json output.
type linkEvent struct {
	Event   string   `json:"event"` // link, device, start, progress, done, interrupted, sending, result, wrong_pin, pin_locked, turned_away, ended
	URL     string   `json:"url,omitempty"`
	URLs    []string `json:"urls,omitempty"`
	Expires string   `json:"expires,omitempty"`
	PIN     bool     `json:"pin,omitempty"`
	Device  string   `json:"device,omitempty"`
	ID      int64    `json:"id,omitempty"`
	Upload  bool     `json:"upload,omitempty"`
	Folder  bool     `json:"folder,omitempty"` // an upload that is an empty folder (made, no bytes)
	Name    string   `json:"name,omitempty"`
	Zip     bool     `json:"zip,omitempty"`
	Size    *int64   `json:"size,omitempty"`
	Bytes   *int64   `json:"bytes,omitempty"`
	SavedAs string   `json:"saved_as,omitempty"`
	LeftOut []string `json:"left_out,omitempty"` // what a zip left out, each with why
	// From and State are a received file's result as the engine keeps it
	// for history ("a browser at 192.168.1.23", "done").
	From  string `json:"from,omitempty"`
	State string `json:"state,omitempty"`
	Error string `json:"error,omitempty"`
	// Files and Verified are a result's files: all of them (a set the
	// page sent together has several) and those that arrived whole;
	// Folders the empty folders made besides them.
	Files    int `json:"files,omitempty"`
	Verified int `json:"verified,omitempty"`
	Folders  int `json:"folders,omitempty"`
	// Count is how many so far: wrong PINs (wrong_pin), devices turned
	// away (turned_away).
	Count int `json:"count,omitempty"`
	// Skipped is what a share's folders hold that it does not serve (link).
	Skipped *engine.SkippedInfo `json:"skipped,omitempty"`
}

// followLink prints the link (URL and QR code) and what happens on it until
// it ends or ctx is cancelled (which stops it).
func followLink(ctx context.Context, e *engine.Engine, events <-chan engine.Event, l engine.LinkInfo, lf linkFlags, out io.Writer, what string) error {
	urls := l.URLs
	enc := json.NewEncoder(out)
	if lf.json {
		enc.Encode(linkEvent{Event: "link", URL: urls[0], URLs: urls, Expires: l.Expires.UTC().Format(time.RFC3339), PIN: l.PIN, Skipped: l.Skipped})
	} else {
		fmt.Fprintf(out, "%s until %s. Open this link in a browser on the same network:\n\n  %s\n", what, clock.At(l.Expires, time.Now()), urls[0])
		for _, u := range urls[1:] {
			fmt.Fprintf(out, "  %s\n", u)
		}
		if q, err := qrcode.New(urls[0], qrcode.Medium); err == nil {
			fmt.Fprintf(out, "\n%s\n", q.ToSmallString(false))
		}
		if l.PIN {
			fmt.Fprintln(out, "The page asks for the PIN.")
		}
		fmt.Fprintln(out, "The link is plain HTTP on the local network. Press Ctrl-C to stop it.")
	}
	stop := context.AfterFunc(ctx, func() { e.StopLink(l.ID) })
	defer stop()
	tty := !lf.json && isTerminal(out)
	f := newLinkFollower()
	print := func(je linkEvent) {
		if lf.json {
			enc.Encode(je)
		} else {
			printLinkEvent(out, je, tty)
		}
	}
	for ev := range events {
		if ev.Kind == engine.EventLink && ev.Link.ID == l.ID {
			for _, je := range f.events(ev.Link) {
				print(je)
			}
			if ev.Link.Ended {
				return nil
			}
			continue
		}
		if je, ok := f.transfer(ev); ok {
			print(je)
		}
	}
	return nil
}

// linkFollower turns a link's snapshots (EventLink) into what changed: a
// device seen, a transfer started, moved, ended. It keeps what it knows of
// an activity only while the link's snapshots list it (the link keeps the
// newest weblink.maxActivities): a link open for days (--expire 240h)
// kept an entry in each of seen, done and bytes for every download and
// upload it ever had.
type linkFollower struct {
	seen, done map[int64]bool
	bytes      map[int64]int64
	devices    map[string]bool
	// interrupted are the engine's transfers whose page stopped sending,
	// until they send again or end (an upload left half-way and never
	// picked again stayed for as long as the link lived).
	interrupted map[string]bool
	// What the link kept out, as said so far.
	wrongPINs, turnedAway int
	locked                bool
}

func newLinkFollower() *linkFollower {
	return &linkFollower{seen: map[int64]bool{}, done: map[int64]bool{}, bytes: map[int64]int64{},
		devices: map[string]bool{}, interrupted: map[string]bool{}}
}

// transfer is the line for an engine event about a transfer of the link's
// (a browser's files as the engine receives them), if it has one.
func (f *linkFollower) transfer(ev engine.Event) (linkEvent, bool) {
	if ev.Direction != engine.Receiving {
		return linkEvent{}, false
	}
	switch {
	case ev.Kind == engine.EventResult && ev.Result != nil:
		// A browser's file as the engine's transfer: its result, as
		// history keeps it.
		delete(f.interrupted, ev.TransferID)
		return linkEvent{Event: "result", Device: ev.Peer.Addr, From: ev.Peer.Name, State: string(ev.Result.State), Error: ev.Result.Err,
			Files: ev.Result.Files, Verified: ev.Result.Verified, Folders: ev.Result.Folders}, true
	case ev.Kind == engine.EventState && ev.State == engine.StateInterrupted:
		// The page stopped sending: its transfer waits for it.
		f.interrupted[ev.TransferID] = true
		return linkEvent{Event: "interrupted", Device: ev.Peer.Addr, From: ev.Peer.Name}, true
	case ev.Kind == engine.EventState && ev.State == engine.StateActive && f.interrupted[ev.TransferID]:
		delete(f.interrupted, ev.TransferID)
		return linkEvent{Event: "sending", Device: ev.Peer.Addr, From: ev.Peer.Name}, true
	}
	return linkEvent{}, false
}

func (f *linkFollower) events(l *engine.LinkInfo) []linkEvent {
	var out []linkEvent
	if l.WrongPINs > f.wrongPINs {
		f.wrongPINs = l.WrongPINs
		out = append(out, linkEvent{Event: "wrong_pin", Count: l.WrongPINs})
	}
	if l.PINLocked && !f.locked {
		f.locked = true
		out = append(out, linkEvent{Event: "pin_locked", Count: l.WrongPINs})
	}
	if l.TurnedAway > f.turnedAway {
		f.turnedAway = l.TurnedAway
		out = append(out, linkEvent{Event: "turned_away", Count: l.TurnedAway})
	}
	for _, d := range l.Devices {
		if !f.devices[d] {
			f.devices[d] = true
			out = append(out, linkEvent{Event: "device", Device: d})
		}
	}
	for _, a := range l.Activities {
		je := linkEvent{Device: a.Device, ID: a.ID, Upload: a.Upload, Folder: a.Folder, Name: a.Name, Zip: a.Zip, SavedAs: a.SavedAs, LeftOut: a.LeftOut, Error: a.Err}
		size, n := a.Size, a.Bytes
		je.Size, je.Bytes = &size, &n
		if !f.seen[a.ID] {
			f.seen[a.ID] = true
			start := je
			start.Event, start.Error, start.SavedAs, start.LeftOut = "start", "", "", nil
			out = append(out, start)
		}
		switch {
		case a.Done && !f.done[a.ID]:
			f.done[a.ID] = true
			je.Event = "done"
			out = append(out, je)
		case !a.Done && f.bytes[a.ID] != a.Bytes:
			je.Event = "progress"
			out = append(out, je)
		}
		f.bytes[a.ID] = a.Bytes
	}
	if len(f.seen) > len(l.Activities) {
		// The link forgot some (the oldest finished): so does this.
		listed := make(map[int64]bool, len(l.Activities))
		for _, a := range l.Activities {
			listed[a.ID] = true
		}
		for id := range f.seen {
			if !listed[id] {
				delete(f.seen, id)
				delete(f.done, id)
				delete(f.bytes, id)
			}
		}
	}
	if l.Ended {
		out = append(out, linkEvent{Event: "ended", Error: l.Err})
	}
	return out
}

// printLinkEvent prints an event for a person: a line per device, file
// started and ended, and on a terminal a progress line redrawn in place.
func printLinkEvent(out io.Writer, a linkEvent, tty bool) {
	switch a.Event {
	case "device":
		fmt.Fprintf(out, "%s opened the link\n", a.Device)
	case "start":
		if a.Folder {
			fmt.Fprintf(out, "%s is sending the empty folder %s\n", a.Device, safetext.Name(a.Name))
			break
		}
		verb := "downloading"
		if a.Upload {
			verb = "sending"
		}
		fmt.Fprintf(out, "%s is %s %s%s\n", a.Device, verb, safetext.Name(a.Name), sizeNote(*a.Size))
	case "progress":
		if tty {
			pct := ""
			if *a.Size > 0 {
				pct = fmt.Sprintf(" %3d%%", *a.Bytes*100 / *a.Size)
			}
			fmt.Fprintf(out, "\r  %s%s %s\x1b[K", safetext.Name(a.Name), pct, humanBytes(*a.Bytes))
		}
	case "done":
		if tty {
			fmt.Fprint(out, "\r\x1b[K")
		}
		switch {
		case a.Folder && a.Error != "":
			fmt.Fprintf(out, "%s: the empty folder %s was not made: %s\n", a.Device, safetext.Name(a.Name), shown(a.Error))
		case a.Folder && a.SavedAs != "" && !safetext.OnlyComposed(a.Name, a.SavedAs):
			fmt.Fprintf(out, "%s: received the empty folder %s, made as %s\n", a.Device, safetext.Name(a.Name), safetext.Name(a.SavedAs))
		case a.Folder:
			fmt.Fprintf(out, "%s: received the empty folder %s\n", a.Device, safetext.Name(a.Name))
		case a.Error != "":
			fmt.Fprintf(out, "%s: %s did not finish: %s\n", a.Device, safetext.Name(a.Name), shown(a.Error))
		case a.Upload && safetext.OnlyComposed(a.Name, a.SavedAs):
			fmt.Fprintf(out, "%s: received %s (%s; saved with its accents composed, Unicode NFC)\n", a.Device, safetext.Name(a.Name), humanBytes(*a.Bytes))
		case a.Upload && a.SavedAs != "":
			fmt.Fprintf(out, "%s: received %s, saved as %s\n", a.Device, safetext.Name(a.Name), safetext.Name(a.SavedAs))
		case a.Upload:
			fmt.Fprintf(out, "%s: received %s (%s)\n", a.Device, safetext.Name(a.Name), humanBytes(*a.Bytes))
		default:
			fmt.Fprintf(out, "%s: downloaded %s (%s)\n", a.Device, safetext.Name(a.Name), humanBytes(*a.Bytes))
		}
		if len(a.LeftOut) > 0 {
			names := make([]string, len(a.LeftOut))
			for i, n := range a.LeftOut {
				names[i] = safetext.Name(n)
			}
			fmt.Fprintf(out, "  not in it (deleted or moved since it was shared; its NOT INCLUDED.txt says so): %s\n", strings.Join(names, ", "))
		}
	case "interrupted":
		if tty {
			fmt.Fprint(out, "\r\x1b[K")
		}
		fmt.Fprintf(out, "%s stopped sending: what arrived is kept; it goes on when the page sends again (the same files picked again after a reload)\n", a.Device)
	case "sending":
		fmt.Fprintf(out, "%s is sending again\n", a.Device)
	case "wrong_pin":
		fmt.Fprintf(out, "a wrong PIN was typed at the link (%d so far)\n", a.Count)
	case "pin_locked":
		fmt.Fprintf(out, "the link is locked: %d wrong PINs were typed, so no new device can open it (those that typed the PIN before still can); stop it (Ctrl-C) and share a new one if someone still needs it\n", a.Count)
	case "turned_away":
		fmt.Fprintf(out, "a device was turned away: the link is open on as many devices as it takes (%d turned away so far); if you did not expect that many, the link may have leaked: stop it (Ctrl-C)\n", a.Count)
	case "result":
		// A set of files the page sent together that did not all arrive
		// (each file's own line said the rest), or a set refused before a
		// file of it began (no line of its own).
		if a.Error != "" && (a.Files > 1 || a.State == string(engine.StateDeclined)) {
			fmt.Fprintf(out, "%s: %s\n", a.Device, shown(a.Error))
		}
	case "ended":
		fmt.Fprintln(out, shown(a.Error))
	}
}

func sizeNote(n int64) string {
	if n < 0 {
		return ""
	}
	return " (" + humanBytes(n) + ")"
}
