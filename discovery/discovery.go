// Package discovery finds Ferry devices on the local network and tells the
// rest of the app when they come and go.
//
// It advertises this device with mDNS/DNS-SD (service _ferry._udp, through
// github.com/grandcat/zeroconf), browses for others with its own small mDNS
// querier (zeroconf's Browse never reports TXT updates, goodbyes or
// removals), keeps a bounded peer table that expires entries itself, probes
// remembered peers directly where multicast is blocked, and explains with
// Diagnose why a peer may be invisible.
//
// Everything a peer advertises is an untrusted hint: the TLS handshake the
// engine performs decides who a peer is (see ReportMismatch).
//
// LocalSend devices join the same table (SeeLocalSend; see localsend.go),
// and a device that speaks both protocols is one peer.
//
// This package is plain Go: it never imports fyne.io or the engine; of the
// engine's packages it uses only leaves that import nothing of Ferry's:
// addr (addresses), peer (peer IDs) and localsend (the protocol's types).
package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/internal/clock"
	"github.com/ferrydrop/ferry/internal/deviceid"
)

// ServiceType is the DNS-SD service Ferry advertises and browses for.
const ServiceType = "_ferry._udp"

// Domain is the mDNS domain.
const Domain = "local."

// Source says how a peer was found.
type Source string

// Sources of peers.
const (
	SourceMDNS       Source = "mdns"       // heard over multicast DNS
	SourceRemembered Source = "remembered" // a trusted peer that answered a direct probe
	SourceManual     Source = "manual"     // added by address with AddManual
)

// Peer is one device seen on the network. Every field except Source,
// LastSeen and Refused comes from the peer itself and is a hint.
type Peer struct {
	Name  string       `json:"name"`
	ID    string       `json:"id"`
	Addrs []netip.Addr `json:"addrs"` // preferred first: same subnet, IPv4, IPv6, link-local
	// Ports are the ports it listens on, by kind (its TXT record's "q" and
	// "t"): with each of Addrs, the ways to reach it (Addresses).
	Ports    []Port    `json:"ports,omitempty"`
	OS       string    `json:"os,omitempty"`
	Version  int       `json:"version,omitempty"`
	LastSeen time.Time `json:"last_seen"`
	Source   Source    `json:"source"`
	// Direct is the "host:port" that answered a direct probe (remembered
	// and manual peers); it is dialled first.
	Direct string `json:"direct,omitempty"`
	// Refused is set when every address advertised under this ID proved to
	// belong to another identity (see ReportMismatch): do not dial it.
	Refused bool `json:"refused,omitempty"`
	// LocalSend is set when the device speaks LocalSend (see localsend.go:
	// a LocalSend-only device, or a Ferry device that speaks both).
	LocalSend *LocalSend `json:"localsend,omitempty"`
}

// Port is a port a device listens on for one kind of address.
type Port struct {
	Kind addr.Kind `json:"kind"`
	Port int       `json:"port"`
}

// Addresses returns the ways to reach the peer, best first: Direct first,
// over each kind the peer listens for on that port number (the first
// advertised kind when none matches), then each of Addrs over each of
// Ports, then its LocalSend server (addr.LocalSend). None when the peer is
// Refused.
func (p Peer) Addresses() []addr.Addr {
	if p.Refused {
		return nil
	}
	var out []addr.Addr
	add := func(a addr.Addr) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if p.Direct != "" {
		_, port, _ := net.SplitHostPort(p.Direct)
		n := len(out)
		for _, pt := range p.Ports {
			if strconv.Itoa(pt.Port) == port {
				add(addr.New(pt.Kind, p.Direct))
			}
		}
		if len(out) == n {
			add(addr.New(txtPorts[0].kind, p.Direct))
		}
	}
	for _, h := range p.Addrs {
		for _, pt := range p.Ports {
			if pt.Port > 0 && pt.Port <= 65535 {
				add(addr.New(pt.Kind, netip.AddrPortFrom(h, uint16(pt.Port)).String()))
			}
		}
	}
	if p.LocalSend != nil && !p.LocalSend.Addr.IsZero() {
		add(p.LocalSend.Addr)
	}
	return out
}

// HostPorts returns the distinct "host:port"s of Addresses, in order: what
// a user reads as the peer's addresses.
func (p Peer) HostPorts() []string {
	var out []string
	for _, a := range p.Addresses() {
		if hp := a.HostPort(); !slices.Contains(out, hp) {
			out = append(out, hp)
		}
	}
	return out
}

// ShortID is the device ID's short form as every screen and line of Ferry
// shows it ("PT27-TYCL", deviceid.Short).
func (p Peer) ShortID() string { return deviceid.Short(p.ID) }

// EventKind names what an Event reports.
type EventKind string

// Event kinds.
const (
	PeerAppeared EventKind = "appeared"
	PeerChanged  EventKind = "changed" // name, addresses, ports or source changed
	PeerGone     EventKind = "gone"    // goodbye, expiry, eviction, Closed, Unreached or refusal of its last address
	PeerRefused  EventKind = "refused" // a TLS handshake proved a different identity (see ReportMismatch)
	// EventsLost tells a slow subscriber that events were dropped: re-read Peers().
	EventsLost EventKind = "lost"
)

// Event is one change of the peer table.
type Event struct {
	Kind   EventKind `json:"kind"`
	Peer   Peer      `json:"peer"`
	Reason string    `json:"reason,omitempty"` // e.g. "goodbye", "expired", "evicted", "closed", "unreached"
}

// Remembered is a peer the engine trusts, with the addresses it last used.
type Remembered struct {
	ID    string
	Name  string
	Addrs []string // "host:port" of its QUIC listener, most recent first
}

// Prober performs a TLS handshake with addr and returns the identity proven
// by the certificate. The engine supplies it (Engine.Probe).
type Prober func(ctx context.Context, addr string) (id, name string, err error)

// Options configure a Discovery. The zero value works: it browses, keeps at
// most 256 peers and probes nothing.
type Options struct {
	// SelfID is our own device ID; it never appears in the table.
	SelfID string
	// MaxPeers bounds the table; the peer heard from least recently is
	// evicted first. Default 256.
	MaxPeers int
	// QueryInterval is how often the network is asked again (default 5 s).
	// The first queries go out at 0, 1 and 2 s.
	QueryInterval time.Duration
	// PeerTTL is how long an mDNS peer stays without being heard again,
	// capped by its records' TTL. Default 3*QueryInterval + 1 s.
	PeerTTL time.Duration
	// InterfacePoll is how often network interfaces are checked for
	// changes (default 3 s).
	InterfacePoll time.Duration
	// Remembered lists trusted peers to probe directly every ProbeInterval
	// when mDNS does not see them. Nil: none.
	Remembered func() []Remembered
	// Prober verifies an address for remembered and manual peers. Nil:
	// no probing, and AddManual fails.
	Prober Prober
	// ProbeInterval (default 15 s) and ProbeTimeout (default 3 s) pace the
	// direct probes.
	ProbeInterval time.Duration
	ProbeTimeout  time.Duration
	// LocalSendTTL is how long a LocalSend device stays after it was last
	// heard of (default 90 s: announce every 30 s, and each announcement
	// is answered).
	LocalSendTTL time.Duration
	// Interfaces lists network interfaces (default net.Interfaces); tests
	// replace it.
	Interfaces func() ([]net.Interface, error)
	// Clock drives Run's timers: its queries, probes, expiry and interface
	// polls (default the system clock; tests give a clock.Fake).
	Clock clock.Clock
	// Now stamps the table (default Clock's Now).
	Now func() time.Time
	// Logf, when set, receives debug messages.
	Logf func(format string, args ...any)
}

// Errors returned by this package.
var (
	ErrNotFound  = errors.New("no such peer")
	ErrAmbiguous = errors.New("more than one peer matches")
	ErrNoProber  = errors.New("no prober configured")
	ErrRefused   = errors.New("peer identity refused")
)

// Discovery is the browser and peer table. Create it with New, run it with
// Run; Peers, Subscribe, Resolve and friends are safe from any goroutine.
type Discovery struct {
	opts Options

	mu        sync.Mutex // guards the fields below
	peers     map[string]*entry
	refused   map[string]map[netip.Addr]bool // advertised ID -> hosts proven to be someone else
	manual    map[string]string              // ID -> host:port added by AddManual
	subs      map[int]*subscriber
	nextSub   int
	localNets []netip.Prefix
	ifNames   map[int]string // interface index -> name, for IPv6 zones
	asked     map[string]time.Time
	stats     Stats
	mdnsErr   error
	look      look
	again     map[string]*againProbe // devices Unreached asked to probe at once

	// What Unreached asks for, each a wake-up that more asks join: a
	// query (queryLoop) and probes of the devices in again
	// (probeAgainLoop).
	askNow   chan struct{}
	probeNow chan struct{}
}

// look is how far discovery has looked at the network as it is now (Looked).
type look struct {
	since  time.Time // Run started, or the interfaces last changed
	asked  time.Time // the first queries on the network as it is now all went out (zero: not yet)
	probed time.Time // when the last probe round that finished began (zero: none)
}

// answerWait is how long after the last of its first queries discovery
// waits for their answers before it takes a device it does not see as
// away (mDNS responders answer within half a second, RFC 6762 6).
const answerWait = time.Second

// Looked reports whether discovery has looked at the network long enough
// that a device it does not see is very likely not on it: its first
// queries (at 0, 1 and 2 s) went out on the network as it is now and
// had answerWait to be answered, and a round of probes of the remembered
// devices that mDNS does not see began since then and finished (a trusted
// device that mDNS misses but that answers at its address is in the
// table, SourceRemembered). It is false before Run, while no query could
// be sent (no multicast interface), for a while after the interfaces
// changed, and always without a Prober (a remembered device could not be
// seen without mDNS).
func (d *Discovery) Looked() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.look
	return !l.asked.IsZero() && !d.opts.Now().Before(l.asked.Add(answerWait)) &&
		!l.probed.IsZero() && !l.probed.Before(l.since)
}

// lookAgain starts looking at the network afresh (Run, or new interfaces):
// its first queries and a probe round are still to come.
func (d *Discovery) lookAgain() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.look = look{since: d.opts.Now(), probed: d.look.probed}
}

// firstQueriesSent notes that the first queries on the network as it is
// now went out.
func (d *Discovery) firstQueriesSent() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.look.asked = d.opts.Now()
}

// probeRoundDone notes that a probe round that began at began finished.
func (d *Discovery) probeRoundDone(began time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.look.probed = began
}

// Stats counts what the browser dropped, for diagnostics.
type Stats struct {
	Messages   int // mDNS responses processed
	BadTXT     int // Ferry records with an invalid TXT
	Evicted    int // peers evicted because the table was full
	EventsLost int // events dropped for slow subscribers
}

type entry struct {
	peer    Peer
	expires time.Time
	leaving bool      // a goodbye arrived: gone at expires unless heard again
	left    time.Time // when the first goodbye of this leaving arrived
	// addrs holds when each address expires: responders such as Avahi send
	// IPv4 and IPv6 addresses in separate packets, so sightings merge.
	addrs map[netip.Addr]time.Time
	// ls is a Ferry entry's LocalSend side (nil: none heard of).
	ls *lsSide
	// ferryID, on a LocalSend entry, is the Ferry device its proven key
	// names: it joins that entry when the device is heard over Ferry.
	ferryID string
}

// mergeAddrs records addrs as valid until exp, drops expired ones and
// returns the current set (unsorted). At most maxAddrs are kept.
func (e *entry) mergeAddrs(addrs []netip.Addr, now, exp time.Time) []netip.Addr {
	if e.addrs == nil {
		e.addrs = map[netip.Addr]time.Time{}
	}
	for _, a := range addrs {
		if len(e.addrs) >= maxAddrs {
			if _, ok := e.addrs[a]; !ok {
				e.dropSoonest()
			}
		}
		e.addrs[a] = exp
	}
	out := make([]netip.Addr, 0, len(e.addrs))
	for a, t := range e.addrs {
		if !now.Before(t) {
			delete(e.addrs, a)
			continue
		}
		out = append(out, a)
	}
	return out
}

func (e *entry) dropSoonest() {
	var victim netip.Addr
	var first time.Time
	for a, t := range e.addrs {
		if !victim.IsValid() || t.Before(first) {
			victim, first = a, t
		}
	}
	delete(e.addrs, victim)
}

type subscriber struct {
	ch   chan Event
	lost bool
}

// New returns a Discovery with opts' defaults filled in. It opens nothing.
func New(opts Options) (*Discovery, error) {
	if opts.MaxPeers <= 0 {
		opts.MaxPeers = 256
	}
	if opts.QueryInterval <= 0 {
		opts.QueryInterval = 5 * time.Second
	}
	if opts.PeerTTL <= 0 {
		opts.PeerTTL = 3*opts.QueryInterval + time.Second
	}
	if opts.LocalSendTTL <= 0 {
		opts.LocalSendTTL = 90 * time.Second
	}
	if opts.InterfacePoll <= 0 {
		opts.InterfacePoll = 3 * time.Second
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = 15 * time.Second
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = 3 * time.Second
	}
	if opts.Interfaces == nil {
		opts.Interfaces = net.Interfaces
	}
	opts.Clock = clock.Or(opts.Clock)
	if opts.Now == nil {
		opts.Now = opts.Clock.Now
	}
	if opts.SelfID != "" {
		id, err := normalizeID(opts.SelfID)
		if err != nil {
			return nil, fmt.Errorf("discovery: self ID: %w", err)
		}
		opts.SelfID = id
	}
	return &Discovery{
		opts:     opts,
		peers:    map[string]*entry{},
		refused:  map[string]map[netip.Addr]bool{},
		manual:   map[string]string{},
		subs:     map[int]*subscriber{},
		ifNames:  map[int]string{},
		asked:    map[string]time.Time{},
		again:    map[string]*againProbe{},
		askNow:   make(chan struct{}, 1),
		probeNow: make(chan struct{}, 1),
	}, nil
}

func (d *Discovery) logf(format string, args ...any) {
	if d.opts.Logf != nil {
		d.opts.Logf(format, args...)
	}
}

// Peers returns a snapshot of the table, sorted by name then ID.
func (d *Discovery) Peers() []Peer {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Peer, 0, len(d.peers))
	for _, e := range d.peers {
		out = append(out, clonePeer(e.peer))
	}
	slices.SortFunc(out, func(a, b Peer) int {
		if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Stats returns counters of what the browser saw and dropped.
func (d *Discovery) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Subscribe returns a channel of table changes with the given buffer and a
// function that ends the subscription. Publishing never blocks discovery:
// when the buffer is full, events are dropped and an EventsLost event is
// delivered as soon as there is room again; the subscriber should then
// re-read Peers.
func (d *Discovery) Subscribe(buf int) (<-chan Event, func()) {
	if buf < 1 {
		buf = 1
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.nextSub
	d.nextSub++
	s := &subscriber{ch: make(chan Event, buf)}
	d.subs[id] = s
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			delete(d.subs, id)
			close(s.ch)
		})
	}
}

// publish must be called with d.mu held.
func (d *Discovery) publish(e Event) {
	e.Peer = clonePeer(e.Peer)
	for _, s := range d.subs {
		if s.lost {
			select {
			case s.ch <- Event{Kind: EventsLost}:
				s.lost = false
			default:
				d.stats.EventsLost++
				continue
			}
		}
		select {
		case s.ch <- e:
		default:
			s.lost = true
			d.stats.EventsLost++
		}
	}
}

func clonePeer(p Peer) Peer {
	p.Addrs = slices.Clone(p.Addrs)
	p.Ports = slices.Clone(p.Ports)
	if p.LocalSend != nil {
		ls := *p.LocalSend
		p.LocalSend = &ls
	}
	return p
}

// observe records a sighting of p valid for ttl. Called with d.mu held.
func (d *Discovery) observe(p Peer, ttl time.Duration) {
	if p.ID == "" || p.ID == d.opts.SelfID {
		return
	}
	now := d.opts.Now()
	p.LastSeen = now
	p.Addrs = d.sortAddrs(p.Addrs)
	e, ok := d.peers[p.ID]
	if !ok {
		for len(d.peers) >= d.opts.MaxPeers {
			d.evictOldest()
		}
		e = &entry{expires: now.Add(ttl)}
		p.Addrs = d.sortAddrs(e.mergeAddrs(p.Addrs, now, now.Add(ttl)))
		d.applyRefusals(&p)
		e.peer = p
		d.adoptLocalSend(e)
		d.peers[p.ID] = e
		d.publish(Event{Kind: PeerAppeared, Peer: e.peer})
		return
	}
	old := e.peer
	p.LocalSend = old.LocalSend
	if old.Source == SourceMDNS && p.Source != SourceMDNS && now.Before(e.expires) {
		// mDNS is fresher and more complete than a probe: keep it, only
		// note the directly proven address.
		old.Direct = p.Direct
		old.LastSeen = now
		p = old
	} else {
		if p.Source == SourceMDNS && old.Direct != "" {
			p.Direct = old.Direct
		}
		if p.Source != old.Source {
			e.addrs = nil // addresses from another source do not mix
		}
		p.Addrs = d.sortAddrs(e.mergeAddrs(p.Addrs, now, now.Add(ttl)))
	}
	if exp := now.Add(ttl); exp.After(e.expires) || p.Source != old.Source || p.Source == SourceMDNS {
		e.expires = exp
		e.leaving = false
	}
	d.applyRefusals(&p)
	e.peer = p
	if !samePeer(old, p) {
		d.publish(Event{Kind: PeerChanged, Peer: p})
	}
}

// samePeer compares everything an event subscriber cares about.
func samePeer(a, b Peer) bool {
	return a.Name == b.Name && slices.Equal(a.Ports, b.Ports) &&
		a.OS == b.OS && a.Version == b.Version && a.Source == b.Source &&
		a.Direct == b.Direct && a.Refused == b.Refused && slices.Equal(a.Addrs, b.Addrs) &&
		sameLocalSend(a.LocalSend, b.LocalSend)
}

func (d *Discovery) evictOldest() {
	var oldest *entry
	for _, e := range d.peers {
		if oldest == nil || e.peer.LastSeen.Before(oldest.peer.LastSeen) {
			oldest = e
		}
	}
	if oldest != nil {
		d.stats.Evicted++
		d.removeLocked(oldest.peer.ID, "evicted")
	}
}

func (d *Discovery) removeLocked(id, reason string) {
	e, ok := d.peers[id]
	if !ok {
		return
	}
	delete(d.peers, id)
	d.publish(Event{Kind: PeerGone, Peer: e.peer, Reason: reason})
}

// Closed removes the device with id at once: it said that its Ferry is
// closing (a session of a transfer ended with going_away), which a
// re-registration never says, so no goodbyeGrace; its LocalSend side goes
// with it (the same process, quitting). A probed device would otherwise
// stay until its TTL ran out (probeTTLFactor probe intervals). Heard
// again, it appears again (PeerAppeared).
func (d *Discovery) Closed(id string) { d.remove(id, "closed") }

// Unreached removes the device with id at once, as Closed does: a send
// could not reach it again for its whole reconnect time (the engine's
// RetryFor). A killed Ferry says no goodbye, so its entry would live on
// until its TTL (a probed one's is probeTTLFactor probe intervals), longer
// than that time may be, and for good if the device is heard again
// meanwhile: heard at the same address that is no change, at another one
// a PeerChanged, and the app's rejoin, which waits for a PeerAppeared,
// would wait for ever. Its LocalSend side goes with it (the same process).
// Removed, a device heard again appears again (PeerAppeared). It may be
// back already (a receiver killed and started again while the send still
// tried to reach it), and would then be heard only at the next query
// (QueryInterval) or probe (ProbeInterval), so discovery looks at once:
// Run's query loop asks the network once more, and a remembered or
// manually added device is probed at the addresses it was listed with
// and the ones remembered. A burst of calls (many sends to many devices)
// is bounded: one query no sooner than againGap after the last query, and
// each device probed no more than once every againGap, never twice at
// once, at most probeParallel devices at once; asks that come meanwhile
// wait for the next of these (up to MaxPeers devices wait; one more waits
// for the next probe round).
func (d *Discovery) Unreached(id string) {
	d.mu.Lock()
	var last Peer
	if e, ok := d.peers[id]; ok {
		last = e.peer
	}
	d.removeLocked(id, "unreached")
	d.probeAgainLocked(id, last)
	d.mu.Unlock()
	poke(d.askNow)
	poke(d.probeNow)
}

// poke wakes the loop that waits on c, unless a wake-up is pending there.
func poke(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (d *Discovery) remove(id, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.removeLocked(id, reason)
}

// goodbyeGrace is how long a peer that said goodbye stays, so that a
// re-registration (rename, port or interface change: goodbye followed at
// once by a new announcement) does not flicker gone/appeared.
const goodbyeGrace = time.Second

// goodbye handles an mDNS goodbye for the instance label (and the ID, when
// the goodbye carried a TXT record). Called with d.mu held.
func (d *Discovery) goodbye(id, label string, from netip.Addr) {
	leave := func(e *entry) {
		now := d.opts.Now()
		if exp := now.Add(goodbyeGrace); exp.Before(e.expires) {
			e.expires = exp
		}
		if !e.leaving {
			e.left = now
		}
		e.leaving = true
	}
	if id != "" {
		if e, ok := d.peers[id]; ok && e.peer.Source == SourceMDNS {
			leave(e)
		}
		return
	}
	// Only a PTR goodbye: match by instance name, narrowed to the sender's
	// address when that identifies one of several same-named peers.
	var byName, byAddr []*entry
	for _, e := range d.peers {
		if e.peer.Source != SourceMDNS || !strings.EqualFold(instanceLabel(e.peer.Name), label) {
			continue
		}
		byName = append(byName, e)
		if from.IsValid() && slices.Contains(e.peer.Addrs, from.WithZone("")) {
			byAddr = append(byAddr, e)
		}
	}
	if len(byAddr) > 0 {
		byName = byAddr
	}
	for _, e := range byName {
		leave(e)
	}
}

// expire drops peers whose TTL ran out.
func (d *Discovery) expire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.opts.Now()
	for id, e := range d.peers {
		if d.expireSide(id, e, now) {
			continue
		}
		if !now.Before(e.expires) {
			reason := "expired"
			if e.leaving {
				reason = "goodbye"
			}
			d.removeLocked(id, reason)
			continue
		}
		if len(e.addrs) == 0 {
			continue
		}
		addrs := d.sortAddrs(e.mergeAddrs(nil, now, now))
		if !slices.Equal(addrs, e.peer.Addrs) {
			p := e.peer
			p.Addrs = addrs
			d.applyRefusals(&p)
			e.peer = p
			d.publish(Event{Kind: PeerChanged, Peer: p, Reason: "address expired"})
		}
	}
	for k, t := range d.asked {
		if now.Sub(t) > time.Minute {
			delete(d.asked, k)
		}
	}
}

// ReportMismatch tells discovery that a TLS handshake with addr ("host:port"
// or host) proved the identity provenID although mDNS advertised
// advertisedID there. That address is never offered again under
// advertisedID; when no address is left the peer is marked Refused. Either
// way a PeerRefused event reports it.
func (d *Discovery) ReportMismatch(advertisedID, provenID, addr string) {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		d.logf("discovery: mismatch report with bad address %q", addr)
		return
	}
	ip = ip.WithZone("")
	d.mu.Lock()
	defer d.mu.Unlock()
	set := d.refused[advertisedID]
	if set == nil {
		if len(d.refused) >= d.opts.MaxPeers {
			for k := range d.refused { // drop an arbitrary old refusal to stay bounded
				delete(d.refused, k)
				break
			}
		}
		set = map[netip.Addr]bool{}
		d.refused[advertisedID] = set
	}
	if len(set) < maxAddrs {
		set[ip] = true
	}
	e, ok := d.peers[advertisedID]
	if !ok {
		return
	}
	d.applyRefusals(&e.peer)
	d.publish(Event{Kind: PeerRefused, Peer: e.peer,
		Reason: fmt.Sprintf("%s answered as %s", addr, shortID(provenID))})
}

// applyRefusals removes refused addresses from p. Called with d.mu held.
func (d *Discovery) applyRefusals(p *Peer) {
	set := d.refused[p.ID]
	if len(set) == 0 {
		return
	}
	p.Addrs = slices.DeleteFunc(p.Addrs, func(a netip.Addr) bool { return set[a.WithZone("")] })
	if p.Direct != "" {
		if ap, err := netip.ParseAddrPort(p.Direct); err == nil && set[ap.Addr().WithZone("")] {
			p.Direct = ""
		}
	}
	p.Refused = len(p.Addrs) == 0 && p.Direct == ""
}

func shortID(id string) string { return deviceid.Short(id) }

const maxAddrs = 16

// sortAddrs drops unusable addresses and orders the rest: same subnet as
// one of ours first, then IPv4, global IPv6, link-local IPv6 (with zone).
// Called with d.mu held.
func (d *Discovery) sortAddrs(in []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, min(len(in), maxAddrs))
	for _, a := range in {
		a = a.Unmap()
		switch {
		case !a.IsValid(), a.IsUnspecified(), a.IsLoopback(), a.IsMulticast():
			continue
		case a.Is6() && (a.IsLinkLocalUnicast()) && a.Zone() == "":
			continue // unusable without the interface it was heard on
		case !a.Is6() && a.Zone() != "":
			a = a.WithZone("")
		case a.Is6() && !a.IsLinkLocalUnicast() && a.Zone() != "":
			a = a.WithZone("")
		}
		if !slices.Contains(out, a) && len(out) < maxAddrs {
			out = append(out, a)
		}
	}
	rank := func(a netip.Addr) int {
		r := 0
		local := false
		for _, n := range d.localNets {
			if n.Contains(a.WithZone("")) {
				local = true
				break
			}
		}
		if !local {
			r += 10
		}
		switch {
		case a.Is4():
			r += 0
		case a.IsLinkLocalUnicast():
			r += 2
		default:
			r += 1
		}
		return r
	}
	// Ties break on the address itself: out is built from a map, and a
	// stable order keeps "changed" events meaningful.
	slices.SortFunc(out, func(a, b netip.Addr) int {
		if r := rank(a) - rank(b); r != 0 {
			return r
		}
		return a.Compare(b)
	})
	return out
}

// setInterfaces records our interfaces: their subnets rank peer addresses
// and their names become IPv6 zones.
func (d *Discovery) setInterfaces(ifaces []net.Interface) {
	var nets []netip.Prefix
	names := map[int]string{}
	for _, ifi := range ifaces {
		names[ifi.Index] = ifi.Name
		for _, p := range interfacePrefixes(ifi) {
			nets = append(nets, p.Masked())
		}
	}
	d.mu.Lock()
	d.localNets, d.ifNames = nets, names
	d.mu.Unlock()
}

// Resolve finds one peer by exact device ID, ID prefix (at least 4
// characters, dashes ignored) or device name (case-insensitive). When
// nothing matches yet it waits for discovery until ctx ends. Several
// matches give an error wrapping ErrAmbiguous that lists them.
func (d *Discovery) Resolve(ctx context.Context, query string) (Peer, error) {
	events, cancel := d.Subscribe(16)
	defer cancel()
	for {
		p, err := resolveIn(d.Peers(), query)
		if !errors.Is(err, ErrNotFound) {
			return p, err
		}
		select {
		case <-ctx.Done():
			return Peer{}, fmt.Errorf("resolve %q: %w", query, ErrNotFound)
		case <-events:
		}
	}
}

func resolveIn(peers []Peer, query string) (Peer, error) {
	q := strings.TrimSpace(query)
	if q == "" {
		return Peer{}, fmt.Errorf("resolve: empty name: %w", ErrNotFound)
	}
	idq := strings.ToUpper(strings.ReplaceAll(q, "-", ""))
	var byPrefix, byName []Peer
	for _, p := range peers {
		if p.ID == idq {
			return checkRefused(p)
		}
		if strings.EqualFold(p.ID, q) {
			return checkRefused(p)
		}
		switch {
		case len(idq) >= 4 && strings.HasPrefix(p.ID, idq):
			byPrefix = append(byPrefix, p)
		case p.SpeaksLocalSend() && len(idq) >= 4 && strings.HasPrefix(strings.ToUpper(p.LocalSend.Fingerprint), idq):
			byPrefix = append(byPrefix, p) // a LocalSend device by its fingerprint
		}
		if strings.EqualFold(p.Name, q) {
			byName = append(byName, p)
		}
	}
	for _, set := range [][]Peer{byPrefix, byName} {
		switch len(set) {
		case 0:
			continue
		case 1:
			return checkRefused(set[0])
		default:
			var names []string
			for _, p := range set {
				names = append(names, fmt.Sprintf("%s (%s)", p.Name, p.ShortID()))
			}
			return Peer{}, fmt.Errorf("resolve %q: %w: %s; use the device ID", query, ErrAmbiguous, strings.Join(names, ", "))
		}
	}
	return Peer{}, fmt.Errorf("resolve %q: %w", query, ErrNotFound)
}

func checkRefused(p Peer) (Peer, error) {
	if p.Refused {
		return p, fmt.Errorf("resolve %s: %w", p.Name, ErrRefused)
	}
	return p, nil
}

// hostPort splits "host:port" into an address and port, accepting zones.
func hostPort(s string) (netip.Addr, int, error) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return netip.Addr{}, 0, err
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return netip.Addr{}, 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return netip.Addr{}, 0, fmt.Errorf("bad port in %q", s)
	}
	return ip, port, nil
}
