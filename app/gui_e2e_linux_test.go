package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/ferrydrop/ferry/internal/testutil"
	"github.com/ferrydrop/ferry/ui"
)

// TestGUIEndToEnd drives the real app as a person does, on an X server of
// its own (Xvfb) with a D-Bus session of its own:
//
//   - a file dragged from an XDND source (scripts/e2e/x11.py) and dropped
//     on a device row is offered to the other instance, whose prompt is
//     accepted with the keyboard (Tab, Return); the bytes arrive intact;
//   - Escape declines the next offer: both sides record it as declined
//     (and who declined), with the offered file counted;
//   - the tray is read and clicked over D-Bus through a
//     StatusNotifierWatcher this test plays (com.canonical.dbusmenu): it is
//     titled "Ferry", keeps Quit after its menu changed, "Open Ferry" brings
//     a hidden window back and Quit ends the process;
//   - Pair… from a device's Send… menu, chosen with the keyboard, shows
//     the same verification code on both screens (photographed); both
//     users confirm with the keyboard and both trust stores say paired;
//   - Forget in Settings' Devices page: the device's row says "new" at
//     once and Pair… from its Send… menu pairs the two again;
//   - a second launch with a file hands it to the running instance, which
//     shows the device chooser (Return sends), and exits 0;
//   - with no tray host, --minimized still shows the window, and closing
//     it says once that Ferry will quit, then quits: no process is left;
//   - an offer answered in the window takes its "Incoming files"
//     notification down (CloseNotification);
//   - the tray host restarts (after notification buttons were pressed) and
//     Ferry's icon registers with the new one;
//   - SIGTERM (a logout) quits as Quit does: a receive link's half-done
//     browser upload is removed and the process exits 0;
//   - the desktop turns light while Ferry runs (the portal's color-scheme):
//     the window follows, online device rows are not drawn dark
//     (e2e-light.png, e2e-light-receiver.png).
//
// The steps that need a slow link are TestGUISlowLink's.
//
// Notifications go to a notification server this test plays; all must
// come from "Ferry". Screenshots land in $FERRY_E2E_OUT (else a temp dir,
// named in the log). It skips when Xvfb, dbus-daemon, xdotool or
// python3-xlib are missing. About 70 s with a warm build cache.
func TestGUIEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("GUI end-to-end test skipped in -short mode")
	}
	d := newDesktop(t)
	bin := buildFerry(t)
	root := t.TempDir()
	A := d.start(t, bin, root, "Ferry A", nil)
	D := d.start(t, bin, root, "Ferry D", nil)
	A.waitStatus(t)
	D.waitStatus(t)
	B := d.start(t, bin, root, "Ferry B", []string{"FERRY_SMOKE_ADD=127.0.0.1:" + A.port(t) + ",127.0.0.1:" + D.port(t)})
	B.waitStatus(t)
	testutil.WaitFor(t, "B to list A and D", func() bool { return fileExists(B.status + ".added") })
	winA, winB, winD := d.window(t, "Ferry A"), d.window(t, "Ferry B"), d.window(t, "Ferry D")
	d.xdotool(t, "windowmove", "--sync", winB, "0", "0")
	d.xdotool(t, "windowsize", "--sync", winB, "980", "640")
	d.xdotool(t, "windowmove", "--sync", winA, "1000", "0")
	d.xdotool(t, "windowmove", "--sync", winD, "1000", "660") // off B, whose pixels the test reads
	baseA, baseB := d.drawn(t, winA), d.drawn(t, winB)
	// promptShown waits for A's prompt: the notification comes first, then
	// the dialog dims the window.
	promptShown := func(t *testing.T, n int) {
		t.Helper()
		d.waitNotification(t, "Incoming files", n)
		d.waitFor(t, "A's prompt", func() bool { return d.dimmed(t, winA, baseA) })
	}

	t.Run("tray", func(t *testing.T) {
		m := d.trayMenu(t, B)
		if got := m.labels(); strings.Join(got, "|") != "Open Ferry|Receiving|Share via link…|Receive via link…|Recent transfers|Quit" {
			t.Fatalf("tray menu %q", got)
		}
		// The item registers before its title is set (an empty one at
		// first): a tray host shows it once it is.
		testutil.WaitFor(t, `B's tray title "Ferry"`, func() bool { return d.trayTitle(t, B) == "Ferry" })
	})

	// The tabs (Nearby, History, Settings) and Settings' own (General,
	// Devices), in window coordinates.
	const mainTabsY, nearbyTabX, settingsTabsY, settingsDevicesX = 50, 50, 97, 130
	// The first device row of B's list (the only one: A), in screen
	// coordinates: below the menu bar, tabs, status line and list header.
	const rowX, rowY = 150, 230
	// The Send… button of a row, and the distance between rows.
	const sendX, rowStep = 387, 74
	file1 := randomFile(t, root, "holiday photo.jpg", 300_000)
	t.Run("drop and accept with the keyboard", func(t *testing.T) {
		d.x11(t, "drop", winB, strconv.Itoa(rowX), strconv.Itoa(rowY), file1)
		promptShown(t, 1)
		d.screenshot(t, winA, "e2e-prompt.png")
		d.keys(t, winA, "Tab", "Return")
		got := filepath.Join(A.downloads, filepath.Base(file1))
		testutil.WaitFor(t, "the file at A", func() bool { return sameFile(file1, got) })
		// Answered in the window: its notification goes (issue 26, finding 6).
		d.waitClosed(t, d.latest(t, A, "Incoming files", 1))
		testutil.WaitFor(t, "B's history", func() bool { return B.lastHistory(t).State == ui.StateDone })
		d.waitNotification(t, "Files received", 1)
		d.waitNotification(t, "Files sent", 1)
		d.screenshot(t, winB, "e2e-sent.png")
	})

	// The same file again is a new delivery (issue 26, findings 1 and 5):
	// a second copy at A (never over the first), and two History entries on
	// each side, both done, each naming the file.
	t.Run("same file twice", func(t *testing.T) {
		d.x11(t, "drop", winB, strconv.Itoa(rowX), strconv.Itoa(rowY), file1)
		promptShown(t, 2)
		d.keys(t, winA, "Tab", "Return")
		second := filepath.Join(A.downloads, "holiday photo (1).jpg")
		testutil.WaitFor(t, "the second copy at A", func() bool { return sameFile(file1, second) })
		done := func(p *ferry) []ui.HistoryEntry {
			var out []ui.HistoryEntry
			for _, e := range p.history(t) {
				if e.State == ui.StateDone && slices.Contains(e.Names, "holiday photo.jpg") {
					out = append(out, e)
				}
			}
			return out
		}
		for _, p := range []*ferry{A, B} {
			testutil.WaitFor(t, p.name+"'s two entries", func() bool { return len(done(p)) == 2 })
			if h := done(p); h[0].Delivery == "" || h[0].Delivery == h[1].Delivery {
				t.Errorf("%s: deliveries %q and %q, want two", p.name, h[0].Delivery, h[1].Delivery)
			}
		}
		d.waitNotification(t, "Files sent", 2) // the UI has the result too
		// Painted: the newer row's bar (top) as full as the older one's
		// (a 300 kB send ends before any progress is drawn).
		d.waitFor(t, "B's newer row drawn done", func() bool {
			top, older := d.regionBrightness(t, winB, "400x16+500+218"), d.regionBrightness(t, winB, "400x16+500+506")
			return top > 0.9*older && top < 1.1*older
		})
		d.screenshot(t, winB, "e2e-same-file-twice.png")
	})

	file3 := randomFile(t, root, "report.pdf", 50_000)
	t.Run("second launch hands over", func(t *testing.T) {
		cmd := exec.Command(bin, "--config", B.config, file3)
		cmd.Env = d.env(root)
		out, err := runWithin(cmd, 20*time.Second)
		if err != nil {
			t.Fatalf("second launch: %v\n%s", err, out)
		}
		// The send sheet opens in the running B with A's check focused:
		// Space checks it, Return sends.
		d.waitFor(t, "the chooser", func() bool { return d.dimmed(t, winB, baseB) })
		d.screenshot(t, winB, "e2e-chooser.png")
		d.keys(t, winB, "space", "Return")
		promptShown(t, 3)
		d.keys(t, winA, "Tab", "Return")
		got := filepath.Join(A.downloads, filepath.Base(file3))
		testutil.WaitFor(t, "the handed-over file at A", func() bool { return sameFile(file3, got) })
	})

	// Text and three files to two devices, each on its own: the files are
	// picked in the portal's dialog (this test plays the portal), both
	// devices are checked in the send sheet with the keyboard; A's "Files
	// received" notification shows the
	// folder (xdg-open, where no file manager answers FileManager1).
	// Both receivers accept in the notification.
	t.Run("text and three files to two devices", func(t *testing.T) {
		pics := []string{randomFile(t, root, "pic 1.jpg", 20_000), randomFile(t, root, "pic 2.jpg", 30_000), randomFile(t, root, "plan.pdf", 40_000)}
		received := 0 // A's "Files received" so far
		for _, x := range d.notes() {
			if x.summary == "Files received" && d.pidOf(x.sender) == A.cmd.Process.Pid {
				received++
			}
		}
		d.mu.Lock()
		d.chosen = pics
		d.mu.Unlock()
		d.keys(t, winB, "ctrl+o")
		d.waitFor(t, "the send sheet", func() bool { return d.dimmed(t, winB, baseB) })
		d.keys(t, winB, "space", "Tab", "space", "Return")
		// Both accept in the notification (the keyboard's Accept is
		// covered above): no window focus to race with under load.
		acceptBoth := func(summary string, a, dn int) {
			t.Helper()
			d.press(t, d.latest(t, A, summary, a), "accept")
			d.press(t, d.latest(t, D, summary, dn), "accept")
		}
		acceptBoth("Incoming files", 4, 1)
		for _, p := range []*ferry{A, D} {
			for _, f := range pics {
				got := filepath.Join(p.downloads, filepath.Base(f))
				testutil.WaitFor(t, p.name+" to have "+filepath.Base(f), func() bool { return sameFile(f, got) })
			}
		}
		d.screenshot(t, winB, "e2e-two-devices.png")

		text := "Tickets: https://example.org/t/42"
		d.keys(t, winB, "ctrl+t")
		d.waitFor(t, "the text dialog", func() bool { return d.dimmed(t, winB, baseB) })
		d.xdotool(t, "type", "--delay", "20", text)
		d.keys(t, winB, "Tab", "Tab", "Return") // past Cancel to "Choose devices…"
		d.keys(t, winB, "space", "Tab", "space", "Return")
		acceptBoth("Incoming text", 1, 1) // a text alone: "Incoming text", as its prompt
		for _, p := range []*ferry{A, D} {
			testutil.WaitFor(t, p.name+"'s text in its history", func() bool { return p.lastHistory(t).Text == text })
		}
		if f := filepath.Join(A.downloads, "Tickets"); fileExists(f) {
			t.Error("the text was written to disk")
		}
		d.screenshot(t, winA, "e2e-text.png")

		// The files' notification at A: its button shows them in their
		// folder. Transfers from B that followed each other closely are
		// summed up in one notification once B is quiet (10 s), which
		// shows the latest one's folder.
		got := d.latest(t, A, "Files received", received+1)
		d.press(t, got, "default")
		testutil.WaitFor(t, "xdg-open on A's download folder", func() bool {
			b, _ := os.ReadFile(d.opened)
			return strings.Contains(string(b), A.downloads+"\n")
		})
	})

	// Pair… from the Send… menu of D's row (the second; Up picks the
	// menu's last item, Return takes it): both windows show the code, each
	// user says it matches with the keyboard (Tab from Codes differ to
	// Codes match, Return), and each device then trusts the other.
	t.Run("pair with the keyboard", func(t *testing.T) {
		baseD := d.drawn(t, winD)
		d.xdotool(t, "mousemove", "--window", winB, strconv.Itoa(sendX), strconv.Itoa(rowY+rowStep))
		d.xdotool(t, "click", "1")
		d.keys(t, winB, "Up", "Return")
		d.waitNotification(t, "Pairing request", 1)
		d.waitFor(t, "D's pairing dialog", func() bool { return d.dimmed(t, winD, baseD) })
		d.screenshot(t, winB, "e2e-pair-sender.png")
		d.screenshot(t, winD, "e2e-pair-receiver.png")
		if paired(t, B, D) || paired(t, D, B) {
			t.Fatal("paired before anyone compared the codes")
		}
		d.keys(t, winD, "Tab", "Return")
		d.keys(t, winB, "Tab", "Return")
		testutil.WaitFor(t, "B and D to trust each other", func() bool { return paired(t, B, D) && paired(t, D, B) })
		d.screenshot(t, winB, "e2e-paired.png")
		d.keys(t, winB, "Escape")
		d.keys(t, winD, "Escape")
	})

	// Forget D in Settings' Devices page, then Pair… at once: D's row no
	// longer says paired and its menu offers Pair… again (issue 26,
	// finding 6), and pairing works a second time.
	t.Run("forget then pair again", func(t *testing.T) {
		// click clicks at a place B's window reports (ui.Described).
		click := func(at [2]int) {
			t.Helper()
			d.xdotool(t, "mousemove", "--window", winB, strconv.Itoa(at[0]), strconv.Itoa(at[1]))
			d.xdotool(t, "click", "1")
		}
		row := func(rows []ui.DescribedRow, name string) (ui.DescribedRow, bool) {
			for _, r := range rows {
				if r.Title == name {
					return r, true
				}
			}
			return ui.DescribedRow{}, false
		}
		d.keys(t, winB, "ctrl+comma")
		d.waitFor(t, "B's Settings", func() bool { return B.describe(t).Tab == "Settings" })
		click([2]int{settingsDevicesX, settingsTabsY})
		var known ui.DescribedRow
		d.waitFor(t, "Ferry D on B's Devices page", func() bool {
			var ok bool
			ds := B.describe(t)
			known, ok = row(ds.Known, "Ferry D")
			return ds.SettingsTab == "Devices" && ok && known.Buttons["Forget…"][1] > 0
		})
		if !strings.HasPrefix(known.State, "Paired") {
			t.Errorf("Ferry D on the Devices page says %q, want paired", known.State)
		}
		click(known.Buttons["Forget…"])
		d.waitFor(t, "the Forget question", func() bool { return B.describe(t).Dialogs > 0 })
		d.screenshot(t, winB, "e2e-forget.png")
		d.keys(t, winB, "Tab", "Return") // from Keep to Forget
		testutil.WaitFor(t, "B to forget D", func() bool { return !paired(t, B, D) })
		click([2]int{nearbyTabX, mainTabsY})
		// At once, not after the next announcement: D's row is not paired.
		var dev ui.DescribedRow
		testutil.WaitForWithin(t, "D's row not paired", 2*time.Second, func() bool {
			var ok bool
			ds := B.describe(t)
			dev, ok = row(ds.Devices, "Ferry D")
			// Its Send… button laid out too (a row just made is listed
			// without it until a frame drew it), as it is clicked next.
			return ds.Tab == "Nearby" && ok && !strings.Contains(dev.Sub, "paired") && dev.Buttons["Send…"][1] > 0
		})
		d.screenshot(t, winB, "e2e-forgotten.png")
		// Pair… is the last item of its Send… menu again (Up, Return).
		baseD := d.drawn(t, winD)
		click(dev.Buttons["Send…"])
		d.keys(t, winB, "Up", "Return")
		d.waitNotification(t, "Pairing request", 2)
		d.waitFor(t, "D's pairing dialog", func() bool { return d.dimmed(t, winD, baseD) })
		d.screenshot(t, winB, "e2e-pair-again.png")
		d.keys(t, winD, "Tab", "Return")
		d.keys(t, winB, "Tab", "Return")
		testutil.WaitFor(t, "B and D to trust each other again", func() bool { return paired(t, B, D) && paired(t, D, B) })
		testutil.WaitFor(t, "D's row paired", func() bool {
			r, _ := row(B.describe(t).Devices, "Ferry D")
			return strings.Contains(r.Sub, "paired")
		})
		d.keys(t, winB, "Escape")
		d.keys(t, winD, "Escape")
	})

	// Declined last among the offers: a declined device is muted for a
	// while (issue #14), so nothing after this offers B's files to A again.
	file2 := randomFile(t, root, "notes.txt", 1234)
	t.Run("escape declines", func(t *testing.T) {
		d.x11(t, "drop", winB, strconv.Itoa(rowX), strconv.Itoa(rowY), file2)
		promptShown(t, 6)
		d.keys(t, winA, "Escape")
		testutil.WaitFor(t, "A's history", func() bool { return A.lastHistory(t).State == ui.StateDeclined })
		testutil.WaitFor(t, "B's history", func() bool { return B.lastHistory(t).State == ui.StateDeclined })
		if e := A.lastHistory(t); e.Code != ui.CodeDeclined || e.ByPeer || e.Files != 1 || e.Bytes != 1234 {
			t.Errorf("A's entry %+v, want declined by A with the offered file", e)
		}
		if e := B.lastHistory(t); e.Code != ui.CodeDeclined || !e.ByPeer {
			t.Errorf("B's entry %+v, want declined by the peer", e)
		}
		d.screenshot(t, winB, "e2e-declined.png")
	})

	t.Run("tray after changes", func(t *testing.T) {
		// The history is written before the UI hears of the result: on a
		// busy machine the menu follows a moment later.
		var labels []string
		var recent string
		testutil.WaitFor(t, "the decline in B's tray menu", func() bool {
			m := d.trayMenu(t, B)
			labels = m.labels()
			recent = strings.Join(m.find("Recent transfers").labels(), "|")
			return strings.Contains(recent, "Declined by Ferry A: ")
		})
		if len(labels) == 0 || labels[len(labels)-1] != "Quit" {
			t.Fatalf("tray menu %q lost Quit", labels)
		}
		// A declined offer names what was offered, never "0 files".
		if strings.Contains(recent, "0 files") || !strings.Contains(recent, "Sent 3 files to Ferry A") {
			t.Fatalf("recent transfers %q", recent)
		}
	})

	// The tray host restarts (the panel crashed, or the user restarted
	// it): Ferry registers its icon with the new one. By now notification
	// buttons were pressed, whose signals ended fyne.io/systray's own
	// re-registration loop (issue 26, finding 6).
	t.Run("tray host restart", func(t *testing.T) {
		d.stopWatcher(t)
		d.mu.Lock()
		clear(d.items)
		d.mu.Unlock()
		d.serveWatcher(t)
		testutil.WaitFor(t, `B's tray title "Ferry" with the new tray host`, func() bool { return d.trayTitle(t, B) == "Ferry" })
	})

	// The desktop turns light while Ferry runs (the portal's color-scheme
	// changes): online device rows take the light colours at once, never
	// drawn dark as if disabled (issue 26, finding 8).
	t.Run("light theme", func(t *testing.T) {
		d.setScheme(t, 2)
		d.waitFor(t, "B's light menu bar", func() bool { return d.brightness(t, winB) > 180 })
		d.screenshot(t, winB, "e2e-light.png")
		d.screenshot(t, winA, "e2e-light-receiver.png")
		// B's first device row (A, online): its background and text.
		if got := d.regionBrightness(t, winB, "180x40+100+210"); got < 128 {
			t.Errorf("B's online device row in the light theme: mean brightness %.0f, drawn dark", got)
		}
		// Dark again, as the steps below measure their windows in it.
		d.setScheme(t, 1)
		d.waitFor(t, "B's dark menu bar", func() bool { return d.brightness(t, winB) < 100 })
	})

	t.Run("close hides to the tray, Quit ends it", func(t *testing.T) {
		d.x11(t, "close", winB)
		d.waitFor(t, "B's window to hide", func() bool { return !d.visible(t, "Ferry B") })
		d.waitNotification(t, "Ferry is still receiving", 1)
		if !B.running() {
			t.Fatal("closing with a tray ended the process")
		}
		d.trayMenu(t, B).find("Open Ferry").click(t)
		d.waitFor(t, "B's window back", func() bool { return d.visible(t, "Ferry B") })
		d.trayMenu(t, B).find("Quit").click(t)
		if err := B.wait(20 * time.Second); err != nil {
			t.Fatalf("after Quit: %v", err)
		}
	})

	t.Run("no tray host", func(t *testing.T) {
		d.stopWatcher(t)
		C := d.start(t, bin, root, "Ferry C", nil, "--minimized")
		// Minimised only where a tray can bring it back: here it shows.
		d.waitFor(t, "C's window", func() bool { return d.visible(t, "Ferry C") })
		winC := d.window(t, "Ferry C")
		baseC := d.drawn(t, winC)
		d.x11(t, "close", winC)
		d.waitFor(t, "the quit question", func() bool { return d.dimmed(t, winC, baseC) })
		d.screenshot(t, winC, "e2e-no-tray.png")
		if !C.running() {
			t.Fatal("C quit before the user answered")
		}
		d.keys(t, winC, "Return") // "Quit Ferry" has the focus
		if err := C.wait(20 * time.Second); err != nil {
			t.Fatalf("after Quit Ferry: %v", err)
		}
		// Told once: the next close quits at once.
		C = d.start(t, bin, root, "Ferry C", nil)
		d.waitFor(t, "C's window again", func() bool { return d.visible(t, "Ferry C") })
		d.x11(t, "close", d.window(t, "Ferry C"))
		if err := C.wait(20 * time.Second); err != nil {
			t.Fatalf("second close without tray: %v", err)
		}
	})

	t.Run("a signal quits as Quit does", func(t *testing.T) {
		// A logout's SIGTERM (or kill, or Ctrl-C in a terminal) ends Ferry
		// as Quit does (Fyne's driver quits on SIGINT and SIGTERM): its
		// receive link ends and removes the upload a browser left half
		// done, and it exits 0.
		E := d.start(t, bin, root, "Ferry E", []string{"FERRY_SMOKE_LINK=receive"})
		testutil.WaitFor(t, "E's link", func() bool { return fileExists(E.status + ".link") })
		link, err := os.ReadFile(E.status + ".link")
		if err != nil {
			t.Fatal(err)
		}
		testutil.TusUploadMeta(t, string(link)+"tus/", "half.bin", 1000, make([]byte, 400), nil)
		partial := filepath.Join(E.downloads, "half.bin.partial")
		if !fileExists(partial) {
			t.Fatalf("no partial file of the browser's upload: %v", filepath.Join(E.downloads, "*"))
		}
		E.cmd.Process.Signal(syscall.SIGTERM)
		if err := E.wait(20 * time.Second); err != nil {
			t.Fatalf("after SIGTERM: %v", err)
		}
		if fileExists(partial) {
			t.Fatal("the browser's unfinished upload is left in the download folder")
		}
	})

	t.Run("notifications say Ferry", func(t *testing.T) {
		for _, n := range d.notes() {
			if n.app != "Ferry" {
				t.Errorf("notification %q from %q", n.summary, n.app)
			}
		}
	})

	if err := A.stop(); err != nil {
		t.Errorf("A: %v", err)
	}
	if err := D.stop(); err != nil {
		t.Errorf("D: %v", err)
	}
}

// xDesktop is an X server and a D-Bus session bus, with this test playing
// the notification server and the tray host.
type xDesktop struct {
	path    string // PATH for Ferry, with the fake xdg-open first
	display string
	bus     string
	conn    *dbus.Conn
	python  string
	out     string

	opened string // the fake xdg-open's log: one argument per line

	mu     sync.Mutex // guards the fields below
	seen   []notification
	closed []uint32          // notifications Ferry closed (CloseNotification)
	items  map[string]string // bus name of a tray item -> its object path
	chosen []string          // what the portal's file dialog "chooses"
	scheme uint32            // the portal's color-scheme: 1 dark, 2 light
}

type notification struct {
	id                 uint32
	sender             string // the D-Bus name of the process that sent it
	app, summary, body string
	actions            []string // key, label, key, label...
}

func newDesktop(t *testing.T) *xDesktop {
	t.Helper()
	var missing []string
	for _, tool := range []string{"Xvfb", "dbus-daemon", "xdotool", "import"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	python := "/usr/bin/python3" // Debian's, where apt puts python3-xlib
	if _, err := os.Stat(python); err != nil {
		python = "python3"
	}
	if err := exec.Command(python, "-c", "import Xlib").Run(); err != nil {
		missing = append(missing, "python3-xlib")
	}
	if len(missing) > 0 {
		t.Skipf("GUI end-to-end test needs %v (apt-get install xvfb dbus-daemon xdotool imagemagick python3-xlib)", missing)
	}
	d := &xDesktop{python: python, items: map[string]string{}, out: os.Getenv("FERRY_E2E_OUT"), scheme: 1}
	if d.out == "" {
		d.out = t.TempDir()
	}
	if err := os.MkdirAll(d.out, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", d.out)
	d.display = ":" + startAndRead(t, "Xvfb", "-displayfd", "3", "-screen", "0", "2000x1200x24", "-nolisten", "tcp")
	// The bus on a path, not an abstract socket: those belong to a network
	// namespace, and the slow-link test runs Ferry in namespaces of its own.
	d.bus = startAndRead(t, "dbus-daemon", "--session", "--nofork", "--print-address=3", "--address=unix:path="+filepath.Join(t.TempDir(), "bus"))
	conn, err := dbus.Connect(d.bus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	d.conn = conn
	d.serveNotifications(t)
	d.serveWatcher(t)
	d.servePortal(t)
	// xdg-open records what Ferry opens (no file manager runs here).
	bin := t.TempDir()
	d.opened = filepath.Join(bin, "opened")
	script := "#!/bin/sh\nprintf '%s\\n' \"$1\" >> " + d.opened + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d.path = bin + ":" + os.Getenv("PATH")
	return d
}

// startAndRead starts a daemon that writes one line (its display or
// address) to fd 3 once it is ready, and returns that line.
func startAndRead(t *testing.T, name string, args ...string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(r).ReadString('\n')
	r.Close()
	if err != nil {
		t.Fatalf("%s did not start: %v", name, err)
	}
	return strings.TrimSpace(line)
}

// notifyServer is org.freedesktop.Notifications, recording what it is sent.
type notifyServer struct{ d *xDesktop }

func (n notifyServer) Notify(sender dbus.Sender, app string, _ uint32, _ string, summary, body string, actions []string, _ map[string]dbus.Variant, _ int32) (uint32, *dbus.Error) {
	n.d.mu.Lock()
	defer n.d.mu.Unlock()
	id := uint32(len(n.d.seen) + 1)
	n.d.seen = append(n.d.seen, notification{id: id, sender: string(sender), app: app, summary: summary, body: body, actions: actions})
	return id, nil
}

// CloseNotification records that Ferry took a notification down.
func (n notifyServer) CloseNotification(id uint32) *dbus.Error {
	n.d.mu.Lock()
	defer n.d.mu.Unlock()
	n.d.closed = append(n.d.closed, id)
	return nil
}

// waitClosed waits until Ferry closed notification x.
func (d *xDesktop) waitClosed(t *testing.T, x notification) {
	t.Helper()
	testutil.WaitFor(t, fmt.Sprintf("notification %q #%d closed", x.summary, x.id), func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return slices.Contains(d.closed, x.id)
	})
}

// GetCapabilities: this server shows buttons (Accept, Decline, Open).
func (n notifyServer) GetCapabilities() ([]string, *dbus.Error) {
	return []string{"actions", "body"}, nil
}

// press presses the button key on notification x, as the desktop does when
// the user clicks it.
func (d *xDesktop) press(t *testing.T, x notification, key string) {
	t.Helper()
	if !slices.Contains(x.actions, key) {
		t.Fatalf("notification %q has no button %q: %q", x.summary, key, x.actions)
	}
	if err := d.conn.Emit("/org/freedesktop/Notifications", "org.freedesktop.Notifications.ActionInvoked", x.id, key); err != nil {
		t.Fatal(err)
	}
}

// latest waits for the n-th notification titled summary from p and returns it.
func (d *xDesktop) latest(t *testing.T, p *ferry, summary string, n int) notification {
	t.Helper()
	var got notification
	testutil.WaitFor(t, fmt.Sprintf("%s's notification %q #%d", p.name, summary, n), func() bool {
		c := 0
		for _, x := range d.notes() {
			if x.summary == summary && d.pidOf(x.sender) == p.cmd.Process.Pid {
				c++
				got = x
			}
		}
		return c >= n
	})
	return got
}

// pidOf is the process behind a D-Bus name.
func (d *xDesktop) pidOf(name string) int {
	var pid uint32
	if d.conn.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixProcessID", 0, name).Store(&pid) != nil {
		return -1
	}
	return int(pid)
}

// portalServer is org.freedesktop.portal.FileChooser: it "chooses" the files the
// test put in next, as the desktop's dialog would.
type portalServer struct{ d *xDesktop }

func (p portalServer) OpenFile(sender dbus.Sender, _, _ string, opts map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	p.d.mu.Lock()
	files := p.d.chosen
	p.d.mu.Unlock()
	var uris []string
	for _, f := range files {
		uris = append(uris, (&url.URL{Scheme: "file", Path: f}).String())
	}
	token, _ := opts["handle_token"].Value().(string)
	handle := dbus.ObjectPath("/org/freedesktop/portal/desktop/request/" + strings.ReplaceAll(strings.TrimPrefix(string(sender), ":"), ".", "_") + "/" + token)
	go p.d.conn.Emit(handle, "org.freedesktop.portal.Request.Response", uint32(0), map[string]dbus.Variant{"uris": dbus.MakeVariant(uris)})
	return handle, nil
}

// portalSettings is org.freedesktop.portal.Settings: the desktop's colour
// scheme, which Fyne reads at start and follows on SettingChanged.
type portalSettings struct{ d *xDesktop }

func (p portalSettings) ReadOne(namespace, key string) (dbus.Variant, *dbus.Error) {
	if namespace != "org.freedesktop.appearance" || key != "color-scheme" {
		return dbus.Variant{}, dbus.NewError("org.freedesktop.portal.Error.NotFound", []any{"no such setting"})
	}
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	return dbus.MakeVariant(p.d.scheme), nil
}

// setScheme switches the desktop to a colour scheme (1 dark, 2 light), as
// a user does in the desktop's settings while Ferry runs.
func (d *xDesktop) setScheme(t *testing.T, scheme uint32) {
	t.Helper()
	d.mu.Lock()
	d.scheme = scheme
	d.mu.Unlock()
	if err := d.conn.Emit("/org/freedesktop/portal/desktop", "org.freedesktop.portal.Settings.SettingChanged",
		"org.freedesktop.appearance", "color-scheme", dbus.MakeVariant(scheme)); err != nil {
		t.Fatal(err)
	}
}

func (d *xDesktop) servePortal(t *testing.T) {
	t.Helper()
	if err := d.conn.Export(portalServer{d}, "/org/freedesktop/portal/desktop", "org.freedesktop.portal.FileChooser"); err != nil {
		t.Fatal(err)
	}
	if err := d.conn.Export(portalSettings{d}, "/org/freedesktop/portal/desktop", "org.freedesktop.portal.Settings"); err != nil {
		t.Fatal(err)
	}
	if r, err := d.conn.RequestName("org.freedesktop.portal.Desktop", dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("portal name: %v %v", r, err)
	}
}

func (d *xDesktop) serveNotifications(t *testing.T) {
	t.Helper()
	if err := d.conn.Export(notifyServer{d}, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	if r, err := d.conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("notification server name: %v %v", r, err)
	}
}

func (d *xDesktop) notes() []notification {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]notification(nil), d.seen...)
}

// waitNotification waits until n notifications titled summary arrived.
func (d *xDesktop) waitNotification(t *testing.T, summary string, n int) {
	t.Helper()
	testutil.WaitFor(t, fmt.Sprintf("notification %q #%d", summary, n), func() bool {
		c := 0
		for _, x := range d.notes() {
			if x.summary == summary {
				c++
			}
		}
		return c >= n
	})
}

// watcher is org.kde.StatusNotifierWatcher, the tray host's registry.
type watcher struct{ d *xDesktop }

func (w watcher) RegisterStatusNotifierItem(sender dbus.Sender, path string) *dbus.Error {
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	w.d.items[string(sender)] = path
	return nil
}

func (w watcher) RegisterStatusNotifierHost(dbus.Sender, string) *dbus.Error { return nil }

func (d *xDesktop) serveWatcher(t *testing.T) {
	t.Helper()
	if err := d.conn.Export(watcher{d}, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"); err != nil {
		t.Fatal(err)
	}
	if r, err := d.conn.RequestName("org.kde.StatusNotifierWatcher", dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("watcher name: %v %v", r, err)
	}
}

// stopWatcher leaves the desktop without a tray host.
func (d *xDesktop) stopWatcher(t *testing.T) {
	t.Helper()
	if _, err := d.conn.ReleaseName("org.kde.StatusNotifierWatcher"); err != nil {
		t.Fatal(err)
	}
}

// trayItem returns the bus name of p's tray item once it registered.
func (d *xDesktop) trayItem(t *testing.T, p *ferry) string {
	t.Helper()
	var name string
	testutil.WaitFor(t, p.name+"'s tray item", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for n := range d.items {
			var pid uint32
			if d.conn.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixProcessID", 0, n).Store(&pid) == nil && int(pid) == p.cmd.Process.Pid {
				name = n
				return true
			}
		}
		return false
	})
	return name
}

func (d *xDesktop) trayTitle(t *testing.T, p *ferry) string {
	t.Helper()
	v, err := d.conn.Object(d.trayItem(t, p), "/StatusNotifierItem").GetProperty("org.kde.StatusNotifierItem.Title")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := v.Value().(string)
	return s
}

// menuItem is one entry of a dbusmenu layout.
type menuItem struct {
	conn     *dbus.Conn
	dest     string
	id       int32
	label    string
	sep      bool
	children []*menuItem
}

// trayMenu reads p's tray menu as a tray host does.
func (d *xDesktop) trayMenu(t *testing.T, p *ferry) *menuItem {
	t.Helper()
	dest := d.trayItem(t, p)
	var rev uint32
	var layout struct {
		ID       int32
		Props    map[string]dbus.Variant
		Children []dbus.Variant
	}
	err := d.conn.Object(dest, "/StatusNotifierMenu").Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{}).Store(&rev, &layout)
	if err != nil {
		t.Fatal(err)
	}
	m := &menuItem{conn: d.conn, dest: dest, id: layout.ID}
	m.children = parseChildren(d.conn, dest, layout.Children)
	return m
}

func parseChildren(conn *dbus.Conn, dest string, vs []dbus.Variant) []*menuItem {
	var out []*menuItem
	for _, v := range vs {
		f, ok := v.Value().([]interface{})
		if !ok || len(f) != 3 {
			continue
		}
		it := &menuItem{conn: conn, dest: dest}
		it.id, _ = f[0].(int32)
		props, _ := f[1].(map[string]dbus.Variant)
		if l, ok := props["label"]; ok {
			it.label, _ = l.Value().(string)
		}
		if ty, ok := props["type"]; ok {
			s, _ := ty.Value().(string)
			it.sep = s == "separator"
		}
		if vis, ok := props["visible"]; ok {
			if b, _ := vis.Value().(bool); !b {
				continue
			}
		}
		kids, _ := f[2].([]dbus.Variant)
		it.children = parseChildren(conn, dest, kids)
		out = append(out, it)
	}
	return out
}

// labels lists the item's children, separators left out.
func (m *menuItem) labels() []string {
	var out []string
	for _, c := range m.children {
		if !c.sep {
			out = append(out, c.label)
		}
	}
	return out
}

func (m *menuItem) find(label string) *menuItem {
	for _, c := range m.children {
		if c.label == label {
			return c
		}
	}
	return &menuItem{conn: m.conn, dest: m.dest, id: -1, label: label}
}

func (m *menuItem) click(t *testing.T) {
	t.Helper()
	if m.id < 0 {
		t.Fatalf("no menu item %q", m.label)
	}
	err := m.conn.Object(m.dest, "/StatusNotifierMenu").Call("com.canonical.dbusmenu.Event", 0, m.id, "clicked",
		dbus.MakeVariant(""), uint32(time.Now().Unix())).Err
	if err != nil {
		t.Fatal(err)
	}
}

// env is the environment of a process on this desktop.
func (d *xDesktop) env(root string) []string {
	return append(os.Environ(), "DISPLAY="+d.display, "DBUS_SESSION_BUS_ADDRESS="+d.bus,
		"XDG_CONFIG_HOME="+filepath.Join(root, "xdg-config"), "XDG_CACHE_HOME="+filepath.Join(root, "xdg-cache"),
		"XDG_RUNTIME_DIR="+root, "FYNE_THEME=dark", "FERRY_SMOKE_ISOLATED=1", "PATH="+d.path)
}

func (d *xDesktop) xdotool(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("xdotool", args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+d.display)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("xdotool %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func (d *xDesktop) x11(t *testing.T, args ...string) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "scripts", "e2e", "x11.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(d.python, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "DISPLAY="+d.display)
	if out, err := runWithin(cmd, 30*time.Second); err != nil {
		t.Fatalf("x11.py %v: %v\n%s", args, err, out)
	}
}

// search lists the windows titled "Ferry — name".
func (d *xDesktop) search(name string, visible bool) []string {
	args := []string{"search"}
	if visible {
		args = append(args, "--onlyvisible")
	}
	cmd := exec.Command("xdotool", append(args, "--name", "^Ferry — "+name+"$")...)
	cmd.Env = append(os.Environ(), "DISPLAY="+d.display)
	out, _ := cmd.Output() // no match exits 1
	return strings.Fields(string(out))
}

func (d *xDesktop) window(t *testing.T, name string) string {
	t.Helper()
	var w []string
	testutil.WaitFor(t, "window "+name, func() bool { w = d.search(name, true); return len(w) > 0 })
	return w[0]
}

func (d *xDesktop) visible(_ *testing.T, name string) bool { return len(d.search(name, true)) > 0 }

func (d *xDesktop) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, what, cond)
}

// keys types keys into win, as real key presses (XTEST) to the focused window.
func (d *xDesktop) keys(t *testing.T, win string, keys ...string) {
	t.Helper()
	d.xdotool(t, "windowfocus", "--sync", win)
	d.xdotool(t, append([]string{"key", "--delay", "100"}, keys...)...)
}

// dimmed tells whether win shows a modal dialog: Fyne dims the window
// behind one, so its top left (the menu bar) is darker than base, its
// brightness without a dialog.
func (d *xDesktop) dimmed(t *testing.T, win string, base float64) bool {
	t.Helper()
	return d.brightness(t, win) < 0.8*base
}

// drawn waits until win shows its menu bar (a mapped window is black until
// its first frame) and returns the bar's brightness.
func (d *xDesktop) drawn(t *testing.T, win string) float64 {
	t.Helper()
	var b float64
	d.waitFor(t, "the window's first frame", func() bool { b = d.brightness(t, win); return b > 20 })
	return b
}

// brightness is the mean brightness (0-255) of the top-left 40x20 pixels
// of win, where the menu bar is.
func (d *xDesktop) brightness(t *testing.T, win string) float64 {
	t.Helper()
	return d.regionBrightness(t, win, "40x20+0+0")
}

// regionBrightness is the mean brightness (0-255) of the part of win that
// geometry ("WxH+X+Y") names.
func (d *xDesktop) regionBrightness(t *testing.T, win, geometry string) float64 {
	t.Helper()
	cmd := exec.Command("import", "-window", win, "-crop", geometry, "-colorspace", "Gray", "-format", "%[fx:255*mean]", "info:")
	cmd.Env = append(os.Environ(), "DISPLAY="+d.display)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		t.Fatalf("brightness %q: %v", out, err)
	}
	return v
}

func (d *xDesktop) screenshot(t *testing.T, win, name string) {
	t.Helper()
	cmd := exec.Command("import", "-window", win, filepath.Join(d.out, name))
	cmd.Env = append(os.Environ(), "DISPLAY="+d.display)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("screenshot %s: %v %s", name, err, out)
	}
}

// ferry is one running instance of the app.
type ferry struct {
	name, config, downloads, status string
	ui                              string // what its window shows (FERRY_SMOKE_DESCRIBE)
	cmd                             *exec.Cmd
	done                            chan struct{}
	err                             error
}

func (d *xDesktop) start(t *testing.T, bin, root, name string, env []string, args ...string) *ferry {
	t.Helper()
	return d.startIn(t, "", bin, root, name, env, args...)
}

// startIn starts an instance in network namespace ns ("": this one's).
func (d *xDesktop) startIn(t *testing.T, ns, bin, root, name string, env []string, args ...string) *ferry {
	t.Helper()
	slug := strings.ReplaceAll(strings.ToLower(name), " ", "-")
	p := &ferry{name: name, config: filepath.Join(root, slug, "config"), downloads: filepath.Join(root, slug, "Downloads"),
		status: filepath.Join(root, slug, "status.json"), ui: filepath.Join(root, slug, "ui.json"), done: make(chan struct{})}
	for _, dir := range []string{p.config, p.downloads} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(p.config, settingsFile)); err != nil {
		s := ui.Settings{DeviceName: name, DownloadDir: p.downloads, Policy: ui.PolicyEveryone}
		if err := saveJSON(filepath.Join(p.config, settingsFile), s); err != nil {
			t.Fatal(err)
		}
	}
	p.cmd = exec.Command(bin, append([]string{"--config", p.config}, args...)...)
	if ns != "" { // ip execs the program: the pid stays Ferry's
		p.cmd = exec.Command("ip", append([]string{"netns", "exec", ns, bin, "--config", p.config}, args...)...)
	}
	p.cmd.Env = append(append(d.env(root), "FERRY_SMOKE_STATUS="+p.status, "FERRY_SMOKE_DESCRIBE="+p.ui), env...)
	logPath := filepath.Join(d.out, slug+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	// A failed run tells what the instance said last (registered first,
	// so it runs after the instance is stopped): CI keeps no temp dir.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last lines of %s's log:\n%s", name, lastLines(logPath, 40))
		}
	})
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); log.Close(); close(p.done) }()
	t.Cleanup(func() {
		if p.running() {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// lastLines is the last n lines of the file at path (or why it could not
// be read).
func lastLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func (p *ferry) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// wait waits for the process to end by itself and reports how it ended.
func (p *ferry) wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %v", p.name, timeout)
	}
}

// stop asks the process to end (SIGTERM) and waits for it.
func (p *ferry) stop() error {
	if !p.running() {
		return p.err
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	return p.wait(20 * time.Second)
}

func (p *ferry) waitStatus(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, p.name+" to listen", func() bool { return fileExists(p.status) })
}

func (p *ferry) port(t *testing.T) string {
	t.Helper()
	var st map[string]string
	data, err := os.ReadFile(p.status)
	if err == nil {
		err = json.Unmarshal(data, &st)
	}
	if err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndexByte(st["quic"], ':')
	return st["quic"][i+1:]
}

// history is the instance's history file, newest first.
func (p *ferry) history(t *testing.T) []ui.HistoryEntry {
	t.Helper()
	var h []ui.HistoryEntry
	if err := loadJSON(filepath.Join(p.config, historyFile), &h); err != nil {
		return nil
	}
	return h
}

// lastHistory is the newest entry of the instance's history file.
func (p *ferry) lastHistory(t *testing.T) ui.HistoryEntry {
	t.Helper()
	var h []ui.HistoryEntry
	if err := loadJSON(filepath.Join(p.config, historyFile), &h); err != nil || len(h) == 0 {
		return ui.HistoryEntry{}
	}
	return h[0]
}

// id is the device ID p writes to its status file.
func (p *ferry) id(t *testing.T) string {
	t.Helper()
	var st map[string]string
	if err := loadJSON(p.status, &st); err != nil {
		t.Fatal(err)
	}
	return st["id"]
}

// paired reports whether p's trust store says it paired with q.
func paired(t *testing.T, p, q *ferry) bool {
	t.Helper()
	var peers []struct {
		ID     string `json:"id"`
		Paired bool   `json:"paired"`
	}
	if err := loadJSON(filepath.Join(p.config, "trust.json"), &peers); err != nil {
		return false
	}
	id := q.id(t)
	for _, x := range peers {
		if x.ID == id {
			return x.Paired
		}
	}
	return false
}

// buildFerry builds the desktop app once per test run.
func buildFerry(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ferry")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a cold cache compiles glfw
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func runWithin(cmd *exec.Cmd, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env = cmd.Env
	return c.CombinedOutput()
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func randomFile(t *testing.T, dir, name string, size int) string {
	t.Helper()
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func sameFile(a, b string) bool {
	x, err1 := os.ReadFile(a)
	y, err2 := os.ReadFile(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
