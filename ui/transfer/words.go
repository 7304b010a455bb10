package transfer

import (
	"fmt"
	"net"
	"strings"

	"github.com/ferrydrop/ferry/internal/numtext"
)

// Action is a button a delivery's row offers.
type Action string

// Row actions.
const (
	ActionPause  Action = "Pause"
	ActionResume Action = "Resume"
	ActionCancel Action = "Cancel"
	ActionRetry  Action = "Retry"
	ActionOpen   Action = "Open"
	// ActionDiscard deletes what an interrupted receive kept, as
	// Settings' Unfinished transfers does.
	ActionDiscard Action = "Discard"
)

// Actions are the buttons the row offers now, in order.
func (d *Delivery) Actions() []Action {
	switch {
	case d.Phase.Running() && d.Direction == Outgoing:
		return []Action{ActionPause, ActionCancel}
	case d.Phase.Running(), d.Phase == Offered, d.Phase == Waiting:
		return []Action{ActionCancel}
	case d.Phase == Paused && d.Direction == Outgoing && d.By == You:
		return []Action{ActionResume, ActionCancel}
	case d.Phase == Interrupted && d.goesOn:
		// Interrupted while its transfer goes on (a browser's page that
		// stopped sending): Cancel gives up on it.
		return []Action{ActionCancel}
	case d.Phase == Interrupted:
		// Receiving, its sender gone: nothing runs here to cancel; it
		// goes on when the sender is back, unless the user discards what
		// it kept (as in Settings' Unfinished transfers).
		return []Action{ActionDiscard}
	case d.Phase == Paused:
		// Receiving, paused by the sender: it goes on when the sender
		// resumes.
		return nil
	case d.Phase == Failed && d.Rejoin:
		// It goes on by itself when the device is back; Retry tries now,
		// Cancel gives up on it.
		return []Action{ActionRetry, ActionCancel}
	case d.Phase == Failed && d.NotStarted:
		// Nothing of it is known to the engine to send again: the user
		// sends the files anew (they were the trouble).
		return nil
	case (d.Phase == Failed || d.Phase == Cancelled) && d.Direction == Outgoing:
		// A receive is sent again by its sender: Retry here could only
		// say so (Engine.Retry refuses it).
		return []Action{ActionRetry}
	case d.Phase == Done && d.Direction == Incoming && d.Verified > 0:
		return []Action{ActionOpen}
	}
	return nil
}

// what names the delivery's contents in a few words: "a text", "1 file",
// "3 files", "2 files and a text".
func (d *Delivery) what() string {
	n := d.files()
	switch {
	case n == 0 && d.Text:
		return "a text"
	case n == 0:
		return "files"
	case d.Text:
		return numtext.Count(n, "file") + " and a text"
	}
	return numtext.Count(n, "file")
}

// files is how many files the delivery has.
func (d *Delivery) files() int { return max(d.Count, len(d.Files)) }

func (d *Delivery) who() string {
	if d.Peer == "" {
		return "the other device"
	}
	return d.Peer
}

// triesText says how many attempts to reach the other device failed so
// far, " (tried 3 times)"; "" before the first. A row that said only
// "Connecting to Bench box…" for the two minutes its sends kept failing
// told nothing of them (Details says why the last one failed).
func (d *Delivery) triesText() string {
	switch {
	case d.Tries == 0:
		return ""
	case d.Tries == 1:
		return " (tried once)"
	case d.Tries == 2:
		return " (tried twice)"
	}
	return fmt.Sprintf(" (tried %d times)", d.Tries)
}

// Status is the sentence the delivery's row shows.
func (d *Delivery) Status() string {
	var s string
	switch d.Phase {
	case Offered:
		s = fmt.Sprintf("%s offers %s", d.who(), d.what())
	case Waiting:
		s = fmt.Sprintf("Waiting for %s to accept", d.who())
	case Connecting:
		s = fmt.Sprintf("Connecting to %s…", d.who()) + d.triesText()
	case Reconnecting:
		s = fmt.Sprintf("Reconnecting to %s…", d.who()) + d.triesText()
	case Moved:
		s = d.movedText()
	case Resumed:
		s = "Resuming…"
	case Interrupted:
		s = fmt.Sprintf("Interrupted — will resume when %s is back", d.who())
	case Sending:
		verb := "Sending"
		if d.Direction == Incoming {
			verb = "Receiving"
		}
		s = fmt.Sprintf("%s %s", verb, d.what())
		if d.Moved {
			s = d.movedText() + " · " + s
		}
	case Paused:
		if d.By == Peer {
			s = "Paused by " + d.who()
		} else {
			s = "Paused by you"
		}
	case Done:
		s = d.doneText()
	case Failed:
		s = d.failedText()
	case Cancelled:
		s = d.byText("Cancelled")
		if d.discarded {
			s = "Discarded by you: its partial files were deleted"
		}
	case Declined:
		// Say what was declined: a text is not "files".
		if d.By == Nobody {
			s = d.declinedByPolicy()
		} else if d.Direction == Incoming {
			s = fmt.Sprintf("%s: %s from %s", d.byText("Declined"), d.what(), d.who())
		} else {
			s = fmt.Sprintf("%s: %s", d.byText("Declined"), d.what())
		}
	case Expired:
		s = "Expired: nobody answered in time"
	}
	return s
}

// movedText says that the network changed under the delivery and it goes
// on, and how when a device left the network.
func (d *Delivery) movedText() string {
	if d.LeftLAN {
		return "Left the network — continuing over the internet"
	}
	return "Network changed — continuing"
}

// PathText names the way the delivery goes: "direct" (to the device's
// address, as on the LAN), "through the internet (direct)", "relayed via
// HOST"; "" while no session carries it.
func (d *Delivery) PathText() string {
	switch d.Route {
	case RouteLAN:
		return "direct"
	case RouteInternet:
		return "through the internet (direct)"
	case RouteRelayed:
		host := d.Relay
		if h, _, err := net.SplitHostPort(d.Relay); err == nil {
			host = h
		}
		if host == "" {
			return "relayed"
		}
		return "relayed via " + host
	}
	return ""
}

// declinedByPolicy says why a receiver's policy declined the delivery
// without a person deciding.
func (d *Delivery) declinedByPolicy() string {
	in := d.Direction == Incoming
	switch d.Reason {
	case ReasonUntrusted:
		if in {
			return fmt.Sprintf("Declined: %s is not a trusted device", d.who())
		}
		return fmt.Sprintf("Declined: %s only accepts files from trusted devices", d.who())
	case ReasonBusy:
		if in {
			return "Declined: too many offers were waiting"
		}
		return fmt.Sprintf("Declined: %s is busy with other offers; try again in a moment", d.who())
	case ReasonNoSpace:
		return "Declined: " + ReasonText(ReasonNoSpace, d.Direction, !in, d.who())
	}
	if in {
		return "Declined automatically: Details says why"
	}
	return "Declined by " + d.who()
}

func (d *Delivery) byText(verb string) string {
	if d.By == Peer {
		return verb + " by " + d.who()
	}
	return verb + " by you"
}

func (d *Delivery) doneText() string {
	if d.files() == 0 && d.Text {
		if d.Direction == Incoming {
			return "Text received"
		}
		return "Text sent"
	}
	// Both sides count the files the same way ("Sent 3 files", "Received
	// 3 files"); the receiver's were also checked against the sender's
	// hashes, which its line says.
	var parts []string
	if d.Direction == Incoming {
		parts = append(parts, "Received "+numtext.Count(d.Verified, "file")+" · verified")
	} else {
		parts = append(parts, "Sent "+numtext.Count(d.files()-d.Refused, "file"))
	}
	if d.Refused > 0 {
		parts = append(parts, numtext.Group(d.Refused)+" refused")
	}
	return strings.Join(parts, " · ")
}

func (d *Delivery) failedText() string {
	if d.Rejoin && d.Reason == ReasonClosedHere {
		return fmt.Sprintf("Interrupted: Ferry was closed while sending. It sends the rest when %s is back.", d.who())
	}
	if d.Rejoin {
		return RejoinText(d.who())
	}
	return ReasonText(d.Reason, d.Direction, d.By == Peer, d.who())
}

// ReasonText says why a delivery failed, in words for the person who reads
// them: what happened and what they can do. who names the other device.
// reason is a code of the engine's one table (engine/wire); byPeer says the
// other device reported it (its disk, its files). It is the only place
// such words are written: rows, history and notifications all ask it.
func ReasonText(reason Reason, dir Direction, byPeer bool, who string) string {
	in := dir == Incoming
	switch reason {
	case ReasonConnectionLost:
		if in {
			return fmt.Sprintf("%s went away. What arrived is kept; the rest comes when %s sends again.", who, who)
		}
		// Said of a send the app does not retry by itself (it did once,
		// or nothing tells it when the device is back); RejoinText is
		// the words for one it does.
		return fmt.Sprintf("%s went away. Retry sends the rest when it is back.", who)
	case ReasonUnreachable:
		return fmt.Sprintf("%s could not be reached. Is it on and receiving?", who)
	case ReasonNoSpace:
		if in && !byPeer {
			return "Not enough space on this device"
		}
		return "Not enough space on " + who
	case ReasonUntrusted:
		return fmt.Sprintf("%s only accepts files from trusted devices", who)
	case ReasonNotPaired:
		// Pairing, not a policy: this receiver may accept everyone.
		if byPeer {
			return fmt.Sprintf("%s did not confirm the verification code, so the devices are not paired. Compare the codes on both screens and try again.", who)
		}
		return fmt.Sprintf("You said the verification codes differ, so this device does not trust %s.", who)
	case ReasonPairedBefore:
		// Nothing was undone: the session proved the key paired before.
		if byPeer {
			return fmt.Sprintf("%s did not confirm the verification code; the devices stay paired as they were before.", who)
		}
		return fmt.Sprintf("You said the verification codes differ; %s was paired with this device before, and they stay paired as they were.", who)
	case ReasonVerifyFailed:
		return "Some files arrived damaged and were not kept"
	case ReasonIO:
		switch {
		case in && byPeer:
			return who + " could not read the files"
		case in:
			return "The files could not be saved here"
		case byPeer:
			return who + " could not save the files"
		}
		return "The files could not be read here"
	case ReasonProtocol:
		return fmt.Sprintf("%s sent something this version of Ferry does not understand", who)
	case ReasonClosedHere:
		// Said of a send the app does not resume by itself (it did once);
		// Delivery.failedText has the words for one it does.
		return "Interrupted: Ferry was closed while sending. Retry sends the rest."
	}
	return "Failed: Details says why"
}

// RejoinText says why a send stopped when the other device went away and
// the app sends the rest by itself when discovery sees it again (Delivery.
// Rejoin): the words of ReasonText's connection_lost for such a send.
func RejoinText(who string) string {
	return fmt.Sprintf("%s went away. Ferry will send the rest when it is back.", who)
}

// HistoryEntry is what history keeps of a finished delivery.
type HistoryEntry struct {
	Delivery  string
	Direction Direction
	Peer      string
	Phase     Phase
	Title     string // what the row said when it ended
	Names     []string
	Files     int
	Refused   int
	Bytes     int64
	Text      bool
}

// History returns one entry per finished delivery, newest first, with the
// names of its files (a send from the app is found by a search like one
// from the CLI).
func (m *Model) History() []HistoryEntry {
	var out []HistoryEntry
	for _, d := range m.Deliveries() {
		if !d.Phase.Final() {
			continue
		}
		names := make([]string, 0, len(d.Files))
		for _, f := range d.Files {
			names = append(names, f.Path)
		}
		out = append(out, HistoryEntry{
			Delivery: d.ID, Direction: d.Direction, Peer: d.Peer, Phase: d.Phase,
			Title: d.Status(), Names: names, Files: d.files(), Refused: d.Refused,
			Bytes: d.Bytes, Text: d.Text,
		})
	}
	return out
}
