package core

import (
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/internal/stallmeter"
)

// The transfer's model, as every protocol and the engine's API speak it
// (package engine names them with aliases).

// AcceptPolicy says who may send to this device without a prompt.
type AcceptPolicy string

// Accept policies.
const (
	AcceptAsk     AcceptPolicy = "ask"     // every offer raises an EventOffer and waits for Decide
	AcceptAll     AcceptPolicy = "all"     // accept everything (tests, benchmarks)
	AcceptTrusted AcceptPolicy = "trusted" // accept trusted devices silently, refuse others
)

// Decision is the receiving user's answer to an offer.
type Decision struct {
	Accept bool
	// Files lists the indexes of the offered files to accept; nil means all.
	Files []int
	// Reason is shown to the sender when declining.
	Reason string
	// AlwaysAccept trusts the sender and accepts its future offers without asking.
	AlwaysAccept bool
	// Expired: nobody answered; the prompt declined by itself (the sender
	// reads "Expired", not "Declined").
	Expired bool
	// Dest, when set, is the folder this offer's files go to instead of the
	// download folder ("Save to…"); it is created if missing. Decide checks
	// it as SetDownloadDir does.
	Dest string
}

// State is the life-cycle state of a transfer.
type State string

// Transfer states, in the order a transfer usually passes through them.
const (
	StateConnecting State = "connecting"
	StateWaiting    State = "waiting" // offer sent, waiting for the receiver's decision
	StateActive     State = "active"  // data flowing
	StateVerifying  State = "verifying"
	StateDone       State = "done"
	StateFailed     State = "failed"
	StateDeclined   State = "declined"
	StateCancelled  State = "cancelled"
	StatePaused     State = "paused" // sending paused by the user (or, receiving, by the sender); Resume continues
	// StateInterrupted: a receiving session lost its sender; the data that
	// arrived is kept, and the transfer continues (same ID) when the sender
	// comes back.
	StateInterrupted State = "interrupted"
	StateRetrying    State = "reconnecting" // the connection dropped; retrying with back-off
)

// Final reports whether no further state follows s.
func (s State) Final() bool {
	switch s {
	case StateDone, StateFailed, StateDeclined, StateCancelled:
		return true
	}
	return false
}

// FileInfo is one entry of an offer as shown to the user.
type FileInfo struct {
	// Index is the file's place in the offer (what Decision.Files lists).
	Index int    `json:"index"`
	Path  string `json:"path"` // relative, slash-separated; show it with safetext.Name
	Size  int64  `json:"size"`
	// Refused, when set, says why this file will not be received whatever
	// the answer (a name that cannot be stored safely); the others can be.
	Refused string `json:"refused,omitempty"`
}

// FolderInfo summarises one top-level folder of an offer.
type FolderInfo struct {
	Path  string `json:"path"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}

// FileResult is the outcome of one file.
type FileResult struct {
	Path     string `json:"path"`
	SavedAs  string `json:"saved_as,omitempty"` // receiver: name on disk if renamed to avoid a clash
	Size     int64  `json:"size"`
	Verified bool   `json:"verified"`
	Root     string `json:"root,omitempty"` // hex BLAKE3 Merkle root
	Err      string `json:"error,omitempty"`
	// Kept (receiver): the file already under its name holds these very
	// bytes, and was kept rather than saved a second time (a trusted
	// device sent it again).
	Kept bool `json:"kept,omitempty"`
}

// Result summarises a finished transfer.
type Result struct {
	// Delivery is the delivery that ended (Transfer.Delivery).
	Delivery string `json:"delivery,omitempty"`
	State    State  `json:"state"`
	Err      string `json:"error,omitempty"` // a sentence for the user
	// Code says why it ended: "" when done, else a wire error code
	// ("cancelled", "paused", "declined", "expired", "busy", "no_space",
	// "untrusted", "too_large", "verify_failed", "io", "protocol", ...) or
	// "connection_lost". The Result of a StateRetrying event says why the
	// sender reconnects: "going_away" when the other device said its
	// Ferry was closing (it waits for that Ferry to be opened again; the
	// end, if it is not, is "connection_lost").
	Code string `json:"code,omitempty"`
	// ByPeer: the end came from the other device (its cancel, decline, pause).
	ByPeer bool `json:"by_peer,omitempty"`
	// Detail is the technical error behind Err, for a Details view.
	Detail string `json:"detail,omitempty"`
	// TotalBytes is the size of what was accepted (offered, when nothing was).
	TotalBytes int64              `json:"total_bytes,omitempty"`
	Files      int                `json:"files"`
	Verified   int                `json:"verified"`
	Bytes      int64              `json:"bytes"`      // payload bytes sent or received
	WireBytes  int64              `json:"wire_bytes"` // bytes on the wire (transport counters)
	Duration   float64            `json:"duration_seconds"`
	Transport  string             `json:"transport"`
	Reason     string             `json:"transport_reason,omitempty"`
	Metrics    *transport.Metrics `json:"metrics,omitempty"`
	Resent     int64              `json:"resent_bytes,omitempty"`
	// Packed is what of Bytes travelled compressed (wire.FeaturePacked),
	// PackedTo what it took on the wire.
	Packed   int64 `json:"packed_bytes,omitempty"`
	PackedTo int64 `json:"packed_to_bytes,omitempty"`
	// Kept is what the receiver already held of the accepted files when
	// the transfer began: the partial data an earlier session left for
	// resume, which did not travel again. The receiver's Bytes count it
	// (its files are whole with it); the sender's Bytes do not (they are
	// what it sent).
	Kept int64 `json:"kept_bytes,omitempty"`
	// Waited is the part of Duration spent waiting for the answer to the
	// offer (a person at a prompt, or the receiver's policy): from the
	// whole offer being out (sending) or shown (receiving) to the files'
	// first move, less Checked. 0 when nobody was asked or the files never
	// moved.
	Waited float64 `json:"waited_seconds,omitempty"`
	// Checked is the part of Duration the receiver spent, once it had
	// accepted, checking what it kept from an earlier session (resume)
	// before the files moved: reading it back to find it unchanged. 0 when
	// it kept nothing, or (sending) when the receiver is a Ferry too old to
	// say.
	Checked float64 `json:"checked_seconds,omitempty"`
	// Connecting is the part of a send's Duration before its first
	// session connected: looking the device up, its LAN addresses, a call
	// through the relay (ICE, the handshake), and the attempts that failed
	// before. 0 on the receiving side, whose transfer starts connected.
	Connecting float64 `json:"connecting_seconds,omitempty"`
	// Refused counts offered files the receiver refused by name; each has
	// its EventFile with the reason.
	Refused int `json:"refused,omitempty"`
	// Folders counts the empty folders made on the receiver besides the
	// files (sending: that the receiver made), folders that hold no file
	// and would not exist by the files alone.
	Folders int `json:"folders,omitempty"`
	// FoldersLeftOut, sending, counts empty folders of the send that the
	// receiver does not take (an older Ferry): not made there.
	FoldersLeftOut int `json:"folders_left_out,omitempty"`
	// PresentedID is set when another device than the expected one answered
	// (discovery is told, so it stops offering that address for that ID).
	PresentedID string `json:"presented_id,omitempty"`
	Destination string `json:"destination,omitempty"`
	// Stalls: on the receiving side, how often and how long the data
	// streams waited for their next bytes (head-of-line blocking).
	Stalls *stallmeter.Stats `json:"stalls,omitempty"`
	// Text is the transfer's text item once the receiver accepted the
	// offer (on both sides), else "". Receiving, it came from the peer:
	// show it with safetext.Text.
	Text string `json:"text,omitempty"`
}

// PeerInfo describes the device at the other end of a transfer.
type PeerInfo struct {
	Name    string `json:"name"`
	ID      string `json:"id"`      // its peer ID (package peer): a Ferry device ID (base32), or "kind:key"
	Trusted bool   `json:"trusted"` // the user trusts it: paired, or marked trusted
	Addr    string `json:"addr,omitempty"`
	// Protocol is "" for Ferry, "localsend" for a LocalSend device;
	// Model, DeviceType and Fingerprint are what a LocalSend device said.
	Protocol    string `json:"protocol,omitempty"`
	Model       string `json:"model,omitempty"`
	DeviceType  string `json:"device_type,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Unverified says the device proved no identity (a LocalSend sender
	// without a client certificate): its name and fingerprint are claims.
	Unverified bool `json:"unverified,omitempty"`
}
