package transfer

import (
	"fmt"
	"strings"
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
	case d.Phase == Paused:
		return []Action{ActionCancel}
	case d.Phase == Failed || d.Phase == Cancelled && d.Direction == Outgoing:
		return []Action{ActionRetry}
	case d.Phase == Done && d.Direction == Incoming && d.Verified > 0:
		return []Action{ActionOpen}
	}
	return nil
}

// what names the delivery's contents in a few words: "a text", "1 file",
// "3 files", "2 files and a text".
func (d *Delivery) what() string {
	n := len(d.Files)
	switch {
	case n == 0 && d.Text:
		return "a text"
	case n == 0:
		return "files"
	case d.Text:
		return plural(n, "file") + " and a text"
	}
	return plural(n, "file")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func (d *Delivery) who() string {
	if d.Peer == "" {
		return "the other device"
	}
	return d.Peer
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
		s = fmt.Sprintf("Connecting to %s…", d.who())
	case Reconnecting:
		s = fmt.Sprintf("Reconnecting to %s…", d.who())
	case Moved:
		s = "Network changed — continuing"
	case Resumed:
		s = "Resuming…"
	case Sending:
		verb := "Sending"
		if d.Direction == Incoming {
			verb = "Receiving"
		}
		s = fmt.Sprintf("%s %s", verb, d.what())
		if d.Moved {
			s = "Network changed — continuing · " + s
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
	case Declined:
		// Say what was declined: a text is not "files".
		if d.Direction == Incoming {
			s = fmt.Sprintf("%s: %s from %s", d.byText("Declined"), d.what(), d.who())
		} else {
			s = fmt.Sprintf("%s: %s", d.byText("Declined"), d.what())
		}
	case Expired:
		s = "Expired: nobody answered in time"
	}
	return s
}

func (d *Delivery) byText(verb string) string {
	if d.By == Peer {
		return verb + " by " + d.who()
	}
	return verb + " by you"
}

func (d *Delivery) doneText() string {
	if len(d.Files) == 0 && d.Text {
		if d.Direction == Incoming {
			return "Text received"
		}
		return "Text sent"
	}
	var parts []string
	if d.Direction == Incoming {
		parts = append(parts, fmt.Sprintf("Done · %d verified", d.Verified))
	} else {
		parts = append(parts, "Sent "+plural(len(d.Files)-d.Refused, "file"))
	}
	if d.Refused > 0 {
		parts = append(parts, fmt.Sprintf("%d refused", d.Refused))
	}
	return strings.Join(parts, " · ")
}

func (d *Delivery) failedText() string {
	switch d.Reason {
	case ReasonConnectionLost:
		return fmt.Sprintf("%s went away. Retry sends the rest when it is back.", d.who())
	case ReasonUnreachable:
		return fmt.Sprintf("%s could not be reached. Is it on and receiving?", d.who())
	case ReasonNoSpace:
		return "Not enough space on the receiving disk"
	case ReasonUntrusted:
		return fmt.Sprintf("%s only accepts files from trusted devices", d.who())
	case ReasonVerifyFailed:
		return "The files arrived damaged and were not kept"
	case ReasonIO:
		if d.Direction == Incoming {
			return "The files could not be written here"
		}
		return "The files could not be read here"
	case ReasonProtocol:
		return fmt.Sprintf("%s sent something Ferry does not understand", d.who())
	}
	return "Failed"
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
			Title: d.Status(), Names: names, Files: len(d.Files), Refused: d.Refused,
			Bytes: d.Bytes, Text: d.Text,
		})
	}
	return out
}
