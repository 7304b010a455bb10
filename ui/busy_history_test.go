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
		if got := historyTitle(c.e, time.Minute); got != c.title {
			t.Errorf("title %q, want %q", got, c.title)
		}
		if got := historyLine(c.e, time.Minute); got != c.line {
			t.Errorf("line %q, want %q", got, c.line)
		}
	}
	if d := busyDetails(several); !strings.Contains(d, "declined 30 offers without asking you") || !strings.Contains(d, "\n30 files, 150 B · 5 Dec 2026 12:08–12:14\n") || !strings.Contains(d, "From Alice, Bob, Carol") {
		t.Errorf("details %q", d)
	}
	// The sizes of offers declined before they were read are not known:
	// no "0 B".
	unknown := several
	unknown.Bytes = 0
	if d := busyDetails(unknown); !strings.Contains(d, "\n30 files · 5 Dec") {
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
