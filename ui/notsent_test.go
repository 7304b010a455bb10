package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/ferrydrop/ferry/ui/transfer"
)

// A send says in its row what the given folders hold that it does not
// carry, and Details lists the first of them; a send that leaves nothing
// out, and a receiving row, say nothing of it.
func TestSendRowSaysWhatIsNotSent(t *testing.T) {
	u, _, _ := newTestUI(t)
	bob := Peer{ID: "BOB", Name: "Bob's laptop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "s", Direction: Outgoing, State: StateConnecting, Peer: bob,
		Offer: &Offer{Count: 3, Total: 30, FreeBytes: -1, Folders: []FolderInfo{{Path: "photos", Files: 3, Bytes: 30}},
			Skipped: &Skipped{Summary: "2 symbolic links (not followed), 1 empty folder", Count: 3, NotFiles: true,
				Examples: []string{"/home/sam/photos/latest", "/home/sam/photos/old\u202egpj.exe"}}}})
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "c", Direction: Outgoing, State: StateConnecting, Peer: bob,
		Offer: &Offer{Count: 1, Total: 10, FreeBytes: -1, Files: []FileInfo{{Path: "a.txt", Size: 10}}}})
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "r", Direction: Incoming, State: StateActive, Peer: bob,
		Offer: &Offer{Count: 1, Total: 10, FreeBytes: -1, Files: []FileInfo{{Path: "b.txt", Size: 10}},
			Skipped: &Skipped{Summary: "1 empty folder", Count: 1}}})

	row := u.transfers.byID["s"]
	if !row.notSent.Visible() || row.notSent.Text != "Not sent: 2 symbolic links (not followed), 1 empty folder (Details lists them)" {
		t.Errorf("the sending row shows %q (visible %v)", row.notSent.Text, row.notSent.Visible())
	}
	for _, id := range []string{"c", "r"} {
		if v := u.transfers.byID[id]; v.notSent.Visible() {
			t.Errorf("row %s says %q", id, v.notSent.Text)
		}
	}

	u.transfers.showDetails("s")
	got := u.transfers.detailSkipped.Text
	lines := strings.Split(got, "\n")
	want := []string{
		"2 symbolic links (not followed), 1 empty folder. Ferry sends regular files and folders.",
		"/home/sam/photos/latest",
		EscapeName("/home/sam/photos/old\u202egpj.exe"),
		"and 1 more",
	}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("Details say %q, want %q", lines, want)
	}
	if strings.ContainsRune(got, '\u202e') {
		t.Error("a path's direction override reached Details unescaped")
	}
	if !u.transfers.detailSkippedHead.Visible() || !u.transfers.detailSkipped.Visible() {
		t.Error("Details hide what is not sent")
	}
	u.transfers.detail.Hide()
	u.transfers.showDetails("c")
	if u.transfers.detailSkippedHead.Visible() || u.transfers.detailSkipped.Visible() {
		t.Errorf("Details of a send that leaves nothing out show %q", u.transfers.detailSkipped.Text)
	}
	// What is left out for another reason than not being a file says only
	// that reason (a LocalSend device takes no empty folder).
	if got := skippedText(&Skipped{Summary: "1 empty folder (LocalSend takes files only)", Count: 1, Examples: []string{"photos/empty/"}}); got != "1 empty folder (LocalSend takes files only).\nphotos/empty/" {
		t.Errorf("Details say %q", got)
	}
}

// Details of a send say which given paths go under another name (another
// given path has theirs), escaped; a send without any says nothing of it.
func TestSendDetailsSayWhatGoesUnderAnotherName(t *testing.T) {
	u, _, _ := newTestUI(t)
	bob := Peer{ID: "BOB", Name: "Bob's laptop"}
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "s", Direction: Outgoing, State: StateConnecting, Peer: bob,
		Offer: &Offer{Count: 2, Total: 20, FreeBytes: -1, Files: []FileInfo{{Path: "report.pdf", Size: 10}, {Path: "report (1).pdf", Size: 10}},
			Renamed: []Renamed{{Path: "/home/sam/old\u202efdp.exe/report.pdf", As: "report (1).pdf"}}}})
	u.ApplyTransfer(TransferEvent{Kind: TransferOffer, ID: "c", Direction: Outgoing, State: StateConnecting, Peer: bob,
		Offer: &Offer{Count: 1, Total: 10, FreeBytes: -1, Files: []FileInfo{{Path: "a.txt", Size: 10}}}})
	u.transfers.showDetails("s")
	want := EscapeName("/home/sam/old\u202efdp.exe/report.pdf") + " as report (1).pdf\n(another of the given files or folders has its name)"
	if got := u.transfers.detailRenamed.Text; got != want || !u.transfers.detailRenamedHead.Visible() || !u.transfers.detailRenamed.Visible() {
		t.Errorf("Details say %q (shown %v), want %q", got, u.transfers.detailRenamed.Visible(), want)
	}
	u.transfers.detail.Hide()
	u.transfers.showDetails("c")
	if u.transfers.detailRenamedHead.Visible() || u.transfers.detailRenamed.Visible() {
		t.Errorf("Details of a send with no path renamed show %q", u.transfers.detailRenamed.Text)
	}
}

// TestSendThatCouldNotStartSaysWhy: a send the engine refused before it
// dialled (a named pipe picked or dropped: the backend's failed row)
// said "Bob's laptop could not be reached. Is it on and receiving?", the
// model reading any failure before a connection as the link's, and
// offered a Retry the engine cannot do. The row and the notification now
// say the engine's sentence, and there is no Retry.
func TestSendThatCouldNotStartSaysWhy(t *testing.T) {
	u, _, _ := newTestUI(t)
	u.hidden = true // notified as when the window is closed
	bob := Peer{ID: idBob, Name: "Bob's laptop"}
	why := "The transfer could not start: /home/sam/pipe is a named pipe (FIFO), not a file or folder."
	ev := TransferEvent{Kind: TransferResult, ID: "local-1", Direction: Outgoing, Peer: bob, State: StateFailed,
		Result: &Result{State: StateFailed, NotStarted: true, Err: why}}
	test.AssertNotificationSent(t, fyne.NewNotification("Files not sent", "Not sent to Bob's laptop. "+why), func() { u.ApplyTransfer(ev) })
	v := u.transfers.byID["local-1"]
	if got := v.stateLbl.Text; got != strings.TrimSuffix(why, ".") {
		t.Errorf("the row says %q, want the engine's sentence", got)
	}
	if v.retry.Visible() {
		t.Error("Retry offered for a send the engine never knew")
	}
}

// A Mac's decomposed name that the receiver saved composed (the same
// letters) is listed without "→ the same name", which read as a change of
// name that shows none; a name really changed keeps its arrow.
func TestDetailsListAComposedNameWithoutAnArrow(t *testing.T) {
	v := &transferView{ended: 2, results: []FileResult{
		{Path: "Re\u0301sume\u0301.md", SavedAs: "R\u00e9sum\u00e9.md", Size: 3, Verified: true},
		{Path: "cafe\u0301.txt", SavedAs: "caf\u00e9 (1).txt", Size: 3, Verified: true},
	}}
	want := "✓ " + EscapeName("Re\u0301sume\u0301.md") + " (3 B) verified\n✓ " + EscapeName("cafe\u0301.txt") + " → caf\u00e9 (1).txt (3 B) verified"
	if got := filesText(v); got != want {
		t.Errorf("Details list\n%q\nwant\n%q", got, want)
	}
}

// A file the receiver kept as the one already there, which held its bytes
// (a trusted device sent it again), is listed so in Details: it read as a
// file saved anew, and no "name (1)" was to be found.
func TestDetailsListAFileKeptAsHereAlready(t *testing.T) {
	v := &transferView{ended: 2, results: []FileResult{
		{Path: "Photos/a.jpg", Size: 3, Verified: true, Kept: true},
		{Path: "Photos/b.jpg", Size: 3, Verified: true},
	}}
	want := "✓ Photos/a.jpg (3 B) verified: here already with the same bytes, kept\n✓ Photos/b.jpg (3 B) verified"
	if got := filesText(v); got != want {
		t.Errorf("Details list\n%q\nwant\n%q", got, want)
	}
}

// A transfer that ended before any file did (declined for the space it
// needs, say) lists no file "yet": none will come.
func TestDetailsOfAnEndWithoutFilesSayNoneCame(t *testing.T) {
	for _, tc := range []struct {
		dir    Direction
		phase  transfer.Phase
		want   string
		rejoin bool
	}{
		{Outgoing, transfer.Declined, "No file was sent.", false},
		{Outgoing, transfer.Failed, "No file was sent.", false},
		{Incoming, transfer.Cancelled, "No file was received.", false},
		{Outgoing, transfer.Sending, "No file finished yet.", false},
		{Incoming, transfer.Connecting, "No file finished yet.", false},
		{Outgoing, transfer.Failed, "No file finished yet.", true}, // it sends when its device is back
	} {
		v := &transferView{dir: tc.dir, d: &transfer.Delivery{Phase: tc.phase, Rejoin: tc.rejoin}}
		if got := filesText(v); got != tc.want {
			t.Errorf("%v %s: %q, want %q", tc.dir, tc.phase, got, tc.want)
		}
	}
}
