package ui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

func TestPauseResumeReachBackendAndRowRendersStates(t *testing.T) {
	u, be, _ := newTestUI(t)
	id := "s1"
	alice := Peer{ID: idAlice, Name: "Alice"}
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: id, Direction: Outgoing, State: StateActive, Peer: alice,
		Progress: &Progress{Bytes: 10, Total: 100, Rate: 1e6, ETA: time.Second}})
	v := u.transfers.byID[id]
	if !v.pause.Visible() || v.resume.Visible() || v.retry.Visible() {
		t.Fatalf("active send: pause %v resume %v retry %v, want only pause", v.pause.Visible(), v.resume.Visible(), v.retry.Visible())
	}

	// The buttons are keyboard reachable: focusable, and Space presses them.
	var f fyne.Focusable = v.pause
	u.win.Canvas().Focus(f)
	v.pause.TypedKey(&fyne.KeyEvent{Name: fyne.KeySpace})
	if len(be.pauses) != 1 || be.pauses[0] != id {
		t.Fatalf("pauses = %v, want [%s]", be.pauses, id)
	}

	// The row follows the user's action at once, and the engine's event
	// after it changes nothing.
	if v.stateLbl.Text != "Paused by you" || v.pause.Visible() || !v.resume.Visible() {
		t.Errorf("right after Pause: state %q pause %v resume %v", v.stateLbl.Text, v.pause.Visible(), v.resume.Visible())
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StatePaused})
	if v.stateLbl.Text != "Paused by you" || v.pause.Visible() || !v.resume.Visible() || !v.cancel.Visible() {
		t.Fatalf("paused: state %q pause %v resume %v cancel %v", v.stateLbl.Text, v.pause.Visible(), v.resume.Visible(), v.cancel.Visible())
	}
	if v.bar.Value != 0.1 || contains(v.sub.Text, "MB/s") {
		t.Errorf("paused: bar %v, sub %q (no rate while paused)", v.bar.Value, v.sub.Text)
	}
	test.Tap(v.resume)
	if len(be.resumes) != 1 || be.resumes[0] != id {
		t.Fatalf("resumes = %v", be.resumes)
	}

	// Reconnecting carries the engine's reason in the state event's result.
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StateRetrying,
		Result: &Result{State: StateRetrying, Err: "the connection to Alice was lost"}})
	if want := "Reconnecting to Alice…"; v.stateLbl.Text != want {
		t.Errorf("reconnecting: state %q, want %q", v.stateLbl.Text, want)
	}
	if got := statusText(u.transfers.status(v)); !contains(got, "the connection to Alice was lost") {
		t.Errorf("reconnecting: details %q lack the engine's reason", got)
	}
	if !v.pause.Visible() || v.resume.Visible() || v.result != nil {
		t.Errorf("reconnecting: pause %v resume %v result %v", v.pause.Visible(), v.resume.Visible(), v.result)
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: id, Direction: Outgoing, State: StateActive})
	if v.stateLbl.Text != "Sending files" {
		t.Errorf("after reconnecting: state %q", v.stateLbl.Text)
	}

	// The receiving side has no pause: only the sender can.
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "r1", Direction: Incoming, State: StateActive, Peer: alice})
	r := u.transfers.byID["r1"]
	if r.pause.Visible() || r.resume.Visible() || r.retry.Visible() {
		t.Errorf("incoming: pause %v resume %v retry %v", r.pause.Visible(), r.resume.Visible(), r.retry.Visible())
	}
}

func TestRetryFailedSendStartsNewTransfer(t *testing.T) {
	u, be, _ := newTestUI(t)
	alice := Peer{ID: idAlice, Name: "Alice"}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "old", Direction: Outgoing, State: StateActive, Peer: alice})
	old := u.transfers.byID["old"]
	if old.retry.Visible() {
		t.Fatal("retry offered on an active transfer")
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "old", Direction: Outgoing, Peer: alice,
		Result: &Result{State: StateFailed, Err: "gave up after 5 attempts", Transport: "tcp", TransportReason: "UDP blocked"}})
	if !old.retry.Visible() || old.pause.Visible() || old.cancel.Visible() {
		t.Fatalf("failed: retry %v pause %v cancel %v", old.retry.Visible(), old.pause.Visible(), old.cancel.Visible())
	}
	if got := detailsText(old); !contains(got, "Transport: TCP (UDP blocked)") {
		t.Errorf("details %q lack the transport reason", got)
	}

	test.Tap(old.retry)
	if len(be.retries) != 1 || be.retries[0] != "old" {
		t.Fatalf("retries = %v", be.retries)
	}
	// The same delivery goes on in its row (issue 26, finding 2): it says
	// so and offers Pause and Cancel, not a greyed "Resumed".
	if old.stateLbl.Text != "Resuming…" || old.retry.Visible() || !old.pause.Visible() || !old.cancel.Visible() {
		t.Errorf("after Retry: state %q retry %v pause %v cancel %v", old.stateLbl.Text, old.retry.Visible(), old.pause.Visible(), old.cancel.Visible())
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "old", Direction: Outgoing, State: StateActive})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "old", Direction: Outgoing, State: StateActive, Progress: &Progress{Bytes: 5, Total: 10}})
	if old.stateLbl.Text != "Sending files" || !old.pause.Visible() || !old.cancel.Visible() {
		t.Errorf("resumed and running: state %q pause %v cancel %v", old.stateLbl.Text, old.pause.Visible(), old.cancel.Visible())
	}
	test.Tap(old.pause)
	test.Tap(old.cancel)
	if len(be.pauses) != 1 || len(be.cancels) != 1 {
		t.Errorf("on the resumed row: pauses %v cancels %v", be.pauses, be.cancels)
	}
	// The new transfer shows up from its own events, on top.
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "new", Direction: Outgoing, State: StateConnecting, Peer: alice})
	if len(u.transfers.order) != 2 || u.transfers.order[0] != "new" {
		t.Fatalf("order = %v, want the new transfer first", u.transfers.order)
	}
	if nv := u.transfers.byID["new"]; nv.title.Text != "To Alice" || nv.stateLbl.Text != "Connecting to Alice…" || !nv.pause.Visible() {
		t.Errorf("new row: %q %q pause %v", nv.title.Text, nv.stateLbl.Text, nv.pause.Visible())
	}

	// Cancelled sends can be resumed too; declined ones cannot.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "c", Direction: Outgoing, Peer: alice, Result: &Result{State: StateCancelled}})
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "d", Direction: Outgoing, Peer: alice, Result: &Result{State: StateDeclined}})
	if !u.transfers.byID["c"].retry.Visible() || u.transfers.byID["d"].retry.Visible() {
		t.Errorf("retry visible: cancelled %v, declined %v", u.transfers.byID["c"].retry.Visible(), u.transfers.byID["d"].retry.Visible())
	}
}

func TestPartialsListAndDiscard(t *testing.T) {
	u, be, c := newTestUI(t)
	if got := u.partials.total.Text; !contains(got, "None") {
		t.Errorf("no partials: %q", got)
	}
	be.partials = []PartialTransfer{
		{Key: "k1", PeerID: idAlice, PeerName: "Alice", Files: 3, Bytes: 150_000_000, Updated: c.t.Add(-5 * time.Minute)},
		{Key: "k2", PeerID: idBob, Files: 1, Bytes: 50_000_000, Updated: c.t.Add(-50 * time.Hour)},
	}
	u.tabs.SelectIndex(2) // opening Settings lists them afresh
	if len(u.partials.rows) != 2 {
		t.Fatalf("rows = %d, want 2", len(u.partials.rows))
	}
	if got := u.partials.total.Text; got != "200.0 MB held by 2 unfinished transfers." {
		t.Errorf("total = %q", got)
	}
	if got := u.partials.rows[0].text.Text; got != "From Alice · 3 files · 150.0 MB held · 5 min ago" {
		t.Errorf("row 0 = %q", got)
	}
	if got := u.partials.rows[1].text.Text; !contains(got, ShortID(idBob), "1 file", "50.0 MB", "2 days ago") {
		t.Errorf("row 1 = %q", got)
	}

	test.Tap(u.partials.rows[0].discard)
	// It asks first: nothing is deleted until its Discard.
	if len(be.discarded) != 0 || u.partials.confirm == nil || u.partials.doIt == nil {
		t.Fatalf("discarded %v at the first tap, asked %v", be.discarded, u.partials.confirm != nil)
	}
	test.Tap(u.partials.doIt)
	if len(be.discarded) != 1 || be.discarded[0] != "k1" {
		t.Fatalf("discarded = %v", be.discarded)
	}
	if len(u.partials.rows) != 1 || u.partials.total.Text != "50.0 MB held by 1 unfinished transfer." {
		t.Errorf("after discard: %d rows, total %q", len(u.partials.rows), u.partials.total.Text)
	}

	// An incoming transfer that ends may leave partial files: the list follows.
	be.partials = append(be.partials, PartialTransfer{Key: "k3", PeerName: "Carol", Files: 2, Bytes: 1000, Updated: c.t})
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r9", Direction: Incoming, Peer: Peer{Name: "Carol"},
		Result: &Result{State: StateFailed, Err: "the connection was lost"}})
	if len(u.partials.rows) != 2 {
		t.Errorf("after a failed receive: %d rows, want 2", len(u.partials.rows))
	}

	// One arriving now is said so, and cannot be discarded under itself.
	be.partials = append(be.partials, PartialTransfer{Key: "k4", PeerName: "Dave", Files: 1, Bytes: 10, Updated: c.t, Receiving: true})
	u.partials.reload()
	r := u.partials.rows[len(u.partials.rows)-1]
	if r.text.Text != "From Dave · 1 file · 10 B held · receiving now" || !r.discard.Disabled() {
		t.Errorf("a transfer arriving now: %q, Discard disabled %v", r.text.Text, r.discard.Disabled())
	}
}

func TestDetailsKeepLiveMetricsTheResultLacks(t *testing.T) {
	u, _, _ := newTestUI(t)
	id := "t1"
	u.ApplyTransfer(TransferEvent{Kind: TransferTransport, ID: id, Direction: Outgoing, State: StateActive, Peer: Peer{Name: "Alice"},
		Transport: "tcp", Reason: "TCP moves more bytes per second here"})
	u.ApplyTransfer(TransferEvent{Kind: TransferMetrics, ID: id, State: StateActive, Metrics: &Metrics{Transport: "tcp",
		CongestionControl: "bbr", SmoothedRTT: 2 * time.Millisecond, MinRTT: time.Millisecond, CongestionWindow: 3_000_000, PacketsLost: 4, Connections: 2}})
	// The closed connection reports its totals only.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Direction: Outgoing, Result: &Result{State: StateDone, Files: 1, Bytes: 10,
		Transport: "tcp", Resent: 2_000_000, Kept: 5_000_000, Packed: 8_000_000, PackedTo: 2_000_000, Folders: 3, FoldersLeftOut: 0, Metrics: &Metrics{Transport: "tcp", PacketsLost: 29, Connections: 2}}})
	got := detailsText(u.transfers.byID[id])
	if !contains(got, "Transport: TCP (TCP moves more bytes per second here)", "Round-trip time: 2.00 ms (min 1.00 ms)",
		"Congestion control: bbr", "Congestion window: 3.0 MB", "Segments retransmitted: 29", "TCP connections: 2", "Sent again after reconnecting: 2.0 MB",
		"Kept from an earlier attempt (not sent again): 5.0 MB", "Empty folders made besides the files: 3",
		"Compressed on the way (the link was the limit): 8.0 MB travelled as 2.0 MB") || strings.Contains(got, "not sent (the receiver") {
		t.Errorf("details = %q", got)
	}
	// To an older receiver, what it does not take is said.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "t2", Direction: Outgoing, Result: &Result{State: StateDone, Files: 1, Bytes: 10,
		Transport: "tcp", FoldersLeftOut: 2}})
	if got := detailsText(u.transfers.byID["t2"]); !contains(got, "Empty folders not sent (the receiver's Ferry is older and does not take them): 2") || strings.Contains(got, "besides the files") {
		t.Errorf("details = %q", got)
	}
}

// A change of network path under a transfer shows on its row while it goes
// on (issue 26, finding 7), and is gone once it ends; the peer's new
// address is kept.
func TestNetworkChangedNote(t *testing.T) {
	u, _, _ := newTestUI(t)
	id := "m1"
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: id, Direction: Outgoing, State: StateActive, Peer: Peer{ID: idAlice, Name: "Alice"},
		Progress: &Progress{Bytes: 10, Total: 100}})
	v := u.transfers.byID[id]
	u.ApplyTransfer(TransferEvent{Kind: TransferPath, ID: id, Direction: Outgoing, State: StateActive,
		Path: &PathChange{Moved: "peer", From: "10.0.0.5:4000", To: "10.0.0.5:4100", Reason: "peer address changed"}})
	if want := "Network changed — continuing"; v.stateLbl.Text != want {
		t.Errorf("state after a path change = %q, want %q", v.stateLbl.Text, want)
	}
	if v.peer.Addr != "10.0.0.5:4100" {
		t.Errorf("peer address = %q, want the new one", v.peer.Addr)
	}
	if !v.pause.Visible() || !v.cancel.Visible() {
		t.Errorf("moved: pause %v cancel %v, want both", v.pause.Visible(), v.cancel.Visible())
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: id, Direction: Outgoing, State: StateActive, Progress: &Progress{Bytes: 20, Total: 100}})
	if want := "Network changed — continuing · Sending files"; v.stateLbl.Text != want {
		t.Errorf("state later = %q, want %q", v.stateLbl.Text, want)
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Direction: Outgoing, Result: &Result{State: StateDone, Files: 1, Bytes: 100}})
	if strings.Contains(v.stateLbl.Text, "Network changed") {
		t.Errorf("done: %q still says the network changed", v.stateLbl.Text)
	}
}

// Issue 26, finding 3: the notification counts each byte once after a
// reconnect, and a text sent is a text, not "0 files (0 B)".
func TestNotificationsCountBytesOnceAndSayText(t *testing.T) {
	u, _, _ := newTestUI(t)
	alice := Peer{ID: idAlice, Name: "Alice"}
	for _, b := range []int64{80, 60, 100} {
		u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "s", Direction: Outgoing, State: StateActive, Peer: alice,
			Progress: &Progress{Bytes: b, Total: 100, TotalFiles: 1}})
	}
	test.AssertNotificationSent(t, fyne.NewNotification("Files sent", "Sent 1 file (100 B) to Alice."), func() {
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "s", Direction: Outgoing, Peer: alice,
			Result: &Result{State: StateDone, Files: 1, Bytes: 140}})
	})
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "t", Direction: Outgoing, Peer: alice, State: StateConnecting,
		Offer: &Offer{Text: "hello"}})
	test.AssertNotificationSent(t, fyne.NewNotification("Text sent", "Sent a text to Alice."), func() {
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "t", Direction: Outgoing, Peer: alice,
			Result: &Result{State: StateDone}})
	})
	if got := u.transfers.byID["t"].stateLbl.Text; got != "Text sent" {
		t.Errorf("text row: %q", got)
	}
}

// A send whose receiver went away, which the app sends on when the device
// is back (Result.Rejoin): the row says so and offers Retry and Cancel;
// Cancel gives up on it, and the row says who did.
func TestRowOfASendWaitingForItsDevice(t *testing.T) {
	u, be, _ := newTestUI(t)
	bob := Peer{ID: idAlice, Name: "Bob's laptop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferState, ID: "s", Direction: Outgoing, State: StateActive, Peer: bob})
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "s", Direction: Outgoing, State: StateActive, Progress: &Progress{Bytes: 5, Total: 10}})
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "s", Direction: Outgoing, Peer: bob,
		Result: &Result{State: StateFailed, Code: CodeConnectionLost, Rejoin: true}})
	v := u.transfers.byID["s"]
	if want := "Bob's laptop went away. Ferry will send the rest when it is back."; v.stateLbl.Text != want {
		t.Errorf("row says %q, want %q", v.stateLbl.Text, want)
	}
	if v.stateLbl.Importance != widget.WarningImportance { // it waits, as Reconnecting does: nothing failed for good
		t.Errorf("waiting row's importance %v, want warning", v.stateLbl.Importance)
	}
	if !v.retry.Visible() || !v.cancel.Visible() || v.pause.Visible() {
		t.Fatalf("waiting: retry %v cancel %v pause %v", v.retry.Visible(), v.cancel.Visible(), v.pause.Visible())
	}
	test.Tap(v.cancel)
	if len(be.cancels) != 1 || be.cancels[0] != "s" {
		t.Fatalf("cancels = %v", be.cancels)
	}
	if v.stateLbl.Text != "Cancelled by you" || v.cancel.Visible() || !v.retry.Visible() {
		t.Errorf("after Cancel: %q, cancel %v retry %v", v.stateLbl.Text, v.cancel.Visible(), v.retry.Visible())
	}
}

// Partials that transfers could not remove are said to be that, not an
// unfinished transfer that resumes; a damaged state says so.
func TestPartialTextSaysUnremovedAndDamaged(t *testing.T) {
	now := time.Now()
	got := partialText(PartialTransfer{PeerName: "Alice", Files: 2, Bytes: 104_900_000, Updated: now, Unremoved: true}, nil, now)
	if want := "From Alice · 2 unfinished files that could not be removed (another program had them open, or the folder is read-only) · 104.9 MB on disk · just now"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	got = partialText(PartialTransfer{PeerName: "Alice", Files: 1, Bytes: 1000, Updated: now, Damaged: "its snapshot is cut short"}, nil, now)
	if want := "From Alice · 1 file · resume state damaged (its snapshot is cut short) · 1.0 kB held · just now"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A kept transfer whose some files are saved says how many.
func TestPartialTextSaysWhatIsSaved(t *testing.T) {
	now := time.Now()
	got := partialText(PartialTransfer{PeerName: "Alice", Files: 3, Saved: 2, Bytes: 0, Updated: now.Add(-5 * time.Minute)}, nil, now)
	if want := "From Alice · 3 files (2 saved) · 0 B held · 5 min ago"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Details say how long a finished transfer took, and the part of it that
// the offer waited for its answer apart from the time the files took.
func TestDetailsSayHowLongTheAnswerTook(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "w1", Direction: Outgoing, Peer: Peer{Name: "Alice"},
		Result: &Result{State: StateDone, Files: 32, Bytes: 315_000_000, Transport: "tcp", Duration: 8500 * time.Millisecond, Waited: 7500 * time.Millisecond}})
	if got := detailsText(u.transfers.byID["w1"]); !contains(got, "Took 8.5 s: 7.5 s waiting for the answer to the offer, 1.0 s moving the files") {
		t.Errorf("details = %q", got)
	}
	// A receiver that accepts by itself answers at once: nothing to say apart.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "w2", Direction: Outgoing, Peer: Peer{Name: "Alice"},
		Result: &Result{State: StateDone, Files: 1, Bytes: 10, Transport: "tcp", Duration: 95 * time.Second, Waited: 100 * time.Millisecond}})
	if got := detailsText(u.transfers.byID["w2"]); !contains(got, "Took 1 min 35 s") || strings.Contains(got, "waiting") {
		t.Errorf("details = %q", got)
	}
	// A resuming receiver's check of what it kept is not the files' time
	// either, nor the answer's.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "w3", Direction: Outgoing, Peer: Peer{Name: "Alice"},
		Result: &Result{State: StateDone, Files: 1, Bytes: 10, Transport: "tcp", Duration: 44 * time.Second, Waited: 2 * time.Second, Checked: 41 * time.Second}})
	if got := detailsText(u.transfers.byID["w3"]); !contains(got, "Took 44.0 s: 2.0 s waiting for the answer to the offer, 41.0 s checking what was kept from before, 1.0 s moving the files") {
		t.Errorf("details = %q", got)
	}
}

// A UI audit: a receive its sender left mid-way (interrupted, waiting to
// resume) could be given up only in Settings' Unfinished transfers. Its
// row offers Discard, which asks as Settings does and then discards what
// it kept; a discard in Settings ends the row too.
func TestInterruptedRowDiscards(t *testing.T) {
	u, be, c := newTestUI(t)
	alice := Peer{ID: idAlice, Name: "Alice"}
	interrupt := func(id, delivery string) *transferView {
		t.Helper()
		u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: id, Delivery: delivery, Direction: Incoming, State: StateActive, Peer: alice,
			Progress: &Progress{Bytes: 50_000_000, Total: 100_000_000, TotalFiles: 1}})
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Delivery: delivery, Direction: Incoming, Peer: alice,
			Result: &Result{State: StateInterrupted, Code: CodeConnectionLost, Err: "Interrupted — will resume when Alice is back."}})
		return u.transfers.byID[id]
	}
	be.partials = []PartialTransfer{
		{Key: "k1", Delivery: "D1", PeerID: idAlice, PeerName: "Alice", Files: 1, Bytes: 50_000_000, Updated: c.t},
		{Key: "k2", Delivery: "D2", PeerID: idAlice, PeerName: "Alice", Files: 1, Bytes: 50_000_000, Updated: c.t},
	}
	v := interrupt("r1", "D1")
	if _, ok := u.Describe().Transfers[0].Buttons["Discard"]; !ok || !v.discard.Visible() {
		t.Fatalf("interrupted row %q offers %v, want Discard", v.stateLbl.Text, u.Describe().Transfers[0].Buttons)
	}
	test.Tap(v.discard)
	if len(be.discarded) != 0 || u.partials.confirm == nil {
		t.Fatalf("discarded %v at the first tap, asked %v", be.discarded, u.partials.confirm != nil)
	}
	test.Tap(u.partials.doIt)
	if !slices.Equal(be.discarded, []string{"k1"}) {
		t.Fatalf("discarded %v, want k1", be.discarded)
	}
	const gone = "Discarded by you: its partial files were deleted"
	if v.stateLbl.Text != gone || v.discard.Visible() || v.cancel.Visible() || v.retry.Visible() || v.bar.Visible() {
		t.Errorf("after the discard: %q, discard %v cancel %v retry %v bar %v", v.stateLbl.Text,
			v.discard.Visible(), v.cancel.Visible(), v.retry.Visible(), v.bar.Visible())
	}
	if len(u.partials.rows) != 1 || u.partials.rows[0].p.Key != "k2" {
		t.Errorf("Settings lists %d unfinished transfers after the discard, want k2", len(u.partials.rows))
	}

	// Discarded in Settings: its row says so, and offers it no more.
	w := interrupt("r2", "D2")
	test.Tap(u.partials.rows[0].discard)
	test.Tap(u.partials.doIt)
	if !slices.Equal(be.discarded, []string{"k1", "k2"}) || w.stateLbl.Text != gone || w.discard.Visible() {
		t.Errorf("discarded in Settings: %v, row %q, Discard %v", be.discarded, w.stateLbl.Text, w.discard.Visible())
	}

	// Nothing kept of it any more (removed for its age): said, and over.
	x := interrupt("r3", "D3")
	modals := len(u.modals)
	test.Tap(x.discard)
	if len(u.modals) != modals+1 || len(be.discarded) != 2 || x.stateLbl.Text != gone {
		t.Errorf("nothing kept: %d dialogs (want %d), discarded %v, row %q", len(u.modals), modals+1, be.discarded, x.stateLbl.Text)
	}
}

// A send the app shows again as it starts (Ferry was closed while it ran:
// the app's kept sends) reads as that, with Retry and Cancel, and tells
// no "Transfer failed" at the start.
func TestRowOfASendFerryWasClosedIn(t *testing.T) {
	u, be, _ := newTestUI(t)
	bob := Peer{ID: idAlice, Name: "Bob's laptop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "s", Delivery: "s", Direction: Outgoing, Peer: bob,
		Offer: &Offer{Count: 1, Files: []FileInfo{{Path: "big.bin", Size: 10}}, Total: 10}})
	test.AssertNotificationSent(t, nil, func() {
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "s", Delivery: "s", Direction: Outgoing, Peer: bob, State: StateFailed,
			Result: &Result{State: StateFailed, Code: CodeClosedHere, Rejoin: true}})
	})
	v := u.transfers.byID["s"]
	if want := "Interrupted: Ferry was closed while sending. It sends the rest when Bob's laptop is back."; v.stateLbl.Text != want {
		t.Errorf("row says %q, want %q", v.stateLbl.Text, want)
	}
	if v.stateLbl.Importance != widget.WarningImportance {
		t.Errorf("kept row's importance %v, want warning", v.stateLbl.Importance)
	}
	if !v.retry.Visible() || !v.cancel.Visible() || v.pause.Visible() {
		t.Fatalf("retry %v cancel %v pause %v", v.retry.Visible(), v.cancel.Visible(), v.pause.Visible())
	}
	test.Tap(v.retry)
	if len(be.retries) != 1 || be.retries[0] != "s" {
		t.Fatalf("retries = %v", be.retries)
	}
}
