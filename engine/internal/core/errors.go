package core

import (
	"errors"
	"fmt"
	"io"

	"github.com/ferrydrop/ferry/engine/internal/errcode"
)

// The ends of a transfer that every protocol shares. Those a peer must hear
// of wrap a sentinel of the one table (package errcode), or are told with
// errcode.WithCode; the others never cross the wire.
var (
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("engine closed")
	// ErrCancelledByUser: the user of this device cancelled.
	ErrCancelledByUser = errors.New("cancelled by the user")
	// ErrStoppedReceiving ends incoming transfers when receiving is turned
	// off at once; the sender is told the transfer was cancelled.
	ErrStoppedReceiving = fmt.Errorf("%w: receiving was turned off", ErrCancelledByUser)
	// ErrPaused ends the current attempt of a paused transfer; the receiver
	// learns that the sender paused (errcode.ErrPaused), not that it failed.
	ErrPaused = fmt.Errorf("%w by the sender", errcode.ErrPaused)
	// ErrSuperseded ends a receiving session when a new attempt at the same
	// delivery (a reconnect) arrives: the new one takes its partials and
	// speaks for the transfer.
	ErrSuperseded = errors.New("a newer attempt at the same transfer took over")
	// ErrTakenOver ends a receiving session when another delivery of the
	// same files from the same sender takes over its partial data: the
	// older delivery ends here, and its sender is told (a cancel, so it
	// does not come back for the data the newer one now holds).
	ErrTakenOver = fmt.Errorf("%w: a newer send of the same files took over", errcode.ErrCancelled)
	// ErrSessionDone ends a session's goroutines after a successful transfer.
	ErrSessionDone = errors.New("session done")
	// ErrPathGone ends the attempt of a session whose local address went
	// away: the sender reconnects (and resumes) at once.
	ErrPathGone = errors.New("the network changed under the connection: this device's address is gone")
	// ErrConnectionLost is how a receiving session learns that its sender
	// is gone when nothing said so first.
	ErrConnectionLost = fmt.Errorf("the connection to the sender was lost: %w", io.ErrUnexpectedEOF)
	// ErrUnreadable: a file to send could not be read on this device
	// (deleted, no permission, cut short while it was sent). Trying the
	// send again would meet it again.
	ErrUnreadable = errors.New("a file to send could not be read")
	// ErrNothingToSend: the paths hold no regular files.
	ErrNothingToSend = errors.New("nothing to send: no regular files in the given paths")
	// ErrReceiverStalled: the receiver took the offer and then stopped
	// taking the bytes (a LocalSend phone asleep or out of range). Not
	// tried again on its own: each attempt would be taken and stall again,
	// and LocalSend has no resume (its user is asked anew); Retry sends
	// what did not arrive.
	ErrReceiverStalled = errors.New("the receiver stopped taking the files")
	// ErrPINNeeded, ErrPINWrong and ErrPINLockedOut are a receiver's
	// refusals of an offer for its PIN (LocalSend): its rule, not its
	// owner's decision, so they never read "Declined". The receiver's
	// RemoteError (CodeDeclined: not retried) is wrapped beside them.
	ErrPINNeeded    = errors.New("the receiver asks for a PIN")
	ErrPINWrong     = errors.New("the receiver refused the PIN: it was wrong")
	ErrPINLockedOut = errors.New("the receiver turned this device away after 3 wrong PINs")
	// ErrTextUnsupported: the receiver's Ferry is too old to take a text item.
	ErrTextUnsupported = errors.New("the receiving device's Ferry cannot receive text yet: update it, or send the text as a file")
	// ErrPairMismatch ends a transfer whose user said the two screens show
	// different verification codes.
	ErrPairMismatch = fmt.Errorf("%w: the verification codes on the two screens did not match, so another device may be "+
		"intercepting the connection; the transfer was stopped and the device is not trusted", ErrCancelledByUser)
	// ErrPeerRejectedCode: the other user said the codes differ, or declined to pair.
	ErrPeerRejectedCode = fmt.Errorf("%w: the other device's user did not confirm the verification code; the devices are not paired", errcode.ErrUntrusted)
	// ErrPairedBefore goes with ErrPairMismatch or ErrPeerRejectedCode
	// when the two devices were paired before that pairing: they stay
	// paired as they were (the session proved the paired key).
	ErrPairedBefore = errors.New("the devices were paired before, and stay paired")
)

// HostNotFoundError: the name the receiver was given by does not resolve
// (DNS says there is no such host). At a transfer's first attempt it ends
// the transfer at once: a name typed wrong does not come right by waiting.
// Later (a device reached before, whose name is gone for a while) the
// outbox tries again, as for any device out of reach.
type HostNotFoundError struct{ Host string }

func (e *HostNotFoundError) Error() string {
	return fmt.Sprintf("there is no host named %s (check the name)", e.Host)
}

// NothingListeningError: every dial of an attempt reached the receiver's
// host, which answered that nothing listens at Addr (its Ferry quit, or the
// address given or last seen is stale). Like any device out of reach, the
// outbox tries again while RetryFor lasts; Err is what the dials met.
type NothingListeningError struct {
	Addr string // "host:port"; several are joined with " or "
	Err  error
}

func (e *NothingListeningError) Error() string {
	return fmt.Sprintf("nothing is listening at %s: is Ferry running there?", e.Addr)
}

func (e *NothingListeningError) Unwrap() error { return e.Err }

// NotSentError ends a transfer whose every file arrived but those the
// sender could not read, which it did not send (each has its file result).
// Here: this device is the sender; Why, when known, why the first of them
// was not ("it changed while it was being sent (...)", "it could not be
// read on this device (permission denied)").
type NotSentError struct {
	Unsent, Files int
	Here          bool
	Why           string
}

func (e *NotSentError) Error() string {
	if e.Why != "" {
		s := withFirst(couldNot(e.Unsent, e.Files, "file", "sent"), e.Unsent, e.Why)
		if e.Unsent < e.Files {
			s += "; the others arrived"
		}
		return s
	}
	where := "the sending device"
	if e.Here {
		where = "this device"
	}
	switch {
	case e.Unsent == e.Files && e.Files == 1:
		return "the file was not sent: it could not be read on " + where
	case e.Unsent == e.Files:
		return fmt.Sprintf("none of the %d files was sent: they could not be read on %s", e.Files, where)
	}
	return fmt.Sprintf("%d of %d files could not be read on %s, so they were not sent; the others arrived", e.Unsent, e.Files, where)
}

// Is makes a NotSentError an ErrUnreadable (not worth a retry).
func (e *NotSentError) Is(target error) bool { return target == ErrUnreadable }

// NotSavedError ends a transfer some of whose files could not be saved on
// the receiver (created, written or named there); Cause is why the first
// could not ("permission denied"), Here that this device is the receiver,
// Every that Cause is why every one of them could not (the folder cannot be
// written), not only the first.
type NotSavedError struct {
	Failed, Files int
	Cause         string
	Here, Every   bool
}

func (e *NotSavedError) Error() string {
	s := couldNot(e.Failed, e.Files, "file", "saved")
	if e.Here {
		s += " here"
	}
	switch {
	case e.Cause == "":
		return s
	case e.Every:
		return s + ": " + e.Cause
	}
	return withFirst(s, e.Failed, e.Cause)
}

// couldNot says that failed of n things could not be done: "the file
// could not be saved", "none of the 3 files could be saved", "2 of 3 files
// could not be saved"; what is a thing's name, done what failed.
func couldNot(failed, n int, what, done string) string {
	switch {
	case n == 1:
		return "the " + what + " could not be " + done
	case failed == n:
		return fmt.Sprintf("none of the %d %ss could be %s", n, what, done)
	}
	return fmt.Sprintf("%d of %d %ss could not be %s", failed, n, what, done)
}

// withFirst adds why the first of failed things failed to couldNot's words.
func withFirst(s string, failed int, why string) string {
	if failed > 1 {
		return s + "; the first: " + why
	}
	return s + ": " + why
}

// Is makes a NotSavedError an ErrVerifyFailed: the receiver could not save
// them, and trying again would meet the same (it is not the connection's).
func (e *NotSavedError) Is(target error) bool { return target == errcode.ErrVerifyFailed }

// FoldersError ends a transfer whose every file arrived but some of whose
// empty folders (wire.Offer.Folders) could not be made on the receiver.
// First is the first of them, its path quoted, and why.
type FoldersError struct {
	Failed, Folders int
	First           string
}

func (e *FoldersError) Error() string {
	return withFirst(couldNot(e.Failed, e.Folders, "empty folder", "made"), e.Failed, e.First) + "; the accepted files arrived"
}

// Is makes a FoldersError an ErrVerifyFailed: the receiver could not save
// everything, and trying again would not change that.
func (e *FoldersError) Is(target error) bool { return target == errcode.ErrVerifyFailed }

// CodeConnectionLost: the other device went away without a word (killed,
// asleep, out of range); a receiver keeps what arrived for the next attempt.
// It is the one table's (package errcode), though it never crosses the wire.
const CodeConnectionLost = string(errcode.CodeConnectionLost)
