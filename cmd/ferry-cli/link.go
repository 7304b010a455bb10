package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/ferrydrop/ferry/engine/weblink"
	"github.com/ferrydrop/ferry/internal/safetext"
	qrcode "github.com/skip2/go-qrcode" // the app's "My address" draws its QR codes with it too
)

func init() {
	register(command{name: "share", summary: "share files with a browser through a link and a QR code", run: runShare})
}

// defaultLinkPort is tried first for links, so that a firewall rule made
// once keeps working; any free port is used when it is taken.
const defaultLinkPort = "47880"

// linkFlags are what share and receive --link have in common.
type linkFlags struct {
	listen, name, pin string
	expire            time.Duration
	json              bool
}

func runShare(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, _ := newFlagSet("share", errOut)
	var lf linkFlags
	fs.StringVar(&lf.pin, "pin", "", "ask browsers for this `PIN` first (it protects a link that leaked, not against someone reading the network)")
	fs.DurationVar(&lf.expire, "expire", time.Hour, "end the link after this `DURATION`")
	once := fs.Bool("once", false, "end the link once the first device has every file")
	fs.StringVar(&lf.listen, "listen", "", "`HOST:PORT` to serve on (default: port "+defaultLinkPort+" on every address, or any free port)")
	fs.StringVar(&lf.name, "name", "", "device `NAME` the page shows (default: the host name)")
	fs.BoolVar(&lf.json, "json", false, "print one JSON event per line")
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: ferry-cli share [--pin PIN] [--expire 1h] [--once] [--json] PATH...")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: name at least one file or folder to share", errUsage)
	}
	s, err := listenLink(lf)
	if err != nil {
		return err
	}
	defer s.Close()
	l, err := s.Share(fs.Args(), weblink.ShareOptions{Once: *once, LinkOptions: lf.options()})
	if err != nil {
		return err
	}
	names, sizes := l.Files()
	var total int64
	for _, n := range sizes {
		total += n
	}
	what := fmt.Sprintf("Sharing %d files (%s)", len(names), humanBytes(total))
	if len(names) == 1 {
		what = fmt.Sprintf("Sharing %s (%s)", safetext.Name(names[0]), humanBytes(total))
	}
	return followLink(ctx, s, l, lf, out, what)
}

// runReceiveLink is `receive --link`: a link whose page sends files here.
func runReceiveLink(ctx context.Context, lf linkFlags, dir string, out io.Writer) error {
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("no download folder: %w (give one with --dir)", err)
		}
		dir = filepath.Join(home, "Downloads")
	}
	in, err := weblink.NewFolderInbox(dir)
	if err != nil {
		return err
	}
	defer in.Close()
	s, err := listenLink(lf)
	if err != nil {
		return err
	}
	defer s.Close()
	l, err := s.Receive(in, weblink.ReceiveOptions{LinkOptions: lf.options()})
	if err != nil {
		return err
	}
	return followLink(ctx, s, l, lf, out, "Receiving into "+safetext.Name(in.Dir()))
}

func (lf linkFlags) options() weblink.LinkOptions {
	return weblink.LinkOptions{Expire: lf.expire, PIN: lf.pin}
}

// listenLink opens the link server: on --listen, or on the default port,
// or any free one.
func listenLink(lf linkFlags) (*weblink.Server, error) {
	name := lf.name
	if name == "" {
		name, _ = os.Hostname()
	}
	opts := weblink.Options{DeviceName: name}
	if lf.listen != "" {
		return weblink.Listen(lf.listen, opts)
	}
	s, err := weblink.Listen(":"+defaultLinkPort, opts)
	if err != nil {
		s, err = weblink.Listen(":0", opts)
	}
	return s, err
}

// linkHosts are the addresses a browser on the LAN can reach the server at:
// the one it listens on, or every up interface's unicast address (IPv4
// first; link-local IPv6 left out: a browser cannot use a zone).
func linkHosts(s *weblink.Server) []netip.Addr {
	if ap, err := netip.ParseAddrPort(s.Addr().String()); err == nil && !ap.Addr().IsUnspecified() {
		return []netip.Addr{ap.Addr().Unmap()}
	}
	var hosts []netip.Addr
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			pfx, err := netip.ParsePrefix(a.String())
			if err != nil {
				continue
			}
			ip := pfx.Addr().Unmap()
			if ip.IsLinkLocalUnicast() || ip.IsLoopback() || ip.IsMulticast() {
				continue
			}
			hosts = append(hosts, ip)
		}
	}
	sort.SliceStable(hosts, func(i, j int) bool { return hosts[i].Is4() && !hosts[j].Is4() })
	if len(hosts) == 0 {
		hosts = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	return hosts
}

// linkEvent is one line of --json output.
type linkEvent struct {
	Event   string   `json:"event"` // link, device, pin, start, progress, done, ended
	URL     string   `json:"url,omitempty"`
	URLs    []string `json:"urls,omitempty"`
	Expires string   `json:"expires,omitempty"`
	PIN     bool     `json:"pin,omitempty"`
	Device  string   `json:"device,omitempty"`
	ID      int64    `json:"id,omitempty"`
	Upload  bool     `json:"upload,omitempty"`
	Name    string   `json:"name,omitempty"`
	Zip     bool     `json:"zip,omitempty"`
	Size    *int64   `json:"size,omitempty"`
	Bytes   *int64   `json:"bytes,omitempty"`
	SavedAs string   `json:"saved_as,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// followLink prints the link (URL and QR code) and what happens on it until
// it ends or ctx is cancelled (which stops it).
func followLink(ctx context.Context, s *weblink.Server, l *weblink.Link, lf linkFlags, out io.Writer, what string) error {
	urls := s.URLs(l, linkHosts(s))
	enc := json.NewEncoder(out)
	if lf.json {
		enc.Encode(linkEvent{Event: "link", URL: urls[0], URLs: urls, Expires: l.Expires().UTC().Format(time.RFC3339), PIN: l.HasPIN()})
	} else {
		fmt.Fprintf(out, "%s until %s. Open this link in a browser on the same network:\n\n  %s\n", what, l.Expires().Format("15:04"), urls[0])
		for _, u := range urls[1:] {
			fmt.Fprintf(out, "  %s\n", u)
		}
		if q, err := qrcode.New(urls[0], qrcode.Medium); err == nil {
			fmt.Fprintf(out, "\n%s\n", q.ToSmallString(false))
		}
		if l.HasPIN() {
			fmt.Fprintln(out, "The page asks for the PIN.")
		}
		fmt.Fprintln(out, "The link is plain HTTP on the local network. Press Ctrl-C to stop it.")
	}
	stop := context.AfterFunc(ctx, func() { l.Stop() })
	defer stop()
	tty := !lf.json && isTerminal(out)
	for ev := range l.Events() {
		if lf.json {
			enc.Encode(jsonLinkEvent(ev))
			continue
		}
		printLinkEvent(out, ev, tty)
	}
	if err := l.Err(); err != nil && !errors.Is(err, weblink.ErrStopped) && !errors.Is(err, weblink.ErrExpired) && !errors.Is(err, weblink.ErrOnce) {
		return err
	}
	return nil
}

var eventNames = map[weblink.EventKind]string{
	weblink.EventDevice: "device", weblink.EventPIN: "pin", weblink.EventStart: "start",
	weblink.EventProgress: "progress", weblink.EventDone: "done", weblink.EventEnded: "ended",
}

func jsonLinkEvent(ev weblink.Event) linkEvent {
	je := linkEvent{Event: eventNames[ev.Kind]}
	if ev.Device.IsValid() {
		je.Device = ev.Device.String()
	}
	if ev.Err != nil {
		je.Error = ev.Err.Error()
	}
	if a := ev.Activity; a != nil {
		je.ID, je.Upload, je.Name, je.Zip, je.SavedAs = a.ID, a.Upload, a.Name, a.Zip, a.SavedAs
		size, n := a.Size, a.Bytes
		je.Size, je.Bytes = &size, &n
		if a.Err != nil {
			je.Error = a.Err.Error()
		}
	}
	return je
}

// printLinkEvent prints an event for a person: a line per device, file
// started and ended, and on a terminal a progress line redrawn in place.
func printLinkEvent(out io.Writer, ev weblink.Event, tty bool) {
	a := ev.Activity
	switch ev.Kind {
	case weblink.EventDevice:
		fmt.Fprintf(out, "%s opened the link\n", ev.Device)
	case weblink.EventPIN:
		if ev.Err != nil {
			fmt.Fprintf(out, "%s typed a wrong PIN\n", ev.Device)
		}
	case weblink.EventStart:
		verb := "downloading"
		if a.Upload {
			verb = "sending"
		}
		fmt.Fprintf(out, "%s is %s %s%s\n", a.Device, verb, safetext.Name(a.Name), sizeNote(a.Size))
	case weblink.EventProgress:
		if tty {
			pct := ""
			if a.Size > 0 {
				pct = fmt.Sprintf(" %3d%%", a.Bytes*100/a.Size)
			}
			fmt.Fprintf(out, "\r  %s%s %s\x1b[K", safetext.Name(a.Name), pct, humanBytes(a.Bytes))
		}
	case weblink.EventDone:
		if tty {
			fmt.Fprint(out, "\r\x1b[K")
		}
		switch {
		case a.Err != nil:
			fmt.Fprintf(out, "%s: %s did not finish: %v\n", a.Device, safetext.Name(a.Name), a.Err)
		case a.Upload && a.SavedAs != "":
			fmt.Fprintf(out, "%s: received %s, saved as %s\n", a.Device, safetext.Name(a.Name), safetext.Name(a.SavedAs))
		case a.Upload:
			fmt.Fprintf(out, "%s: received %s (%s)\n", a.Device, safetext.Name(a.Name), humanBytes(a.Bytes))
		default:
			fmt.Fprintf(out, "%s: downloaded %s (%s)\n", a.Device, safetext.Name(a.Name), humanBytes(a.Bytes))
		}
	case weblink.EventEnded:
		switch {
		case errors.Is(ev.Err, weblink.ErrExpired):
			fmt.Fprintln(out, "The link expired.")
		case errors.Is(ev.Err, weblink.ErrOnce):
			fmt.Fprintln(out, "The link ended after its download.")
		default:
			fmt.Fprintln(out, "The link was stopped.")
		}
	}
}

func sizeNote(n int64) string {
	if n < 0 {
		return ""
	}
	return " (" + humanBytes(n) + ")"
}
