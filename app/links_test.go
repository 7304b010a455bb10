package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/testutil"
	"github.com/ferrydrop/ferry/ui"
	"github.com/ferrydrop/ferry/ui/transfer"
)

// linkBackend is a test backend that receives (links are a row of the
// engine's receiver table), on loopback.
func linkBackend(t *testing.T) *backend {
	t.Helper()
	b := newTestBackend(t)
	if err := b.setReceiving(true); err != nil {
		t.Fatal(err)
	}
	return b
}

// waitState reads states until ok says yes (or the link ends without it).
func waitState(t *testing.T, states <-chan ui.LinkState, ok func(ui.LinkState) bool) ui.LinkState {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case s, open := <-states:
			if !open {
				t.Fatal("the link's states ended before the one awaited")
			}
			if ok(s) {
				return s
			}
		case <-timeout:
			t.Fatal("no such link state in 20 s")
		}
	}
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, body
}

func TestShareLink(t *testing.T) {
	b := linkBackend(t)
	dir := t.TempDir()
	data := bytes.Repeat([]byte("ferry "), 50_000)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	states, err := b.OpenLink(context.Background(), ui.LinkRequest{Kind: ui.LinkShare, Paths: []string{filepath.Join(dir, "notes.txt")}, PIN: ""})
	if err != nil {
		t.Fatal(err)
	}
	first := <-states
	if !strings.HasPrefix(first.URL, "http://127.0.0.1:") || first.Files != 1 || first.Bytes != int64(len(data)) || first.Ended {
		t.Fatalf("first state %+v", first)
	}
	if d := time.Until(first.Expires); d < 59*time.Minute || d > time.Hour {
		t.Errorf("expires in %v, want the default hour", d)
	}
	if code, page := get(t, first.URL); code != http.StatusOK || !bytes.Contains(page, []byte("notes.txt")) {
		t.Fatalf("page: %d", code)
	}
	code, got := get(t, first.URL+"f/0/notes.txt")
	if code != http.StatusOK || !bytes.Equal(got, data) {
		t.Fatalf("download: %d, %d bytes", code, len(got))
	}
	s := waitState(t, states, func(s ui.LinkState) bool {
		return len(s.Activities) == 1 && s.Activities[0].Done
	})
	if a := s.Activities[0]; a.Err != "" || a.Bytes != int64(len(data)) || a.Upload || a.Device != "127.0.0.1" || len(s.Devices) != 1 {
		t.Errorf("activity %+v, devices %v", a, s.Devices)
	}

	if err := b.StopLink(first.ID); err != nil {
		t.Fatal(err)
	}
	end := waitState(t, states, func(s ui.LinkState) bool { return s.Ended })
	if !strings.Contains(end.Why, "stopped") {
		t.Errorf("why = %q", end.Why)
	}
	if _, open := <-states; open {
		t.Error("states go on after the end")
	}
	if code, _ := get(t, first.URL); code != http.StatusGone {
		t.Errorf("a stopped link answers %d, want 410", code)
	}
	if err := b.StopLink(first.ID); err == nil {
		t.Error("stopping an ended link again said nothing")
	}
}

func TestShareLinkOfNothing(t *testing.T) {
	b := linkBackend(t)
	_, err := b.OpenLink(context.Background(), ui.LinkRequest{Kind: ui.LinkShare, Paths: []string{t.TempDir()}})
	var p *ui.Problem
	if err == nil || !errors.As(err, &p) || !strings.Contains(p.Text, "no file to share") {
		t.Fatalf("sharing an empty folder: %v", err)
	}
}

func TestReceiveLinkLandsAsATransfer(t *testing.T) {
	b := linkBackend(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	events := make(chan ui.TransferEvent, 256)
	goPump(t, ctx, b, events, make(chan ui.DeviceEvent, 16))
	states, err := b.OpenLink(context.Background(), ui.LinkRequest{Kind: ui.LinkReceive, Expire: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	first := <-states
	data := bytes.Repeat([]byte{7}, 300_000)
	testutil.TusUpload(t, first.URL+"tus/", "IMG_0420.jpg", len(data), data)

	// The file is a receiving transfer of the engine, without a prompt:
	// the window's rows and the history show it like any other, named,
	// with its size, and whole at the end.
	var res ui.TransferEvent
	model := transfer.New()
	timeout := time.After(20 * time.Second)
	for res.Result == nil {
		select {
		case ev := <-events:
			if ev.Kind == ui.TransferOffer && ev.State == ui.StateWaiting {
				t.Fatal("a file from the receive link was prompted for")
			}
			for _, me := range ui.DeliveryEvents(ev) {
				model.Apply(me)
			}
			if ev.Kind == ui.TransferResult {
				res = ev
			}
		case <-timeout:
			t.Fatal("no result for the browser's file")
		}
	}
	if res.Direction != ui.Incoming || res.Result.State != ui.StateDone || res.Peer.Name != "a browser at 127.0.0.1" {
		t.Fatalf("result %+v peer %+v", res.Result, res.Peer)
	}
	d := model.Get(res.ID)
	if d == nil || d.Phase != transfer.Done || len(d.Files) != 1 || d.Files[0].Path != "IMG_0420.jpg" ||
		d.Total != int64(len(data)) || d.Bytes != d.Total || d.Verified != 1 {
		t.Fatalf("the row's delivery: %+v", d)
	}
	if h := b.History(); len(h) != 1 || strings.Join(h[0].Names, "|") != "IMG_0420.jpg" || h[0].Bytes != int64(len(data)) ||
		h[0].PeerName != "a browser at 127.0.0.1" {
		t.Fatalf("history %+v", h)
	}
	got, err := os.ReadFile(filepath.Join(b.eng.DownloadDir(), "IMG_0420.jpg"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("saved file: %v", err)
	}
	s := waitState(t, states, func(s ui.LinkState) bool { return len(s.Activities) == 1 && s.Activities[0].Done })
	if a := s.Activities[0]; !a.Upload || a.Err != "" || a.Name != "IMG_0420.jpg" {
		t.Errorf("activity %+v", a)
	}

	// A file of a folder the page sent lands in that folder, and the
	// history names it by its path there.
	testutil.TusUpload(t, first.URL+"tus/", "Trip/day 1/IMG_0421.jpg", len(data), data)
	testutil.WaitFor(t, "the folder's file in the history", func() bool { return len(b.History()) == 2 })
	if h := b.History()[0]; strings.Join(h.Names, "|") != "Trip/day 1/IMG_0421.jpg" || h.Items != 1 {
		t.Errorf("the folder's file in the history: names %q, %d items; want its path", h.Names, h.Items)
	}
	if got, err := os.ReadFile(filepath.Join(b.eng.DownloadDir(), "Trip", "day 1", "IMG_0421.jpg")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the folder's file: %v", err)
	}

	// A folder the page sent as one set (its files together): one entry,
	// named after the folder, as a Ferry device's folder is.
	set := map[string]string{"batch": "00112233445566778899aabbccddeeff", "batchfiles": "2", "batchbytes": strconv.Itoa(2 * len(data)), "batchtop": "Album"}
	testutil.TusUploadMeta(t, first.URL+"tus/", "Album/1.jpg", len(data), data, set)
	testutil.TusUploadMeta(t, first.URL+"tus/", "Album/2.jpg", len(data), data, set)
	testutil.WaitFor(t, "the set in the history", func() bool { return len(b.History()) == 3 })
	if h := b.History()[0]; strings.Join(h.Names, "|") != "Album" || h.Items != 1 || h.Bytes != 2*int64(len(data)) {
		t.Errorf("the set in the history: names %q, %d items, %d bytes; want Album, 1, %d", h.Names, h.Items, h.Bytes, 2*len(data))
	}

	// Turning receiving off ends a receive link, and says so.
	if err := b.setReceiving(false); err != nil {
		t.Fatal(err)
	}
	end := waitState(t, states, func(s ui.LinkState) bool { return s.Ended })
	if !strings.Contains(end.Why, "receiving was turned off") {
		t.Errorf("why = %q", end.Why)
	}
}

func TestReceiveLinkWhileReceivingOff(t *testing.T) {
	b := linkBackend(t)
	s := b.Settings()
	s.Policy = ui.PolicyOff
	if err := b.SaveSettings(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []ui.LinkKind{ui.LinkReceive, ui.LinkShare} {
		if _, err := b.OpenLink(context.Background(), ui.LinkRequest{Kind: kind, Paths: []string{t.TempDir()}}); !errors.Is(err, errReceivingOff) {
			t.Fatalf("a link (kind %d) with receiving off: %v", kind, err)
		}
	}
}

// The app's LocalSend announcements say download: true while a share link
// is open (a LocalSend app then offers to fetch it), as the CLI's do.
func TestLocalSendAnnouncesShareLink(t *testing.T) {
	b := linkBackend(t)
	if err := b.SaveSettings(b.Settings()); err != nil { // LocalSend on, as by default
		t.Fatal(err)
	}
	b.ls.mu.Lock()
	row := b.ls.row
	b.ls.mu.Unlock()
	if row == nil {
		t.Fatal("no LocalSend row")
	}
	cfg := b.ls.discoveryConfig(row, nil)
	if cfg.Download == nil || cfg.Download() || cfg.Info.Fingerprint != row.Fingerprint() {
		t.Fatalf("before a share: %+v", cfg)
	}
	file := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(file, []byte("shared"), 0o644); err != nil {
		t.Fatal(err)
	}
	states, err := b.OpenLink(context.Background(), ui.LinkRequest{Kind: ui.LinkShare, Paths: []string{file}, Expire: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	first := <-states
	if !cfg.Download() {
		t.Error("a share link is open, and the announcement does not say download: true")
	}
	if err := b.StopLink(first.ID); err != nil {
		t.Fatal(err)
	}
	waitState(t, states, func(s ui.LinkState) bool { return s.Ended })
	if cfg.Download() {
		t.Error("the share link ended, and the announcement still says download: true")
	}
}

// A receive link asked for while the download folder cannot be written
// is refused in a sentence that says which folder and what to do, where it
// opened and the first file sent through it failed ("the file could not
// be saved on the receiving device"). chattr +i keeps even root out of the
// folder; the test skips where it cannot be set.
func TestReceiveLinkOnAFolderThatCannotBeWritten(t *testing.T) {
	b := linkBackend(t)
	dl := b.eng.DownloadDir()
	if out, err := exec.Command("chattr", "+i", dl).CombinedOutput(); err != nil {
		t.Skipf("cannot make a folder immutable here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dl).Run() })
	_, err := b.OpenLink(context.Background(), ui.LinkRequest{Kind: ui.LinkReceive, Expire: 10 * time.Minute})
	var p *ui.Problem
	want := "The download folder " + dl + " cannot be written, so no file could arrive through a receive link. Choose another folder in Settings, or make this one writable."
	if !errors.As(err, &p) || p.Text != want || !strings.Contains(p.Err.Error(), "operation not permitted") {
		t.Fatalf("opening a receive link: %v, want %q", err, want)
	}
}
