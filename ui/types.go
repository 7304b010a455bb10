package ui

import (
	"context"
	"errors"
	"image"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
)

// Backend is what the UI asks of the engine and its surroundings. The app
// package implements it over the real engine and discovery; tests use a fake
// that records the calls. Every method may be called on the Fyne goroutine, so
// none of them may block for long: Send and AddDevice start work and return.
type Backend interface {
	// Send starts sending items to dev. Its progress arrives as
	// TransferEvents. Several recipients are several Sends: each transfer
	// has its own progress, result and resume.
	Send(dev Device, items Items) error
	// Decide answers an incoming offer.
	Decide(transferID string, d Decision) error
	// Cancel stops a transfer in either direction.
	Cancel(transferID string) error
	// Pause stops a sending transfer after the chunks in flight; Resume
	// continues it where it stopped.
	Pause(transferID string) error
	Resume(transferID string) error
	// Retry sends a failed or cancelled sending transfer's files again to the
	// same device, as a new transfer whose events arrive like Send's; what
	// the receiver kept is not sent again.
	Retry(transferID string) error
	// Partials lists unfinished incoming transfers kept for resume, newest
	// first; DiscardPartial deletes one's partial files.
	Partials() []PartialTransfer
	DiscardPartial(key string) error
	// AddDevice asks who answers at a "host:port" and remembers it; id,
	// when set (from a device link), is the device ID it must prove.
	AddDevice(ctx context.Context, addr, id string) (Device, error)
	// Settings returns the saved settings; SaveSettings applies and stores
	// them (PolicyOff closes the listeners and withdraws the advertisement).
	Settings() Settings
	SaveSettings(s Settings) error
	// History returns finished transfers, newest first; ClearHistory
	// forgets them all.
	History() []HistoryEntry
	ClearHistory() error
	// OpenFolder shows a folder in the OS file manager.
	OpenFolder(path string) error
	// OpenFile opens a file with the app the desktop uses for it.
	OpenFile(path string) error
	// ShowInFolder opens the folder holding path in the file manager, with
	// path selected where the platform can.
	ShowInFolder(path string) error
	// Thumbnail returns a small picture of an image file, or nil when path
	// is no image it can read. It reads and decodes the file: call it off
	// the Fyne goroutine.
	Thumbnail(path string) image.Image
	// Survey walks paths as a send does and says what it would offer, or
	// the error the send would end with; it stops early with ctx's error.
	// It reads folders: call it off the Fyne goroutine.
	Survey(ctx context.Context, paths []string) (Contents, error)
	// FreeSpace is the space left on the disk holding dir, -1 when unknown.
	FreeSpace(dir string) int64
	// SelfAddresses are the "host:port" addresses this device receives on,
	// best first (empty while receiving is off).
	SelfAddresses() []string
	// KnownDevices lists the devices this one has exchanged files with,
	// most recent first. SetAutoAccept, RenameDevice and ForgetDevice
	// change one of them; a name of "" restores the one it announces.
	KnownDevices() []KnownDevice
	SetAutoAccept(id string, on bool) error
	RenameDevice(id, name string) error
	ForgetDevice(id string) error
	// Pair starts pairing with dev, without files, and returns the ID of
	// the pairing's transfer: its verification code arrives as a
	// TransferPair event with Pair.Only set, its end as a TransferResult.
	Pair(dev Device) (transferID string, err error)
	// ConfirmPair says whether the other device's screen shows the same
	// verification code as a TransferPair event (or an offer's PairCode):
	// a match trusts the device, a mismatch stops the transfer.
	ConfirmPair(transferID string, match bool) error
	// OfferOnScreen says where an incoming offer waiting for an answer
	// stands: shown, its prompt is on screen now, with its verification
	// code; not shown, it is queued behind another prompt. Its sender
	// asks its user to compare codes only once it is shown.
	OfferOnScreen(transferID string, shown bool) error
}

// Items is what one send offers: files and folders, a text, or both.
type Items struct {
	Paths []string
	// Text is a message, a link or what was on the clipboard: at most
	// MaxTextBytes of UTF-8.
	Text string
}

// Contents is what a send of some paths would offer (the send sheet says
// it before Send): its files, their bytes, its empty folders, and what it
// leaves out, in words ("2 symbolic links (not followed)"; "": nothing).
type Contents struct {
	Files, EmptyFolders int
	Bytes               int64
	Skipped             string
}

// MaxTextBytes bounds the text of one send (the engine's MaxTextBytes).
const MaxTextBytes = 64 << 10

// KnownDevice is a device this one has exchanged files with.
type KnownDevice struct {
	ID string
	// Name is what the user calls it: their own name for it, else the one
	// it announces (Announced).
	Name      string
	Announced string
	Renamed   bool // Name is the user's own
	LastSeen  time.Time
	LastAddr  string
	// Addrs are where to reach it when it is not seen nearby: LastAddr
	// over every kind Ferry dials.
	Addrs      []addr.Addr
	AutoAccept bool // its offers are accepted without asking
	// Paired: the user checked its verification code (pairing, or
	// "always accept" on an offer); its key cannot change unnoticed.
	Paired bool
	// LocalSend: a LocalSend device, known by its certificate's
	// Fingerprint (LocalSend has no pairing codes).
	LocalSend   bool
	Fingerprint string
}

// PickRequest asks for files or folders.
type PickRequest struct {
	Title    string
	Folders  bool // folders, not files
	Multiple bool
}

// Picker shows the platform's own file dialog (the XDG desktop portal on
// Linux). done is called once, on the Fyne goroutine, with the chosen paths
// (none: cancelled) or with ErrNoPicker when there is no such dialog here;
// the UI then shows Fyne's own.
type Picker func(req PickRequest, done func(paths []string, err error))

// ErrNoPicker: the platform has no file dialog Ferry can use.
var ErrNoPicker = errors.New("no platform file dialog")

// NoticeAction is a button on a desktop notification; Do runs on the Fyne
// goroutine. Key names it to the desktop ("default" is a click on the
// notification itself).
type NoticeAction struct {
	Key, Label string
	Do         func()
}

// Device is one row of the device list: a peer seen nearby or remembered.
type Device struct {
	ID         string      // full device ID (base32, 52 chars); empty while unknown
	Name       string      // the name the device announces
	OS         string      // "linux", "darwin", "windows", ... ("" when unknown)
	Addrs      []addr.Addr // the ways to reach it, best first; none: not reachable now
	Trusted    bool        // its files are accepted without asking ("always accept")
	Known      bool        // we exchanged files before: its key is pinned
	Paired     bool        // the user checked its verification code
	Online     bool        // seen on the network right now
	LastSeen   time.Time
	Source     string // "mdns", "manual", "remembered"
	Unverified bool   // added by address: the ID was not proven yet
	// LocalSend is set when the device speaks LocalSend (alone, or beside
	// Ferry): sends to a LocalSend-only device go over LocalSend.
	LocalSend *LocalSendInfo
}

// LocalSendInfo is what a LocalSend device says of itself.
type LocalSendInfo struct {
	Model       string
	Type        string // "mobile", "desktop", "web", "headless", "server"
	Fingerprint string
	// Verified: it proved its fingerprint over TLS (else it is a claim).
	Verified bool
}

// Key identifies a device in the list: its ID, or its address while the ID is unknown.
func (d Device) Key() string {
	if d.ID != "" {
		return d.ID
	}
	if len(d.Addrs) > 0 {
		return d.Addrs[0].HostPort()
	}
	return ""
}

// DeviceEventKind says what happened to a device.
type DeviceEventKind int

// Device event kinds.
const (
	DeviceAppeared DeviceEventKind = iota
	DeviceChanged
	DeviceGone // the device left the network; it stays listed greyed if remembered
)

// DeviceEvent reports a change in the device list.
type DeviceEvent struct {
	Kind   DeviceEventKind
	Device Device
}

// Direction of a transfer as the UI shows it.
type Direction int

// Directions.
const (
	Outgoing Direction = iota
	Incoming
)

// State is the state of a transfer, with the engine's values.
type State string

// Transfer states, with the engine's values.
const (
	StateConnecting State = "connecting"
	StateWaiting    State = "waiting"
	StateActive     State = "active"
	StateVerifying  State = "verifying"
	StatePaused     State = "paused"       // a sending transfer paused by the user
	StateRetrying   State = "reconnecting" // the connection dropped; the sender retries
	// StateInterrupted: the receiving side lost its sender; what arrived is
	// kept and the transfer continues, under the same ID, when the sender is back.
	StateInterrupted State = "interrupted"
	StateDone        State = "done"
	StateFailed      State = "failed"
	StateDeclined    State = "declined"
	StateCancelled   State = "cancelled"
)

// Final reports whether no further state follows s.
func (s State) Final() bool {
	switch s {
	case StateDone, StateFailed, StateDeclined, StateCancelled:
		return true
	}
	return false
}

// Peer is the other end of a transfer.
type Peer struct {
	ID      string
	Name    string
	Trusted bool // its offers are accepted without asking
	Addr    string
	// LocalSend says the peer uses LocalSend, not Ferry; Model, DeviceType
	// and Fingerprint are what it said of itself.
	LocalSend   bool
	Model       string
	DeviceType  string // "mobile", "desktop", "web", "headless", "server"
	Fingerprint string
	// Unverified: it proved no identity (a LocalSend sender without a
	// certificate), so its name and fingerprint are only claims.
	Unverified bool
}

// FileInfo is one offered file.
type FileInfo struct {
	Path string // relative, slash-separated, as the sender named it
	Size int64
	// Refused says why this file will not be received whatever the answer
	// (a name that cannot be stored); "" for the others.
	Refused string
}

// FolderInfo summarises one top-level folder of an offer.
type FolderInfo struct {
	Path  string
	Files int
	Bytes int64
}

// Offer is what the receiving user decides on (and, sending, what is offered).
type Offer struct {
	// Count is the number of files offered; Files lists the first ones
	// (a large offer is not listed whole) and Folders sums up its
	// top-level folders.
	Count   int
	Files   []FileInfo
	Folders []FolderInfo
	Total   int64
	// Disk is the disk the files take on this device (whole blocks), which
	// FreeBytes must hold; 0 when not given (then Total is the measure).
	Disk      int64
	Dest      string
	FreeBytes int64 // -1 when unknown
	Expires   time.Time
	// Text is the offer's text item, as the peer sent it ("" when none):
	// show it with EscapeText.
	Text string
	// PairCode is the verification code of a sender not trusted yet
	// ("123 456"; "" for a trusted one): trusting it ("always accept")
	// takes the user's word that the sender's screen shows the same.
	PairCode string
	// FoldersLeft sums up the top-level folders past those Folders lists:
	// Run keeps the first maxOfferFolders of an offer that has more, so
	// that no update of the widgets walks a list that grows with the offer.
	FoldersLeft FolderSum
	// Skipped is, on the sending side, what the given folders hold that
	// Ferry does not send (nil when nothing).
	Skipped *Skipped
	// Renamed are, on the sending side, the given paths sent under another
	// name, another given path having theirs (none: nil).
	Renamed []Renamed
}

// Renamed is a path given to a send that goes under another name: two
// "report.pdf" from two folders go as "report.pdf" and "report (1).pdf".
type Renamed struct {
	Path string // as given (show with EscapeName)
	As   string // the name it is sent under (likewise)
}

// Skipped is what the folders given to a send hold that it does not carry:
// symbolic links (not followed), empty folders, devices, sockets and pipes.
type Skipped struct {
	Summary  string   // the engine's words: "2 symbolic links (not followed), 1 empty folder"
	Count    int      // all of them
	Examples []string // the first few paths, as given (show with EscapeName)
	// NotFiles: some of them are not regular files (links, devices),
	// which Details explains; folders that could not be read, or empty
	// ones a LocalSend device does not take, carry their reason in Summary.
	NotFiles bool
}

// FolderSum sums up several top-level folders of an offer.
type FolderSum struct {
	Folders, Files int
	Bytes          int64
}

// needs is the disk the offer takes here: Disk, or Total where not given.
func (o *Offer) needs() int64 { return max(o.Disk, o.Total) }

// refused counts the files that will not be received whatever the answer
// (the engine lists every one of them).
func (o *Offer) refused() int {
	n := 0
	for _, f := range o.Files {
		if f.Refused != "" {
			n++
		}
	}
	return n
}

// FileCount is the number of files offered.
func (o *Offer) FileCount() int { return max(o.Count, len(o.Files)) }

// Progress is a coalesced progress report.
type Progress struct {
	Bytes, Total      int64
	Files, TotalFiles int
	Rate              float64 // bytes per second
	ETA               time.Duration
}

// Metrics is a snapshot of the connection's transport metrics.
type Metrics struct {
	Transport        string
	SmoothedRTT      time.Duration
	MinRTT           time.Duration
	CongestionWindow int64
	CongestionEvents int64
	PacketsLost      int64
	PathMTU          int
	DatagramsPerCall float64
	GSO              bool
	// DatagramsPerRecvCall shows GRO at work on the receiving side.
	DatagramsPerRecvCall float64
	GRO                  bool
	RecvBuffer           int
	Connections          int
	// CongestionControl is the TCP algorithm ("bbr", "cubic"); empty for QUIC.
	CongestionControl string
}

// FileResult is the outcome of one file.
type FileResult struct {
	Path     string
	SavedAs  string
	Size     int64
	Verified bool
	Root     string
	Err      string
	// Kept (received): the file already under its name held these very
	// bytes and was kept, not saved a second time.
	Kept bool
}

// Result summarises a transfer that ended, or stopped for now (paused by
// the other device, interrupted).
type Result struct {
	State State
	// Code says why it ended; ByPeer that the other device did it. The
	// words the user sees come from these (see describe).
	Code   Code
	ByPeer bool
	// Rejoin: the app sends the rest by itself, once, when discovery sees
	// the other device again, if this failed because that device went
	// away (app/rejoin.go); Cancel gives up on it.
	Rejoin bool
	// Err is the engine's own text about the end, shown in Details.
	Err string
	// NotStarted: the send ended before it tried to reach the other device
	// (a given path that is a named pipe, a text too long): Err says why,
	// in a sentence the row shows; nothing about the link.
	NotStarted bool
	Files      int
	Verified   int
	Bytes      int64
	Duration   time.Duration
	Transport  string
	// TransportReason says why that transport was used.
	TransportReason string
	// Resent counts bytes sent twice (after a reconnect).
	Resent int64
	// Kept is what the receiver held of the files from an earlier attempt
	// when this one began (resume): it did not travel again.
	Kept int64
	// Packed is what of Bytes travelled compressed, PackedTo what it took
	// on the wire.
	Packed, PackedTo int64
	// Waited is the part of Duration the offer waited for its answer;
	// Checked the part a resuming receiver spent reading back and checking
	// what it kept from an earlier attempt.
	Waited, Checked time.Duration
	// Folders counts the empty folders made on the receiver besides the
	// files; FoldersLeftOut, sending, those an older receiver does not take.
	Folders, FoldersLeftOut int
	// Refused counts offered files the receiver refused by name (a large
	// offer lists only its first files: this counts them all).
	Refused     int
	Destination string
	Metrics     *Metrics // the connection's last metrics, when known
	// Text is the transfer's text item once the receiver accepted it.
	Text string
}

// TransferEventKind says which field of a TransferEvent is set.
type TransferEventKind int

// Transfer event kinds, mirroring the engine's.
const (
	TransferOffer TransferEventKind = iota
	TransferState
	TransferProgress
	TransferFile
	TransferMetrics
	TransferTransport
	TransferResult
	// TransferPath: the network path under the transfer changed and it goes
	// on (connection migration); Path says how.
	TransferPath
	// TransferPair: the verification code of a transfer with a device not
	// trusted yet, or of a pairing (Pair.Only); answer with ConfirmPair.
	TransferPair
	// TransferKeyChanged: a device known here presented another key and
	// was refused (KeyChange). ID may be empty: a refused connection that
	// never became a transfer.
	TransferKeyChanged
	// TransferFiles: several files of a transfer ended (Files). Run folds
	// the TransferFile events that arrive between two updates of the
	// widgets into one, so a transfer of 10^5 files is a few updates a
	// second, each of bounded work, not 10^5 of them.
	TransferFiles
	// TransferRefused: offers this device's limits refused before reading
	// them were added to History (HistoryEntry.Unread); they are no
	// transfer, so only History shows them. Nothing else is set but Time.
	TransferRefused
	// TransferQueued: an incoming offer the engine holds behind the
	// prompts it asks about at once: it will be asked about (its
	// TransferOffer follows once it has a place) or end first (its
	// TransferResult). Nothing is to be answered yet.
	TransferQueued
)

// FileBatch is what several TransferFile events of one transfer add up to.
type FileBatch struct {
	Ended    int // files that ended, verified or not
	Verified int // of them, verified in place
	Failed   int // of them, ended with an error
	// First are the first of them, in order, at most maxBatchFiles.
	First []FileResult
	// Failures are failed ones past First, at most maxBatchFailures: a
	// tree's one unreadable file is named wherever it comes.
	Failures []FileResult
	// Image is the first verified picture among them (a thumbnail shows
	// it), nil when there is none.
	Image *FileResult
}

// PairCode is the verification code both screens show.
type PairCode struct {
	Code string // six digits, "123 456"
	// Only: a pairing without files (Backend.Pair, or a device asking).
	Only bool
	// Shown, on a sending transfer, is whether the receiver showed the
	// code to its user: CodeShownPending until it decided (a receiver
	// that says where the offer stands on its screen: CodeShownWaiting,
	// CodeShownQueued, then CodeShownPending once shown).
	Shown CodeShown
	// Ahead, with CodeShownQueued, is how many offers wait for the
	// receiver's user before this one when the receiving Ferry queues it
	// itself (it shows as many prompts at once as it may); 0 when its
	// window keeps it behind the prompt it shows.
	Ahead int
}

// CodeShown is whether the other device showed a verification code to its
// user; a code it did not show cannot be compared.
type CodeShown int

// What PairCode.Shown says.
const (
	CodeShownPending CodeShown = iota // not said yet: it asks with the code, or accepts without
	CodeShownYes                      // its user was asked with the code
	CodeShownNo                       // it accepted without showing it
	CodeShownUnknown                  // an older Ferry, which does not say
	CodeShownWaiting                  // it will say when its screen shows the offer, and has not yet
	CodeShownQueued                   // it keeps the offer behind another device's: the code is on no screen there yet
)

// KeyChange is a known device that presented another key.
type KeyChange struct {
	Known       Peer   // the device as this one knows it
	PresentedID string // the key it presented instead
	Warning     string // what happened and what to do, as a sentence
}

// PathChange is one change of the network path under a transfer.
type PathChange struct {
	Moved    string // "local" (this device's address changed) or "peer"
	From, To string
	Reason   string
	Stall    time.Duration
}

// TransferEvent is one engine event about a transfer, in the UI's terms.
type TransferEvent struct {
	Kind TransferEventKind
	// ID is the transfer's row: one per delivery on each side.
	ID string
	// Delivery is the ID of the delivery the transfer is (engine
	// Transfer.Delivery): the same on both sides, new for every send.
	Delivery  string
	Direction Direction
	Peer      Peer
	State     State
	Offer     *Offer
	Progress  *Progress
	File      *FileResult
	Files     *FileBatch // TransferFiles
	Metrics   *Metrics
	Result    *Result
	Transport string      // "quic" or "tcp" (TransferTransport)
	Reason    string      // why that transport (TransferTransport)
	Path      *PathChange // TransferPath
	Pair      *PairCode   // TransferPair
	KeyChange *KeyChange  // TransferKeyChanged
	// Pairing: the transfer is a pairing without files (Backend.Pair or a
	// device asking to pair); it is no transfer row and no history entry.
	Pairing bool
	// Route and Relay: TransferTransport: the way the session goes
	// ("lan", "internet", "relayed"; "" when the engine does not say) and
	// the relay's "host:port" it went through.
	Route, Relay string
	Time         time.Time
}

// Decision is the receiving user's answer to an offer.
type Decision struct {
	Accept       bool
	AlwaysAccept bool
	Reason       string
	// Expired: nobody answered; the prompt declined the offer by itself.
	Expired bool
	// Dest, when set, is where this offer's files go ("Save to…").
	Dest string
}

// Policy says who may send to this device.
type Policy string

// Receiving policies as the settings show them.
const (
	PolicyEveryone Policy = "everyone" // anyone nearby may offer; we ask
	PolicyTrusted  Policy = "trusted"  // only trusted devices may send
	PolicyOff      Policy = "off"      // receiving off: listeners closed, not advertised
)

// Settings are the user's preferences.
type Settings struct {
	DeviceName        string `json:"device_name"`
	DownloadDir       string `json:"download_dir"`
	Policy            Policy `json:"policy"`
	AutoAcceptTrusted bool   `json:"auto_accept_trusted"`
	StartAtLogin      bool   `json:"start_at_login"`
	StartMinimized    bool   `json:"start_minimized"`
	// TrayNoticeShown records that we told the user once that closing the
	// window keeps Ferry running in the tray.
	TrayNoticeShown bool `json:"tray_notice_shown"`
	// NoTrayNoticeShown records that we told the user once that, with no
	// tray on this desktop, closing the window quits Ferry.
	NoTrayNoticeShown bool `json:"no_tray_notice_shown,omitempty"`
	// LocalSendOff hides this device from LocalSend devices and refuses
	// their offers; LocalSend is on by default (users expect to see their
	// phone), so the zero value keeps it on.
	LocalSendOff bool `json:"localsend_off,omitempty"`
	// LocalSendPIN, when set, must be given by every LocalSend sender.
	LocalSendPIN string `json:"localsend_pin,omitempty"`
	// LocalSendPort is the HTTPS port LocalSend devices send to (0: 53317,
	// LocalSend's own; taken, the last one used, else a free one).
	LocalSendPort int `json:"localsend_port,omitempty"`
	// Anywhere lets paired devices reach this one beyond the LAN through
	// AnywhereRelay ("host:port" of a Ferry relay); off by default.
	Anywhere      bool   `json:"anywhere,omitempty"`
	AnywhereRelay string `json:"anywhere_relay,omitempty"`
	// AnywhereSecret is the relay's secret (ferry-cli relay --secret-file),
	// "" for a relay without one. The settings file is the user's alone
	// (written 0600).
	AnywhereSecret string `json:"anywhere_secret,omitempty"`
	// WindowWidth and WindowHeight are the main window's size when it was
	// last closed (0: never), which the app restores at start. The app
	// keeps them; the Settings page does not show them.
	WindowWidth  float32 `json:"window_width,omitempty"`
	WindowHeight float32 `json:"window_height,omitempty"`
}

// HistoryEntry is one finished transfer kept across restarts.
type HistoryEntry struct {
	// ID is the transfer's: one entry per delivery (an interruption is
	// replaced by how the same delivery ended).
	ID string `json:"id"`
	// Delivery is the delivery's ID, the same in the sender's and the
	// receiver's history; empty in entries written before it existed.
	Delivery  string    `json:"delivery,omitempty"`
	Direction Direction `json:"direction"`
	PeerName  string    `json:"peer_name"`
	PeerID    string    `json:"peer_id"`
	Files     int       `json:"files"`
	// Folders counts the empty folders made besides the files (Result.Folders).
	Folders     int       `json:"folders,omitempty"`
	Bytes       int64     `json:"bytes"`
	State       State     `json:"state"`
	Code        Code      `json:"code,omitempty"`
	ByPeer      bool      `json:"by_peer,omitempty"`
	Err         string    `json:"error,omitempty"`
	Transport   string    `json:"transport,omitempty"`
	Destination string    `json:"destination,omitempty"`
	Finished    time.Time `json:"finished"`
	Duration    float64   `json:"duration_seconds"`
	// Names are the first top-level files and folders of the transfer, and
	// Items how many there were (ItemsText says "a.jpg, b.jpg and 3 more").
	Names []string `json:"names,omitempty"`
	Items int      `json:"items,omitempty"`
	// Paths are the first files as saved (received) or the files and
	// folders sent, absolute: what Open and Show in folder open.
	Paths []string `json:"paths,omitempty"`
	// Text is the text item, when the transfer had one.
	Text string `json:"text,omitempty"`
	// HasText: the transfer offered a text, kept or not (a declined
	// text's words are not kept; History still says it was a text).
	HasText bool `json:"has_text,omitempty"`
	// Busy counts the offers this entry sums up that this device declined
	// because too many were waiting at once (CodeBusy, not by the peer): 1
	// for one such offer, more once later ones joined it (a flood of
	// senders leaves one entry, not one per offer); 0 for every other
	// transfer. Since is when the first of them came, Senders the devices
	// they came from (each once, the first MaxBusySenders), and Files and
	// Bytes their sums.
	Busy    int          `json:"busy,omitempty"`
	Since   time.Time    `json:"since,omitzero"`
	Senders []BusySender `json:"senders,omitempty"`
	// MoreSenders says that more devices than Senders lists had offers
	// declined in the entry.
	MoreSenders bool `json:"more_senders,omitempty"`
	// Unread counts the offers of Busy that were refused before they were
	// read (too many devices offering at once, too many new devices from
	// one address, a muted device or address): their files are not in
	// Files. Muted counts those of them refused because the user declined
	// offers of the device, or of new devices at its address, a moment ago.
	Unread int `json:"unread,omitempty"`
	Muted  int `json:"muted,omitempty"`
}

// MaxBusySenders bounds the devices a HistoryEntry of offers declined while
// busy lists.
const MaxBusySenders = 100

// BusySender is a device whose offer was declined while busy, as History
// names it.
type BusySender struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// PartialTransfer is an unfinished incoming transfer whose verified parts
// are kept on disk so that the sender can resume it.
type PartialTransfer struct {
	Key      string // identifies it to Backend.DiscardPartial
	Delivery string // the delivery it is (TransferEvent.Delivery), when known
	PeerID   string
	PeerName string
	Dest     string // the folder its files go to
	Files    int
	Saved    int   // of Files, saved whole (a resume does not fetch them)
	Bytes    int64 // disk space its partial files hold
	Updated  time.Time
	// Receiving: it is being received now; its files cannot be discarded.
	Receiving bool
	// Damaged says why its resume state could not be read whole ("its
	// snapshot is cut short"): it lists what could still be read of it.
	Damaged string
	// Unremoved: it resumes nothing; its files are partials that
	// transfers gave up on and could not remove (another program had them
	// open, or the folder is read-only). Discard tries again.
	Unremoved bool
}
