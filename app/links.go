package app

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/weblink"
	"github.com/ferrydrop/ferry/ui"
)

// Browser links (issue 25): the app's side of engine/weblink. One link
// server is started with the first link and closed when Ferry quits, which
// ends every link. A receive link's files go through the engine
// (engine.BrowserInbox): each is a receiving transfer whose events reach
// the window and the history like any other.

// defaultLinkPort is tried first for the link server (the CLI's too), so a
// link's address stays the same across links; taken, any free port.
const defaultLinkPort = 47880

// linkTick is how often an open link's state is sent again without an
// event of its own, so "ends in 12 min" stays true.
const linkTick = 30 * time.Second

// linkHub holds the link server and the open links.
type linkHub struct {
	// listen opens the server; nil means the default port, else any.
	listen func(weblink.Options) (*weblink.Server, error)
	// interfaces lists the network interfaces for the links' addresses.
	interfaces func() ([]net.Interface, error)

	mu    sync.Mutex // guards the fields below
	srv   *weblink.Server
	links map[string]*openLink
	next  int
}

// openLink is one link the app opened.
type openLink struct {
	id    string
	l     *weblink.Link
	req   ui.LinkRequest
	urls  []string
	files int
	bytes int64
	inbox *engine.BrowserInbox // receive links
}

var _ ui.Links = (*backend)(nil)

// OpenLink opens a share or receive link and reports its states.
func (b *backend) OpenLink(req ui.LinkRequest) (<-chan ui.LinkState, error) {
	if req.Kind == ui.LinkReceive && b.settings.get().Policy == ui.PolicyOff {
		return nil, errReceivingOff
	}
	h := &b.web
	srv, err := h.server(b.eng.Name())
	if err != nil {
		return nil, fmt.Errorf("the link server could not start: %w", err)
	}
	if req.Expire <= 0 {
		req.Expire = ui.DefaultLinkExpire
	}
	opts := weblink.LinkOptions{Expire: req.Expire, PIN: req.PIN}
	ol := &openLink{req: req}
	switch req.Kind {
	case ui.LinkShare:
		ol.l, err = srv.Share(req.Paths, weblink.ShareOptions{LinkOptions: opts, Once: req.Once})
		if err == nil {
			_, sizes := ol.l.Files()
			ol.files = len(sizes)
			for _, s := range sizes {
				ol.bytes += s
			}
		}
	case ui.LinkReceive:
		ol.inbox = b.eng.BrowserInbox()
		ol.l, err = srv.Receive(ol.inbox, weblink.ReceiveOptions{LinkOptions: opts})
		if err == nil {
			ol.inbox.Attach(ol.l)
		}
	default:
		return nil, errors.New("unknown kind of link")
	}
	if err != nil {
		return nil, linkProblem(err)
	}
	ol.urls = srv.URLs(ol.l, linkHosts(srv, h.interfaces))
	h.mu.Lock()
	h.next++
	ol.id = "link-" + strconv.Itoa(h.next)
	if h.links == nil {
		h.links = map[string]*openLink{}
	}
	h.links[ol.id] = ol
	h.mu.Unlock()

	out := make(chan ui.LinkState, 1)
	out <- ol.state()
	go h.follow(ol, out)
	return out, nil
}

// StopLink ends a link at once.
func (b *backend) StopLink(id string) error {
	b.web.mu.Lock()
	ol := b.web.links[id]
	b.web.mu.Unlock()
	if ol == nil {
		return errors.New("this link has ended already")
	}
	ol.l.Stop()
	return nil
}

// errReceivingOff: a receive link while the user turned receiving off.
var errReceivingOff = &ui.Problem{Text: "Receiving is off, so this device takes no files, from a link either. Turn receiving on (Settings, or the tray) first."}

// linkProblem turns weblink's errors into the sentence the user sees.
func linkProblem(err error) error {
	switch {
	case errors.Is(err, weblink.ErrNothingToShare):
		return &ui.Problem{Text: "There is no file to share there: folders are shared with the files inside them, and links, devices and empty folders are left out.", Err: err}
	case errors.Is(err, weblink.ErrTooManyFiles):
		return &ui.Problem{Text: "Those folders hold too many files to share by link. Share a smaller folder, or send them to a Ferry device.", Err: err}
	}
	return err
}

// server returns the link server, started on first use.
func (h *linkHub) server(name string) (*weblink.Server, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.srv != nil {
		return h.srv, nil
	}
	opts := weblink.Options{DeviceName: name}
	listen := h.listen
	if listen == nil {
		listen = func(o weblink.Options) (*weblink.Server, error) {
			s, err := weblink.Listen(":"+strconv.Itoa(defaultLinkPort), o)
			if err != nil {
				s, err = weblink.Listen(":0", o)
			}
			return s, err
		}
	}
	s, err := listen(opts)
	if err != nil {
		return nil, err
	}
	h.srv = s
	return s, nil
}

// close ends every link and the server (Ferry quits).
func (h *linkHub) close() {
	h.mu.Lock()
	s := h.srv
	h.srv = nil
	h.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

// follow turns the link's events into states until it ends.
func (h *linkHub) follow(ol *openLink, out chan ui.LinkState) {
	defer close(out)
	tick := time.NewTicker(linkTick)
	defer tick.Stop()
	evs := ol.l.Events()
	for {
		select {
		case _, ok := <-evs:
			if !ok {
				// Closed after the link's end and its last event.
				h.mu.Lock()
				delete(h.links, ol.id)
				h.mu.Unlock()
				if ol.inbox != nil {
					ol.inbox.Close()
				}
				s := ol.state()
				s.Ended = true
				s.Why = linkEndSentence(ol.l.Err())
				out <- s
				return
			}
		case <-tick.C:
		}
		// Coalesce: the newest state replaces one the UI has not taken yet.
		s := ol.state()
		select {
		case out <- s:
		default:
			select {
			case <-out:
			default:
			}
			out <- s // the only sender: there is room now
		}
	}
}

// state is the link as the UI shows it now.
func (ol *openLink) state() ui.LinkState {
	s := ui.LinkState{ID: ol.id, Kind: ol.req.Kind, URLs: ol.urls, Expires: ol.l.Expires(), PIN: ol.req.PIN, Once: ol.req.Once,
		Files: ol.files, Bytes: ol.bytes}
	if len(ol.urls) > 0 {
		s.URL = ol.urls[0]
	}
	seen := map[netip.Addr]bool{}
	for _, a := range ol.l.Activities() {
		if !seen[a.Device] {
			seen[a.Device] = true
			s.Devices = append(s.Devices, a.Device.String())
		}
		la := ui.LinkActivity{ID: a.ID, Device: a.Device.String(), Upload: a.Upload, Name: a.Name, Zip: a.Zip,
			Size: a.Size, Bytes: a.Bytes, Done: a.Done}
		if a.Err != nil {
			la.Err = activityProblem(a.Err)
		}
		s.Activities = append(s.Activities, la)
	}
	return s
}

// activityProblem says why a download or upload did not finish.
func activityProblem(err error) string {
	switch {
	case errors.Is(err, weblink.ErrStopped):
		return "the link was stopped"
	case errors.Is(err, weblink.ErrExpired):
		return "the link expired"
	case errors.Is(err, weblink.ErrClosed):
		return "Ferry quit"
	}
	return "the browser stopped or lost the connection"
}

// linkEndSentence says why a link ended.
func linkEndSentence(err error) string {
	switch {
	case errors.Is(err, weblink.ErrExpired):
		return "The link expired: it answers nothing any more."
	case errors.Is(err, weblink.ErrOnce):
		return "The first device has every file, so the link ended."
	case errors.Is(err, weblink.ErrClosed):
		return "The link ended with Ferry."
	}
	return "The link was stopped: it answers nothing any more."
}

// linkHosts are the addresses a browser on the network can reach the link
// server at: the one it listens on, else this device's addresses (private
// IPv4 first, as "My address" lists them); loopback when there is none.
func linkHosts(s *weblink.Server, interfaces func() ([]net.Interface, error)) []netip.Addr {
	if ap, err := netip.ParseAddrPort(s.Addr().String()); err == nil && !ap.Addr().IsUnspecified() {
		return []netip.Addr{ap.Addr().Unmap()}
	}
	if interfaces == nil {
		interfaces = net.Interfaces
	}
	var hosts []netip.Addr
	for _, hp := range hostAddrs(s.Port(), interfaces) {
		if ap, err := netip.ParseAddrPort(hp); err == nil {
			hosts = append(hosts, ap.Addr())
		}
	}
	if len(hosts) == 0 {
		hosts = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	return slices.Compact(hosts)
}
