package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/internal/transport"
	"github.com/ferrydrop/ferry/internal/safetext"
)

// Ending is how a transfer, or one session of it, ended, in the words the
// user reads: which state, why (a code of package errcode, or
// CodeConnectionLost), whether the other device did it, a sentence, and the
// technical detail behind it.
type Ending struct {
	State  State
	Code   string
	ByPeer bool
	Text   string
	Detail string
}

// EndOf maps the error that ended a transfer to its ending. peer is the
// other device's name; resumable says whether a receiver kept its partial
// data (a lost sender is then an interruption, not a failure).
func EndOf(err error, peer string, resumable bool) Ending {
	if peer == "" {
		peer = "the other device"
	} else {
		peer = safetext.Name(peer) // a peer's name: quoted and escaped if it could disguise itself
	}
	var re *errcode.RemoteError
	remote := errors.As(err, &re)
	var kc *identity.KeyChangedError
	var mm *identity.MismatchError
	e := Ending{Code: string(errcode.CodeOf(err)), ByPeer: remote}
	if err != nil {
		e.Detail = detail(err)
	}
	switch {
	case err == nil:
		return Ending{State: StateDone}
	case errors.Is(err, ErrPairedBefore) && errors.Is(err, ErrPeerRejectedCode):
		e.State, e.Code, e.ByPeer = StateFailed, string(errcode.CodePairedBefore), true
		e.Text = peer + " did not confirm the verification code; the devices stay paired as they were before."
	case errors.Is(err, ErrPairedBefore) && errors.Is(err, ErrPairMismatch):
		e.State, e.Code = StateFailed, string(errcode.CodePairedBefore)
		e.Text = "You said the verification codes differ; " + peer + " was paired with this device before, and they stay paired as they were."
	case errors.Is(err, ErrPairMismatch):
		// Pairing failures are not the receiver's trust policy: they have
		// their own code (the peer is told CodeUntrusted, closeCode).
		e.State, e.Code, e.Text = StateFailed, string(errcode.CodeNotPaired), Sentence(err)
	case errors.Is(err, ErrPeerRejectedCode):
		e.State, e.Code, e.ByPeer = StateFailed, string(errcode.CodeNotPaired), true
		e.Text = peer + " did not confirm the verification code, so the devices are not paired."
	case errors.Is(err, ErrStoppedReceiving):
		e.State, e.Code, e.Text = StateCancelled, string(errcode.CodeCancelled), "Stopped: receiving was turned off."
	case errors.Is(err, ErrCancelledByUser):
		e.State, e.Code, e.Text = StateCancelled, string(errcode.CodeCancelled), "Cancelled by you."
	case errors.Is(err, context.Canceled), errors.Is(err, ErrClosed):
		e.State, e.Code, e.Text = StateCancelled, string(errcode.CodeCancelled), "Ferry was closed before the transfer finished."
	case remote && errors.Is(err, errcode.ErrGoingAway):
		// Ferry was closed there: the device went away, and said so.
		e.Code = CodeConnectionLost
		e.State, e.Text = StateFailed, peer+" went away: Ferry was closed there."
		if resumable {
			e.State, e.Text = StateInterrupted, "Interrupted — Ferry was closed on "+peer+"; will resume when it is back."
		}
	case errors.Is(err, ErrTakenOver):
		e.State, e.Code, e.ByPeer = StateCancelled, string(errcode.CodeCancelled), true
		e.Text = "Replaced by a newer send of the same files from " + peer + ", which continues from what arrived."
	case errors.Is(err, errcode.ErrCancelled):
		e.State, e.Text = StateCancelled, "Cancelled by "+peer+"."
		if r := ReasonOf(re); r != "" {
			e.Text = "Cancelled by " + peer + ": " + r + "."
		}
	case errors.Is(err, errcode.ErrPaused):
		e.State = StatePaused
		e.Text = "Paused by " + peer + "."
		if !remote {
			e.Text = "Paused."
		}
	case errors.Is(err, errcode.ErrExpired):
		e.State = StateDeclined
		e.Text = "Expired: " + peer + " did not answer in time."
		if !remote {
			e.Text = "Expired: not answered in time."
		}
	case errors.Is(err, ErrPINWrong):
		e.State, e.Text = StateDeclined, peer+" refused the PIN: it was wrong."
	case errors.Is(err, ErrPINLockedOut):
		e.State, e.Text = StateDeclined, peer+" turned this device away after 3 wrong PINs; try again in a few minutes."
	case errors.Is(err, ErrPINNeeded):
		e.State, e.Text = StateDeclined, peer+" asks for a PIN: ask its owner for it and send again with it."
	case errors.Is(err, errcode.ErrDeclined):
		e.State = StateDeclined
		e.Text = "Declined by " + peer + "."
		if !remote {
			e.Text = "Declined by you."
		}
		if r := ReasonOf(re); remote && r != "" {
			e.Text = "Declined by " + peer + ": " + r + "."
		}
	case errors.Is(err, errcode.ErrTooLarge) && remote && ReasonOf(re) != "":
		// The receiver says in its own words what it takes ("Bob's laptop
		// takes at most ...").
		e.State, e.Text = StateDeclined, "Declined: "+ReasonOf(re)+"."
	case errors.Is(err, errcode.ErrUntrusted):
		// The receiver's policy; its reason, from Ferry, only says so again.
		e.State, e.Text = StateDeclined, peer+" only accepts files from trusted devices."
		if !remote {
			e.Text = "Declined: this device only accepts files from trusted devices."
		} else if r := ReasonOf(re); r != "" {
			e.Text = peer + " only accepts files from trusted devices: " + r + "."
		}
	case errors.Is(err, errcode.ErrNoSpace) && overFileLimit(spaceFigures(err, re)):
		// Not a want of space, which freeing some would mend: a file over
		// what the folder's file system holds ("Bob cannot take film.mkv:
		// the download folder is on a FAT32 drive, ...").
		who, r := peer, spaceFigures(err, re)
		if !remote {
			who = "This device"
		}
		e.State, e.Text = StateDeclined, Sentence(errors.New(r)) // the reason alone: no name in it
		if name, why, ok := strings.Cut(r, ": "+fileLimitWords); ok {
			e.Text = who + " cannot take " + name + ": " + fileLimitWords + why + "."
		}
	case errors.Is(err, errcode.ErrNoSpace):
		// "Not enough space on Bob's laptop: 3.2 GB needed, 1.1 GB free."
		e.State, e.Text = StateDeclined, "Not enough space on "+peer
		if !remote {
			e.Text = "Not enough space on this device"
		}
		if r := spaceFigures(err, re); r != "" {
			e.Text += ": " + r
		}
		e.Text += "."
	case errors.Is(err, errcode.ErrBusy), errors.Is(err, errcode.ErrTooLarge):
		e.State, e.Text = StateDeclined, Sentence(err)
	case errors.As(err, new(*NotSentError)):
		// The sender could not read some files: on the receiving side that
		// is the other device's doing, though it said so file by file.
		var ns *NotSentError
		errors.As(err, &ns)
		e.State, e.Code, e.ByPeer, e.Text = StateFailed, string(errcode.CodeIO), !ns.Here, Sentence(err)
	case errors.As(err, &kc):
		// Another key answered: the identity check's own sentence, not the
		// dial's ("Dial quic HOST: CRYPTO_ERROR 0x12a (local): ..."), which
		// Detail keeps.
		e.State, e.Text = StateFailed, Sentence(kc)
	case errors.As(err, &mm):
		e.State, e.Text = StateFailed, Sentence(mm)
	case remote && errors.Is(err, errcode.ErrVerifyFailed) && savingReason(ReasonOf(re)):
		// The receiver's NotSavedError or FoldersError, in its words: not
		// a failed verification, but its disk (the code it sends is
		// verify_failed so that no sender tries again).
		e.State, e.Code, e.Text = StateFailed, string(errcode.CodeIO), "On "+peer+", "+ReasonOf(re)+"."
	case errors.As(err, new(*NotSavedError)), errors.As(err, new(*FoldersError)):
		e.State, e.Code, e.Text = StateFailed, string(errcode.CodeIO), Sentence(err)
	case !remote && resumable && connectionLost(err):
		// However the connection ended under it (the sender killed, asleep,
		// out of range), a receiver that kept what arrived waits for the
		// sender to come back with the rest.
		e.State, e.Code = StateInterrupted, CodeConnectionLost
		e.Text = "Interrupted — will resume when " + peer + " is back."
	case !remote && errors.Is(err, io.ErrUnexpectedEOF):
		e.State, e.Code, e.Text = StateFailed, CodeConnectionLost, "The connection to "+peer+" was lost."
	default:
		e.State, e.Text = StateFailed, Sentence(err)
	}
	return e
}

// connectionLost reports whether err is the connection to the other device
// ending under a transfer without a word from it: cut mid-message, reset,
// or silent past a timeout (the transport's idle timeout, a stream's stall
// watch, the receiver's own watch for data after it accepted).
func connectionLost(err error) bool {
	var errno syscall.Errno
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, transport.ErrStreamStalled) ||
		errors.Is(err, errcode.ErrTimeout) ||
		(errors.As(err, &errno) && droppedErrnos[errno]) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// savingReason says whether a receiver's reason for a failed transfer is
// that it could not save files or make folders (NotSavedError,
// FoldersError; an older Ferry's "2 of 3 files could not be saved"), not
// that something failed verification.
func savingReason(r string) bool {
	return strings.Contains(r, " could not be saved") || strings.Contains(r, " could be saved") ||
		strings.Contains(r, " could not be made") || strings.Contains(r, " could be made")
}

// spaceFigures is what a refusal for want of space says beyond its code:
// the peer's reason (an older Ferry's began "Not enough space on FOLDER: ",
// which is left out), or this device's own.
func spaceFigures(err error, re *errcode.RemoteError) string {
	if re != nil {
		r := ReasonOf(re)
		if rest, ok := strings.CutPrefix(r, "Not enough space on "); ok {
			if _, figures, ok := strings.Cut(rest, ": "); ok {
				r = figures
			}
		}
		return r
	}
	var rf *RefusedError
	if errors.As(err, &rf) {
		return safetext.Line(rf.Reason)
	}
	return ""
}

// Words a peer's reason may hold that only repeat its code, as Ferry
// devices of every version write them: they are the peer's words on the
// wire, not this build's error texts, so they are spelled out here (and a
// change of wording in this build changes nothing of what it reads).
const userCancelPrefix = "cancelled by the user"

var codeOnlyReasons = map[string]bool{
	"": true, "declined": true, "the receiver declined": true, "cancelled": true,
	userCancelPrefix: true, "paused": true, "paused by the sender": true,
	"this device only accepts files from trusted devices": true,
}

// ReasonOf is a peer's own words for its error, unless they only repeat the code.
func ReasonOf(re *errcode.RemoteError) string {
	if re == nil {
		return ""
	}
	r := strings.TrimSuffix(strings.TrimSpace(re.Reason), ".")
	r = strings.TrimPrefix(r, userCancelPrefix+": ")
	// A refusal's reason that begins with its code's words (a refused
	// offer says "the receiver declined: the receiver declined an offer
	// from this device a moment ago", a refusal right after the hello
	// carries the whole error: "the receiver only accepts files from
	// trusted devices: this receiver has paired...") is read once.
	r = strings.TrimPrefix(r, "the receiver declined: ")
	if re.Code != "" {
		r = strings.TrimPrefix(r, CodeSentinel(re.Code).Error()+": ")
	}
	if codeOnlyReasons[strings.ToLower(r)] {
		return ""
	}
	return safetext.Line(r) // the peer's words: nothing in them may act on a terminal
}

// Apply writes the ending into a result.
func (e Ending) Apply(r *Result) {
	r.State, r.Err, r.Code, r.ByPeer, r.Detail = e.State, e.Text, e.Code, e.ByPeer, e.Detail
	if e.State == StateDone {
		r.Code, r.Detail = "", ""
	}
}

// Sentence makes an error readable: one line (the errors joined in it
// apart by "; "), first letter upper case, a final period, and whatever a
// peer's words in it hold escaped (safetext.Line).
func Sentence(err error) string {
	s := safetext.Message(err.Error())
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return s
}

// RefusalSentence says why the receiver refused one file of an offer: a
// file over what the download folder's file system holds in the reason's
// words alone ("The download folder is on a FAT32 drive, which holds files
// of up to 4.3 GB (this one is 5.4 GB)."), which its code, no_space, would
// make a want of space that freeing some would mend; the rest after their
// code's words.
func RefusalSentence(code errcode.Code, reason string) string {
	if code == errcode.CodeNoSpace && overFileLimit(reason) {
		return Sentence(errors.New(reason))
	}
	if reason == "" {
		return Sentence(CodeSentinel(code))
	}
	return Sentence(fmt.Errorf("%w: %s", CodeSentinel(code), reason))
}

// CodeSentinel is the sentinel error of a wire code (errcode.ErrIO for unknown ones).
func CodeSentinel(c errcode.Code) error {
	if err := (&errcode.RemoteError{Code: c}).Unwrap(); err != nil {
		return err
	}
	return errcode.ErrIO
}

// fileLimitWords begin the reason of a refusal of a file over what the
// download folder's file system holds (store.FileLimit.Reason), which
// crosses the wire as no_space, the code Ferry devices of every version
// know: "the download folder is on a FAT32 drive, which holds files of up
// to 4.3 GB (this one is 5.4 GB)", after the file's name when the offer
// is refused whole. They are a peer's words, so they are spelled out here
// (as codeOnlyReasons are).
const (
	fileLimitWords = "the download folder is on a "
	fileLimitHolds = " drive, which holds files of up to "
)

// overFileLimit says whether a no_space refusal's reason is a file over
// what the download folder's file system holds, not a want of space.
func overFileLimit(reason string) bool {
	return (strings.HasPrefix(reason, fileLimitWords) || strings.Contains(reason, ": "+fileLimitWords)) &&
		strings.Contains(reason, fileLimitHolds)
}
