package app

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/testutil"
	"github.com/ferrydrop/ferry/ui"
)

// TestGUISlowLink drives the real app over a slow link (issue 26): two
// instances in network namespaces of their own joined by a veth pair that
// a token bucket (tc tbf) holds to 20 Mbit/s, so a send lasts long enough
// to press its buttons. B sends to A; A accepts in its notification. The
// row's words are read from what B's window shows (FERRY_SMOKE_DESCRIBE:
// the labels a person reads, the places of the buttons a person clicks);
// the buttons are clicked with xdotool.
//
//   - the same file twice, the second paused and resumed: two rows and two
//     History entries, the first still "Sent 1 file", the second "Paused
//     by you" and then sent without A asking again; A has two whole
//     copies (slow-paused.png);
//   - cancel, then resume: the row says "Cancelled by you" with Retry;
//     after Retry it says it is sending again with Pause and Cancel (A
//     does not ask again), and Pause works on it (slow-cancelled.png,
//     slow-resumed.png);
//   - the receiver killed mid-send and never back: the row leaves
//     "Sending" for "Reconnecting to Ferry A…", then says Ferry A went away
//     (never that the files could not be read here) (slow-killed.png,
//     slow-gone.png);
//   - the receiver starts again: the send goes on by itself in its row
//     (the app's rejoin), A taking it without asking again; then its user
//     quits Ferry mid-send: B's row
//     says it waits for Ferry A to be opened again, then that Ferry A
//     went away (slow-quit.png, slow-quit-gone.png);
//   - B, the sender, killed mid-send and started again on its config
//     while it cannot reach A: its new window shows "Interrupted: Ferry
//     was closed while sending. It sends the rest when Ferry A is back."
//     with Retry and Cancel; once B hears A, the same delivery goes on by
//     itself, A not asking again and only what A lacked travelling, and
//     the row ends "Sent 1 file" (slow-sender-killed.png,
//     slow-sender-back.png);
//   - A's user quits mid-send again: B's list shows Ferry A offline once
//     the row says Ferry was closed there, and online again, the send
//     going on, once it is opened again (slow-closed-offline.png); then
//     B is killed mid-send (A's tray listed it under way, "· 13%"): A's
//     row waits to resume, with Discard, which asks and then deletes the
//     partial file (slow-interrupted.png, slow-discard-asked.png,
//     slow-discarded.png).
//
// It needs root (ip netns, tc, nft) and what TestGUIEndToEnd needs, and takes
// about two and a half minutes: it runs only with FERRY_E2E_SLOW=1
// (scripts/gui-e2e.sh --slow), not in CI's default run.
func TestGUISlowLink(t *testing.T) {
	if testing.Short() || os.Getenv("FERRY_E2E_SLOW") == "" {
		t.Skip("the slow-link GUI test runs with FERRY_E2E_SLOW=1 (scripts/gui-e2e.sh --slow)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces and tc")
	}
	top := t // instances that outlive the step that started them
	d := newDesktop(t)
	bin := buildFerry(t)
	root := t.TempDir()
	nsA, nsB := slowLink(t)

	// Listening on the veth, mDNS inside the namespaces; logging what happens.
	notIsolated := []string{"FERRY_SMOKE_ISOLATED=", "FERRY_SMOKE_LOG=info"}
	A := d.startIn(t, nsA, bin, root, "Ferry A", notIsolated)
	A.waitStatus(t)
	// B gives up on a device that is gone after 20 s (the app's default
	// is two minutes), so that the last step ends in time.
	B := d.startIn(t, nsB, bin, root, "Ferry B", append(notIsolated,
		"FERRY_SMOKE_ADD=10.78.0.1:"+A.port(t), "FERRY_SMOKE_RETRY_FOR=20s"))
	B.waitStatus(t)
	testutil.WaitFor(t, "B to list A", func() bool { return fileExists(B.status + ".added") })
	winA, winB := d.window(t, "Ferry A"), d.window(t, "Ferry B")
	d.xdotool(t, "windowmove", "--sync", winB, "0", "0")
	d.xdotool(t, "windowsize", "--sync", winB, "980", "640")
	d.xdotool(t, "windowmove", "--sync", winA, "1000", "0")
	d.drawn(t, winB)

	// rowY is where A's row is in B's list (online, over Ferry's own
	// protocol): a drop lands on its left part, level with its Send….
	rowY := func(t *testing.T) int {
		t.Helper()
		var y int
		testutil.WaitFor(t, "A's row in B's window", func() bool {
			for _, r := range B.describe(t).Devices {
				if r.Title == "Ferry A" && strings.Contains(r.Sub, "QUIC") && !strings.Contains(r.Sub, "Offline") && r.Buttons["Send…"][1] > 0 {
					y = r.Buttons["Send…"][1]
					return true
				}
			}
			return false
		})
		return y
	}
	rowY(t)
	accepted := 0
	// offers lists the offers A asked about in its notifications.
	offers := func() []notification {
		var got []notification
		for _, x := range d.notes() {
			if x.summary == "Incoming files" && d.pidOf(x.sender) == A.cmd.Process.Pid {
				got = append(got, x)
			}
		}
		return got
	}
	// accept accepts A's next offer in its notification. A asks about
	// each new send of a device it does not trust; a send it accepted
	// that comes back (B's Resume and Retry) goes on without asking
	// (notAskedAgain).
	accept := func(t *testing.T) {
		t.Helper()
		accepted++
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			got := offers()
			if len(got) >= accepted {
				d.press(t, got[accepted-1], "accept")
				return
			}
			if time.Now().After(deadline) {
				d.screenshot(t, d.window(t, "Ferry A"), "slow-failed-A.png")
				d.screenshot(t, winB, "slow-failed-B.png")
				data, _ := json.MarshalIndent(A.describe(t), "", "  ")
				t.Fatalf("no offer #%d at A; A shows %s", accepted, data)
			}
		}
	}
	// notAskedAgain checks that A asked about no offer since the last
	// one accepted.
	notAskedAgain := func(t *testing.T) {
		t.Helper()
		if n := len(offers()); n != accepted {
			t.Errorf("A asked about %d offers, want %d: a send it accepted came back and was asked about again", n, accepted)
		}
	}
	// send drops file on A's row and accepts it at A.
	send := func(t *testing.T, file string) {
		t.Helper()
		d.x11(t, "drop", winB, "150", strconv.Itoa(rowY(t)), file)
		accept(t)
	}
	// wait waits up to a minute for cond; when it does not come, it says
	// what B's window shows (and photographs it).
	wait := func(t *testing.T, what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				d.screenshot(t, winB, "slow-failed-"+strings.ReplaceAll(t.Name(), "/", "-")+".png")
				data, _ := json.MarshalIndent(B.describe(t).Transfers, "", "  ")
				t.Fatalf("timed out waiting for %s; B shows %s", what, data)
			}
		}
	}
	// row waits until B's newest row matches cond and returns it.
	row := func(t *testing.T, what string, cond func(ui.DescribedRow) bool) ui.DescribedRow {
		t.Helper()
		var r ui.DescribedRow
		wait(t, "B's newest row: "+what, func() bool {
			rows := B.describe(t).Transfers
			if len(rows) == 0 {
				return false
			}
			r = rows[0]
			return cond(r)
		})
		return r
	}
	under := func(frac float64) func(ui.DescribedRow) bool {
		return func(r ui.DescribedRow) bool {
			return strings.HasPrefix(r.State, "Sending") && r.Bar > 0.1 && r.Bar < frac && r.Buttons["Pause"] != [2]int{}
		}
	}
	// click clicks button on B's newest row (r, as last seen) once it
	// stays in place for a moment: a row's layout may still change after
	// its words did (its verification code goes when the session ends).
	click := func(t *testing.T, r ui.DescribedRow, button string) {
		t.Helper()
		var at [2]int
		wait(t, fmt.Sprintf("%s on the row %q (%q) to stay in place", button, r.Title, r.State), func() bool {
			place := func() ([2]int, bool) {
				rows := B.describe(t).Transfers
				if len(rows) == 0 || rows[0].Title != r.Title {
					return [2]int{}, false
				}
				p, ok := rows[0].Buttons[button]
				return p, ok
			}
			p1, ok1 := place()
			time.Sleep(300 * time.Millisecond)
			p2, ok2 := place()
			at = p2
			return ok1 && ok2 && p1 == p2
		})
		d.xdotool(t, "mousemove", "--window", winB, strconv.Itoa(at[0]), strconv.Itoa(at[1]))
		d.xdotool(t, "click", "1")
	}

	// 24 MB: about 10 s at 20 Mbit/s.
	big := randomFile(t, root, "big.bin", 24_000_000)
	t.Run("same file twice with a pause", func(t *testing.T) {
		send(t, big)
		wait(t, "big.bin at A", func() bool { return sameFile(big, filepath.Join(A.downloads, "big.bin")) })
		row(t, "sent", func(r ui.DescribedRow) bool { return r.State == "Sent 1 file" })
		send(t, big)
		r := row(t, "the second send under way", under(0.6))
		click(t, r, "Pause")
		r = row(t, "paused by you, with Resume and Cancel", func(r ui.DescribedRow) bool {
			_, resume := r.Buttons["Resume"]
			_, cancel := r.Buttons["Cancel"]
			return r.State == "Paused by you" && resume && cancel
		})
		rows := B.describe(t).Transfers
		if len(rows) < 2 || rows[1].State != "Sent 1 file" || rows[1].Title != rows[0].Title {
			t.Errorf("rows %+v: want the paused send above the first one, still sent", rows)
		}
		if fileExists(filepath.Join(A.downloads, "big (1).bin")) {
			t.Error("A has the second copy while it is paused")
		}
		d.screenshot(t, winB, "slow-paused.png")
		wait(t, "A's row paused by B", func() bool {
			rows := A.describe(t).Transfers
			return len(rows) > 0 && rows[0].State == "Paused by Ferry B"
		})
		click(t, r, "Resume")
		wait(t, "the second copy at A", func() bool {
			return sameFile(big, filepath.Join(A.downloads, "big (1).bin"))
		})
		notAskedAgain(t)
		row(t, "the second send done", func(r ui.DescribedRow) bool { return r.State == "Sent 1 file" })
		for _, p := range []*ferry{A, B} {
			var got []ui.HistoryEntry
			testutil.WaitFor(t, p.name+"'s two entries", func() bool {
				got = got[:0]
				for _, e := range p.history(t) {
					if e.State == ui.StateDone && slices.Contains(e.Names, "big.bin") {
						got = append(got, e)
					}
				}
				return len(got) == 2
			})
			if got[0].Delivery == got[1].Delivery {
				t.Errorf("%s: both entries are delivery %q", p.name, got[0].Delivery)
			}
			if got[0].Bytes > 24_000_000 {
				t.Errorf("%s: the resumed delivery counts %d bytes of 24000000", p.name, got[0].Bytes)
			}
		}
		d.screenshot(t, winB, "slow-twice-done.png")
	})

	film := randomFile(t, root, "film.mov", 24_000_000)
	t.Run("cancel then resume", func(t *testing.T) {
		send(t, film)
		r := row(t, "film.mov under way", under(0.5))
		click(t, r, "Cancel")
		r = row(t, "cancelled by you", func(r ui.DescribedRow) bool { return r.State == "Cancelled by you" })
		d.screenshot(t, winB, "slow-cancelled.png")
		wait(t, "A's row cancelled by B", func() bool {
			rows := A.describe(t).Transfers
			return len(rows) > 0 && rows[0].State == "Cancelled by Ferry B"
		})
		click(t, r, "Retry")
		// Sending again, on the same row, with Pause and Cancel (finding 2).
		r = row(t, "sending again", func(r ui.DescribedRow) bool {
			return strings.HasPrefix(r.State, "Sending") && r.Buttons["Pause"] != [2]int{} && r.Buttons["Cancel"] != [2]int{}
		})
		d.screenshot(t, winB, "slow-resumed.png")
		// Its first speed reads high: the bytes written into the socket
		// buffers in the first second (A's held bytes no longer count).
		t.Logf("sending again: %q", r.Sub)
		click(t, r, "Pause")
		r = row(t, "the resumed send paused", func(r ui.DescribedRow) bool { return r.State == "Paused by you" })
		click(t, r, "Resume")
		wait(t, "film.mov at A", func() bool { return sameFile(film, filepath.Join(A.downloads, "film.mov")) })
		notAskedAgain(t)
		row(t, "film.mov sent", func(r ui.DescribedRow) bool { return r.State == "Sent 1 file" })
		if n := len(B.describe(t).Transfers); n != 3 {
			t.Errorf("B shows %d rows, want 3 (the resumed send on its own row)", n)
		}
	})

	last := randomFile(t, root, "archive.zip", 24_000_000)
	t.Run("receiver killed and never back", func(t *testing.T) {
		send(t, last)
		row(t, "archive.zip under way", under(0.5))
		if err := A.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-A.done
		r := row(t, "no longer sending", func(r ui.DescribedRow) bool { return !strings.HasPrefix(r.State, "Sending") })
		t.Logf("after the kill: %q", r.State)
		if !strings.HasPrefix(r.State, "Reconnecting to Ferry A…") { // then "(tried once)", after a try
			t.Errorf("B's row says %q after the kill, want Reconnecting to Ferry A…", r.State)
		}
		d.screenshot(t, winB, "slow-killed.png")
		// The end: its words and, once laid out, its buttons (Retry).
		r = row(t, "the end, with its buttons", func(r ui.DescribedRow) bool {
			_, retry := r.Buttons["Retry"]
			return !strings.HasPrefix(r.State, "Reconnecting") && !strings.HasPrefix(r.State, "Sending") && retry
		})
		t.Logf("in the end: %q %v", r.State, r.Buttons)
		d.screenshot(t, winB, "slow-gone.png")
		if !wentAway(r.State) {
			t.Errorf("B's row says %q, want that Ferry A went away", r.State)
		}
		if r.Buttons["Cancel"] == [2]int{} {
			t.Errorf("B's row offers %v, want Retry and Cancel", r.Buttons)
		}
		e := B.lastHistory(t)
		if e.State == ui.StateDone || e.State == ui.StateActive {
			t.Errorf("B's history says %+v", e)
		}
	})

	// A starts again: B sends the rest of archive.zip by itself (the app's
	// rejoin, on discovery's word that A is back), and A takes it without
	// asking again: it accepted it before it was killed.
	// Then A's user quits Ferry mid-send (SIGTERM, as the tray's Quit
	// ends it): A says going_away, B keeps trying while A may come back
	// and says so ("Ferry was closed on Ferry A: waiting for it to be
	// opened again…"), then says A went away, never that the files could
	// not be saved.
	t.Run("receiver back, then quits", func(t *testing.T) {
		A = d.startIn(t, nsA, bin, root, "Ferry A", notIsolated)
		accepted = 0 // notifications are counted per process
		r := row(t, "archive.zip sending again by itself", func(r ui.DescribedRow) bool {
			return strings.HasSuffix(r.Title, "archive.zip") && strings.HasPrefix(r.State, "Sending")
		})
		wait(t, "archive.zip at A", func() bool { return sameFile(last, filepath.Join(A.downloads, "archive.zip")) })
		notAskedAgain(t) // A accepted it before it was killed
		row(t, "archive.zip sent", func(r ui.DescribedRow) bool { return r.State == "Sent 1 file" })
		if n := len(B.describe(t).Transfers); n != 4 {
			t.Errorf("B shows %d rows, want 4 (archive.zip went on in its own row)", n)
		}
		quit := randomFile(t, root, "quit.bin", 24_000_000)
		send(t, quit)
		row(t, "quit.bin under way", under(0.5))
		if err := A.stop(); err != nil {
			t.Errorf("A: %v", err)
		}
		r = row(t, "no longer sending", func(r ui.DescribedRow) bool { return !strings.HasPrefix(r.State, "Sending") })
		t.Logf("after A quit: %q", r.State)
		if r.State != "Ferry was closed on Ferry A: waiting for it to be opened again…" {
			t.Errorf("B's row says %q after A quit, want that it waits for Ferry A to be opened again", r.State)
		}
		d.screenshot(t, winB, "slow-quit.png")
		// The end: its words and, once laid out, its buttons (Retry).
		r = row(t, "the end, with its buttons", func(r ui.DescribedRow) bool {
			_, retry := r.Buttons["Retry"]
			return !strings.HasPrefix(r.State, "Reconnecting") && !strings.HasPrefix(r.State, "Sending") && retry
		})
		t.Logf("in the end: %q %v", r.State, r.Buttons)
		d.screenshot(t, winB, "slow-quit-gone.png")
		if !wentAway(r.State) {
			t.Errorf("B's row says %q, want that Ferry A went away", r.State)
		}
		// It moved bytes: its line names the transport, as a done one's does.
		if !strings.Contains(r.Sub, "QUIC") && !strings.Contains(r.Sub, "TCP") {
			t.Errorf("B's failed row's line %q does not name its transport", r.Sub)
		}
	})

	// B, the sender, is killed mid-send (a crash) and started again on the
	// same config while it cannot reach A: its new window shows the send
	// as Ferry's closing left it, waiting for A; once B hears A again, the
	// same delivery goes on by itself (the app's kept sends), A taking it
	// without asking again.
	t.Run("sender killed, then started again", func(t *testing.T) {
		// Started for the steps after this one too (top's cleanup stops them).
		if !A.running() {
			A = d.startIn(top, nsA, bin, root, "Ferry A", notIsolated)
			accepted = 0
		}
		// quit.bin, left waiting for A in the step before, goes on by itself.
		wait(t, "quit.bin at A", func() bool {
			return sameFile(filepath.Join(root, "quit.bin"), filepath.Join(A.downloads, "quit.bin"))
		})
		crash := randomFile(t, root, "crash.bin", 24_000_000)
		send(t, crash)
		row(t, "crash.bin under way", func(r ui.DescribedRow) bool { return strings.HasSuffix(r.Title, "crash.bin") && under(0.9)(r) })
		// Killed once A holds a good part of it (held: at least that much).
		var held float64
		wait(t, "a third of crash.bin at A", func() bool {
			rows := A.describe(t).Transfers
			if len(rows) == 0 || !strings.HasSuffix(rows[0].Title, "crash.bin") || !strings.HasPrefix(rows[0].State, "Receiving") {
				return false
			}
			held = rows[0].Bar
			return held > 0.3
		})
		if err := B.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-B.done
		// A cannot be reached while B starts again (its link drops all,
		// IPv6 link-local too): the row is seen waiting.
		block := func(rules string) {
			t.Helper()
			cmd := exec.Command("ip", "netns", "exec", nsB, "nft", "-f", "-")
			cmd.Stdin = strings.NewReader(rules)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("nft %q: %v\n%s", rules, err, out)
			}
		}
		block(`table inet ferry_block {
			chain in { type filter hook input priority 0; iifname "lan0" drop; }
			chain out { type filter hook output priority 0; oifname "lan0" drop; }
		}`)
		t.Cleanup(func() {
			exec.Command("ip", "netns", "exec", nsB, "nft", "delete", "table", "inet", "ferry_block").Run()
		})
		// What the killed B's window showed last is no longer true.
		os.Remove(B.ui)
		os.Remove(B.status)
		B = d.startIn(top, nsB, bin, root, "Ferry B", append(notIsolated, "FERRY_SMOKE_RETRY_FOR=20s"))
		B.waitStatus(t)
		winB = d.window(t, "Ferry B")
		d.xdotool(t, "windowmove", "--sync", winB, "0", "0")
		d.xdotool(t, "windowsize", "--sync", winB, "980", "640")
		d.drawn(t, winB)
		r := row(t, "crash.bin interrupted, with Retry and Cancel", func(r ui.DescribedRow) bool {
			_, retry := r.Buttons["Retry"]
			_, cancel := r.Buttons["Cancel"]
			return strings.HasSuffix(r.Title, "crash.bin") && strings.HasPrefix(r.State, "Interrupted") && retry && cancel
		})
		if want := "Interrupted: Ferry was closed while sending. It sends the rest when Ferry A is back."; r.State != want {
			t.Errorf("B's row says %q after its restart, want %q", r.State, want)
		}
		if rows := B.describe(t).Transfers; len(rows) != 1 {
			t.Errorf("B's new window shows %d rows, want crash.bin's only: %+v", len(rows), rows)
		}
		d.screenshot(t, winB, "slow-sender-killed.png")
		sentBefore := txBytes(t, nsB)
		block("delete table inet ferry_block")
		wait(t, "crash.bin at A", func() bool { return sameFile(crash, filepath.Join(A.downloads, "crash.bin")) })
		notAskedAgain(t)
		r = row(t, "crash.bin sent", func(r ui.DescribedRow) bool { return r.State == "Sent 1 file" })
		if !strings.HasSuffix(r.Title, "crash.bin") {
			t.Errorf("B's newest row is %q, want crash.bin's", r.Title)
		}
		if fileExists(filepath.Join(A.downloads, "crash (1).bin")) {
			t.Error("A has a second copy of crash.bin")
		}
		d.screenshot(t, winB, "slow-sender-back.png")
		// Only what A lacked travelled: at most the rest and the packets'
		// headers (under 8% here; all of it again is over 24 MB).
		sent, most := txBytes(t, nsB)-sentBefore, int64((1-held)*24_000_000*1.08)
		t.Logf("B sent %d bytes on its link after its restart; A held %.0f%% of crash.bin's 24000000", sent, 100*held)
		if sent > most {
			t.Errorf("B sent %d bytes after its restart, over the %d the rest takes: A's part was sent again", sent, most)
		}
	})

	// A UI audit: a receive whose sender quit mid-way waits to resume, and
	// only Settings could give it up. A's row offers Discard, which asks
	// first and then deletes the partial files.
	t.Run("receiver quits and is back, then the sender quits", func(t *testing.T) {
		if !A.running() {
			A = d.startIn(t, nsA, bin, root, "Ferry A", notIsolated)
			accepted = 0
		}
		// A's user quits mid-send: B's row says Ferry was closed there,
		// and B's device list does not show Ferry A online beside it (a
		// UI audit: it did for a second, the goodbye's grace; a probed
		// device for its TTL).
		closed := randomFile(t, root, "closed.bin", 24_000_000)
		send(t, closed)
		row(t, "closed.bin under way", under(0.5))
		if err := A.stop(); err != nil {
			t.Errorf("A: %v", err)
		}
		row(t, "Ferry was closed there", func(r ui.DescribedRow) bool {
			return r.State == "Ferry was closed on Ferry A: waiting for it to be opened again…"
		})
		closedAt := time.Now()
		wait(t, "Ferry A offline in B's list", func() bool {
			for _, dv := range B.describe(t).Devices {
				if dv.Title == "Ferry A" && !strings.HasPrefix(dv.Sub, "Offline") {
					return false
				}
			}
			return true
		})
		t.Logf("Ferry A offline in B's list %v after the row said its Ferry was closed", time.Since(closedAt).Round(time.Millisecond))
		d.screenshot(t, winB, "slow-closed-offline.png")
		// Opened again: listed again, and the send goes on by itself.
		A = d.startIn(t, nsA, bin, root, "Ferry A", notIsolated)
		accepted = 0
		wait(t, "closed.bin at A", func() bool { return sameFile(closed, filepath.Join(A.downloads, "closed.bin")) })

		// B is killed mid-send (a crash, a laptop that went to sleep): A's
		// row waits to resume, with Discard.
		winA := d.window(t, "Ferry A")
		d.xdotool(t, "windowmove", "--sync", winA, "1000", "0")
		// rowA waits until A's newest row matches cond and returns it (as
		// row does B's: B's window is gone once B is killed).
		rowA := func(t *testing.T, what string, cond func(ui.DescribedRow) bool) ui.DescribedRow {
			t.Helper()
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				rows := A.describe(t).Transfers
				if len(rows) > 0 && cond(rows[0]) {
					return rows[0]
				}
				if time.Now().After(deadline) {
					d.screenshot(t, winA, "slow-failed-A.png")
					data, _ := json.MarshalIndent(rows, "", "  ")
					t.Fatalf("timed out waiting for A's newest row: %s; A shows %s", what, data)
				}
			}
		}
		left := randomFile(t, root, "left.bin", 24_000_000)
		send(t, left)
		rowA(t, "left.bin arriving", func(r ui.DescribedRow) bool {
			return strings.HasSuffix(r.Title, "left.bin") && strings.HasPrefix(r.State, "Receiving") && r.Bar > 0.1
		})
		// A's tray lists it under way, its percentage written as the row's
		// bar writes it ("13%"; a UI audit: the tray said "13 %").
		var line string
		testutil.WaitFor(t, "left.bin under way in A's tray", func() bool {
			for _, l := range d.trayMenu(t, A).labels() {
				if strings.HasPrefix(l, "From Ferry B: left.bin · ") {
					line = l
				}
			}
			return strings.HasSuffix(line, "%") && !strings.HasSuffix(line, " %")
		})
		t.Logf("A's tray: %q", line)
		if err := B.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-B.done
		r := rowA(t, "interrupted, with Discard", func(r ui.DescribedRow) bool {
			_, ok := r.Buttons["Discard"]
			return strings.HasPrefix(r.State, "Interrupted") && ok
		})
		partials := func() []string {
			m, _ := filepath.Glob(filepath.Join(A.downloads, "*.partial"))
			return m
		}
		if len(partials()) == 0 {
			t.Errorf("A keeps no partial file of left.bin")
		}
		d.screenshot(t, winA, "slow-interrupted.png")
		at := r.Buttons["Discard"]
		d.xdotool(t, "mousemove", "--window", winA, strconv.Itoa(at[0]), strconv.Itoa(at[1]))
		d.xdotool(t, "click", "1")
		testutil.WaitFor(t, "A's question", func() bool { return A.describe(t).Dialogs > 0 })
		d.screenshot(t, winA, "slow-discard-asked.png")
		d.keys(t, winA, "Tab", "space") // from Keep to Discard
		rowA(t, "discarded", func(r ui.DescribedRow) bool { return r.State == "Discarded by you: its partial files were deleted" })
		if p := partials(); len(p) != 0 {
			t.Errorf("A still keeps %v", p)
		}
		d.screenshot(t, winA, "slow-discarded.png")
	})

	if B.running() {
		if err := B.stop(); err != nil {
			t.Errorf("B: %v", err)
		}
	}
}

// slowLink makes two network namespaces joined by a veth pair (A 10.78.0.1,
// B 10.78.0.2), each end held to 20 Mbit/s by a token bucket, and removes
// them when the test ends.
func slowLink(t *testing.T) (string, string) {
	t.Helper()
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	a, b := fmt.Sprintf("ferry-slow-a-%d", os.Getpid()), fmt.Sprintf("ferry-slow-b-%d", os.Getpid())
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	for _, ns := range []string{a, b} {
		run("ip", "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		run("ip", "-n", ns, "link", "set", "lo", "up")
	}
	run("ip", "-n", a, "link", "add", "lan0", "type", "veth", "peer", "name", "lan0", "netns", b)
	for ns, ip := range map[string]string{a: "10.78.0.1/24", b: "10.78.0.2/24"} {
		run("ip", "-n", ns, "addr", "add", ip, "dev", "lan0")
		run("ip", "-n", ns, "link", "set", "lan0", "up")
		run("tc", "-n", ns, "qdisc", "add", "dev", "lan0", "root", "tbf", "rate", "20mbit", "burst", "32k", "latency", "50ms")
	}
	return a, b
}

// txBytes is how many bytes namespace ns sent on its link (lan0).
func txBytes(t *testing.T, ns string) int64 {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/sys/class/net/lan0/statistics/tx_bytes").Output()
	if err != nil {
		t.Fatalf("%s's bytes sent: %v", ns, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("%s's bytes sent: %v", ns, err)
	}
	return n
}

// describe is what p's window shows now (FERRY_SMOKE_DESCRIBE).
func (p *ferry) describe(t *testing.T) ui.Described {
	t.Helper()
	var d ui.Described
	data, err := os.ReadFile(p.ui)
	if err == nil {
		err = json.Unmarshal(data, &d)
	}
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("%s's window: %v", p.name, err)
	}
	return d
}

// wentAway reports whether a row's state says that Ferry A went away (by
// its name, or by its name and code once it is no longer in the list).
func wentAway(state string) bool {
	return strings.HasPrefix(state, "Ferry A went away.") ||
		strings.HasPrefix(state, "Ferry A · ") && strings.Contains(state, " went away.")
}
