package app

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/ui"
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
	states, err := b.OpenLink(ui.LinkRequest{Kind: ui.LinkShare, Paths: []string{filepath.Join(dir, "notes.txt")}, PIN: ""})
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
	_, err := b.OpenLink(ui.LinkRequest{Kind: ui.LinkShare, Paths: []string{t.TempDir()}})
	var p *ui.Problem
	if err == nil || !errors.As(err, &p) || !strings.Contains(p.Text, "no file to share") {
		t.Fatalf("sharing an empty folder: %v", err)
	}
}

// tusUpload sends a whole file through a receive link, as the page's
// tus-js-client would.
func tusUpload(t *testing.T, endpoint, name string, body []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", strconv.Itoa(len(body)))
	req.Header.Set("Upload-Metadata", "filename "+base64.StdEncoding.EncodeToString([]byte(name)))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", res.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodPatch, res.Header.Get("Location"), bytes.NewReader(body))
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Offset", "0")
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("patch: %d", res.StatusCode)
	}
}

func TestReceiveLinkLandsAsATransfer(t *testing.T) {
	b := linkBackend(t)
	events, unsub := b.eng.Subscribe(256)
	defer unsub()
	states, err := b.OpenLink(ui.LinkRequest{Kind: ui.LinkReceive, Expire: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	first := <-states
	data := bytes.Repeat([]byte{7}, 300_000)
	tusUpload(t, first.URL+"tus/", "IMG_0420.jpg", data)

	// The file is a receiving transfer of the engine, without a prompt:
	// the window's rows and the history show it like any other.
	var res ui.TransferEvent
	timeout := time.After(20 * time.Second)
	for res.Result == nil {
		select {
		case ev := <-events:
			if ev.Kind == engine.EventOffer {
				t.Fatal("a file from the receive link was prompted for")
			}
			if u, ok := toUITransfer(ev); ok && u.Kind == ui.TransferResult {
				res = u
			}
		case <-timeout:
			t.Fatal("no result for the browser's file")
		}
	}
	if res.Direction != ui.Incoming || res.Result.State != ui.StateDone || res.Peer.Name != "a browser at 127.0.0.1" {
		t.Fatalf("result %+v peer %+v", res.Result, res.Peer)
	}
	got, err := os.ReadFile(filepath.Join(b.eng.DownloadDir(), "IMG_0420.jpg"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("saved file: %v", err)
	}
	s := waitState(t, states, func(s ui.LinkState) bool { return len(s.Activities) == 1 && s.Activities[0].Done })
	if a := s.Activities[0]; !a.Upload || a.Err != "" || a.Name != "IMG_0420.jpg" {
		t.Errorf("activity %+v", a)
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
		if _, err := b.OpenLink(ui.LinkRequest{Kind: kind, Paths: []string{t.TempDir()}}); !errors.Is(err, errReceivingOff) {
			t.Fatalf("a link (kind %d) with receiving off: %v", kind, err)
		}
	}
}
