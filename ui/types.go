package ui

import (
	"context"
	"time"
)

// Backend is what the UI asks of the engine and its surroundings. The app
// package implements it over the real engine and discovery; tests use a fake
// that records the calls. Every method may be called on the Fyne goroutine, so
// none of them may block for long: Send and AddDevice start work and return.
type Backend interface {
	// Send starts sending paths to dev. Its progress arrives as TransferEvents.
	Send(dev Device, paths []string) error
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
	// AddDevice asks who answers at a "host:port" and remembers it.
	AddDevice(ctx context.Context, addr string) (Device, error)
	// Settings returns the saved settings; SaveSettings applies and stores
	// them (PolicyOff closes the listeners and withdraws the advertisement).
	Settings() Settings
	SaveSettings(s Settings) error
	// History returns finished transfers, newest first.
	History() []HistoryEntry
	// OpenFolder shows a folder in the OS file manager.
	OpenFolder(path string) error
}

// Device is one row of the device list: a peer seen nearby or remembered.
type Device struct {
	ID         string   // full device ID (base32, 52 chars); empty while unknown
	Name       string   // the name the device announces
	OS         string   // "linux", "darwin", "windows", ... ("" when unknown)
	Addrs      []string // "host:port" candidates, best first
	QUICAddr   string   // "host:port" of its QUIC listener, "" when none
	TCPAddr    string   // "host:port" of its TCP listener, "" when none
	Trusted    bool     // its files are accepted without asking ("always accept")
	Known      bool     // we exchanged files before: its key is pinned
	Online     bool     // seen on the network right now
	LastSeen   time.Time
	Source     string // "mdns", "manual", "remembered"
	Unverified bool   // added by address: the ID was not proven yet
}

// Key identifies a device in the list: its ID, or its address while the ID is unknown.
func (d Device) Key() string {
	if d.ID != "" {
		return d.ID
	}
	if d.QUICAddr != "" {
		return d.QUICAddr
	}
	return d.TCPAddr
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
}

// FileInfo is one offered file.
type FileInfo struct {
	Path string // relative, slash-separated, as the sender named it
	Size int64
}

// Offer is what the receiving user decides on.
type Offer struct {
	// Count is the number of files offered; Files lists the first ones
	// (a large offer is not listed whole).
	Count     int
	Files     []FileInfo
	Total     int64
	Dest      string
	FreeBytes int64 // -1 when unknown
	Expires   time.Time
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
	RecvBuffer       int
	Connections      int
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
}

// Result summarises a transfer that ended, or stopped for now (paused by
// the other device, interrupted).
type Result struct {
	State State
	// Code says why it ended; ByPeer that the other device did it. The
	// words the user sees come from these (see describe).
	Code   Code
	ByPeer bool
	// Err is the engine's own text about the end, shown in Details.
	Err       string
	Files     int
	Verified  int
	Bytes     int64
	Duration  time.Duration
	Transport string
	// TransportReason says why that transport was used.
	TransportReason string
	// Resent counts bytes sent twice (after a reconnect).
	Resent      int64
	Destination string
	Metrics     *Metrics // the connection's last metrics, when known
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
)

// PathChange is one change of the network path under a transfer.
type PathChange struct {
	Moved    string // "local" (this device's address changed) or "peer"
	From, To string
	Reason   string
	Stall    time.Duration
}

// TransferEvent is one engine event about a transfer, in the UI's terms.
type TransferEvent struct {
	Kind      TransferEventKind
	ID        string
	Direction Direction
	Peer      Peer
	State     State
	Offer     *Offer
	Progress  *Progress
	File      *FileResult
	Metrics   *Metrics
	Result    *Result
	Transport string      // "quic" or "tcp" (TransferTransport)
	Reason    string      // why that transport (TransferTransport)
	Path      *PathChange // TransferPath
	Time      time.Time
}

// Decision is the receiving user's answer to an offer.
type Decision struct {
	Accept       bool
	AlwaysAccept bool
	Reason       string
	// Expired: nobody answered; the prompt declined the offer by itself.
	Expired bool
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
}

// HistoryEntry is one finished transfer kept across restarts.
type HistoryEntry struct {
	ID          string    `json:"id"`
	Direction   Direction `json:"direction"`
	PeerName    string    `json:"peer_name"`
	PeerID      string    `json:"peer_id"`
	Files       int       `json:"files"`
	Bytes       int64     `json:"bytes"`
	State       State     `json:"state"`
	Code        Code      `json:"code,omitempty"`
	ByPeer      bool      `json:"by_peer,omitempty"`
	Err         string    `json:"error,omitempty"`
	Transport   string    `json:"transport,omitempty"`
	Destination string    `json:"destination,omitempty"`
	Finished    time.Time `json:"finished"`
	Duration    float64   `json:"duration_seconds"`
}

// PartialTransfer is an unfinished incoming transfer whose verified parts
// are kept on disk so that the sender can resume it.
type PartialTransfer struct {
	Key      string // identifies it to Backend.DiscardPartial
	PeerID   string
	PeerName string
	Dest     string // the folder its files go to
	Files    int
	Bytes    int64 // disk space its partial files hold
	Updated  time.Time
}
