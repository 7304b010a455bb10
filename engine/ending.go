package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ferrydrop/ferry/engine/wire"
)

// ending is how a transfer, or one session of it, ended, in the words the
// user reads: which state, why (a code of package errcode, or
// codeConnectionLost), whether the other device did it, a sentence, and the
// technical detail behind it.
type ending struct {
	state  State
	code   string
	byPeer bool
	text   string
	detail string
}

// codeConnectionLost: the other device went away without a word (killed,
// asleep, out of range); a receiver keeps what arrived for the next attempt.
// It is the one table's (package errcode), though it never crosses the wire.
const codeConnectionLost = string(wire.CodeConnectionLost)

// errConnectionLost is how a receiving session learns that its sender is
// gone when no stream said so first.
var errConnectionLost = fmt.Errorf("the connection to the sender was lost: %w", io.ErrUnexpectedEOF)

// endOf maps the error that ended a transfer to its ending. peer is the
// other device's name; resumable says whether a receiver kept its partial
// data (a lost sender is then an interruption, not a failure).
func endOf(err error, peer string, resumable bool) ending {
	if peer == "" {
		peer = "the other device"
	}
	var re *wire.RemoteError
	remote := errors.As(err, &re)
	e := ending{code: string(wire.CodeOf(err)), byPeer: remote}
	if err != nil {
		e.detail = err.Error()
	}
	switch {
	case err == nil:
		return ending{state: StateDone}
	case errors.Is(err, errPairMismatch):
		// Pairing failures are not the receiver's trust policy: they have
		// their own code (the peer is told CodeUntrusted, closeCode).
		e.state, e.code, e.text = StateFailed, string(wire.CodeNotPaired), sentence(err)
	case errors.Is(err, errPeerRejectedCode):
		e.state, e.code, e.byPeer = StateFailed, string(wire.CodeNotPaired), true
		e.text = peer + " did not confirm the verification code, so the devices are not paired."
	case errors.Is(err, errStoppedReceiving):
		e.state, e.code, e.text = StateCancelled, string(wire.CodeCancelled), "Stopped: receiving was turned off."
	case errors.Is(err, errCancelledByUser):
		e.state, e.code, e.text = StateCancelled, string(wire.CodeCancelled), "Cancelled by you."
	case errors.Is(err, context.Canceled), errors.Is(err, ErrClosed):
		e.state, e.code, e.text = StateCancelled, string(wire.CodeCancelled), "Ferry was closed before the transfer finished."
	case remote && errors.Is(err, wire.ErrGoingAway):
		// Ferry was closed there: the device went away, and said so.
		e.code = codeConnectionLost
		e.state, e.text = StateFailed, peer+" went away: Ferry was closed there."
		if resumable {
			e.state, e.text = StateInterrupted, "Interrupted — Ferry was closed on "+peer+"; will resume when it is back."
		}
	case errors.Is(err, errTakenOver):
		e.state, e.code, e.byPeer = StateCancelled, string(wire.CodeCancelled), true
		e.text = "Replaced by a newer send of the same files from " + peer + ", which continues from what arrived."
	case errors.Is(err, wire.ErrCancelled):
		e.state, e.text = StateCancelled, "Cancelled by "+peer+"."
		if r := reasonOf(re); r != "" {
			e.text = "Cancelled by " + peer + ": " + r + "."
		}
	case errors.Is(err, wire.ErrPaused):
		e.state = StatePaused
		e.text = "Paused by " + peer + "."
		if !remote {
			e.text = "Paused."
		}
	case errors.Is(err, wire.ErrExpired):
		e.state = StateDeclined
		e.text = "Expired: " + peer + " did not answer in time."
		if !remote {
			e.text = "Expired: not answered in time."
		}
	case errors.Is(err, wire.ErrDeclined):
		e.state = StateDeclined
		e.text = "Declined by " + peer + "."
		if !remote {
			e.text = "Declined by you."
		}
		if r := reasonOf(re); remote && r != "" {
			e.text = "Declined by " + peer + ": " + r + "."
		}
	case errors.Is(err, wire.ErrTooLarge) && remote && reasonOf(re) != "":
		// The receiver says in its own words what it takes ("Bob's laptop
		// takes at most ...").
		e.state, e.text = StateDeclined, "Declined: "+reasonOf(re)+"."
	case errors.Is(err, wire.ErrUntrusted), errors.Is(err, wire.ErrBusy), errors.Is(err, wire.ErrNoSpace), errors.Is(err, wire.ErrTooLarge):
		e.state, e.text = StateDeclined, sentence(err)
	case !remote && errors.Is(err, io.ErrUnexpectedEOF) && resumable:
		e.state, e.code = StateInterrupted, codeConnectionLost
		e.text = "Interrupted — will resume when " + peer + " is back."
	case !remote && errors.Is(err, io.ErrUnexpectedEOF):
		e.state, e.code, e.text = StateFailed, codeConnectionLost, "The connection to "+peer+" was lost."
	default:
		e.state, e.text = StateFailed, sentence(err)
	}
	return e
}

// Words a peer's reason may hold that only repeat its code, as Ferry
// devices of every version write them: they are the peer's words on the
// wire, not this build's error texts, so they are spelled out here (and a
// change of wording in this build changes nothing of what it reads).
const userCancelPrefix = "cancelled by the user"

var codeOnlyReasons = map[string]bool{
	"": true, "declined": true, "the receiver declined": true, "cancelled": true,
	userCancelPrefix: true, "paused": true, "paused by the sender": true,
}

// reasonOf is a peer's own words for its error, unless they only repeat the code.
func reasonOf(re *wire.RemoteError) string {
	if re == nil {
		return ""
	}
	r := strings.TrimSuffix(strings.TrimSpace(re.Reason), ".")
	r = strings.TrimPrefix(r, userCancelPrefix+": ")
	if codeOnlyReasons[strings.ToLower(r)] {
		return ""
	}
	return r
}

// apply writes the ending into a result.
func (e ending) apply(r *Result) {
	r.State, r.Err, r.Code, r.ByPeer, r.Detail = e.state, e.text, e.code, e.byPeer, e.detail
	if e.state == StateDone {
		r.Code, r.Detail = "", ""
	}
}
