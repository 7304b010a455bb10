package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

// TestDescribe: the words and colours for every way a transfer stands, on
// both sides. Nothing that the other device or the user chose is red.
func TestDescribe(t *testing.T) {
	const in, out = Incoming, Outgoing
	for _, c := range []struct {
		o    Outcome
		dir  Direction
		text string
		imp  widget.Importance
	}{
		{Outcome{State: StateWaiting}, out, "Waiting for Alice to accept", widget.MediumImportance},
		{Outcome{State: StateWaiting}, in, "Waiting for you to accept", widget.MediumImportance},
		{Outcome{State: StateActive}, in, "Receiving", widget.MediumImportance},
		{Outcome{State: StatePaused}, out, "Paused by you", widget.WarningImportance},
		{Outcome{State: StatePaused, Code: CodePaused, ByPeer: true}, in, "Paused by Alice", widget.WarningImportance},
		// Today's engine ends the receiving side of a pause as a failure with
		// the pause code; it still reads as a pause.
		{Outcome{State: StateFailed, Code: CodePaused, ByPeer: true, Err: "Read or write error: paused."}, in, "Paused by Alice", widget.WarningImportance},
		{Outcome{State: StateInterrupted, Code: CodeConnectionLost}, in, "Interrupted — will resume when Alice is back", widget.WarningImportance},
		{Outcome{State: StateRetrying, Err: "write tcp 192.0.2.2:48176->192.0.2.9:47800: connection reset by peer"}, out, "Reconnecting to Alice…", widget.WarningImportance},
		{Outcome{State: StateCancelled, Code: CodeCancelled, ByPeer: true}, in, "Cancelled by Alice", widget.LowImportance},
		{Outcome{State: StateCancelled, Code: CodeCancelled}, out, "Cancelled by you", widget.LowImportance},
		{Outcome{State: StateDeclined, Code: CodeDeclined, ByPeer: true, Err: "The receiver declined: declined."}, out, "Declined by Alice", widget.WarningImportance},
		{Outcome{State: StateDeclined, Code: CodeDeclined}, in, "Declined by you", widget.LowImportance},
		{Outcome{State: StateDeclined}, in, "Declined automatically: Details says why", widget.LowImportance},
		{Outcome{State: StateDeclined, Code: CodeExpired}, in, "Expired: not answered in 2 minutes", widget.LowImportance},
		{Outcome{State: StateFailed, Code: CodeExpired}, in, "Expired: not answered in 2 minutes", widget.LowImportance},
		{Outcome{State: StateDeclined, Code: CodeExpired, ByPeer: true}, out, "Expired: Alice did not answer in time", widget.WarningImportance},
		{Outcome{State: StateDeclined, Code: CodeUntrusted, ByPeer: true}, out, "Declined: Alice only accepts files from trusted devices", widget.WarningImportance},
		{Outcome{State: StateDeclined, Code: CodeBusy, ByPeer: true}, out, "Declined: Alice is busy with other offers; try again in a moment", widget.WarningImportance},
		{Outcome{State: StateFailed, Code: CodeNoSpace, ByPeer: true}, out, "Not enough space on Alice", widget.DangerImportance},
		{Outcome{State: StateFailed, Code: CodeNoSpace}, in, "Not enough space on this device", widget.DangerImportance},
		{Outcome{State: StateFailed, Code: CodeConnectionLost}, out, "Alice went away. Retry sends the rest when it is back", widget.DangerImportance},
		// Issue 26, finding 4: a failed pairing is no trust policy.
		{Outcome{State: StateFailed, Code: CodeNotPaired, ByPeer: true}, out,
			"Alice did not confirm the verification code, so the devices are not paired. Compare the codes on both screens and try again", widget.DangerImportance},
		{Outcome{State: StateFailed, Code: CodeNotPaired}, in, "You said the verification codes differ, so this device does not trust Alice", widget.DangerImportance},
		// Pairing again with a device paired before: they stay paired.
		{Outcome{State: StateFailed, Code: CodePairedBefore, ByPeer: true}, out,
			"Alice did not confirm the verification code; the devices stay paired as they were before", widget.DangerImportance},
		{Outcome{State: StateFailed, Code: CodePairedBefore}, in, "You said the verification codes differ; Alice was paired with this device before, and they stay paired as they were", widget.DangerImportance},
		{Outcome{State: StateFailed, Code: CodeVerifyFailed}, in, "Some files arrived damaged and were not kept", widget.DangerImportance},
		{Outcome{State: StateFailed, Code: CodeIO, ByPeer: true}, out, "Alice could not save the files", widget.DangerImportance},
		{Outcome{State: StateFailed, Code: CodeIO}, in, "The files could not be saved here", widget.DangerImportance},
		{Outcome{State: StateFailed, Code: CodeProtocol, ByPeer: true}, in, "Alice sent something this version of Ferry does not understand", widget.DangerImportance},
		{Outcome{State: StateFailed, Err: "control stream: unexpected EOF"}, out, "Failed: Details says why", widget.DangerImportance},
		{Outcome{State: StateDone}, in, "Done", widget.SuccessImportance},
	} {
		st := describe(c.o, c.dir, "Alice", 2*time.Minute)
		if st.Text != c.text || st.Importance != c.imp {
			t.Errorf("%+v %v: %q (importance %v), want %q (%v)", c.o, c.dir, st.Text, st.Importance, c.text, c.imp)
		}
		// The engine's words never reach the row: they are the detail.
		if c.o.Err != "" && (strings.Contains(st.Text, c.o.Err) || st.Detail != c.o.Err) {
			t.Errorf("%+v: text %q, detail %q", c.o, st.Text, st.Detail)
		}
		if st.Short == "" || strings.Contains(strings.ToLower(st.Text), "declined: declined") {
			t.Errorf("%+v: short %q text %q", c.o, st.Short, st.Text)
		}
	}
	// Unknown peers and odd timeouts still read as sentences.
	if st := describe(Outcome{State: StatePaused, ByPeer: true}, Incoming, "", 0); st.Text != "Paused by the sender" {
		t.Errorf("no name: %q", st.Text)
	}
	if st := describe(Outcome{State: StateDeclined, Code: CodeExpired}, Incoming, "A", 45*time.Second); st.Text != "Expired: not answered in 45 seconds" {
		t.Errorf("45 s: %q", st.Text)
	}
}

// TestOneRowAcrossPauses: a receiving transfer that its sender paused (or
// that lost its sender) stays one row, and goes on in that row.
func TestOneRowAcrossPauses(t *testing.T) {
	u, be, _ := newTestUI(t)
	alice := Peer{ID: idAlice, Name: "Alice"}
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "r", Direction: Incoming, State: StateActive, Peer: alice,
		Progress: &Progress{Bytes: 10, Total: 100}})
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r", Direction: Incoming, Peer: alice,
		Result: &Result{State: StateInterrupted, Code: CodeConnectionLost, Err: "control stream: unexpected EOF"}})
	v := u.transfers.byID["r"]
	if v.stateLbl.Text != "Interrupted — will resume when Alice is back" || v.stateLbl.Importance == widget.DangerImportance || v.cancel.Visible() {
		t.Fatalf("interrupted: %q (%v), cancel %v", v.stateLbl.Text, v.stateLbl.Importance, v.cancel.Visible())
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferProgress, ID: "r", Direction: Incoming, State: StateActive, Peer: alice,
		Progress: &Progress{Bytes: 60, Total: 100}})
	if len(u.transfers.order) != 1 || v.stateLbl.Text != "Receiving files" || v.result != nil || !v.cancel.Visible() {
		t.Fatalf("resumed: %d rows, %q, result %+v", len(u.transfers.order), v.stateLbl.Text, v.result)
	}
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r", Direction: Incoming, Peer: alice,
		Result: &Result{State: StateDone, Files: 1, Verified: 1, Bytes: 100}})
	if v.stateLbl.Text != "Received 1 file · verified" {
		t.Fatalf("done: %q", v.stateLbl.Text)
	}
	// A late non-final event never revives a finished row.
	u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: "r", Direction: Incoming, Peer: alice, Result: &Result{State: StateInterrupted}})
	if v.state != StateDone {
		t.Fatalf("finished row went back to %s", v.state)
	}
	_ = be
}

func TestHistoryTitles(t *testing.T) {
	for _, c := range []struct {
		e    HistoryEntry
		want string
	}{
		{HistoryEntry{Direction: Incoming, PeerName: "Alice", Files: 3, State: StateDone}, "Received 3 files from Alice"},
		{HistoryEntry{Direction: Outgoing, PeerName: "Alice", Files: 1, State: StateDone}, "Sent 1 file to Alice"},
		{HistoryEntry{Direction: Outgoing, PeerName: "Alice", State: StateDeclined, Code: CodeDeclined, ByPeer: true}, "Declined by Alice: files to Alice"},
		{HistoryEntry{Direction: Incoming, PeerName: "Alice", Files: 2, State: StateDeclined, Code: CodeExpired}, "Expired: 2 files from Alice"},
		// Issue 26, finding 3: a declined text is a text, not files.
		{HistoryEntry{Direction: Incoming, PeerName: "vm", HasText: true, State: StateDeclined, Code: CodeDeclined}, "Declined by you: a text from vm"},
		{HistoryEntry{Direction: Incoming, PeerID: idAlice, Files: 2, State: StateCancelled, Code: CodeCancelled, ByPeer: true}, "Cancelled by AAAA-BBBB: 2 files from AAAA-BBBB"},
	} {
		if got := historyTitle(c.e, nil, 2*time.Minute); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}

// TestNotificationsTellHonestEnds: a pause or cancel by the other device is
// no failure, and what the user did here raises no notification.
func TestNotificationsTellHonestEnds(t *testing.T) {
	u, _, _ := newTestUI(t)
	alice := Peer{ID: idAlice, Name: "Alice"}
	for i, c := range []struct {
		dir  Direction
		r    Result
		want *fyne.Notification
	}{
		{Incoming, Result{State: StatePaused, Code: CodePaused, ByPeer: true}, fyne.NewNotification("Transfer paused", "Paused by Alice.")},
		{Incoming, Result{State: StateCancelled, Code: CodeCancelled, ByPeer: true, Files: 2}, fyne.NewNotification("Transfer cancelled", "Cancelled by Alice.")},
		{Incoming, Result{State: StateInterrupted, Code: CodeConnectionLost}, fyne.NewNotification("Transfer interrupted",
			"Interrupted — will resume when Alice is back. What arrived so far is kept.")},
		{Outgoing, Result{State: StateDeclined, Code: CodeDeclined, ByPeer: true}, fyne.NewNotification("Files not sent", "Declined by Alice.")},
		{Outgoing, Result{State: StateDeclined, Code: CodeExpired, ByPeer: true}, fyne.NewNotification("Files not sent", "Expired: Alice did not answer in time.")},
		// Said why, as the row says it ("Declined by Alice." alone was
		// seen for a receiver whose disk was too small).
		{Outgoing, Result{State: StateDeclined, Code: CodeNoSpace, ByPeer: true}, fyne.NewNotification("Files not sent", "Declined: Not enough space on Alice.")},
		{Outgoing, Result{State: StateFailed, Err: "control stream: unexpected EOF"}, fyne.NewNotification("Transfer failed",
			"The transfer with Alice did not finish. Its Details in Ferry say why.")},
		{Outgoing, Result{State: StateCancelled, Code: CodeCancelled}, nil},
		{Incoming, Result{State: StateDeclined, Code: CodeDeclined}, nil},
		{Incoming, Result{State: StateDeclined, Code: CodeExpired}, nil},
	} {
		r := c.r
		test.AssertNotificationSent(t, c.want, func() {
			u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: fmt.Sprint("n", i), Direction: c.dir, Peer: alice, Result: &r})
		})
	}
}

// Issue 26, finding 9: the status line names the port, and says when it is
// not the default one.
func TestAddressTextNamesThePort(t *testing.T) {
	for in, want := range map[string]string{
		"192.168.1.20:47800":   "192.168.1.20 · port 47800",
		"192.168.1.20:51234":   "192.168.1.20 · port 51234 (not the usual 47800)",
		"[fe80::1%eth0]:47800": "fe80::1%eth0 · port 47800",
		"not an address":       "not an address",
	} {
		if got := addressText(in); got != want {
			t.Errorf("addressText(%q) = %q, want %q", in, got, want)
		}
	}
}

// A long device name does not push who may send out of the status line:
// "This device: Test A the extraordinarily long-named family laptop in the
// upstairs study next to th…" said nothing else, in a window of any width.
func TestStatusLineShortensALongName(t *testing.T) {
	u, be, _ := newTestUI(t)
	be.settings.DeviceName = "Test A the extraordinarily long-named family laptop in the upstairs study next to the window"
	be.settings.Policy = PolicyTrusted
	u.updateStatus()
	want := "This device: Test A the extraordinarily long-… · receiving from trusted devices only · "
	if got := u.status.full; !strings.HasPrefix(got, want) {
		t.Errorf("status line %q, want it to start %q", got, want)
	}
	be.settings.DeviceName = "Alice Smith's laptop"
	u.updateStatus()
	if got := u.status.full; !strings.HasPrefix(got, "This device: Alice Smith's laptop · receiving from trusted devices only · ") {
		t.Errorf("status line %q: a name of ordinary length is shortened", got)
	}
}
