package ui

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2/widget"

	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/ui/transfer"
)

// This file is the one place that turns how a transfer stands into words
// and a colour. Rows, history, the tray and notifications all ask it, so a
// transfer is never "Failed" in one place and "Paused" in another.

// Code says why a transfer ended or stopped, with the engine's values.
type Code string

// Why a transfer ended or stopped: the codes of the engine's one table
// (package wire re-exports it; plain data, no engine state). The zero value
// means the engine did not say; the words then stay general and the
// engine's own text is shown in Details.
const (
	CodeNone           Code = ""
	CodeCancelled      Code = Code(wire.CodeCancelled)
	CodePaused         Code = Code(wire.CodePaused)
	CodeDeclined       Code = Code(wire.CodeDeclined)
	CodeExpired        Code = Code(wire.CodeExpired) // nobody answered the offer in time
	CodeBusy           Code = Code(wire.CodeBusy)    // too many offers were waiting
	CodeNoSpace        Code = Code(wire.CodeNoSpace)
	CodeUntrusted      Code = Code(wire.CodeUntrusted) // the receiver takes files from trusted devices only
	CodeConnectionLost Code = Code(wire.CodeConnectionLost)
	CodeGoingAway      Code = Code(wire.CodeGoingAway)    // reconnecting: the other device's Ferry was closed
	CodeNotPaired      Code = Code(wire.CodeNotPaired)    // pairing ended without trust
	CodePairedBefore   Code = Code(wire.CodePairedBefore) // pairing again ended unconfirmed; still paired
	CodeVerifyFailed   Code = Code(wire.CodeVerifyFailed)
	CodeIO             Code = Code(wire.CodeIO)
	CodeProtocol       Code = Code(wire.CodeProtocol)
	// CodeClosedHere: a send that this device's Ferry was closed (or
	// killed) in the middle of, shown again at the next start (the app's
	// unfinished sends); the app's own code, never on the wire.
	CodeClosedHere Code = "closed_here"
)

// Outcome is what the engine says about how a transfer stands: its state
// and, once it stopped, why and who stopped it.
type Outcome struct {
	State State
	Code  Code
	// ByPeer: the other device did it (paused, cancelled, declined, ran out of space).
	ByPeer bool
	// Err is the engine's own text, shown in Details.
	Err string
}

// Status is what the UI shows for an Outcome.
type Status struct {
	// Short names the state in a few words ("Declined by Alice"), for
	// history titles and the tray.
	Short string
	// Text is the sentence a transfer row shows.
	Text string
	// Importance colours it: danger only for what went wrong.
	Importance widget.Importance
	// Detail is the technical text behind it, for Details; may be empty.
	Detail string
}

// describe turns an outcome into words. who names the other device as the
// user knows it ("" when unknown); timeout is how long this device's prompt
// waits for an answer.
func describe(o Outcome, dir Direction, who string, timeout time.Duration) Status {
	in := dir == Incoming
	other := who
	if other == "" {
		other = "the sender"
		if !in {
			other = "the receiver"
		}
	}
	s := Status{Importance: widget.MediumImportance, Detail: o.Err}
	set := func(short, text string, imp widget.Importance) Status {
		s.Short, s.Text, s.Importance = short, text, imp
		if s.Text == "" {
			s.Text = short
		}
		return s
	}
	if o.State == StateFailed {
		// A stop reason carried by a failed state reads as that stop.
		switch o.Code {
		case CodePaused:
			o.State = StatePaused
		case CodeCancelled:
			o.State = StateCancelled
		case CodeDeclined:
			o.State = StateDeclined
		}
	}
	// Codes that mean "nobody took the files" read the same whatever state
	// carried them (an offer that timed out may end as failed or declined).
	switch o.Code {
	case CodeExpired:
		if in {
			return set("Expired", "Expired: not answered in "+humanWait(timeout), widget.LowImportance)
		}
		return set("Expired", fmt.Sprintf("Expired: %s did not answer in time", other), widget.WarningImportance)
	case CodeUntrusted:
		if in {
			return set("Declined", fmt.Sprintf("Declined: %s is not a trusted device", other), widget.LowImportance)
		}
		return set("Declined by "+other, fmt.Sprintf("Declined: %s only accepts files from trusted devices", other), widget.WarningImportance)
	case CodeBusy:
		if in {
			return set("Declined", "Declined: too many offers were waiting", widget.LowImportance)
		}
		return set("Declined by "+other, fmt.Sprintf("Declined: %s is busy with other offers; try again in a moment", other), widget.WarningImportance)
	case CodeNoSpace:
		if o.State != StateDeclined {
			break // ran out of space on the way: a failure (below)
		}
		// The model's words (transfer's declinedByPolicy), which rows show.
		if in && !o.ByPeer {
			return set("Declined", "Declined: "+failure(o, in, other), widget.LowImportance)
		}
		return set("Declined by "+other, "Declined: "+failure(Outcome{Code: o.Code, ByPeer: true}, in, other), widget.WarningImportance)
	}
	switch o.State {
	case StateConnecting:
		return set("Connecting", "Connecting…", widget.MediumImportance)
	case StateWaiting:
		if in {
			return set("Waiting for you", "Waiting for you to accept", widget.MediumImportance)
		}
		return set("Waiting", fmt.Sprintf("Waiting for %s to accept", other), widget.MediumImportance)
	case StateActive:
		if in {
			return set("Receiving", "", widget.MediumImportance)
		}
		return set("Sending", "", widget.MediumImportance)
	case StateVerifying:
		return set("Verifying", "", widget.MediumImportance)
	case StatePaused:
		if o.ByPeer || in {
			return set("Paused by "+other, "", widget.WarningImportance)
		}
		return set("Paused by you", "", widget.WarningImportance)
	case StateRetrying:
		return set("Reconnecting", fmt.Sprintf("Reconnecting to %s…", other), widget.WarningImportance)
	case StateInterrupted:
		return set("Interrupted", fmt.Sprintf("Interrupted — will resume when %s is back", other), widget.WarningImportance)
	case StateDone:
		if in {
			return set("Received", "Done", widget.SuccessImportance)
		}
		return set("Sent", "Done", widget.SuccessImportance)
	case StateDeclined:
		switch {
		case o.ByPeer || !in && o.Code == CodeDeclined:
			return set("Declined by "+other, "", widget.WarningImportance)
		case in && o.Code == CodeDeclined:
			return set("Declined by you", "", widget.LowImportance)
		case in:
			// Declined here without the user being asked: the engine's
			// policy (no space, not trusted, too many offers) did it.
			return set("Declined", "Declined automatically: Details says why", widget.LowImportance)
		}
		return set("Declined by "+other, "", widget.WarningImportance)
	case StateCancelled:
		if o.ByPeer {
			return set("Cancelled by "+other, "", widget.LowImportance)
		}
		return set("Cancelled by you", "", widget.LowImportance)
	case StateFailed:
		return set("Failed", failure(o, in, other), widget.DangerImportance)
	}
	return set(EscapeName(string(o.State)), "", widget.MediumImportance)
}

// failure says why a transfer failed, from the one table of reasons
// (transfer.ReasonText), as a sentence without its final period.
func failure(o Outcome, in bool, other string) string {
	dir := transfer.Outgoing
	if in {
		dir = transfer.Incoming
	}
	return strings.TrimSuffix(transfer.ReasonText(transfer.Reason(o.Code), dir, o.ByPeer, other), ".")
}

// humanWait formats a prompt timeout: "2 minutes", "45 seconds".
func humanWait(d time.Duration) string {
	switch {
	case d <= 0:
		return "time"
	case d%time.Minute == 0:
		return plural(int(d/time.Minute), "minute")
	}
	return plural(int(d.Round(time.Second)/time.Second), "second")
}

// DefaultPort is the port Ferry listens on when it is free (QUIC over UDP,
// and TCP); app.DefaultPort is this one.
const DefaultPort = 47800

// addressText is this device's address for the status line, with its port
// named: "192.168.1.20 · port 47800", and when the default port was taken,
// "192.168.1.20 · port 51234 (not the usual 47800)", so that a saved address, a
// link or a firewall rule can be checked against it (issue 26, finding 9).
func addressText(hostPort string) string {
	host, p, err := net.SplitHostPort(hostPort)
	port, perr := strconv.Atoi(p)
	if err != nil || perr != nil {
		return hostPort
	}
	s := fmt.Sprintf("%s · port %d", host, port)
	if port != DefaultPort {
		s += fmt.Sprintf(" (not the usual %d)", DefaultPort)
	}
	return s
}
