package ui

import (
	"fmt"
	"github.com/ferrydrop/ferry/internal/deviceid"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/internal/numtext"
	"github.com/ferrydrop/ferry/internal/safetext"
)

// EscapeName returns a file or device name as it is safe to show (see
// safetext.Name: invisible and display-changing characters are escaped).
func EscapeName(s string) string { return safetext.Name(s) }

// EscapeText returns a text from a peer (a message, a link) as it is safe
// to show across lines (see safetext.Text).
func EscapeText(s string) string { return safetext.Text(s) }

// EscapeLine shows a message that may carry a peer's words (an engine
// error naming its device, a reason it gave) on one line: the errors
// joined in it apart by "; ", the rest escaped as safetext.Line does.
func EscapeLine(s string) string { return safetext.Message(s) }

// HumanBytes formats a byte count for people: "0 B", "999 B", "1.5 kB", "12.3 MB".
func HumanBytes(n int64) string {
	if n < 0 {
		return "unknown"
	}
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// HumanCount formats a count for people, its thousands apart: "1,000",
// "100,000" ("100000 files" was hard to read at a glance).
func HumanCount(n int) string { return numtext.Group(n) }

// HumanRate formats bytes per second.
func HumanRate(bps float64) string {
	if bps <= 0 {
		return ""
	}
	return HumanBytes(int64(bps)) + "/s"
}

// HumanETA formats a remaining time: "12 s left", "3 min left", "2 h 5 min left".
func HumanETA(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < time.Minute:
		return fmt.Sprintf("%d s left", int(d.Seconds()+0.5))
	case d < time.Hour:
		return fmt.Sprintf("%d min left", int(d.Minutes()+0.5))
	default:
		h := int(d.Hours())
		return fmt.Sprintf("%d h %d min left", h, int(d.Minutes())-60*h)
	}
}

// ShortID is the short form of a device ID: its first 8 characters, as
// "ABCD-EFGH" (deviceid.Short: ferry-cli and the engine write it so too).
func ShortID(id string) string { return deviceid.Short(id) }

// GroupID is the human form of a device ID: groups of 4 joined by '-'.
func GroupID(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i += 4 {
		if i > 0 {
			b.WriteByte('-')
		}
		b.WriteString(id[i:min(i+4, len(id))])
	}
	return b.String()
}

// LastSeen formats how long ago a device was seen.
func LastSeen(t, now time.Time) string {
	if t.IsZero() {
		return "not seen yet"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "last seen just now"
	case d < time.Hour:
		return fmt.Sprintf("last seen %d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("last seen %d h ago", int(d.Hours()))
	default:
		return "last seen " + t.Format("2 Jan 2006")
	}
}

// OSLabel names an operating system as users know it.
func OSLabel(goos string) string {
	switch goos {
	case "linux":
		return "Linux"
	case "darwin":
		return "macOS"
	case "windows":
		return "Windows"
	case "android":
		return "Android"
	case "ios":
		return "iOS"
	case "freebsd", "openbsd", "netbsd":
		return "BSD"
	case "":
		return ""
	}
	return EscapeName(goos)
}

// StateLabel is what the transfer list says for a state.
func StateLabel(s State, dir Direction) string {
	switch s {
	case StateConnecting:
		return "Connecting…"
	case StateWaiting:
		if dir == Incoming {
			return "Waiting for you to accept"
		}
		return "Waiting for accept"
	case StateActive:
		if dir == Incoming {
			return "Receiving"
		}
		return "Sending"
	case StateVerifying:
		return "Verifying"
	case StatePaused:
		return "Paused"
	case StateRetrying:
		return "Reconnecting…"
	case StateDone:
		return "Done"
	case StateFailed:
		return "Failed"
	case StateDeclined:
		return "Declined"
	case StateCancelled:
		return "Cancelled"
	}
	return EscapeName(string(s))
}

// TransportLabel shows a transport name.
func TransportLabel(t string) string {
	switch strings.ToLower(t) {
	case "quic":
		return "QUIC"
	case "tcp":
		return "TCP"
	}
	return strings.ToUpper(EscapeName(t))
}
