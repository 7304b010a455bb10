package ui

import (
	"strings"
	"testing"
	"time"
)

// TestBusyHistoryEntrySaysHowMany: an entry summing up offers declined
// while busy says how many, from whom and over what time, and the search
// finds it by any of its devices' names.
func TestBusyHistoryEntrySaysHowMany(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 8, 0, 0, time.Local)
	several := HistoryEntry{ID: "b", Direction: Incoming, Files: 30, Bytes: 150, State: StateDeclined, Code: CodeBusy,
		Since: t0, Finished: t0.Add(6 * time.Minute), Busy: 30,
		Senders: []BusySender{{ID: idAlice, Name: "Alice"}, {ID: "BOB", Name: "Bob"}, {ID: "CAROL", Name: "Carol"}}}
	one := HistoryEntry{ID: "o", Direction: Incoming, PeerID: idAlice, PeerName: "Alice", Files: 4, State: StateDeclined, Code: CodeBusy,
		Since: t0, Finished: t0, Busy: 4, Senders: []BusySender{{ID: idAlice, Name: "Alice"}}}
	for _, c := range []struct {
		e           HistoryEntry
		title, line string
	}{
		{several, "Declined: 30 offers from 3 devices", "Alice, Bob and 1 more · 5 Dec 12:08–12:14 · too many offers were waiting at once"},
		{one, "Declined: 4 offers from Alice", "5 Dec 12:08 · too many offers were waiting at once"},
	} {
		if got := historyTitle(c.e, nil, time.Minute); got != c.title {
			t.Errorf("title %q, want %q", got, c.title)
		}
		if got := historyLine(c.e, nil, time.Minute); got != c.line {
			t.Errorf("line %q, want %q", got, c.line)
		}
	}
	if d := busyDetails(several, nil); !strings.Contains(d, "declined 30 offers without asking you") || !strings.Contains(d, "\n30 files, 150 B · 5 Dec 2026 12:08–12:14\n") || !strings.Contains(d, "From Alice, Bob, Carol") {
		t.Errorf("details %q", d)
	}
	// The sizes of offers declined before they were read are not known:
	// no "0 B".
	unknown := several
	unknown.Bytes = 0
	if d := busyDetails(unknown, nil); !strings.Contains(d, "\n30 files · 5 Dec") {
		t.Errorf("details without sizes %q", d)
	}

	u, be, _ := newTestUI(t)
	be.history = []HistoryEntry{several, {ID: "d", Direction: Incoming, PeerName: "Dave", State: StateDeclined, Code: CodeDeclined, Finished: t0}}
	u.history.reload()
	u.history.search.SetText("carol")
	if got := u.history.entries; len(got) != 1 || got[0].ID != "b" {
		t.Errorf("searching for carol shows %+v, want the busy entry", got)
	}
}

// TestBusyDeclinedOffersLeaveNoRow: an offer this device's limits declined
// (busy) leaves no row among the transfers, where a flood of senders left
// one each ("Declined: too many offers were waiting" under an empty bar);
// History sums them up. An offer the user declined keeps its row.
func TestBusyDeclinedOffersLeaveNoRow(t *testing.T) {
	u, _, _ := newTestUI(t)
	for _, id := range []string{"b1", "b2", "d1", "b3"} {
		p := Peer{ID: id + "PEER", Name: "Laptop " + id}
		u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Incoming, State: StateWaiting, Peer: p})
		r := &Result{State: StateDeclined, Code: CodeBusy, Files: 1}
		if id == "d1" {
			r.Code = CodeDeclined
		}
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Direction: Incoming, State: StateDeclined, Peer: p, Result: r})
	}
	if got := u.transfers.order; len(got) != 1 || got[0] != "d1" {
		t.Errorf("rows %v, want only the offer the user declined", got)
	}
}

// TestBusyHistoryCountsOffersRefusedUnread: History's summary of offers
// declined while busy counts those this device's limits refused before
// reading them (Unread: too many at once, too many new devices, muted),
// says so, and does not make up their files; one such offer is summed up
// too (its files are not known), and History shows them as the backend
// tells it counted some (TransferRefused), with no transfer. A flood's
// refusals before the offer was read were missing: 30 of 48 offers.
func TestBusyHistoryCountsOffersRefusedUnread(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 8, 0, 0, time.Local)
	flood := HistoryEntry{ID: "b", Direction: Incoming, Files: 30, Bytes: 150, State: StateDeclined, Code: CodeBusy,
		Since: t0, Finished: t0.Add(6 * time.Minute), Busy: 48, Unread: 18, Muted: 3,
		Senders: []BusySender{{ID: idAlice, Name: "Alice"}, {ID: "BOB", Name: "Bob"}, {ID: "CAROL", Name: "Carol"}}}
	one := HistoryEntry{ID: "o", Direction: Incoming, PeerID: idAlice, PeerName: "Alice", State: StateDeclined, Code: CodeBusy,
		Since: t0, Finished: t0, Busy: 1, Unread: 1, Senders: []BusySender{{ID: idAlice, Name: "Alice"}}}
	muted := HistoryEntry{ID: "m", Direction: Incoming, State: StateDeclined, Code: CodeBusy,
		Since: t0, Finished: t0.Add(time.Minute), Busy: 2, Unread: 2, Muted: 2,
		Senders: []BusySender{{ID: idAlice, Name: "Alice"}, {ID: "BOB", Name: "Bob"}}}
	for _, c := range []struct {
		e              HistoryEntry
		title, line    string
		details, notIn []string
	}{
		{flood, "Declined: 48 offers from 3 devices", "Alice, Bob and 1 more · 5 Dec 12:08–12:14 · too many offers were waiting at once",
			[]string{"declined 48 offers without asking you", "3 offers came from devices or network addresses whose offers you had declined",
				"18 of them were turned away before they were read", "\n30 files, 150 B · 5 Dec 2026 12:08–12:14\n"}, nil},
		{one, "Declined: 1 offer from Alice", "5 Dec 12:08 · too many offers were waiting at once",
			[]string{"declined 1 offer without asking you", "They were turned away before they were read", "\n5 Dec 2026 12:08\n"}, []string{"0 files"}},
		{muted, "Declined: 2 offers from 2 devices", "Alice, Bob · 5 Dec 12:08–12:09 · you declined offers from them a moment ago",
			[]string{"you had declined offers from these devices", "try again in a few minutes"}, []string{"too many", "0 files"}},
	} {
		if got := historyTitle(c.e, nil, time.Minute); got != c.title {
			t.Errorf("title %q, want %q", got, c.title)
		}
		if got := historyLine(c.e, nil, time.Minute); got != c.line {
			t.Errorf("line %q, want %q", got, c.line)
		}
		d := busyDetails(c.e, nil)
		for _, w := range c.details {
			if !strings.Contains(d, w) {
				t.Errorf("details %q lack %q", d, w)
			}
		}
		for _, w := range c.notIn {
			if strings.Contains(d, w) {
				t.Errorf("details %q say %q", d, w)
			}
		}
	}

	u, be, _ := newTestUI(t)
	be.history = []HistoryEntry{one}
	u.ApplyTransfer(TransferEvent{Kind: TransferRefused, Time: t0})
	if got := u.history.entries; len(got) != 1 || got[0].ID != "o" {
		t.Errorf("History shows %+v after refusals were counted, want them", got)
	}
	if len(u.transfers.order) != 0 {
		t.Errorf("refusals left rows %v", u.transfers.order)
	}
}
