// Package relay is the server a user runs so that their paired devices
// reach each other beyond the LAN (ferry-cli relay, issue #29): a STUN and
// TURN server (pion/turn) on UDP, which tells devices their public
// address and relays the traffic of those whose NATs let no hole be
// punched, and a small mailbox on TCP, same port number, where devices
// swap their ICE candidates under rotating names.
//
// The mailbox holds only opaque blobs: names are HMACs of a secret only
// the two devices hold, and blobs are sealed with a key derived from it
// (package anywhere), so the server learns neither who talks to whom nor
// what they say, and cannot forge a blob. Everything it holds is bounded:
// blob size, blobs per name, blobs per source address, blobs in all, and
// a time to live; so are TURN allocations, per source address and in all.
//
// A relay started with a secret (Config.Secret, the relay secret the user
// also gives their devices) takes only TURN requests with the TURN REST
// API's time-limited credentials made from it, and only mailbox requests
// signed with it (anywhere.SignRequest). Without one, anyone who reaches
// the relay can relay through it; it says so when it starts.
package relay

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pion/logging"
	"github.com/pion/turn/v5"

	"github.com/ferrydrop/ferry/engine/internal/anywhere"
)

// Limits bound what the mailbox holds and the TURN allocations. The zero
// value of a field means its default.
type Limits struct {
	// SlotTTL is how long a presence is kept (default 2 min: devices put
	// theirs again every 30 s).
	SlotTTL time.Duration
	// QueueTTL is how long a call or answer is kept (default 1 min).
	QueueTTL time.Duration
	// PerSource bounds the blobs one source address holds (default 256).
	PerSource int
	// Total bounds the blobs held in all (default 16384: 64 MiB at most).
	Total int
	// AllocationsPerSource bounds the TURN allocations of one source
	// address (default 16: a device makes one per call and local IPv4
	// address, a household's devices share an address).
	AllocationsPerSource int
	// Allocations bounds the TURN allocations in all (default 1024).
	Allocations int
	// AllocationLifetime is the lifetime a TURN allocation is granted
	// unless its client asks for another (default 2 min, pion's is 10):
	// a client refreshes its allocation at half of it, so one that
	// vanished without giving it back (killed, crashed, a lid closed)
	// holds its place in AllocationsPerSource this long at most.
	AllocationLifetime time.Duration
	// Wait is how long a wait that finds nothing is held (default
	// anywhere.WaitFor).
	Wait time.Duration
	// WaitsPerSource bounds the waits one source address holds at once
	// (default 16: a receiving device holds one, a caller one per call);
	// Waits bounds them in all (default 1024). A wait beyond is answered
	// at once, as a take.
	WaitsPerSource int
	Waits          int
	// LooksPerSource bounds the names one source address has its looks
	// noted under (default 1024: a receiving device looks at a few call
	// boxes per paired device); Looks bounds them in all (default 16384).
	// A look beyond is not noted, and the relay then vouches for no
	// name's silence until LookMemory passed.
	LooksPerSource int
	Looks          int
	// LookMemory is how long a look is remembered (default 1 min).
	LookMemory time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.SlotTTL <= 0 {
		l.SlotTTL = 2 * time.Minute
	}
	if l.QueueTTL <= 0 {
		l.QueueTTL = time.Minute
	}
	if l.PerSource <= 0 {
		l.PerSource = 256
	}
	if l.Total <= 0 {
		l.Total = 16384
	}
	if l.AllocationsPerSource <= 0 {
		l.AllocationsPerSource = 16
	}
	if l.Allocations <= 0 {
		l.Allocations = 1024
	}
	if l.AllocationLifetime <= 0 {
		l.AllocationLifetime = 2 * time.Minute
	}
	if l.Wait <= 0 {
		l.Wait = anywhere.WaitFor
	}
	if l.WaitsPerSource <= 0 {
		l.WaitsPerSource = 16
	}
	if l.Waits <= 0 {
		l.Waits = 1024
	}
	if l.LooksPerSource <= 0 {
		l.LooksPerSource = 1024
	}
	if l.Looks <= 0 {
		l.Looks = 16384
	}
	if l.LookMemory <= 0 {
		l.LookMemory = time.Minute
	}
	return l
}

// Config is a relay's configuration.
type Config struct {
	// Listen is the "host:port" of both the TURN server (UDP) and the
	// mailbox (TCP).
	Listen string
	// PublicIP is the address relayed traffic is announced at; empty
	// means the listen address's host, which must then be one address.
	PublicIP string
	// Secret is the relay secret (anywhere.CleanSecret): with one, only
	// devices that hold it use the relay; "" lets anyone who reaches it
	// relay through it.
	Secret string
	// Limits bound the mailbox and the TURN allocations.
	Limits Limits
	// AllowLoopbackPeers lets an allocation reach loopback addresses, the
	// relay host's own services (tests whose devices and relay all run on
	// loopback); off, as coturn's default, it may not.
	AllowLoopbackPeers bool
	// Log gets the relay's events (nil: discarded).
	Log *slog.Logger
}

// CleanSecret is a relay secret as the user gave it (a file's content, an
// environment variable), trimmed, or why it cannot be one: too short
// (anywhere.MinSecretLen), too long, not one line.
func CleanSecret(s string) (string, error) { return anywhere.CleanSecret(s) }

// NoSecretWarning is what a relay without a secret says when it starts.
const NoSecretWarning = "this relay has no secret: anyone who can reach its port can relay through it; give it one (ferry-cli relay --secret-file FILE) and the same to your devices (--relay-secret-file FILE, or the app's setting beside the relay)"

// Relay is a running relay.
type Relay struct {
	turn *turn.Server
	udp  net.PacketConn
	tcp  net.Listener
	http *http.Server
	box  *Mailbox
	// quota counts TURN allocations (Limits.AllocationsPerSource).
	quota *allocations
	stop  context.CancelFunc
	wg    sync.WaitGroup
}

// Start opens the relay's sockets and serves.
func Start(cfg Config) (*Relay, error) {
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("relay: listen address %q: %w", cfg.Listen, err)
	}
	public := cfg.PublicIP
	if public == "" {
		public = host
	}
	pip := net.ParseIP(public)
	if pip == nil || pip.IsUnspecified() {
		return nil, fmt.Errorf("relay: give the public address devices reach this relay at (--public-ip): %q is not one", public)
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Secret != "" {
		if cfg.Secret, err = CleanSecret(cfg.Secret); err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
	}
	lim := cfg.Limits.withDefaults()
	tcp, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("relay: mailbox: %w", err)
	}
	// The UDP port is the TCP one's (":0" picked one for TCP).
	udp, err := net.ListenPacket("udp4", tcp.Addr().String())
	if err != nil {
		tcp.Close()
		return nil, fmt.Errorf("relay: turn: %w", err)
	}
	lf := logging.NewDefaultLoggerFactory()
	lf.DefaultLogLevel = logging.LogLevelError
	relayHost := host
	if relayHost == "" || net.ParseIP(relayHost).IsUnspecified() {
		relayHost = "0.0.0.0"
	}
	peers := &refusals{log: log, what: "relay: refused to relay to an address that is not a device's"}
	// Two devices' relay candidates make a pair whose peer is the relay's
	// own address (the other's allocation) in every call through the
	// relay: refused like any own-host address, but said at debug level,
	// or the operator is warned once a minute about ordinary use.
	ownPeers := &refusals{log: log, what: peers.what, debug: true}
	refusals := &refusals{log: log, what: "relay: refused a request for its relay secret"}
	quota := &allocations{perSource: lim.AllocationsPerSource, max: lim.Allocations, bySource: map[string]int{}}
	ts, err := turn.NewServer(turn.ServerConfig{
		Realm:        anywhere.TURNRealm,
		AuthHandler:  turnAuth(cfg.Secret, refusals),
		QuotaHandler: quota.allow,
		// Short, so that an allocation its device left behind (a kill, a
		// crash: nothing gives it back) frees its place soon; a live one
		// is refreshed. docs/beyond-the-lan.md: why not evict instead.
		AllocationLifetime: lim.AllocationLifetime,
		EventHandler: turn.EventHandler{
			OnAuth: func(src, _ net.Addr, _, _, _ string, _ string, ok bool) {
				if !ok {
					refusals.note(src, "TURN credentials that do not check (another secret)")
				}
			},
			OnAllocationCreated: func(src, _ net.Addr, _, _, _ string, _ net.Addr, _ int) { quota.add(src, 1) },
			OnAllocationDeleted: func(src, _ net.Addr, _, _, _ string) { quota.add(src, -1) },
		},
		PacketConnConfigs: []turn.PacketConnConfig{{
			PacketConn:            udp,
			RelayAddressGenerator: &turn.RelayAddressGeneratorStatic{RelayAddress: pip, Address: relayHost},
			PermissionHandler:     peerFilter(ownAddrs(pip), cfg.AllowLoopbackPeers, peers, ownPeers),
		}},
		LoggerFactory: lf,
	})
	if err != nil {
		udp.Close()
		tcp.Close()
		return nil, fmt.Errorf("relay: turn: %w", err)
	}
	r := &Relay{turn: ts, udp: udp, tcp: tcp, box: NewMailbox(cfg.Limits), quota: quota}
	r.http = &http.Server{
		Handler:           &guard{secret: cfg.Secret, next: r.box, refusals: refusals},
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    4096,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.wg.Go(func() { r.http.Serve(tcp) })
	r.wg.Go(func() { r.box.sweep(ctx) })
	r.stop = cancel
	log.Info("relay listening", "addr", tcp.Addr().String(), "public", public, "secret", cfg.Secret != "")
	if cfg.Secret == "" {
		log.Warn(NoSecretWarning)
	}
	return r, nil
}

// turnAuth is the TURN server's check of credentials: with a secret, the
// TURN REST API's (pion/turn's handler: "EXPIRY:NAME", the password an
// HMAC of it under the secret, refused once expired); without one, the
// public ones.
func turnAuth(secret string, refusals *refusals) turn.AuthHandler {
	if secret == "" {
		key := turn.GenerateAuthKey(anywhere.TURNUser, anywhere.TURNRealm, anywhere.TURNPassword)
		return func(ra *turn.RequestAttributes) (string, []byte, bool) {
			if ra.Username == anywhere.TURNUser {
				return ra.Username, key, true
			}
			refusals.note(ra.SrcAddr, "TURN credentials made with a relay secret, and this relay has none")
			return "", nil, false
		}
	}
	quiet := logging.NewDefaultLoggerFactory()
	quiet.DefaultLogLevel = logging.LogLevelDisabled // refusals are ours to log, bounded
	rest := turn.LongTermTURNRESTAuthHandler(secret, quiet.NewLogger("turn"))
	return func(ra *turn.RequestAttributes) (string, []byte, bool) {
		user, key, ok := rest(ra)
		if !ok {
			refusals.note(ra.SrcAddr, "TURN credentials expired or not made with a relay secret")
		}
		return user, key, ok
	}
}

// allocations bounds TURN allocations per source address and in all
// (pion/turn's QuotaHandler, counted by its allocation events). Two
// allocations asked at once may both pass the check: the bound is
// overshot by at most the requests in flight.
type allocations struct {
	perSource, max int

	mu       sync.Mutex     // guards the fields below
	bySource map[string]int // source host -> allocations
	total    int
}

func (a *allocations) allow(_, _ string, src net.Addr) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bySource[hostOf(src)] < a.perSource && a.total < a.max
}

func (a *allocations) add(src net.Addr, n int) {
	h := hostOf(src)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.total += n
	if a.bySource[h] += n; a.bySource[h] <= 0 {
		delete(a.bySource, h)
	}
}

// held is how many allocations are counted.
func (a *allocations) held() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.total
}

func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// peerFilter is the TURN server's check of the peers an allocation may
// send to (pion's PermissionHandler, asked at each CreatePermission and
// ChannelBind): a device's address, never one that names the relay's own
// host or its network's services. Without it, whoever holds the relay
// secret (every device of the user, or anyone when the relay has none)
// could reach through the relay what listens on its loopback, a cloud's
// metadata service at 169.254.169.254 (the instance's credentials), or
// its network's multicast groups. Refusals of the relay's own address go
// to ownRefused: pion asks only about the IP, so another device's relay
// candidate (an ICE pair of two relay candidates, tried in every call) is
// one of them.
func peerFilter(own map[netip.Addr]bool, allowLoopback bool, refused, ownRefused *refusals) turn.PermissionHandler {
	return func(src net.Addr, peer net.IP) bool {
		why := peerRefusal(peer, allowLoopback)
		if a, ok := netip.AddrFromSlice(peer); why == "" && ok && own[a.Unmap()] && !(allowLoopback && a.Unmap().IsLoopback()) {
			// Its own address reaches its services as loopback does
			// (a firewall lets the host's own traffic in).
			ownRefused.note(src, "an address of the relay's own host")
			return false
		}
		if why != "" {
			refused.note(src, why)
		}
		return why == ""
	}
}

// ownAddrs are the relay host's addresses: public, and those of its
// interfaces when it starts.
func ownAddrs(public net.IP) map[netip.Addr]bool {
	own := map[netip.Addr]bool{}
	if a, ok := netip.AddrFromSlice(public); ok {
		own[a.Unmap()] = true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, ia := range addrs {
		if n, ok := ia.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok {
				own[a.Unmap()] = true
			}
		}
	}
	return own
}

// peerRefusal says why a relay does not relay to ip ("" when it does).
func peerRefusal(ip net.IP, allowLoopback bool) string {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return "not an IP address"
	}
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		if allowLoopback {
			return ""
		}
		return "a loopback address (the relay's own host)"
	case a.IsUnspecified() || a.Is4() && a.As4()[0] == 0:
		return "an unspecified address (the relay's own host)"
	case a.IsLinkLocalUnicast():
		return "a link-local address (such as a cloud's metadata service)"
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "a multicast or broadcast address"
	}
	return ""
}

// refusals logs requests refused (what says for which reason): at most
// one line a minute, with how many were refused since the last.
type refusals struct {
	log   *slog.Logger
	what  string
	debug bool // logged at debug level, not as a warning

	mu     sync.Mutex // guards the fields below
	last   time.Time
	missed int
}

func (r *refusals) note(src net.Addr, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.last) >= time.Minute {
		level := slog.LevelWarn
		if r.debug {
			level = slog.LevelDebug
		}
		r.log.Log(context.Background(), level, r.what, "source", hostOf(src), "why", why, "refused_before", r.missed)
		r.last, r.missed = now, 0
		return
	}
	r.missed++
}

// guard lets through the mailbox requests signed with the relay secret
// (all of them when the relay has none, but those that are signed: the
// device was given a secret this relay does not have, and is told).
type guard struct {
	secret   string
	next     http.Handler
	refusals *refusals
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sig := r.Header.Get(anywhere.HeaderAuth)
	if g.secret == "" {
		if sig != "" {
			g.refuse(w, r, anywhere.SecretNone, "a request signed with a relay secret, and this relay has none")
			return
		}
		g.next.ServeHTTP(w, r)
		return
	}
	// The signature covers the body: read it (bounded as the mailbox
	// bounds it) and hand it on.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody(r.URL.Path)))
	if err != nil {
		http.Error(w, errTooBig.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	if err := anywhere.CheckRequest(g.secret, sig, r.Method, r.URL.Path, body, time.Now()); err != nil {
		g.refuse(w, r, anywhere.SecretRequired, err.Error())
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	g.next.ServeHTTP(w, r)
}

func (g *guard) refuse(w http.ResponseWriter, r *http.Request, why, detail string) {
	g.refusals.note(remoteAddr(r.RemoteAddr), detail)
	w.Header().Set(anywhere.HeaderSecret, why)
	http.Error(w, "relay secret refused", http.StatusUnauthorized)
}

// remoteAddr is an http.Request's RemoteAddr as a net.Addr, for the log.
type remoteAddr string

func (a remoteAddr) Network() string { return "tcp" }
func (a remoteAddr) String() string  { return string(a) }

// Addr is where the relay listens (TCP; UDP has the same port).
func (r *Relay) Addr() net.Addr { return r.tcp.Addr() }

// Close stops the relay and waits for its goroutines.
func (r *Relay) Close() error {
	r.stop()
	err := r.http.Close()
	r.turn.Close()
	r.wg.Wait()
	return err
}

// Mailbox is the relay's store of blobs (an http.Handler).
type Mailbox struct {
	lim Limits
	now func() time.Time

	mu     sync.Mutex          // guards the fields below
	slots  map[string]*entry   // presence: name -> its one blob
	queues map[string][]*entry // calls, answers: name -> blobs, oldest first
	// slotOrder and queueOrder hold the blobs oldest first, the slots'
	// and the queues' apart (each has one time to live, so the oldest
	// expires first; a slot put again is a new blob at the back), so that
	// expiring them looks at those that expire and one more of each, not
	// at every blob (Limits.Total) on each request.
	slotOrder  list.List      // of *entry
	queueOrder list.List      // of *entry
	count      map[string]int // source host -> blobs it holds
	total      int
	// waiters are the waits held, by the names they wait for: a blob
	// queued under one of them wakes it (a buffered send, never a close:
	// a wait may be woken by several names). A set for each name, so that
	// a wait that ends leaves each of its names (up to MaxNames) at once,
	// not by looking through every wait held there (up to Waits).
	waiters  map[string]map[chan struct{}]struct{}
	waitsBy  map[string]int // source host -> waits it holds
	waitsAll int
	// looks are the last take or wait of each name, for LookMemory: a
	// receiver alive looks at its call boxes all the time (a wait held,
	// then the next), so a caller is told how long no one looked at the
	// box its call would go to (anywhere.HeaderUnwatched). lookOrder
	// holds them oldest first (a look noted again moves to its back), so
	// that forgetting them looks at those it forgets and one more, not
	// at every look (Limits.Looks) on each request.
	looks     map[string]*list.Element // name -> its *look in lookOrder
	lookOrder list.List
	looksBy   map[string]int // source host -> names its looks are noted under
	started   time.Time      // the relay vouches for no silence before it
	unnoted   time.Time      // the last look not noted (the bounds); zero: none
}

// look is the last take or wait of a name.
type look struct {
	name    string
	at      time.Time
	source  string
	dropped bool // a wait whose client went away while it was held
}

type entry struct {
	name    string
	blob    []byte
	source  string
	expires time.Time
	queued  bool          // in a queue (queueOrder), or a slot (slotOrder)
	el      *list.Element // its place in its order
}

// NewMailbox returns an empty mailbox with lim.
func NewMailbox(lim Limits) *Mailbox {
	return &Mailbox{lim: lim.withDefaults(), now: time.Now,
		slots: map[string]*entry{}, queues: map[string][]*entry{}, count: map[string]int{},
		waiters: map[string]map[chan struct{}]struct{}{}, waitsBy: map[string]int{},
		looks: map[string]*list.Element{}, looksBy: map[string]int{}, started: time.Now()}
}

// Errors a request gets, as HTTP statuses.
var (
	errFull    = errors.New("the relay holds as much as it may for this address")
	errBusy    = errors.New("the relay is full")
	errQueue   = errors.New("this name's queue is full")
	errTooBig  = errors.New("blob too big")
	errNoBlob  = errors.New("empty blob")
	errUnknown = errors.New("no such request")
)

func status(err error) int {
	switch {
	case errors.Is(err, errFull), errors.Is(err, errBusy), errors.Is(err, errQueue):
		return http.StatusTooManyRequests
	case errors.Is(err, errTooBig):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errUnknown):
		return http.StatusNotFound
	}
	return http.StatusBadRequest
}

// ServeHTTP is the mailbox protocol (package anywhere, mailbox.go).
func (m *Mailbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	source, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		source = r.RemoteAddr
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody(r.URL.Path)))
	if err != nil {
		http.Error(w, errTooBig.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	var out []byte
	if r.Method == http.MethodPost && r.URL.Path == anywhere.PathWait {
		var names []string
		if names, err = anywhere.DecodeNames(body); err == nil {
			out = m.wait(r.Context(), names, source)
		}
	} else {
		out, err = m.Handle(r.Method, r.URL.Path, source, body)
	}
	if err != nil {
		http.Error(w, err.Error(), status(err))
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == anywhere.PathSlots {
		names, _ := anywhere.DecodeNames(body) // Handle read them
		w.Header().Set(anywhere.HeaderUnwatched, anywhere.FormatUnwatched(m.Unwatched(names)))
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(out)
}

// maxBody bounds the body of a request for path.
func maxBody(path string) int64 {
	if path == anywhere.PathSlots || path == anywhere.PathQueues || path == anywhere.PathWait {
		return anywhere.MaxNames * (anywhere.NameLen + 1)
	}
	return anywhere.MaxBlob
}

// Handle runs one request of source: the mailbox protocol without HTTP.
func (m *Mailbox) Handle(method, path, source string, body []byte) ([]byte, error) {
	switch {
	case method == http.MethodPut && strings.HasPrefix(path, anywhere.PathSlot):
		return nil, m.put(strings.TrimPrefix(path, anywhere.PathSlot), source, body, false)
	case method == http.MethodPost && strings.HasPrefix(path, anywhere.PathQueue):
		return nil, m.put(strings.TrimPrefix(path, anywhere.PathQueue), source, body, true)
	case method == http.MethodPost && (path == anywhere.PathSlots || path == anywhere.PathQueues):
		names, err := anywhere.DecodeNames(body)
		if err != nil {
			return nil, err
		}
		return m.get(names, path == anywhere.PathQueues, source), nil
	}
	return nil, errUnknown
}

func (m *Mailbox) put(name, source string, blob []byte, queue bool) error {
	if err := anywhere.CheckName(name); err != nil {
		return err
	}
	if len(blob) == 0 {
		return errNoBlob
	}
	if len(blob) > anywhere.MaxBlob {
		return errTooBig
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.expireLocked(now)
	e := &entry{name: name, blob: append([]byte(nil), blob...), source: source, queued: queue}
	if !queue {
		e.expires = now.Add(m.lim.SlotTTL)
		if old := m.slots[name]; old != nil {
			m.dropLocked(old) // a replacement frees the place first
			delete(m.slots, name)
		}
		if err := m.holdLocked(source); err != nil {
			return err
		}
		m.slots[name] = e
		e.el = m.slotOrder.PushBack(e)
		return nil
	}
	e.expires = now.Add(m.lim.QueueTTL)
	if len(m.queues[name]) >= anywhere.MaxQueue {
		return errQueue
	}
	if err := m.holdLocked(source); err != nil {
		return err
	}
	m.queues[name] = append(m.queues[name], e)
	e.el = m.queueOrder.PushBack(e)
	for w := range m.waiters[name] {
		select {
		case w <- struct{}{}:
		default: // woken already
		}
	}
	return nil
}

// wait takes what names hold; when they hold nothing it waits first, up
// to Limits.Wait or until a blob is queued under one of them or ctx ends
// (the request's: its client went away). A source holding
// WaitsPerSource waits, or the relay holding Waits, gets the take at once.
func (m *Mailbox) wait(ctx context.Context, names []string, source string) []byte {
	m.mu.Lock()
	m.expireLocked(m.now())
	queued := false
	for _, n := range names {
		queued = queued || len(m.queues[n]) > 0
	}
	if queued || m.waitsBy[source] >= m.lim.WaitsPerSource || m.waitsAll >= m.lim.Waits {
		defer m.mu.Unlock()
		return m.getLocked(names, true, source)
	}
	w := make(chan struct{}, 1)
	for _, n := range names {
		ws := m.waiters[n]
		if ws == nil {
			ws = map[chan struct{}]struct{}{}
			m.waiters[n] = ws
		}
		ws[w] = struct{}{}
	}
	m.waitsBy[source]++
	m.waitsAll++
	m.mu.Unlock()

	t := time.NewTimer(m.lim.Wait)
	select {
	case <-w:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()

	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range names {
		ws := m.waiters[n] // nil once empty (a name given twice: its second)
		delete(ws, w)
		if len(ws) == 0 {
			delete(m.waiters, n)
		}
	}
	if m.waitsBy[source]--; m.waitsBy[source] <= 0 {
		delete(m.waitsBy, source)
	}
	m.waitsAll--
	if ctx.Err() != nil {
		// Nobody to answer: what is queued stays for the next. A
		// client killed ends its waits so (its system closes the
		// connection), which a caller is told (Unwatched.Dropped).
		m.lookedLocked(names, source, true)
		return nil
	}
	return m.getLocked(names, true, source)
}

// lookedLocked notes that source looked at names now (a take, a wait;
// dropped: a wait whose client went away).
func (m *Mailbox) lookedLocked(names []string, source string, dropped bool) {
	now := m.now()
	for _, n := range names {
		if el, ok := m.looks[n]; ok {
			if l := el.Value.(*look); l.source == source {
				l.at, l.dropped = now, dropped
				m.lookOrder.MoveToBack(el)
				continue
			}
			m.unlookLocked(el)
		}
		if m.looksBy[source] >= m.lim.LooksPerSource || len(m.looks) >= m.lim.Looks {
			m.unnoted = now
			continue
		}
		m.looks[n] = m.lookOrder.PushBack(&look{n, now, source, dropped})
		m.looksBy[source]++
	}
}

func (m *Mailbox) unlookLocked(el *list.Element) {
	l := m.lookOrder.Remove(el).(*look)
	delete(m.looks, l.name)
	if m.looksBy[l.source]--; m.looksBy[l.source] <= 0 {
		delete(m.looksBy, l.source)
	}
}

// Unwatched says, for each of names, for how long at least no one took
// or waited for what it holds: 0 while a wait for it is held; the time
// since its last look, and whether that was a wait its client dropped;
// for a name with no look noted, the time the relay can vouch for: since
// it started, or since its bounds last left a look unnoted, LookMemory
// at most.
func (m *Mailbox) Unwatched(names []string) []anywhere.Unwatched {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.expireLocked(now)
	since := now.Add(-m.lim.LookMemory)
	for _, t := range []time.Time{m.started, m.unnoted} {
		if t.After(since) {
			since = t
		}
	}
	out := make([]anywhere.Unwatched, len(names))
	for i, n := range names {
		switch el, ok := m.looks[n]; {
		case len(m.waiters[n]) > 0:
		case ok:
			l := el.Value.(*look)
			out[i] = anywhere.Unwatched{For: max(now.Sub(l.at), 0), Dropped: l.dropped}
		default:
			out[i] = anywhere.Unwatched{For: max(now.Sub(since), 0)}
		}
	}
	return out
}

// Waiting is how many waits the mailbox holds.
func (m *Mailbox) Waiting() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waitsAll
}

func (m *Mailbox) holdLocked(source string) error {
	if m.count[source] >= m.lim.PerSource {
		return errFull
	}
	if m.total >= m.lim.Total {
		return errBusy
	}
	m.count[source]++
	m.total++
	return nil
}

// dropLocked lets go of e's place in the bounds and in its order; the
// caller takes it out of slots or queues.
func (m *Mailbox) dropLocked(e *entry) {
	if e.queued {
		m.queueOrder.Remove(e.el)
	} else {
		m.slotOrder.Remove(e.el)
	}
	if m.count[e.source]--; m.count[e.source] <= 0 {
		delete(m.count, e.source)
	}
	m.total--
}

func (m *Mailbox) get(names []string, take bool, source string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(m.now())
	return m.getLocked(names, take, source)
}

func (m *Mailbox) getLocked(names []string, take bool, source string) []byte {
	if take {
		m.lookedLocked(names, source, false)
	}
	var out []byte
	for i, n := range names {
		if take {
			for _, e := range m.queues[n] {
				out = anywhere.AppendRecord(out, i, e.blob)
				m.dropLocked(e)
			}
			delete(m.queues, n)
			continue
		}
		if e := m.slots[n]; e != nil {
			out = anywhere.AppendRecord(out, i, e.blob)
		}
	}
	return out
}

// expireLocked drops what outlived its time: the blobs that expire and
// the looks it forgets, each order's walk ended by the first one kept
// (slotOrder, queueOrder, lookOrder): each blob and look is looked at
// once when it goes, so what a request spends here does not grow with
// what the relay holds (Limits.Total). Sweep calls it even when no one
// asks. (A clock set back only keeps some a little longer.)
func (m *Mailbox) expireLocked(now time.Time) {
	for el := m.slotOrder.Front(); el != nil && now.After(el.Value.(*entry).expires); el = m.slotOrder.Front() {
		e := el.Value.(*entry)
		m.dropLocked(e)
		delete(m.slots, e.name)
	}
	for el := m.queueOrder.Front(); el != nil && now.After(el.Value.(*entry).expires); el = m.queueOrder.Front() {
		e := el.Value.(*entry)
		m.dropLocked(e)
		// The oldest of its queue too (one TTL), among MaxQueue at most.
		q := m.queues[e.name]
		if i := slices.Index(q, e); i >= 0 {
			q = slices.Delete(q, i, i+1)
		}
		if len(q) == 0 {
			delete(m.queues, e.name)
		} else {
			m.queues[e.name] = q
		}
	}
	for el := m.lookOrder.Front(); el != nil && now.Sub(el.Value.(*look).at) > m.lim.LookMemory; el = m.lookOrder.Front() {
		m.unlookLocked(el)
	}
}

// Held is how many blobs the mailbox holds.
func (m *Mailbox) Held() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total
}

func (m *Mailbox) sweep(ctx context.Context) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.mu.Lock()
			m.expireLocked(m.now())
			m.mu.Unlock()
		}
	}
}

// Allocations is how many TURN allocations the relay holds now.
func (r *Relay) Allocations() int { return r.quota.held() }

// Waiting is how many waits for calls the relay holds now.
func (r *Relay) Waiting() int { return r.box.Waiting() }
