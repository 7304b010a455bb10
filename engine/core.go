package engine

import "github.com/ferrydrop/ferry/engine/internal/core"

// The transfer's model is the core's (package core), which every protocol
// shares; these are its names in the engine's API.
type (
	// AcceptPolicy says who may send to this device without a prompt.
	AcceptPolicy = core.AcceptPolicy
	// Decision is the receiving user's answer to an offer.
	Decision = core.Decision
	// State is the life-cycle state of a transfer.
	State = core.State
	// FileInfo is one entry of an offer as shown to the user.
	FileInfo = core.FileInfo
	// FolderInfo summarises one top-level folder of an offer.
	FolderInfo = core.FolderInfo
	// FileResult is the outcome of one file.
	FileResult = core.FileResult
	// Result summarises a finished transfer.
	Result = core.Result
	// PeerInfo describes the device at the other end of a transfer.
	PeerInfo = core.PeerInfo
)

// Accept policies.
const (
	AcceptAsk     = core.AcceptAsk     // every offer raises an EventOffer and waits for Decide
	AcceptAll     = core.AcceptAll     // accept everything (tests, benchmarks)
	AcceptTrusted = core.AcceptTrusted // accept trusted devices silently, refuse others
)

// Transfer states, in the order a transfer usually passes through them.
const (
	StateConnecting  = core.StateConnecting
	StateWaiting     = core.StateWaiting // offer sent, waiting for the receiver's decision
	StateActive      = core.StateActive  // data flowing
	StateVerifying   = core.StateVerifying
	StateDone        = core.StateDone
	StateFailed      = core.StateFailed
	StateDeclined    = core.StateDeclined
	StateCancelled   = core.StateCancelled
	StatePaused      = core.StatePaused      // sending paused by the user (or, receiving, by the sender); Resume continues
	StateInterrupted = core.StateInterrupted // a receiving session lost its sender; the transfer continues when it comes back
	StateRetrying    = core.StateRetrying    // the connection dropped; retrying with back-off
)

// The ends every protocol shares are the core's.
var (
	// ErrClosed is returned by an engine after Close.
	ErrClosed = core.ErrClosed
	// ErrNothingToSend is returned when the paths hold no regular files.
	ErrNothingToSend = core.ErrNothingToSend
	// ErrTextUnsupported: the receiver's Ferry is too old to take a text item.
	ErrTextUnsupported = core.ErrTextUnsupported

	errCancelledByUser  = core.ErrCancelledByUser
	errStoppedReceiving = core.ErrStoppedReceiving
	errPaused           = core.ErrPaused
	errSuperseded       = core.ErrSuperseded
	errTakenOver        = core.ErrTakenOver
	errSessionDone      = core.ErrSessionDone
	errPathGone         = core.ErrPathGone
	errConnectionLost   = core.ErrConnectionLost
	errPairMismatch     = core.ErrPairMismatch
	errPeerRejectedCode = core.ErrPeerRejectedCode
)

// Sentence makes an error readable for a person: one line, first letter
// upper case, a final period, a peer's words in it escaped.
func Sentence(err error) string { return core.Sentence(err) }
