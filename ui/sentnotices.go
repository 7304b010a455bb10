package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/ui/transfer"
)

// sentNotices coalesces "Files sent" notifications of sends that end close
// together: the same files sent to three devices at once gave three
// notifications. A send that ends while no other send is under way is
// told at once, as before; one that ends while others run waits for them,
// up to Options.SentTogether after the first that waited, and all that
// ended meanwhile are told in one ("Files sent to Alice, Bob and Carol").
// It belongs to the Fyne goroutine; every result and Run's tick flush it.
type sentNotices struct {
	held  []sentDone
	since time.Time // when the first of held ended
}

// sentDone is one send that ended with its files delivered.
type sentDone struct {
	who   string
	files int
	bytes int64
}

// namesInSentNotice is how many devices a coalesced notification names;
// the others are counted ("and 4 more").
const namesInSentNotice = 4

// sent tells, or holds to tell with the sends still under way, that a
// send to who delivered files and bytes, at now.
func (u *UI) sent(who string, files int, bytes int64, now time.Time) {
	n := &u.sentNotices
	if len(n.held) == 0 {
		n.since = now
	}
	n.held = append(n.held, sentDone{who: who, files: files, bytes: bytes})
	u.flushSent(now)
}

// flushSent tells the held sends once no other send is under way, or
// once the first of them has waited Options.SentTogether.
func (u *UI) flushSent(now time.Time) {
	n := &u.sentNotices
	if len(n.held) == 0 || u.sendsUnderWay() && now.Sub(n.since) < u.opt.SentTogether {
		return
	}
	held := n.held
	n.held = nil
	if len(held) == 1 {
		s := held[0]
		u.notify("Files sent", fmt.Sprintf("Sent %s (%s) to %s.", plural(s.files, "file"), HumanBytes(s.bytes), s.who))
		return
	}
	names := make([]string, 0, namesInSentNotice+1)
	same := true
	for i, s := range held {
		if i < namesInSentNotice || len(held) == namesInSentNotice+1 {
			names = append(names, s.who)
		}
		same = same && s.files == held[0].files && s.bytes == held[0].bytes
	}
	if more := len(held) - len(names); more > 0 {
		names = append(names, fmt.Sprintf("%d more devices", more))
	}
	title := "Files sent to " + andList(names)
	if same {
		u.notify(title, fmt.Sprintf("Sent %s (%s) to each.", plural(held[0].files, "file"), HumanBytes(held[0].bytes)))
		return
	}
	if len(held) > namesInSentNotice+1 {
		var files int
		var bytes int64
		for _, s := range held {
			files, bytes = files+s.files, bytes+s.bytes
		}
		u.notify(title, fmt.Sprintf("Sent %s (%s) in all.", plural(files, "file"), HumanBytes(bytes)))
		return
	}
	parts := make([]string, len(held))
	for i, s := range held {
		parts[i] = fmt.Sprintf("%s (%s) to %s", plural(s.files, "file"), HumanBytes(s.bytes), s.who)
	}
	u.notify(title, "Sent "+strings.Join(parts, ", ")+".")
}

// sendsUnderWay reports whether a send is waiting for its answer or
// moving files.
func (u *UI) sendsUnderWay() bool {
	for _, v := range u.transfers.byID {
		if d := v.d; d != nil && d.Direction == transfer.Outgoing && (d.Phase.Running() || d.Phase == transfer.Waiting) {
			return true
		}
	}
	return false
}

// andList joins names as a sentence does: "Alice, Bob and Carol".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
