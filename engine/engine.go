// Package engine is Ferry's transfer engine: identity and trust, the wire
// protocol, the QUIC and TCP+TLS transports, and the rules for receiving files
// safely. It never imports Fyne: the GUI, the CLI and the tests are its clients.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/anywhere"
	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/internal/netwatch"
	"github.com/ferrydrop/ferry/engine/internal/pack"
	"github.com/ferrydrop/ferry/engine/internal/resume"
	"github.com/ferrydrop/ferry/engine/internal/transport/auto"
	"github.com/ferrydrop/ferry/engine/internal/transport/join"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/bufpool"
	"github.com/ferrydrop/ferry/internal/clock"
)

// ParseAcceptPolicy checks a policy name from a flag or a settings file.
func ParseAcceptPolicy(s string) (AcceptPolicy, error) {
	switch p := AcceptPolicy(s); p {
	case AcceptAsk, AcceptAll, AcceptTrusted:
		return p, nil
	}
	return "", fmt.Errorf("unknown accept policy %q: use ask, all or trusted", s)
}

// Options configure an Engine. The zero value of every field but ConfigDir is usable.
type Options struct {
	// ConfigDir holds the identity, the trust store and resume state. Required.
	ConfigDir string
	// Name is the device name shown to peers; empty means the host name.
	Name string
	// DownloadDir is where received files go; empty means ~/Downloads.
	DownloadDir string
	// Listen is "host:port" for both QUIC (UDP) and TCP; empty means ":0" (any
	// free port, the same number for both when possible).
	Listen string
	// ListenAnyIfTaken: when Listen's port is taken for a transport, that
	// transport listens on any free port instead of not at all (the app asks
	// for 47800 and must receive even when another program holds it).
	ListenAnyIfTaken bool
	// LinkListen is "host:port" for the browser links' HTTP server (links.go;
	// ListenAnyIfTaken applies to it too); empty means Listen's host with
	// port 47880 (DefaultLinkPort), or any free port when that is taken or
	// when Listen asks for any port.
	LinkListen string
	// ServeLinks puts the browser-link server in the receiver table from
	// the start, so that Start opens it (and Listeners reports it) before
	// any link; otherwise it joins the table at the first link.
	ServeLinks bool
	// Accept is the receiving policy; empty means AcceptAsk.
	Accept AcceptPolicy
	// AutoAcceptTrusted accepts offers from trusted devices without a prompt under AcceptAsk.
	AutoAcceptTrusted bool
	// PromptTimeout declines an unanswered offer; zero means 2 minutes.
	PromptTimeout time.Duration
	// ShowsCodes: the client shows the verification code of every session
	// with a device not trusted yet as it is announced (EventPair), even
	// one accepted without asking (ferry-cli receive --pair): the sender
	// is told its code is shown (wire.Prompt, Decision.CodeShown) and its
	// user may compare it. Off, only an offer's prompt shows the code.
	ShowsCodes bool
	// MaxPrompts bounds offers waiting for an answer at once; zero means 8.
	// Further offers wait for a place, told to the client (EventQueued),
	// 32 at most (4 per address); beyond that they are declined as busy
	// instead of stacking up.
	MaxPrompts int
	// MuteDeclined is how long offers from an untrusted device, or from an
	// address, are declined without asking once the user declined two of
	// its offers within that time; zero means 2 minutes, negative mutes
	// nobody.
	MuteDeclined time.Duration
	// NoListen lists kinds of the transport table not to listen on (tests
	// of the fallback); nil listens on every kind.
	NoListen []addr.Kind
	// RetryFor is how long a sender keeps reconnecting after the connection
	// drops (peer killed, network gone, machine asleep); zero means 2 minutes,
	// negative means never retry.
	RetryFor time.Duration
	// MaxPartialAge discards unfinished incoming transfers (.partial files and
	// resume state) not touched for this long, when receiving starts and
	// every hour while it receives, and the leaf caches of unfinished sends
	// of the same age when sending starts (at most hourly); zero means 7
	// days, negative keeps them forever.
	MaxPartialAge time.Duration
	// DisableResume keeps no resume state for incoming transfers (to measure
	// what keeping it costs); an interrupted transfer then starts over.
	DisableResume bool
	// SyncFiles fsyncs every received file before it gets its final name.
	// Off by default, like rsync and scp (see store.Dest.SyncOnFinalize).
	SyncFiles bool
	// BufferedIO reads sent and writes received chunks through the page
	// cache only. By default file I/O follows the data (package fileio, on
	// Linux): a chunk in the page cache is read from it and one that is not
	// with direct I/O; whole received chunks are direct writes into a
	// preallocated file, the rest goes through the cache with write-behind.
	// Buffered I/O costs the receiver more CPU, and leaves the last windows
	// of each file unwritten when it gets its final name, where direct
	// writes leave none (docs/benchmarks/pagecache-default-2026-12-02.md).
	// Measurements: docs/benchmarks/README.md ("File I/O").
	BufferedIO bool
	// ChunkSize is the chunk size of outgoing transfers; zero means 1 MiB.
	ChunkSize int
	// Compression says when chunks sent to a receiver that takes them
	// travel compressed (zstd, packing.go): "" or "auto" while the link is
	// what a send waits on and slower than compressing; "always" (every
	// chunk that shrinks); "never". Another word fails New.
	Compression string
	// Transport tunes the transports; the zero value is the default of each field.
	Transport TransportConfig
	// ProgressInterval is how often a transfer publishes progress (and
	// metrics every fourth time); zero means 250 ms.
	ProgressInterval time.Duration
	// ManifestBudget bounds the memory the file lists of the offers from
	// one address may take while they are read, asked about and received,
	// in bytes: each offered file counts core.ManifestFileCost (32 bytes:
	// what stays in memory per file) plus what its list keeps in memory
	// (the first 256 KiB of a Ferry offer's entries; the rest is kept on
	// disk, see ManifestDisk; a LocalSend offer, held whole, counts
	// core.HeldFileCost per file and its names). An offer over it is
	// refused as too large, with the figure; all addresses together hold
	// at most 1.5 times it. Zero means core.DefaultManifestBudget (128
	// MiB: a Ferry offer of the protocol's million files takes about 40
	// MB). No number of files is refused as such.
	ManifestBudget int64
	// ManifestDisk bounds the disk the file lists of Ferry offers from one
	// address take beyond what is kept in memory (a spill file under the
	// config folder, removed when the session ends); all addresses
	// together take at most twice it. An offer over it is refused as too
	// large, with the figure. Zero means 1 GiB (10^6 files with names of
	// about 1000 bytes).
	ManifestDisk int64
	// SessionIdleTimeout closes an accepted incoming session over which
	// nothing arrives (no data, no control message) for this long; zero
	// means 1 minute.
	SessionIdleTimeout time.Duration
	// Clock stamps what the engine records and reports (event times,
	// durations, prompt expiry, retry budgets, the trust store's dates) and
	// drives its timers: the dial race's head start (unless
	// Transport.Clock is set), the back-off between attempts, the prompt's
	// expiry and the progress ticker. Nil means the system clock. Socket
	// deadlines stay on the system clock.
	Clock Clock
	// Resolver finds where a device is now, for sends whose Target follows
	// the device (Target.Follow); nil: the engine looks only at the
	// target's addresses and the ones it remembers.
	Resolver Resolver
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Clock tells the time and drives timers (package clock); tests inject a
// clock.Fake and move it on by hand.
type Clock = clock.Clock

// Target says where to send: the ways to reach a device and, optionally,
// who must answer there.
type Target struct {
	// Addrs are the device's addresses, best first (AddrsAt gives every
	// kind at one "host:port"). The addresses of one host are one place:
	// its kinds race as the transport table says, and each place gets a
	// head start over the next; the first that connects wins.
	Addrs []addr.Addr
	// ID, when set, is the device ID the peer must prove; a different key is refused.
	ID string
	// Follow, with ID set, makes the addresses only where the device was
	// seen: each attempt (the first, every reconnect, Retry) looks the
	// device up again by ID (Options.Resolver, then the addresses above,
	// then the ones it was last reached at, then those hosts on
	// DefaultPort), so a device that moved or restarted on another port is
	// found. Without it the addresses are explicit and dialled as given.
	Follow bool
}

// want is the device that must answer at t: zero when t names no ID
// (trust on first use).
func (t Target) want() (identity.DeviceID, error) {
	if t.ID == "" {
		return identity.DeviceID{}, nil
	}
	return identity.ParseID(t.ID)
}

// SendOptions tune one Send.
type SendOptions struct {
	// Transport is "auto" (default), "quic" or "tcp".
	Transport string
	// Streams is the number of parallel data streams; zero picks a default per transport.
	Streams int
}

// TrustedPeer is a device this one has exchanged files with.
type TrustedPeer struct {
	// ID is its peer ID (package peer): a Ferry device ID, or
	// "localsend:" and a fingerprint; SetTrusted and Forget take it.
	ID           string
	Name         string
	LastAddr     string
	LastSeen     time.Time
	AlwaysAccept bool
	// Paired: the user confirmed its verification code (ConfirmPair, Pair).
	Paired bool
}

// ErrUnknownTransfer is returned for a transfer ID the engine does not know.
var ErrUnknownTransfer = errors.New("unknown transfer")

// ErrStillRunning is returned for a Retry or Continue of a transfer that
// runs: its result is not out yet.
var ErrStillRunning = errors.New("still running")

// Engine sends and receives files. Create it with New; it is safe for concurrent use.
type Engine struct {
	// packMode says when sends compress (Options.Compression); codec
	// packs and unpacks for every session, in unpackSlots as it receives
	// (packing.go).
	packMode    pack.Mode
	codec       pack.Codec
	unpackSlots chan []byte
	// fileLimit, when set (tests only), stands in for the largest file a
	// download folder's file system holds (store.MaxFileSize).
	fileLimit func(dir string) store.FileLimit
	// writable, when set (tests only), stands in for the check that files
	// can be made in a download folder when an offer arrives (store.Writable).
	writable func(dir string) error
	// features, when set (tests only), replace the hello's features: an
	// engine that plays an older build.
	features []string
	// restoring, when set (tests only), runs as a session begins to check
	// what an earlier one kept (resumeFrom).
	restoring func()
	// restored, when set (tests only), runs as a session has restored what
	// an earlier one kept, before it tells the sender.
	restored func(*receiver)
	// hearing, when set (tests only), runs as a sender heard the receiver's
	// last word on a delivery, before it forgets the delivery (heard): what
	// a sender killed then leaves on disk.
	hearing func(*Transfer)
	// discarding, when set (tests only), runs once DiscardPartialFiles has
	// removed the partials it listed (or found nothing listed under the
	// key), before it drops their state.
	discarding func()
	// agedListed, when set (tests only), runs as CleanPartials has listed
	// an unfinished transfer past the age, before it discards it.
	agedListed func(key string)
	// discardListed, when set (tests only), runs as DiscardPartialFiles
	// has found the transfer to discard, before it removes its partials.
	discardListed func()
	// resumeWaits, when set (tests only), runs as a session that would
	// resume a transfer waits for a discard of it to end (takeOverResume).
	resumeWaits func()
	// readingBack, when set (tests only), runs as a resume reads chunk c
	// of a kept partial back to check its CRC32C (restore).
	readingBack func(path string, c int)
	// afterResult, when set (tests only), runs as finish has published a
	// transfer's result, before its Done closes.
	afterResult func(*Transfer)

	ident  *identity.Identity
	trust  *identity.Store
	resume *resume.Dir // resume state of unfinished transfers
	// holding makes taking a kept delivery and registering its send one
	// step (Engine.send).
	holding sync.Mutex
	// lists keeps incoming offers' file lists beyond a memory bound on
	// disk, within a budget (offerlist.go).
	lists *offerLists
	// bufs bounds the chunk buffers of every receiving session together.
	bufs *bufpool.Pool
	// admit shares what incoming sessions may hold before a decision fairly
	// between addresses and devices, and remembers whom the user muted.
	admit *core.Admission
	// pairs counts hidden tries at the verification code (pairbudget.go).
	pairs *pairTries
	bus   Bus
	// lsPINs tells of LocalSend offers refused for their PIN (EventLocalSendPIN).
	lsPINs pinWatch
	// refusals tells of offers refused before they were read (EventRefused).
	refusals refusedWatch
	log      *slog.Logger
	opts     Options
	// transports is the transport table; reg knows the sessions of every
	// listener, so that one transport's session can take over another's.
	transports []auto.Entry
	reg        *join.Registry
	// netw tells the transports when this device's network changes.
	netw *netwatch.Watcher
	// instance names this run of the engine to the devices that reach it
	// through a relay (anywhere.Server.Instance): a new one at each start.
	instance string
	// unanswered keeps, for the calls through a relay, the presences
	// whose call went unanswered: not called again until put again.
	unanswered anywhere.Unanswered
	// anywhereLoopback makes calls through a relay offer loopback
	// addresses only (tests, anywhere.go).
	anywhereLoopback bool
	// anywhereRelayOnly makes calls offer the relay's TURN candidates
	// only (tests: a relayed path on loopback).
	anywhereRelayOnly bool
	// anywhereGrace is anywhere.Server.Grace (tests; 0: ReachGrace).
	anywhereGrace time.Duration
	// reaches says whether this device's networks may reach an address
	// (netwatch.Reaches of the interfaces' addresses; tests replace it).
	reaches func(netip.Addr) bool
	// relays holds the relay secrets (SetRelaySecret) and the relays
	// served through (ServeAnywhere), anywhere.go.
	relays relayState

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the engine starts
	rxWG   sync.WaitGroup // the goroutines serving incoming sessions (also in wg)

	// listenMu orders Start, StopReceiving, AddReceiver and Close; it is
	// held while the receiver table's rows open and close, so e.mu need not be.
	listenMu sync.Mutex

	// receivers is the receiver table (receivers.go), guarded by listenMu.
	receivers receiverTable

	mu          sync.Mutex // guards the fields below
	name        string
	downloadDir string
	accept      AcceptPolicy
	autoTrusted bool
	// receiving: the receiver table is open (Start); listenStatus says
	// how each row fared.
	receiving    bool
	listenStatus []ListenerStatus
	// rxCtx is the context of incoming sessions; StopReceivingNow ends it
	// (with errStoppedReceiving) and starts a new one.
	rxCtx     context.Context
	stopRx    context.CancelCauseFunc
	transfers map[string]*Transfer
	resuming  map[string]*receiver // resume key -> the session holding its partials
	// discardingKeys: resume key -> a discard of its partials running,
	// closed when it is done; a session that would resume them waits
	// (takeOverResume), and a discard does not start while one resumes.
	discardingKeys   map[string]chan struct{}
	acceptedSessions int       // incoming sessions that accepted an offer, running now
	trimming         bool      // trimLoop runs (from the first Start)
	ageing           bool      // ageLoop runs (from the first Start)
	leavesAged       time.Time // when a send last started ageLeafCaches' clean
	serving          int       // incoming sessions being served (any stage)
	closed           bool

	// shaCache is the LocalSend sender's sha256 cache (localsend_hash.go).
	shaCache lsHashCache
}

// New loads (or creates, on first run) the device identity and trust store.
func New(opts Options) (*Engine, error) {
	if opts.ConfigDir == "" {
		return nil, errors.New("engine: no config dir")
	}
	id, err := identity.LoadOrCreate(opts.ConfigDir)
	if err != nil {
		return nil, err
	}
	opts.Clock = clock.Or(opts.Clock)
	if opts.Transport.Clock == nil {
		opts.Transport.Clock = opts.Clock
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	packMode, err := pack.ParseMode(opts.Compression)
	if err != nil {
		return nil, err
	}
	trust, err := identity.OpenStoreWith(opts.ConfigDir, opts.Clock.Now, log)
	if err != nil {
		return nil, err
	}
	if opts.Name == "" {
		opts.Name = defaultName()
	} else if err := CheckName(opts.Name); err != nil {
		return nil, err
	}
	if opts.DownloadDir == "" {
		home, _ := os.UserHomeDir()
		opts.DownloadDir = filepath.Join(home, "Downloads")
	}
	if opts.Accept == "" {
		opts.Accept = AcceptAsk
	}
	if opts.PromptTimeout <= 0 {
		opts.PromptTimeout = 2 * time.Minute
	}
	if opts.MaxPrompts <= 0 {
		opts.MaxPrompts = 8
	}
	if opts.MuteDeclined == 0 {
		opts.MuteDeclined = core.DefaultMuteDeclined
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = 1 << 20
	}
	opts.ChunkSize = min(max(opts.ChunkSize, wire.MinChunkSize), wire.MaxChunkSize)
	if opts.ManifestBudget <= 0 {
		opts.ManifestBudget = core.DefaultManifestBudget
	}
	if opts.ManifestDisk <= 0 {
		opts.ManifestDisk = defaultManifestDisk
	}
	if opts.SessionIdleTimeout <= 0 {
		opts.SessionIdleTimeout = time.Minute
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = 250 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	rxCtx, stopRx := context.WithCancelCause(ctx)
	netw := netwatch.New(netwatch.Options{})
	e := &Engine{netw: netw, instance: anywhere.NewInstance(),
		rxCtx: rxCtx, stopRx: stopRx,
		ident: id, trust: trust, log: log, opts: opts,
		bufs:     bufpool.New(receiveBufferBudget, receiveBufferIdle),
		packMode: packMode, unpackSlots: newUnpackSlots(),
		admit:      core.NewAdmission(opts.MaxPrompts, opts.MuteDeclined, opts.ManifestBudget, opts.Clock.Now),
		pairs:      newPairTries(opts.Clock.Now),
		resume:     resume.Open(filepath.Join(opts.ConfigDir, "resume"), log, opts.Clock.Now),
		lists:      newOfferLists(filepath.Join(opts.ConfigDir, "offers"), opts.ManifestDisk, log),
		transports: transportTable(opts.Transport, netw), reg: join.NewRegistry(),
		ctx: ctx, cancel: cancel,
		name: opts.Name, downloadDir: opts.DownloadDir, accept: opts.Accept, autoTrusted: opts.AutoAcceptTrusted,
		transfers: map[string]*Transfer{}, resuming: map[string]*receiver{}, discardingKeys: map[string]chan struct{}{},
	}
	e.lsPINs.init(e)
	e.refusals.init(e)
	e.receivers.rows = e.ferryReceivers()
	if opts.ServeLinks {
		e.addLinkRow()
	}
	return e, nil
}

func defaultName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "Ferry device (" + runtime.GOOS + ")"
	}
	return h
}

// now is the engine clock's time.
func (e *Engine) now() time.Time { return e.opts.Clock.Now() }

// ID is this device's full ID.
func (e *Engine) ID() string { return e.ident.ID.String() }

// HumanID is this device's ID in groups of four.
func (e *Engine) HumanID() string { return e.ident.ID.Human() }

// Name is this device's name.
func (e *Engine) Name() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.name
}

// SetName changes the device name shown to peers from now on.
func (e *Engine) SetName(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.name = name
	return nil
}

// CheckName says why name cannot be a device's name, nil when it can: it
// is shown to other devices, which refuse a name of more than
// wire.MaxNameLen bytes (every send failed "protocol violation: device
// name is 300 bytes"). Control and format characters pass (peers show
// them escaped); where a person types the name, InvisibleIn refuses them.
func CheckName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errors.New("the device name is empty: other devices show it")
	case !utf8.ValidString(name):
		return errors.New("the device name is not valid text (UTF-8)")
	case len(name) > wire.MaxNameLen:
		return fmt.Errorf("the device name is %d bytes long; other devices take at most %d (about %d letters of a Latin alphabet, fewer of others)",
			len(name), wire.MaxNameLen, wire.MaxNameLen)
	}
	return nil
}

// InvisibleIn says why a name typed for this device holds a character
// other devices would show escaped or would not show (a line break, a
// bidi override turning the rest around), nil when it holds none.
func InvisibleIn(name string) error {
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("the device name holds an invisible character (%U): other devices would show it wrongly", r)
		}
	}
	return nil
}

// DownloadDir is where received files go.
func (e *Engine) DownloadDir() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.downloadDir
}

// SetDownloadDir changes where files of later transfers go. The folder is created if missing.
func (e *Engine) SetDownloadDir(dir string) error {
	abs, err := usableDir(dir)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.downloadDir = abs
	e.mu.Unlock()
	return nil
}

// DownloadDirError says why a folder cannot take received files.
type DownloadDirError struct {
	Dir string // the folder, absolute
	// Why is the reason in words: "it is a file", "files cannot be saved
	// in it (permission denied)", "mkdir /mnt/usb: permission denied".
	Why string
	Err error
}

func (e *DownloadDirError) Error() string {
	return "cannot use " + e.Dir + " as the download folder: " + e.Why
}

func (e *DownloadDirError) Unwrap() error { return e.Err }

// usableDir makes dir absolute and creates it if missing: a folder
// received files can go to.
func usableDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("no download folder given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) && pe.Path == abs {
			err = withoutPath(err) // MkdirAll names the path again
			if errors.Is(err, syscall.ENOTDIR) {
				err = errors.New("it is a file") // mkdir's "not a directory", of this very path
			}
		}
		return "", &DownloadDirError{Dir: abs, Why: err.Error(), Err: err}
	}
	// A folder this process cannot write in would take offers and fail
	// every file: said here, where the folder is chosen, instead.
	probe, err := os.CreateTemp(abs, ".ferry-write-check-*")
	if err != nil {
		err = withoutPath(err)
		return "", &DownloadDirError{Dir: abs, Why: "files cannot be saved in it (" + err.Error() + ")", Err: err}
	}
	probe.Close()
	os.Remove(probe.Name())
	return abs, nil
}

// SetAccept changes the receiving policy for later offers.
func (e *Engine) SetAccept(p AcceptPolicy, autoAcceptTrusted bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.accept, e.autoTrusted = p, autoAcceptTrusted
}

// Subscribe returns the engine's events. The engine never waits for a
// subscriber; call the returned function to unsubscribe.
func (e *Engine) Subscribe(buffer int) (<-chan Event, func()) { return e.bus.Subscribe(buffer) }

// Trusted lists the devices this one has exchanged files with, most recent first.
func (e *Engine) Trusted() []TrustedPeer {
	var out []TrustedPeer
	for _, p := range e.trust.List() {
		tp := TrustedPeer{ID: p.ID, Name: p.Name, LastSeen: p.LastSeen, AlwaysAccept: p.AlwaysAccept, Paired: p.Paired}
		if len(p.LastAddrs) > 0 {
			tp.LastAddr = p.LastAddrs[0]
		}
		out = append(out, tp)
	}
	return out
}

// SetTrusted marks a device as always accepted (or not). id is a peer ID
// as events and Trusted give it (package peer: a Ferry device ID, or
// "localsend:" and a fingerprint); a peer that proved no key cannot be
// trusted.
func (e *Engine) SetTrusted(id string, on bool) error {
	pid, err := peer.Parse(id)
	if err != nil {
		return err
	}
	p, _ := e.trust.Get(pid)
	return e.trust.SetAlwaysAccept(pid, p.Name, on)
}

// Forget removes a device from the trust store; id is a peer ID, as for
// SetTrusted.
func (e *Engine) Forget(id string) error {
	pid, err := peer.Parse(id)
	if err != nil {
		return err
	}
	if err := e.trust.Forget(pid); err != nil {
		return err
	}
	e.anywherePeersChanged()
	return nil
}

// Transfer is the handle of one running or finished transfer.
type Transfer struct {
	id        string
	dir       Direction
	cancel    context.CancelCauseFunc
	done      chan struct{}
	started   time.Time
	decisions chan Decision // receiving side: the user's answer to the offer
	asking    atomic.Bool   // an offer is waiting for that answer
	// onScreen, on the receiving side, carries where the offer stands (the
	// engine queues it, OfferOnScreen says where the client keeps it) to
	// the session, which tells the sender; nil when the sender does not
	// read it (its hello lacks wire.FeaturePrompt).
	onScreen chan screenWord
	// moves: the sender takes its offer's moves up the queue
	// (wire.FeaturePromptMoves); queued: its place was said.
	moves, queued atomic.Bool
	// pair is the session's verification code (pairing), once known.
	pair atomic.Pointer[pairState]
	// resultOut: the transfer's result is published (finish), or on its
	// way to every subscriber; Done closes after. See ended.
	resultOut atomic.Bool

	// Sending side: what was sent where (for Retry), and pause/resume signals.
	paths    []string
	text     string
	target   Target
	opts     SendOptions
	resume   chan struct{}
	pauseNow chan struct{}
	// ls is set for a send to a LocalSend device (localsend_send.go).
	ls *lsSend
	// held keeps a send's delivery on disk until its sender hears the
	// receiver's last word on it (Engine.heard); nil keeps nothing.
	held *resume.HeldDelivery
	// reports: the files reported (EventFile), each once per outcome
	// over the transfer's sessions; a receiver's next session and a
	// Retry are new Transfers of the same ID, which take the one before's
	// (register). Made on first use (fileReports).
	reports atomic.Pointer[fileReports]

	mu          sync.Mutex // guards the fields below
	peer        PeerInfo
	delivery    string // see Delivery; a receiver learns it from the offer
	state       State
	result      Result
	conn        Conn
	stopAttempt context.CancelCauseFunc // ends the current attempt (pause)
	// pathLost: the last attempt ended because this device's address under
	// its session went away (migrate.go); the next one calls through a
	// relay at once, without the LAN's head start.
	pathLost bool
	// tried is where the last attempt dialled a followed device: the
	// back-off before the next ends once it is seen elsewhere
	// (outboxHost.Moved).
	tried []addr.Addr
	// asked is when the offer began waiting for its answer; waited, how
	// long it waited until the files first moved, less checked
	// (Result.Waited).
	asked  time.Time
	waited time.Duration
	// checked is how long the receiver spent checking what it kept from an
	// earlier session, over every attempt (Result.Checked).
	checked time.Duration
	// connecting is how long the send took to connect its first session
	// (Result.Connecting); 0 until then.
	connecting time.Duration
}

// markConnected notes that an attempt connected at now: the first one
// ends the transfer's connecting time.
func (t *Transfer) markConnected(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.connecting == 0 {
		t.connecting = max(now.Sub(t.started), time.Nanosecond)
	}
}

// ID identifies the transfer in events and in Decide/Cancel.
func (t *Transfer) ID() string { return t.id }

// Delivery is the ID of the delivery the transfer is: one Send (with its
// reconnects, pauses and Retry), chosen by the sender and the same on both
// sides. Two sends of the same files are two deliveries, even where the
// second resumes the first's partial data. A sender's transfer ID is its
// delivery ID; a receiver's is derived from the sender and the delivery,
// so no peer can pick the ID of another's transfer. Empty for a pairing
// without files.
func (t *Transfer) Delivery() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.delivery
}

// Items is what a sending transfer offers (what Retry sends again); empty
// for a receiving one.
func (t *Transfer) Items() Items {
	return Items{Paths: slices.Clone(t.paths), Text: t.text}
}

// Done is closed when the transfer has ended.
func (t *Transfer) Done() <-chan struct{} { return t.done }

// ended reports whether t has ended as Retry and Continue see it: its
// result is out, even where Done has yet to close. A client that acts on
// the result event at once (the app's rejoin retries a send whose device
// is seen again) then goes on with the delivery, where it was told that
// it still ran. Done still closes only after the event is out, so that
// one who waits for Done finds the result among its events.
func (t *Transfer) ended() bool {
	if t.resultOut.Load() {
		return true
	}
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// Result is the outcome; valid after Done.
func (t *Transfer) Result() Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.result
}

// currentState is the transfer's state now.
func (t *Transfer) currentState() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// peerName is the other device's name, as far as it is known yet.
func (t *Transfer) peerName() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.peer.Name
}

// lsTransport names what carries a LocalSend transfer: HTTPS, or plain
// HTTP for a LocalSend device that serves without encryption. Ferry's own
// LocalSend server serves HTTPS only.
func (t *Transfer) lsTransport() string {
	if t.ls != nil && t.ls.to.Scheme == "http" {
		return "http"
	}
	return "https"
}

// Cancel stops the transfer; the peer is told.
func (t *Transfer) Cancel() { t.cancel(errCancelledByUser) }

// newTransferID makes a new sending transfer's ID, which is also its
// delivery ID (see Transfer.Delivery).
func newTransferID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (e *Engine) register(t *Transfer) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	if old, ok := e.transfers[t.id]; ok && t.dir == Sending && old.dir == Sending && !old.ended() {
		// Two Retry or Continue calls of one delivery at once: the first
		// runs it. (A receiver's new session of a delivery takes over
		// from its old one: takeOverResume.)
		return fmt.Errorf("transfer %s is %w", t.id, ErrStillRunning)
	}
	if old, ok := e.transfers[t.id]; ok && old != t && old.dir == t.dir {
		// A later session of the delivery (a receiver's, a Retry) goes on
		// with what the one before reported.
		t.reports.Store(old.fileReports())
	}
	e.transfers[t.id] = t
	// Keep the table bounded: forget the oldest finished transfers.
	if len(e.transfers) > 1000 {
		var old []*Transfer
		for _, x := range e.transfers {
			select {
			case <-x.done:
				old = append(old, x)
			default:
			}
		}
		sort.Slice(old, func(i, j int) bool { return old[i].started.Before(old[j].started) })
		for _, x := range old[:len(old)/2] {
			delete(e.transfers, x.id)
		}
	}
	return nil
}

func (e *Engine) transfer(id string) (*Transfer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.transfers[id]
	if !ok {
		return nil, fmt.Errorf("transfer %s: %w", id, ErrUnknownTransfer)
	}
	return t, nil
}

// Transfer returns the handle of a known transfer.
func (e *Engine) Transfer(id string) (*Transfer, error) { return e.transfer(id) }

// Retry continues a sending transfer that ended unfinished: its files go
// again to the same target under the same transfer (and delivery) ID.
// Whatever the receiver kept from the earlier sessions is not sent again,
// and the result counts every session. A transfer that was done is sent
// again as a new delivery, with an ID and totals of its own.
func (e *Engine) Retry(ctx context.Context, id string) (*Transfer, error) {
	t, err := e.transfer(id)
	if err != nil {
		return nil, err
	}
	if t.dir != Sending {
		return nil, fmt.Errorf("transfer %s was received here: the sender can send it again", id)
	}
	if !t.ended() {
		return nil, fmt.Errorf("transfer %s is %w", id, ErrStillRunning)
	}
	items := Items{Paths: t.paths, Text: t.text}
	if t.ls != nil {
		// LocalSend (localsend_send.go): the files that did not arrive go
		// again; a delivery that was done is sent again whole.
		if r := t.Result(); r.State != StateDone {
			return e.sendLocalSend(ctx, id, r, t.ls, items)
		}
		return e.sendLocalSend(ctx, newTransferID(), Result{}, &lsSend{to: t.ls.to, opts: t.ls.opts, delivered: map[int]bool{}}, items)
	}
	if r := t.Result(); r.State != StateDone {
		// The same delivery goes on: same ID (one row in the app), totals
		// counted over every session.
		return e.send(ctx, id, r, t.target, items, t.opts)
	}
	return e.send(ctx, newTransferID(), Result{}, t.target, items, t.opts)
}

// Cancel stops a transfer.
func (e *Engine) Cancel(id string) error {
	t, err := e.transfer(id)
	if err != nil {
		return err
	}
	t.Cancel()
	return nil
}

// Decide answers an offer that raised an EventOffer.
func (e *Engine) Decide(id string, d Decision) error {
	t, err := e.transfer(id)
	if err != nil {
		return err
	}
	if !t.asking.Load() {
		return fmt.Errorf("transfer %s is not waiting for a decision", id)
	}
	if d.Accept && d.Dest != "" {
		if d.Dest, err = usableDir(d.Dest); err != nil {
			return err
		}
	}
	select {
	case t.decisions <- d:
		return nil
	default:
		return fmt.Errorf("transfer %s is not waiting for a decision", id)
	}
}

// OfferOnScreen tells the engine where its client keeps an incoming offer
// that waits for a decision (EventOffer, StateWaiting): shown, its prompt
// is on the user's screen now, with its verification code; not shown, the
// client keeps it queued behind another offer's prompt, which its user
// answers first. A sender that reads it (a Ferry whose hello lists
// wire.FeaturePrompt) is told, and asks its own user to compare codes only
// once the offer is shown (PairInfo.Shown). A client that shows one
// prompt at a time says false for an offer it queues and true as it shows
// each; one that says nothing leaves its senders waiting for the decision
// before they ask to compare. It never blocks.
func (e *Engine) OfferOnScreen(id string, shown bool) error {
	t, err := e.transfer(id)
	if err != nil {
		return err
	}
	if !t.asking.Load() {
		return fmt.Errorf("transfer %s is not waiting for a decision", id)
	}
	t.tellScreen(screenWord{shown: shown})
	return nil
}

// screenWord is where an offer stands on the receiver's screen, as its
// sender is told (wire.Prompt): shown, or not; not shown, ahead is how
// many offers wait for the user before it when the engine queues it for a
// place among the prompts (Options.MaxPrompts), 0 when the client keeps
// it behind the prompt it shows.
type screenWord struct {
	shown bool
	ahead int
}

// tellScreen hands w to the session that tells the sender, if it does. It
// never blocks: the last word counts, an older one not yet told goes.
func (t *Transfer) tellScreen(w screenWord) {
	if t.onScreen == nil {
		return
	}
	for {
		select {
		case t.onScreen <- w:
			return
		default:
			select {
			case <-t.onScreen:
			default:
			}
		}
	}
}

// Close stops receiving, cancels every transfer and waits for the engine's goroutines.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	// Sessions end first, while the sockets are still open, so that peers are
	// told (QUIC's CONNECTION_CLOSE) instead of waiting for an idle timeout.
	e.cancel()
	e.wg.Wait()
	e.listenMu.Lock()
	defer e.listenMu.Unlock()
	e.withdraw()
	err := e.closeDraining()
	e.lsPINs.close()
	e.refusals.close()
	e.netw.Close()
	return errors.Join(err, e.trust.Flush()) // contacts recorded within the last second
}

// takeOverResume makes rx the holder of its resume key, ending an older
// session that still holds it and waiting until that one saved its state.
func (e *Engine) takeOverResume(rx *receiver) {
	e.mu.Lock()
	// A discard of these partials that began first ends first: this session
	// then finds none to restore, and starts afresh, where it restored
	// files that were removed under it.
	e.afterDiscardLocked(rx.resumeKey, e.resumeWaits)
	old := e.resuming[rx.resumeKey]
	e.resuming[rx.resumeKey] = rx
	e.mu.Unlock()
	if old != nil {
		if old.t.ID() == rx.t.ID() {
			old.t.cancel(errSuperseded)
		} else {
			old.t.cancel(errTakenOver)
		}
		select {
		case <-old.done:
		case <-time.After(10 * time.Second):
			e.log.Warn("an older session did not end in time", "key", rx.resumeKey)
		}
	}
}

func (e *Engine) releaseResume(rx *receiver) {
	e.mu.Lock()
	if rx.resumeKey != "" && e.resuming[rx.resumeKey] == rx {
		delete(e.resuming, rx.resumeKey)
	}
	e.mu.Unlock()
	if rx.resumeKey != "" {
		e.resume.Unreserve(rx.resumeKey) // its file on disk goes with the key's state
	}
}

// publish sends an event about t.
func (e *Engine) publish(t *Transfer, ev Event) { e.publishAfter(t, nil, ev) }

// publishAfter sends an event about t once first (when set) has run,
// under the bus's lock: an event that another goroutine publishes
// because of what first did reaches each subscriber after ev.
func (e *Engine) publishAfter(t *Transfer, first func(), ev Event) {
	t.mu.Lock()
	ev.TransferID, ev.Delivery, ev.Direction, ev.Peer = t.id, t.delivery, t.dir, t.peer
	if ev.Time.IsZero() {
		ev.Time = e.now()
	}
	if ev.State == "" {
		ev.State = t.state
	}
	t.mu.Unlock()
	e.bus.publishAfter(first, ev)
}

func (e *Engine) setState(t *Transfer, s State) {
	t.mu.Lock()
	changed := t.state != s
	t.state = s
	switch {
	case s == StateWaiting:
		t.markAsked(e.now())
	case s == StateActive && !t.asked.IsZero() && t.waited == 0:
		// The receiver's check of what it kept came after the answer, and
		// after asked: it is said apart (Checked), not as the answer's.
		t.waited = max(e.now().Sub(t.asked)-t.checked, time.Nanosecond)
	}
	t.mu.Unlock()
	if changed {
		e.publish(t, Event{Kind: EventState, State: s})
	}
}

// addChecked adds d to the time the receiver spent checking what it kept
// from an earlier session (Result.Checked).
func (e *Engine) addChecked(t *Transfer, d time.Duration) {
	t.mu.Lock()
	t.checked += d
	t.mu.Unlock()
}

// markAsked notes when the offer began to wait for its answer, the first
// time it did (a resumed transfer asks again: its first wait is kept, as
// its Duration counts from its first start). Called under t.mu.
func (t *Transfer) markAsked(now time.Time) {
	if t.asked.IsZero() {
		t.asked = now
	}
}

// finish records the result, publishes it and closes Done. From the
// moment the result goes out, Retry and Continue take the transfer as
// ended (Transfer.ended); the events of the delivery they go on with
// reach each subscriber after the result.
func (e *Engine) finish(t *Transfer, r Result) {
	t.mu.Lock()
	r.Duration = e.now().Sub(t.started).Seconds()
	r.Waited = t.waited.Seconds()
	r.Checked = t.checked.Seconds()
	r.Connecting = t.connecting.Seconds()
	if t.conn != nil {
		m := t.conn.Metrics()
		r.Metrics = &m
		r.WireBytes = m.BytesSent + m.BytesRecv
		r.Transport = string(t.conn.Transport())
		// The engine keeps finished transfers (for Retry and the history):
		// not their sessions, which can hold what the peer left unread
		// (issue #14: MBs of stream data per session after an attack).
		t.conn = nil
	} else if t.peer.Protocol == ProtocolLocalSend && r.Transport == "" {
		r.Transport = t.lsTransport()
	}
	r.Delivery = t.delivery
	t.state = r.State
	t.result = r
	t.mu.Unlock()
	e.publishAfter(t, func() { t.resultOut.Store(true) }, Event{Kind: EventResult, State: r.State, Result: &r})
	if e.afterResult != nil {
		e.afterResult(t)
	}
	close(t.done)
}
