package ui

import (
	"fmt"
	"time"
)

// receivedNotices coalesces "Files received" notifications by sender: 28
// transfers from one device in a minute gave 28 notifications. The first
// of a burst is told at once, as before; the ones that follow it within
// Options.NoticeQuiet of each other are summed up ("28 transfers from
// Bob") in one notification once the sender has been quiet that long, or
// every 6 × NoticeQuiet during a burst that goes on. The summary has the
// first one's tag, so a notifier that can replace a notification (the
// freedesktop one) shows one notification in all; Fyne's, which cannot,
// shows two. It belongs to the Fyne goroutine; Run's tick flushes it.
type receivedNotices struct {
	bursts map[string]*receivedBurst // by sender
	seq    int                       // numbers the bursts' tags
}

// receivedBurst is what one sender's transfers brought since the burst began.
type receivedBurst struct {
	tag, who  string
	lastID    string // the latest transfer, whose folder the summary shows
	transfers int
	files     int
	bytes     int64
	last      time.Time // the latest transfer's end
	told      int       // transfers the last notification counted
	toldAt    time.Time
}

// noticeEvery is how many quiet periods a burst that goes on waits between
// summaries.
const noticeEvery = 6

// received tells, or counts for a later summary, that transfer id from
// sender key (named who) brought files and bytes, at now.
func (u *UI) received(key, who, id string, files int, bytes int64, now time.Time) {
	n := &u.notices
	if n.bursts == nil {
		n.bursts = map[string]*receivedBurst{}
	}
	b := n.bursts[key]
	if b != nil && now.Sub(b.last) >= u.opt.NoticeQuiet {
		u.tellBurst(b, now) // its summary, if the tick has not told it yet
		b = nil
	}
	if b == nil {
		n.seq++
		b = &receivedBurst{tag: fmt.Sprintf("received:%d", n.seq), who: who, lastID: id, transfers: 1, files: files, bytes: bytes,
			last: now, told: 1, toldAt: now}
		n.bursts[key] = b
		u.notifyTagged(b.tag, "Files received", fmt.Sprintf("Received %s (%s) from %s.", plural(files, "file"), HumanBytes(bytes), who),
			u.receivedActions(id))
		return
	}
	b.transfers++
	b.files += files
	b.bytes += bytes
	b.last = now
	b.who, b.lastID = who, id
}

// flushNotices tells the bursts whose sender went quiet, or that went on
// long enough for another summary, and forgets the ended ones; and the
// sends held for others under way, when they are due (sentnotices.go).
func (u *UI) flushNotices(now time.Time) {
	u.flushSent(now)
	for key, b := range u.notices.bursts {
		quiet := now.Sub(b.last) >= u.opt.NoticeQuiet
		if quiet || now.Sub(b.toldAt) >= noticeEvery*u.opt.NoticeQuiet {
			u.tellBurst(b, now)
		}
		if quiet {
			delete(u.notices.bursts, key)
		}
	}
}

// tellBurst sums up b in its notification, if it counts more than the
// last one told.
func (u *UI) tellBurst(b *receivedBurst, now time.Time) {
	if b.transfers == b.told {
		return
	}
	b.told, b.toldAt = b.transfers, now
	// Clicked, it shows the latest transfer's files in their folder (where
	// the others went too, unless the user changed it meanwhile), as a
	// single transfer's does; "Show in Ferry" opens History.
	actions := []NoticeAction{{Key: "history", Label: "Show in Ferry", Do: func() { u.revealWindow(); u.tabs.SelectIndex(1) }}}
	if v := u.transfers.byID[b.lastID]; firstSaved(v) != "" {
		actions = append([]NoticeAction{{Key: "default", Label: "Show in folder", Do: func() { u.showReceived(v) }}}, actions...)
	} else {
		actions[0].Key = "default"
	}
	u.notifyTagged(b.tag, "Files received", fmt.Sprintf("%s from %s: %s (%s).", plural(b.transfers, "transfer"), b.who,
		plural(b.files, "file"), HumanBytes(b.bytes)), actions)
}
