package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// A held printer writes nothing until flush, then every line in order, the
// same lines an unheld one writes at once.
func TestPrinterHoldsUntilFlush(t *testing.T) {
	events := []engine.Event{
		{Kind: engine.EventFile, File: &engine.FileResult{Path: "a.txt", Size: 1, Verified: true}},
		{Kind: engine.EventFile, File: &engine.FileResult{Path: "b/c.txt", Size: 2, Verified: false, Err: "bad"}},
	}
	for _, asJSON := range []bool{true, false} {
		var direct, held bytes.Buffer
		d := newPrinter(&direct, asJSON)
		h := newPrinter(&held, asJSON)
		h.hold()
		for _, ev := range events {
			d.event(ev)
			h.event(ev)
		}
		if held.Len() != 0 {
			t.Fatalf("json=%v: a held printer wrote %q before flush", asJSON, held.String())
		}
		h.flush()
		if held.String() != direct.String() || direct.Len() == 0 {
			t.Errorf("json=%v: held printer wrote %q, unheld %q", asJSON, held.String(), direct.String())
		}
		if asJSON {
			for _, line := range strings.Split(strings.TrimSpace(held.String()), "\n") {
				var ev engine.Event
				if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.File == nil {
					t.Errorf("line %q: %v", line, err)
				}
			}
		}
	}
}

// A file a Mac named decomposed and a Linux receiver saved composed
// (store.LocalName) is said to be so: "ok Résumé.md (saved as Résumé.md)"
// read as a change that was none. Another name is still said.
func TestSavedComposedIsSaidSo(t *testing.T) {
	for _, c := range []struct{ path, saved, want string }{
		{"Re\u0301sume\u0301.md", "R\u00e9sum\u00e9.md", "ok      Re\u0301sume\u0301.md (saved with its accents composed, Unicode NFC)\n"},
		{"cafe\u0301.txt", "caf\u00e9 (1).txt", "ok      cafe\u0301.txt (saved as caf\u00e9 (1).txt)\n"},
		{`a\b.txt`, "a_b.txt", "ok      a\\b.txt (saved as a_b.txt)\n"},
	} {
		var out bytes.Buffer
		newPrinter(&out, false).event(engine.Event{Kind: engine.EventFile, File: &engine.FileResult{Path: c.path, SavedAs: c.saved, Verified: true}})
		if out.String() != c.want {
			t.Errorf("%q saved as %q: %q, want %q", c.path, c.saved, out.String(), c.want)
		}
	}
}

// A file kept as the one already there, which holds its bytes (a trusted
// device sent it again), is said so, as is where, when that is another
// name; it read as a file saved anew.
func TestKeptIsSaidSo(t *testing.T) {
	for _, c := range []struct{ path, saved, want string }{
		{"Photos/a.jpg", "", "ok      Photos/a.jpg (here already, the same bytes: kept, not saved twice)\n"},
		{`a\b.txt`, "a_b.txt", "ok      a\\b.txt (here already as a_b.txt, the same bytes: kept, not saved twice)\n"},
		{"Re\u0301sume\u0301.md", "R\u00e9sum\u00e9.md", "ok      Re\u0301sume\u0301.md (here already, the same bytes: kept, not saved twice)\n"},
	} {
		var out bytes.Buffer
		newPrinter(&out, false).event(engine.Event{Kind: engine.EventFile, File: &engine.FileResult{Path: c.path, SavedAs: c.saved, Verified: true, Kept: true}})
		if out.String() != c.want {
			t.Errorf("%q kept as %q: %q, want %q", c.path, c.saved, out.String(), c.want)
		}
	}
}

// writeCounter counts the writes a printer makes (each is a system call on
// a real stdout).
type writeCounter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.buf.Write(p)
}

// Issue 30: a send of a tree prints a line per file with --json; the lines
// are written a batch at a time, not one write (one system call) per file.
func TestSendWritesFileLinesInBatches(t *testing.T) {
	const files = 400
	src := filepath.Join(t.TempDir(), "tree")
	for i := range files {
		p := filepath.Join(src, fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%03d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery")
	var out writeCounter
	var errOut bytes.Buffer
	if code := run(t.Context(), []string{"send", "--config", t.TempDir(), "--to", r.tcp, "--transport", "tcp", "--json", src}, &out, &errOut); code != 0 {
		t.Fatalf("send exit %d: %s", code, errOut.String())
	}
	fileLines := strings.Count(out.buf.String(), `"kind":"file"`)
	if fileLines != files {
		t.Fatalf("send printed %d file lines, want %d", fileLines, files)
	}
	// A write per file is over 400 writes. Batched, it is at most a write
	// per fileEventBatch while the files' results come in, plus one per
	// other event: 58-74 in most runs at a load of 12, but 127 when the
	// load spread the results over a send of 2.65 s (1 run in 5).
	if out.writes > files/2 {
		t.Errorf("send wrote its %d lines in %d writes, want at most %d (a batch at a time)", strings.Count(out.buf.String(), "\n"), out.writes, files/2)
	}
	t.Logf("%d lines in %d writes", strings.Count(out.buf.String(), "\n"), out.writes)
}

// The done line gives the files' size once and the speed of what moved:
// what the receiver kept from an earlier session and what a reconnect sent
// twice are said apart, on the side that knows them, and what travelled
// compressed on both.
func TestDoneLineSaysWhatDidNotTravel(t *testing.T) {
	const mb = 1_000_000
	cases := []struct {
		name string
		dir  engine.Direction
		r    engine.Result
		by   resentBy
		want string
	}{
		{"plain send", engine.Sending, engine.Result{TotalBytes: 100 * mb, Bytes: 100 * mb, Duration: 2}, resentBy{},
			"100.0 MB in 2.00s (50.0 MB/s) over tcp"},
		{"a send after a reconnect", engine.Sending, engine.Result{TotalBytes: 100 * mb, Bytes: 110 * mb, Duration: 2}, resentBy{reconnect: true},
			"100.0 MB in 2.00s (50.0 MB/s) over tcp (10.0 MB sent again after reconnecting)"},
		{"a send auto moved to tcp", engine.Sending, engine.Result{TotalBytes: 100 * mb, Bytes: 110 * mb, Duration: 2}, resentBy{moveTo: "tcp"},
			"100.0 MB in 2.00s (50.0 MB/s) over tcp (10.0 MB sent again when the transfer moved to tcp)"},
		{"a send moved after a reconnect", engine.Sending, engine.Result{TotalBytes: 100 * mb, Bytes: 110 * mb, Duration: 2}, resentBy{reconnect: true, moveTo: "tcp"},
			"100.0 MB in 2.00s (50.0 MB/s) over tcp (10.0 MB sent again after reconnecting)"},
		{"a send that neither reconnected nor moved", engine.Sending, engine.Result{TotalBytes: 100 * mb, Bytes: 110 * mb, Duration: 2}, resentBy{},
			"100.0 MB in 2.00s (50.0 MB/s) over tcp (10.0 MB sent again)"},
		{"a send the receiver had most of", engine.Sending, engine.Result{TotalBytes: 100 * mb, Bytes: 20 * mb, Kept: 80 * mb, Duration: 1}, resentBy{},
			"100.0 MB in 1.00s (20.0 MB/s) over tcp (the receiver kept 80.0 MB from before)"},
		{"both, and chunks asked for again", engine.Sending, engine.Result{TotalBytes: 100 * mb, Bytes: 25 * mb, Resent: mb, Kept: 80 * mb, Duration: 1}, resentBy{reconnect: true},
			"100.0 MB in 1.00s (20.0 MB/s) over tcp (the receiver kept 80.0 MB from before; 6.0 MB sent again after reconnecting)"},
		{"a receive that resumed", engine.Receiving, engine.Result{TotalBytes: 100 * mb, Bytes: 100 * mb, Kept: 60 * mb, Resent: 2 * mb, Duration: 2}, resentBy{},
			"100.0 MB (60.0 MB of it kept from before) in 2.00s (20.0 MB/s) over tcp (2.0 MB sent again after reconnecting)"},
		{"a send the receiver's owner accepted", engine.Sending, engine.Result{TotalBytes: 315 * mb, Bytes: 315 * mb, Duration: 8.5, Waited: 7.5}, resentBy{},
			"315.0 MB in 1.00s (315.0 MB/s) over tcp (the receiver answered after 7.5s)"},
		{"a receive accepted at the prompt, resumed", engine.Receiving, engine.Result{TotalBytes: 100 * mb, Bytes: 100 * mb, Kept: 60 * mb, Duration: 12, Waited: 10}, resentBy{},
			"100.0 MB (60.0 MB of it kept from before) in 2.00s (20.0 MB/s) over tcp (accepted after 10.0s)"},
		{"a send the receiver had most of, and took long to check", engine.Sending, engine.Result{TotalBytes: 100 * mb, Bytes: 20 * mb, Kept: 80 * mb, Duration: 42, Checked: 41}, resentBy{},
			"100.0 MB in 1.00s (20.0 MB/s) over tcp (the receiver kept 80.0 MB from before and took 41.0s to check it)"},
		{"accepted at a prompt, then checked", engine.Sending, engine.Result{TotalBytes: 100 * mb, Bytes: 20 * mb, Kept: 80 * mb, Duration: 45, Waited: 3, Checked: 41}, resentBy{},
			"100.0 MB in 1.00s (20.0 MB/s) over tcp (the receiver answered after 3.0s; the receiver kept 80.0 MB from before and took 41.0s to check it)"},
		{"a receiver too old to say how long it checked", engine.Sending, engine.Result{TotalBytes: 100 * mb, Bytes: 20 * mb, Kept: 80 * mb, Duration: 45, Waited: 44}, resentBy{},
			"100.0 MB in 1.00s (20.0 MB/s) over tcp (the receiver answered after 44.0s, its check of what it kept included; the receiver kept 80.0 MB from before)"},
		{"a receive that checked what it kept", engine.Receiving, engine.Result{TotalBytes: 100 * mb, Bytes: 100 * mb, Kept: 60 * mb, Duration: 43, Checked: 41}, resentBy{},
			"100.0 MB (60.0 MB of it kept from before) in 2.00s (20.0 MB/s) over tcp (41.0s checking what was kept from before)"},
		{"a receiver's own checks, kept in the time", engine.Sending, engine.Result{TotalBytes: 100 * mb, Bytes: 100 * mb, Duration: 2, Waited: 0.2}, resentBy{},
			"100.0 MB in 2.00s (50.0 MB/s) over tcp"},
		// NAT lab: "53.0 MB in 4.07s (13.0 MB/s)" against the receiver's
		// 2.03 s: 1.5 s on a remembered LAN address and ICE were in it.
		{"a send that took long to connect", engine.Sending, engine.Result{TotalBytes: 53 * mb, Bytes: 53 * mb, Duration: 4.07, Connecting: 2.07}, resentBy{},
			"53.0 MB in 2.00s (26.5 MB/s) over tcp (connected after 2.1s)"},
		{"a send that connected at once, on the LAN", engine.Sending, engine.Result{TotalBytes: 100 * mb, Bytes: 100 * mb, Duration: 2, Connecting: 0.01}, resentBy{},
			"100.0 MB in 2.00s (50.0 MB/s) over tcp"},
		{"a send that travelled compressed", engine.Sending, engine.Result{TotalBytes: 100 * mb, Bytes: 100 * mb, Packed: 80 * mb, PackedTo: 20 * mb, Duration: 2}, resentBy{},
			"100.0 MB in 2.00s (50.0 MB/s) over tcp (80.0 MB of it travelled compressed, as 20.0 MB)"},
		{"a receive that came compressed", engine.Receiving, engine.Result{TotalBytes: 100 * mb, Bytes: 100 * mb, Packed: 80 * mb, PackedTo: 20 * mb, Duration: 2}, resentBy{},
			"100.0 MB in 2.00s (50.0 MB/s) over tcp (80.0 MB of it travelled compressed, as 20.0 MB)"},
		{"empty files", engine.Receiving, engine.Result{Duration: 0.5}, resentBy{}, "0 B in 0.50s (0 B/s) over tcp"},
	}
	for _, c := range cases {
		c.r.Transport = "tcp"
		if got := doneBytes(c.dir, &c.r, 0, c.by); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// A retry says "reconnecting" of a transfer that reached its device, and
// "trying again" of one that never did; a reason it gave just before is
// not repeated.
func TestRetryLineSaysWhetherItWasConnected(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out, false)
	retry := func(id, why string) engine.Event {
		return engine.Event{Kind: engine.EventState, TransferID: id, State: engine.StateRetrying, Result: &engine.Result{Err: why}}
	}
	p.event(retry("a", "Could not connect to the receiver."))
	p.event(engine.Event{Kind: engine.EventTransport, TransferID: "b", Transport: &engine.TransportInfo{Name: "tcp", Reason: "r"}})
	p.event(retry("b", "The connection to vm was lost: connection reset by peer."))
	// The same reason again is not said again; another one is.
	p.event(retry("a", "Could not connect to the receiver."))
	p.event(retry("a", "Could not connect to the receiver."))
	p.event(retry("a", "The connection to vm was lost."))
	// Its Ferry was closed there (going_away): the line says what it waits for.
	away := retry("b", "vm went away: Ferry was closed there.")
	away.Result.Code = string(wire.CodeGoingAway)
	p.event(away)
	p.event(away)
	want := "trying again: Could not connect to the receiver.\ntransport: tcp (r)\nreconnecting: The connection to vm was lost: connection reset by peer.\n" +
		"trying again (attempt 3, as above)...\ntrying again (attempt 4, as above)...\ntrying again: The connection to vm was lost.\n" +
		"reconnecting: vm went away: Ferry was closed there; waiting for it to be opened again.\nreconnecting (attempt 4, as above)...\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// A LocalSend sender that stopped in the middle of a file: its transfer
// says it is interrupted, and when it sends again.
func TestInterruptedLineWhileItGoesOn(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out, false)
	state := func(s engine.State) engine.Event {
		return engine.Event{Kind: engine.EventState, TransferID: "a", State: s, Direction: engine.Receiving, Peer: engine.PeerInfo{Name: "Pixel"}}
	}
	p.event(state(engine.StateActive))
	p.event(state(engine.StateInterrupted))
	p.event(state(engine.StateActive))
	p.event(state(engine.StateActive))
	want := "interrupted: nothing arrived from Pixel for a while; what arrived is kept, and the transfer goes on if it sends again (Ctrl-C ends it)\n" +
		"Pixel is sending again\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// A zip a browser downloaded without some shared files (deleted or moved
// since) says which, to the sharer, escaped.
func TestLinkDoneSaysWhatTheZipLeftOut(t *testing.T) {
	var out bytes.Buffer
	size, n := int64(-1), int64(5000)
	printLinkEvent(&out, linkEvent{Event: "done", Device: "10.0.0.5", Name: "photos.zip", Zip: true, Size: &size, Bytes: &n,
		LeftOut: []string{"photos/gone.jpg (no such file or directory)", "photos/b\x1b[2J.jpg (permission denied)"}}, false)
	want := "10.0.0.5: downloaded photos.zip (5.0 kB)\n  not in it (deleted or moved since it was shared; its NOT INCLUDED.txt says so): " +
		`photos/gone.jpg (no such file or directory), "photos/b\x1b[2J.jpg (permission denied)"` + "\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}
}

// An upload from a Mac's browser whose decomposed name was saved composed
// says so, not "saved as" the same-looking name; a name really changed is
// said as before.
func TestLinkUploadSavedComposedIsSaidSo(t *testing.T) {
	n := int64(3)
	for _, c := range []struct{ name, saved, want string }{
		{"Re\u0301sume\u0301.md", "R\u00e9sum\u00e9.md", "10.0.0.5: received Re\u0301sume\u0301.md (3 B; saved with its accents composed, Unicode NFC)\n"},
		{"cafe\u0301.txt", "caf\u00e9 (1).txt", "10.0.0.5: received cafe\u0301.txt, saved as caf\u00e9 (1).txt\n"},
	} {
		var out bytes.Buffer
		printLinkEvent(&out, linkEvent{Event: "done", Device: "10.0.0.5", Upload: true, Name: c.name, SavedAs: c.saved, Bytes: &n}, false)
		if out.String() != c.want {
			t.Errorf("%q saved as %q: %q, want %q", c.name, c.saved, out.String(), c.want)
		}
	}
}

// A set of files a browser sent together that did not all arrive says how
// many did and why; a file alone (its "done" line said it) and a set that
// arrived whole print nothing more.
func TestLinkResultOfASet(t *testing.T) {
	for _, c := range []struct {
		ev   linkEvent
		want string
	}{
		{linkEvent{Event: "result", Device: "10.0.0.5", State: "failed", Files: 5, Verified: 2, Error: "2 of 5 files arrived from the browser: the link ended"},
			"10.0.0.5: 2 of 5 files arrived from the browser: the link ended\n"},
		{linkEvent{Event: "result", Device: "10.0.0.5", State: "failed", Files: 1, Error: "The browser's upload did not finish"}, ""},
		{linkEvent{Event: "result", Device: "10.0.0.5", State: "done", Files: 5, Verified: 5}, ""},
		{linkEvent{Event: "interrupted", Device: "10.0.0.5"},
			"10.0.0.5 stopped sending: what arrived is kept; it goes on when the page sends again (the same files picked again after a reload)\n"},
		{linkEvent{Event: "sending", Device: "10.0.0.5"}, "10.0.0.5 is sending again\n"},
		// A set refused whole before a file began: no line of its own said it.
		{linkEvent{Event: "result", Device: "10.0.0.5", State: "declined", Files: 1, Error: "Declined: Not enough space on /home: 3 GB needed, 1 GB free."},
			"10.0.0.5: Declined: Not enough space on /home: 3 GB needed, 1 GB free.\n"},
	} {
		var out bytes.Buffer
		printLinkEvent(&out, c.ev, false)
		if out.String() != c.want {
			t.Errorf("%+v printed %q, want %q", c.ev, out.String(), c.want)
		}
	}
}

// A result line says its state once: a sentence that begins with it
// ("Declined by Bob.") is the line, not "declined: Declined by Bob.".
func TestResultLineSaysItsStateOnce(t *testing.T) {
	for _, c := range []struct {
		state engine.State
		err   string
		want  string
	}{
		{engine.StateDeclined, "Declined: this device only accepts files from trusted devices.", "Declined: this device only accepts files from trusted devices.\n"},
		{engine.StateDeclined, "Declined by Bob.", "Declined by Bob.\n"},
		{engine.StateCancelled, "Cancelled by you.", "Cancelled by you.\n"},
		{engine.StateInterrupted, "Interrupted — will resume when Bob is back.", "Interrupted — will resume when Bob is back.\n"},
		{engine.StateDeclined, "Not enough space on Bob: 3 GB needed, 1 GB free.", "declined: Not enough space on Bob: 3 GB needed, 1 GB free.\n"},
		{engine.StateFailed, "The connection to vm was lost.", "failed: The connection to vm was lost.\n"},
	} {
		var out bytes.Buffer
		newPrinter(&out, false).event(engine.Event{Kind: engine.EventResult, TransferID: "a", Result: &engine.Result{State: c.state, Err: c.err}})
		if out.String() != c.want {
			t.Errorf("%s %q: got %q, want %q", c.state, c.err, out.String(), c.want)
		}
	}
}

// What a link kept out reaches its owner once each time it grows: wrong
// PINs, the lock, devices turned away (they were never printed).
func TestLinkGuardLines(t *testing.T) {
	f := newLinkFollower()
	var out bytes.Buffer
	for _, l := range []engine.LinkInfo{
		{WrongPINs: 1},
		{WrongPINs: 1},
		{WrongPINs: 10, PINLocked: true},
		{WrongPINs: 10, PINLocked: true, TurnedAway: 1},
		{WrongPINs: 10, PINLocked: true, TurnedAway: 1},
	} {
		for _, je := range f.events(&l) {
			printLinkEvent(&out, je, false)
		}
	}
	want := "a wrong PIN was typed at the link (1 so far)\n" +
		"a wrong PIN was typed at the link (10 so far)\n" +
		"the link is locked: 10 wrong PINs were typed, so no new device can open it (those that typed the PIN before still can); stop it (Ctrl-C) and share a new one if someone still needs it\n" +
		"a device was turned away: the link is open on as many devices as it takes (1 turned away so far); if you did not expect that many, the link may have leaked: stop it (Ctrl-C)\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// A link open for days forgets what its snapshots no longer list: the
// follower of ferry-cli share and receive --link kept an entry in three
// maps for every download and upload the link ever had, and one for every
// upload whose page stopped sending and never came back (soak of one
// receive --link, docs/benchmarks/soak.md). Each activity still starts and
// ends once in the output.
func TestLinkFollowerForgetsWhatTheLinkForgot(t *testing.T) {
	f := newLinkFollower()
	const shown, many = 50, 2000 // engine.maxLinkActivities, activities in all
	var acts []engine.LinkActivity
	starts, dones := 0, 0
	count := func(evs []linkEvent) {
		for _, je := range evs {
			switch je.Event {
			case "start":
				starts++
			case "done":
				dones++
			}
		}
	}
	for id := int64(1); id <= many; id++ {
		acts = append(acts, engine.LinkActivity{ID: id, Device: "10.0.0.5", Upload: true, Name: "a.bin", Size: 10, Bytes: 5})
		acts = acts[max(0, len(acts)-shown):]
		count(f.events(&engine.LinkInfo{Activities: slices.Clone(acts)}))
		acts[len(acts)-1].Bytes, acts[len(acts)-1].Done = 10, true
		count(f.events(&engine.LinkInfo{Activities: slices.Clone(acts)}))
		// Its transfer: the page stopped, then the upload ended there.
		tr := fmt.Sprint("t", id)
		f.transfer(engine.Event{Kind: engine.EventState, Direction: engine.Receiving, TransferID: tr, State: engine.StateInterrupted})
		f.transfer(engine.Event{Kind: engine.EventResult, Direction: engine.Receiving, TransferID: tr, Result: &engine.Result{State: engine.StateFailed}})
	}
	if starts != many || dones != many {
		t.Errorf("%d starts and %d ends of %d activities", starts, dones, many)
	}
	if len(f.seen) > shown || len(f.done) > shown || len(f.bytes) > shown || len(f.interrupted) != 0 {
		t.Errorf("after %d activities the follower holds %d seen, %d done, %d byte counts, %d interrupted transfers; the link lists %d",
			many, len(f.seen), len(f.done), len(f.bytes), len(f.interrupted), shown)
	}
}

// An offer withdrawn while it is asked about (its sender cancelled or went
// away) stops being asked at once, and the next offer is asked and
// answered by the next line typed: it waited behind the first for ever,
// and the line answered the withdrawn one ("is not waiting for a decision").
func TestWithdrawnOfferStopsBeingAsked(t *testing.T) {
	in, typed := io.Pipe()
	defer typed.Close()
	out := &syncWriter{w: &bytes.Buffer{}}
	p := newPrompter(in, out)
	offer := func(name string) engine.Event {
		return engine.Event{Kind: engine.EventOffer, State: engine.StateWaiting, Peer: engine.PeerInfo{Name: name, ID: "ABCDEFGHIJ"},
			Offer: &engine.OfferInfo{Count: 1, Files: []engine.FileInfo{{Path: "a.txt", Size: 1}}, TotalBytes: 1, Dest: "/tmp", FreeBytes: 1 << 30}}
	}
	first, withdraw := context.WithCancel(context.Background())
	asked := make(chan engine.Decision, 1)
	go func() { asked <- p.ask(first, offer("phoneA"), nil, nil) }()
	testutil.WaitFor(t, "the first question", func() bool { return strings.Contains(out.String(), "Accept?") })
	second := make(chan engine.Decision, 1)
	var said []bool // what phoneB's sender is told of its place
	var saidMu sync.Mutex
	onScreen := func(shown bool) {
		saidMu.Lock()
		defer saidMu.Unlock()
		said = append(said, shown)
	}
	go func() { second <- p.ask(context.Background(), offer("phoneB"), nil, onScreen) }()
	testutil.WaitFor(t, "phoneB's offer queued", func() bool {
		saidMu.Lock()
		defer saidMu.Unlock()
		return len(said) > 0
	})
	withdraw()
	select {
	case d := <-asked:
		if d.Accept || d.Reason != "" {
			t.Fatalf("the withdrawn offer was answered %+v", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the withdrawn offer is still asked about")
	}
	go io.WriteString(typed, "y\n")
	select {
	case d := <-second:
		if !d.Accept {
			t.Fatalf("the second offer: %+v", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second offer was never asked")
	}
	if !strings.Contains(out.String(), "the offer from phoneA was withdrawn") || !strings.Contains(out.String(), "phoneB") {
		t.Errorf("printed %q", out.String())
	}
	saidMu.Lock()
	defer saidMu.Unlock()
	if !slices.Equal(said, []bool{false, true}) {
		t.Errorf("phoneB's sender was told %v, want queued (false) behind phoneA's question, then shown (true)", said)
	}
}

// syncWriter serialises writes from the prompts' goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.(*bytes.Buffer).String()
}

// A LocalSend device that proved no key is not offered "[a]lways" (nothing
// would keep it), nor named by its ID's first letters ("localsen").
func TestLocalSendPromptOffersNoAlways(t *testing.T) {
	in, typed := io.Pipe()
	defer typed.Close()
	out := &syncWriter{w: &bytes.Buffer{}}
	p := newPrompter(in, out)
	ev := engine.Event{Kind: engine.EventOffer, State: engine.StateWaiting,
		Peer:  engine.PeerInfo{Name: "Pixel", ID: "localsend:ab12cd34", Protocol: engine.ProtocolLocalSend, Fingerprint: "ab12cd34ef", Unverified: true},
		Offer: &engine.OfferInfo{Count: 1, Files: []engine.FileInfo{{Path: "a.txt", Size: 1}}, TotalBytes: 1, Dest: "/tmp", FreeBytes: 1 << 30}}
	got := make(chan engine.Decision, 1)
	go func() { got <- p.ask(context.Background(), ev, nil, nil) }()
	io.WriteString(typed, "a\ny\n") // "a" is no answer here: asked again
	if d := <-got; !d.Accept || d.AlwaysAccept {
		t.Fatalf("decision %+v", d)
	}
	s := out.String()
	if strings.Contains(s, "[a]lways") || strings.Contains(s, "localsen,") || !strings.Contains(s, "Please type y or n.") {
		t.Errorf("printed %q", s)
	}
}

// --id refuses a --to that resolved to another device (it sent to the
// --id's device instead), and an ID that is none.
func TestSameDevice(t *testing.T) {
	a := "HCYU6JJXQ5P6ZGQ4D4VJ7KXDVQ3XKZ5YV3NY6BNBFEXR2XRM5TKQ"
	b := "U34LBDMMCSDL6MI4TG5GQM5O6HJG76AMECJOFGDFM5H5S24IBS2Q"
	if err := sameDevice("Alpha", a, b); err == nil || !strings.Contains(err.Error(), "nothing was sent") {
		t.Errorf("another device: %v", err)
	}
	if err := sameDevice("Alpha", a, strings.ToLower(a[:26]+"-"+a[26:])); err != nil {
		t.Errorf("the same device written otherwise: %v", err)
	}
	if err := sameDevice("10.0.0.5:47800", "", b); err != nil {
		t.Errorf("an address (the handshake checks it): %v", err)
	}
	if err := sameDevice("Alpha", a, "x"); !errors.Is(err, errUsage) {
		t.Errorf("no ID: %v", err)
	}
}

// The same device given twice goes once.
func TestSameTargetOnce(t *testing.T) {
	ts := []engine.Target{{ID: "A"}, {ID: "B"}, {ID: "A"}, {Addrs: engine.AddrsAt("10.0.0.5:47800")}, {Addrs: engine.AddrsAt("10.0.0.5:47800")}}
	for i, want := range []int{-1, -1, 0, -1, 3} {
		if got := sameAs(ts, i); got != want {
			t.Errorf("target %d: same as %d, want %d", i, got, want)
		}
	}
}

// A pairing's lines: it asks to pair (not "not trusted yet", said of a
// device paired already), and ends "paired with", not "done: 0 of 0 files".
func TestPairingLines(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out, false)
	peer := engine.PeerInfo{Name: "Bravo", ID: "U34LBDMMCSDL"}
	p.event(engine.Event{Kind: engine.EventPair, TransferID: "p1", Peer: peer, Pair: &engine.PairInfo{Code: "728 829", Only: true}})
	p.event(engine.Event{Kind: engine.EventResult, TransferID: "p1", Peer: peer, Result: &engine.Result{State: engine.StateDone}})
	want := "verification code 728 829: Bravo (U34L-BDMM) asks to pair; its screen shows the same code unless someone is in the middle\n" +
		"paired with Bravo (U34L-BDMM): each device now trusts the other\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// Nobody can answer a code question when standard input is closed: that
// is not "the codes differ" (which warns the other side of someone in the
// middle).
func TestCodeNotAnsweredIsNotAMismatch(t *testing.T) {
	var out bytes.Buffer
	p := newPrompter(strings.NewReader(""), &out)
	if match, answered := p.confirmCode(context.Background(), "Same code? [y/n]: ", ""); match || answered {
		t.Fatalf("match %v, answered %v", match, answered)
	}
	if !strings.Contains(out.String(), "standard input is closed") {
		t.Errorf("printed %q", out.String())
	}
}

// A send paused with SIGUSR1 says so, and says when SIGUSR1 resumed it
// (the next state it takes), once; the progress bar drawn before either
// is cleared first, as for any line. Its done line leaves the time it
// stood paused out of the speed, and says what it sent again was sent
// after resuming.
func TestPausedAndResumedLines(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out, false)
	p.bar = true
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	state := func(s engine.State, at float64) engine.Event {
		return engine.Event{Kind: engine.EventState, TransferID: "a", State: s, Direction: engine.Sending, Time: t0.Add(time.Duration(at * float64(time.Second)))}
	}
	progress := engine.Event{Kind: engine.EventProgress, TransferID: "a", Progress: &engine.Progress{Bytes: 50e6, TotalBytes: 100e6, TotalFiles: 1}}
	p.event(state(engine.StateActive, 0))
	p.event(progress)
	p.event(state(engine.StatePaused, 1))
	p.event(state(engine.StateConnecting, 4))
	p.event(state(engine.StateActive, 4))
	p.event(progress)
	p.event(state(engine.StatePaused, 5))
	p.event(state(engine.StateConnecting, 6))
	p.event(engine.Event{Kind: engine.EventResult, TransferID: "a", Direction: engine.Sending, Time: t0.Add(7 * time.Second),
		Result: &engine.Result{State: engine.StateDone, Files: 1, Verified: 1, TotalBytes: 100e6, Bytes: 110e6, Duration: 7, Transport: "tcp"}})
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if i := strings.LastIndex(l, "\r"); i >= 0 { // what a terminal shows of a redrawn line
			l = l[i+1:]
		}
		lines = append(lines, l)
	}
	want := []string{
		"paused (send SIGUSR1 again, or re-run the same command later, to resume)",
		"resumed (SIGUSR1 pauses it again)",
		"paused (send SIGUSR1 again, or re-run the same command later, to resume)",
		"resumed (SIGUSR1 pauses it again)",
		"done: 1 of 1 files verified, 100.0 MB in 3.00s (33.3 MB/s) over tcp (paused for 4.0s; 10.0 MB sent again after resuming)",
		"",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("got\n%q\nwant\n%q", lines, want)
	}
}

// A transfer that reconnects says so, not "transport: ..." as if it
// started over, and the new connection's verification code (each
// connection has its own, on both screens) is said to be new, so it is
// not taken for someone in the middle. A later transfer starts afresh.
func TestReconnectLines(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out, false)
	peer := engine.PeerInfo{Name: "vm", ID: "FWHLSXZMAAAA"}
	transport := func(id string) engine.Event {
		return engine.Event{Kind: engine.EventTransport, TransferID: id, Peer: peer, Transport: &engine.TransportInfo{Name: "quic", Reason: "requested with --transport quic"}}
	}
	code := func(id, c string) engine.Event {
		return engine.Event{Kind: engine.EventPair, TransferID: id, Peer: peer, Pair: &engine.PairInfo{Code: c}}
	}
	p.event(transport("a"))
	p.event(code("a", "275 865"))
	p.event(engine.Event{Kind: engine.EventState, TransferID: "a", State: engine.StateRetrying, Result: &engine.Result{Err: "The connection went silent for 10s."}})
	p.event(transport("a"))
	p.event(code("a", "795 196"))
	p.event(engine.Event{Kind: engine.EventResult, TransferID: "a", Peer: peer, Result: &engine.Result{State: engine.StateFailed, Err: "cancelled"}})
	p.event(transport("a"))
	p.event(code("a", "111 222"))
	want := "transport: quic (requested with --transport quic)\n" +
		"verification code 275 865: vm (FWHL-SXZM) is not trusted yet; a code its screen shows is this one unless someone is in the middle (--pair trusts it)\n" +
		"reconnecting: The connection went silent for 10s.\n" +
		"reconnected over quic (requested with --transport quic)\n" +
		"verification code 795 196 (a new connection, a new code): vm (FWHL-SXZM) is not trusted yet; a code its screen shows is this one unless someone is in the middle (--pair trusts it)\n" +
		"failed: cancelled\n" +
		"transport: quic (requested with --transport quic)\n" +
		"verification code 111 222: vm (FWHL-SXZM) is not trusted yet; a code its screen shows is this one unless someone is in the middle (--pair trusts it)\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// A sender whose transport changes on the same connection (auto moving
// the data from QUIC to TCP mid-batch, or spreading it over more flows)
// did not reconnect: only a transport line after a retry says so.
func TestSwitchOverIsNoReconnect(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out, false)
	peer := engine.PeerInfo{Name: "Echo", ID: "BTBBMUFVAAAA"}
	transport := func(name, reason string) engine.Event {
		return engine.Event{Kind: engine.EventTransport, TransferID: "a", Direction: engine.Sending, Peer: peer, Transport: &engine.TransportInfo{Name: name, Reason: reason}}
	}
	p.event(transport("quic", "QUIC answered first"))
	p.event(transport("tcp", "TCP takes the rest of the batch"))
	p.event(engine.Event{Kind: engine.EventState, TransferID: "a", Direction: engine.Sending, State: engine.StateRetrying, Result: &engine.Result{Err: "The connection was lost."}})
	p.event(transport("tcp", "clean path"))
	p.event(transport("tcp", "random loss: 4 flows"))
	want := "transport: quic (QUIC answered first)\n" +
		"transport: tcp (TCP takes the rest of the batch)\n" +
		"reconnecting: The connection was lost.\n" +
		"reconnected over tcp (clean path)\n" +
		"transport: tcp (random loss: 4 flows)\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// What a send sent again is said after what the sender saw: a move from
// QUIC to TCP with no drop is no reconnect; more flows on the same
// transport is no move; a retry is a reconnect.
func TestResentAfterSwitchOverIsNoReconnect(t *testing.T) {
	transport := func(id, name string) engine.Event {
		return engine.Event{Kind: engine.EventTransport, TransferID: id, Direction: engine.Sending, Transport: &engine.TransportInfo{Name: name, Reason: "r"}}
	}
	retry := func(id string) engine.Event {
		return engine.Event{Kind: engine.EventState, TransferID: id, Direction: engine.Sending, State: engine.StateRetrying, Result: &engine.Result{Err: "The connection was lost."}}
	}
	done := engine.Result{State: engine.StateDone, Files: 1, Verified: 1, TotalBytes: 42_100_000, Bytes: 42_755_400, Duration: 2, Transport: "tcp"}
	cases := []struct {
		name   string
		events []engine.Event
		want   string
	}{
		{"moved", []engine.Event{transport("a", "quic"), transport("a", "tcp")}, "655.4 kB sent again when the transfer moved to tcp)"},
		{"more flows", []engine.Event{transport("a", "tcp"), transport("a", "tcp")}, "655.4 kB sent again)"},
		{"reconnected", []engine.Event{transport("a", "quic"), retry("a"), transport("a", "tcp")}, "655.4 kB sent again after reconnecting)"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		p := newPrinter(&out, false)
		for _, ev := range c.events {
			p.event(ev)
		}
		r := done
		p.event(engine.Event{Kind: engine.EventResult, TransferID: "a", Direction: engine.Sending, Result: &r})
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if last := lines[len(lines)-1]; !strings.HasSuffix(last, c.want) {
			t.Errorf("%s: done line %q, want it to end %q", c.name, last, c.want)
		}
	}
}

// With several recipients (no bar), a transfer that has had no line of its
// own for quietEvery says how far it is, by the events' times (the
// engine's clock): a slow device is not silent until its done line, one
// that prints lines needs none, and what was kept goes with the result.
func TestQuietTransferSaysItsProgress(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out, false)
	p.quietEvery = 10 * time.Second
	p.prefix = func(ev engine.Event) string { return "[" + ev.TransferID + "] " }
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	for sec := 0; sec <= 42; sec++ {
		// Delta: 42.1 MB at about 1 MB/s; Alpha: a file done every 4 s.
		p.event(engine.Event{Kind: engine.EventProgress, TransferID: "Delta", Direction: engine.Sending, Time: at(sec),
			Progress: &engine.Progress{Bytes: int64(sec) * 1_000_000, TotalBytes: 42_100_000, Rate: 473_800}})
		p.event(engine.Event{Kind: engine.EventProgress, TransferID: "Alpha", Direction: engine.Sending, Time: at(sec),
			Progress: &engine.Progress{Bytes: int64(sec), TotalBytes: 100, Rate: 1}})
		if sec%4 == 3 {
			p.event(engine.Event{Kind: engine.EventFile, TransferID: "Alpha", Direction: engine.Sending, Time: at(sec),
				File: &engine.FileResult{Path: fmt.Sprintf("f%d", sec), Verified: true}})
		}
	}
	for _, id := range []string{"Alpha", "Delta"} {
		p.event(engine.Event{Kind: engine.EventResult, TransferID: id, Direction: engine.Sending, Time: at(43),
			Result: &engine.Result{State: engine.StateFailed, Err: "cancelled"}})
	}
	var delta []string
	alpha := 0
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		switch {
		case strings.HasPrefix(l, "[Delta] ") && strings.Contains(l, " %"):
			delta = append(delta, l)
		case strings.HasPrefix(l, "[Alpha] ") && strings.Contains(l, " %"):
			alpha++
		}
	}
	want := []string{
		"[Delta] 24 % (10.0 of 42.1 MB), 473.8 kB/s",
		"[Delta] 48 % (20.0 of 42.1 MB), 473.8 kB/s",
		"[Delta] 71 % (30.0 of 42.1 MB), 473.8 kB/s",
		"[Delta] 95 % (40.0 of 42.1 MB), 473.8 kB/s",
	}
	if !slices.Equal(delta, want) || alpha != 0 {
		t.Errorf("Delta's progress lines:\n%q\nwant\n%q\nand %d of Alpha's, want none; all:\n%s", delta, want, alpha, out.String())
	}
	if len(p.said) != 0 {
		t.Errorf("%d transfers still kept after their results", len(p.said))
	}
	if got := progressLine(&engine.Progress{Bytes: 999_000, TotalBytes: 2_000_000, Rate: 10}); got != "50 % (999.0 kB of 2.0 MB), 10 B/s" {
		t.Errorf("progressLine = %q", got)
	}
}

// What the receiver's decision says of the code is printed only where
// there is something to know: a code it accepted without showing ("accept
// all") has nothing to compare it with; one it went on with unasked over a
// new connection (a reconnect, a Retry it had accepted) is said as that,
// not as a receiver that showed no code (each connection has its own);
// and an older Ferry does not say. It printed nothing of it: the code stood as
// one to compare, and --pair asked about it.
func TestCodeShownLines(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out, false)
	peer := engine.PeerInfo{Name: "vm", ID: "FWHLSXZMAAAA"}
	code := func(id, c string, shown engine.CodeShown) engine.Event {
		return engine.Event{Kind: engine.EventPair, TransferID: id, Direction: engine.Sending, Peer: peer, Pair: &engine.PairInfo{Code: c, Shown: shown}}
	}
	p.event(code("a", "572 054", engine.CodeShownPending))
	p.event(code("a", "572 054", engine.CodeShownYes))
	p.event(engine.Event{Kind: engine.EventState, TransferID: "a", State: engine.StateRetrying, Result: &engine.Result{Err: "cancelled"}})
	p.event(code("a", "234 768", engine.CodeShownPending))
	p.event(code("a", "234 768", engine.CodeShownNo))
	p.event(code("b", "105 277", engine.CodeShownPending))
	p.event(code("b", "105 277", engine.CodeShownUnknown))
	// Accepted unasked at its first connection ("accept all").
	p.event(code("d", "611 902", engine.CodeShownPending))
	p.event(code("d", "611 902", engine.CodeShownNo))
	// A receiver that says where the offer stands on its screen.
	p.event(code("c", "480 111", engine.CodeShownWaiting))
	queued := code("c", "480 111", engine.CodeShownQueued)
	queued.Pair.Ahead = 8 // by the receiving Ferry itself, behind the prompts it shows
	p.event(queued)
	for _, ahead := range []int{2, 1} { // it moves up that queue
		moved := code("c", "480 111", engine.CodeShownQueued)
		moved.Pair.Ahead = ahead
		p.event(moved)
	}
	p.event(code("c", "480 111", engine.CodeShownQueued))
	p.event(code("c", "480 111", engine.CodeShownPending))
	p.event(code("c", "480 111", engine.CodeShownYes))
	want := "verification code 572 054: vm (FWHL-SXZM) is not trusted yet; a code its screen shows is this one unless someone is in the middle (--pair trusts it)\n" +
		"trying again: cancelled\n" +
		"verification code 234 768 (a new connection, a new code): vm (FWHL-SXZM) is not trusted yet; a code its screen shows is this one unless someone is in the middle (--pair trusts it)\n" +
		"verification code 234 768: vm (FWHL-SXZM) went on with this send without asking, so its screen does not show this code (each connection has its own; ferry-cli pair compares codes)\n" +
		"verification code 105 277: vm (FWHL-SXZM) is not trusted yet; a code its screen shows is this one unless someone is in the middle (--pair trusts it)\n" +
		"verification code 105 277: vm (FWHL-SXZM) runs an older Ferry, which does not say whether its screen showed the code\n" +
		"verification code 611 902: vm (FWHL-SXZM) is not trusted yet; a code its screen shows is this one unless someone is in the middle (--pair trusts it)\n" +
		"verification code 611 902: vm (FWHL-SXZM) accepted without showing it, so there is nothing to compare it with (ferry-cli pair compares codes)\n" +
		"verification code 480 111: vm (FWHL-SXZM) is not trusted yet; a code its screen shows is this one unless someone is in the middle (--pair trusts it)\n" +
		"  (it shows the code with your offer: compare once it does)\n" +
		"verification code 480 111: your offer is queued on vm (FWHL-SXZM) behind 8 other offers waiting for an answer; its screen shows the code once your offer's turn comes\n" +
		"verification code 480 111: your offer moved up on vm (FWHL-SXZM), now behind 2 other offers\n" +
		"verification code 480 111: your offer moved up on vm (FWHL-SXZM), now behind 1 other offer\n" +
		"verification code 480 111: vm (FWHL-SXZM) is answering another device's offer first; its screen shows the code once your offer's turn comes\n" +
		"verification code 480 111: vm (FWHL-SXZM) shows your offer now, with this code\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// An empty folder a browser sent (a folder dropped with an empty folder in
// it) is said as a folder made, in the lines and in --json ("folder": true),
// and a set's result counts it apart ("folders"). Before, it read as a file
// of 0 bytes: "10.0.0.5: received Trip/day 2/empty (0 B)".
func TestLinkEmptyFolderIsSaidAsAFolder(t *testing.T) {
	f := newLinkFollower()
	evs := f.events(&engine.LinkInfo{Activities: []engine.LinkActivity{
		{ID: 1, Device: "10.0.0.5", Upload: true, Folder: true, Name: "Trip/day 2/empty", Done: true},
		{ID: 2, Device: "10.0.0.5", Upload: true, Folder: true, Name: "Trip/x", Done: true, Err: "a file of that name is there"},
	}})
	var out bytes.Buffer
	for _, je := range evs {
		if !je.Folder {
			t.Errorf("%s of %s: not a folder", je.Event, je.Name)
		}
		printLinkEvent(&out, je, false)
	}
	want := "10.0.0.5 is sending the empty folder Trip/day 2/empty\n" +
		"10.0.0.5: received the empty folder Trip/day 2/empty\n" +
		"10.0.0.5 is sending the empty folder Trip/x\n" +
		"10.0.0.5: the empty folder Trip/x was not made: a file of that name is there\n"
	if out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	je, ok := f.transfer(engine.Event{Kind: engine.EventResult, Direction: engine.Receiving,
		Result: &engine.Result{State: engine.StateDone, Files: 4, Verified: 4, Folders: 1}})
	if b, _ := json.Marshal(je); !ok || !strings.Contains(string(b), `"files":4,"verified":4,"folders":1`) {
		t.Errorf("the set's result: %s", b)
	}
}

// The prompt lists an offer's top-level folders with their files and
// bytes, then its files outside them, ten lines at most, then each refused
// file with why: a folder of 105,252 files showed ten of its files deep
// inside it and "... and 105242 more".
func TestOfferLines(t *testing.T) {
	tree := &engine.OfferInfo{Count: 105_252, TotalBytes: 1_630_395_429,
		Folders: []engine.FolderInfo{{Path: "D", Files: 105_252, Bytes: 1_630_395_429}},
		Files:   []engine.FileInfo{{Path: "D/go-1/LICENSE", Size: 1479}, {Path: "D/go-1/VERSION", Size: 35}}}
	var many []engine.FileInfo
	for i := range 12 {
		many = append(many, engine.FileInfo{Path: fmt.Sprintf("IMG_%d.jpg", i), Size: 2_000_000})
	}
	mixed := &engine.OfferInfo{Count: 5, Folders: []engine.FolderInfo{{Path: "Photos", Files: 3, Bytes: 3000}},
		Files: []engine.FileInfo{{Path: "Photos/a.jpg", Size: 1000}, {Path: "Photos/b.jpg", Size: 1000},
			{Path: "Photos/CON", Size: 1000, Refused: "a name Windows keeps for a device"},
			{Path: "notes.txt", Size: 12}, {Path: "aux.txt", Size: 3, Refused: "a name Windows keeps for a device"}}}
	var refusedMany []engine.FileInfo
	for i := range 13 {
		refusedMany = append(refusedMany, engine.FileInfo{Path: fmt.Sprintf("bad%d\x01", i), Size: 1, Refused: "a control character"})
	}
	for _, tc := range []struct {
		name string
		o    *engine.OfferInfo
		want []string
	}{
		{"a tree", tree, []string{"D/ (105,252 files, 1.6 GB)"}},
		{"files", &engine.OfferInfo{Count: 12, Files: many}, []string{"IMG_0.jpg (2.0 MB)", "IMG_1.jpg (2.0 MB)", "IMG_2.jpg (2.0 MB)",
			"IMG_3.jpg (2.0 MB)", "IMG_4.jpg (2.0 MB)", "IMG_5.jpg (2.0 MB)", "IMG_6.jpg (2.0 MB)", "IMG_7.jpg (2.0 MB)", "IMG_8.jpg (2.0 MB)",
			"IMG_9.jpg (2.0 MB)", "... and 2 more"}},
		{"files past the listed ones", &engine.OfferInfo{Count: 1500, Files: many[:2]}, []string{"IMG_0.jpg (2.0 MB)", "IMG_1.jpg (2.0 MB)", "... and 1,498 more"}},
		{"a folder, a file, refused ones", mixed, []string{"Photos/ (3 files, 3.0 kB)", "notes.txt (12 B)",
			"Photos/CON (1.0 kB) REFUSED: a name Windows keeps for a device", "aux.txt (3 B) REFUSED: a name Windows keeps for a device"}},
		{"many refused", &engine.OfferInfo{Count: 13, Files: refusedMany}, append(func() (l []string) {
			for i := range 10 {
				l = append(l, fmt.Sprintf(`"bad%d\x01" (1 B) REFUSED: a control character`, i)) // escaped, quoted
			}
			return l
		}(), "... and 3 more refused")},
	} {
		if got := offerLines(tc.o); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
