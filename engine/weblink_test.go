package engine

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/weblink"
)

// browserUpload creates a tus upload of size bytes on a receive link and
// sends body (all or part of it) at offset 0.
func browserUpload(t *testing.T, endpoint, name string, size int, body []byte) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", strconv.Itoa(size))
	req.Header.Set("Upload-Metadata", "filename "+base64.StdEncoding.EncodeToString([]byte(name)))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", res.StatusCode)
	}
	loc := res.Header.Get("Location")
	req, _ = http.NewRequest(http.MethodPatch, loc, bytes.NewReader(body))
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Offset", "0")
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return loc
}

func TestBrowserInbox(t *testing.T) {
	e := testEngine(t, Options{Accept: AcceptAsk, ProgressInterval: 20 * time.Millisecond}) // no prompt for a link the user showed
	events, unsub := e.Subscribe(1024)
	defer unsub()
	s, err := weblink.Listen("127.0.0.1:0", weblink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in := e.BrowserInbox()
	defer in.Close()
	l, err := s.Receive(in, weblink.ReceiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in.Attach(l)
	endpoint := "http://" + s.Addr().String() + l.Path() + "tus/"
	data := bytes.Repeat([]byte("x"), 100_000)
	browserUpload(t, endpoint, "photo.jpg", len(data), data)
	var r *Result
	for ev := range events {
		if ev.Kind == EventOffer {
			t.Fatal("a browser's file was prompted for")
		}
		if ev.Kind == EventResult {
			r = ev.Result
			if ev.Peer.Name != "a browser at 127.0.0.1" || ev.Direction != Receiving {
				t.Fatalf("peer %+v, direction %v", ev.Peer, ev.Direction)
			}
			break
		}
	}
	if r.State != StateDone || r.Verified != 1 || r.Bytes != int64(len(data)) {
		t.Fatalf("result %+v", r)
	}
	if got, err := os.ReadFile(filepath.Join(e.DownloadDir(), "photo.jpg")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("saved: %v", err)
	}

	// Cancel on the engine's transfer cancels the upload: its partial goes.
	browserUpload(t, endpoint, "half.bin", 200, data[:100])
	var id string
	for ev := range events {
		if ev.Kind == EventState && ev.Peer.Name == "a browser at 127.0.0.1" {
			id = ev.TransferID
			break
		}
	}
	// Its progress row moves with the bytes that arrived.
	for ev := range events {
		if ev.Kind == EventProgress && ev.TransferID == id && ev.Progress.Bytes == 100 && ev.Progress.TotalBytes == 200 {
			break
		}
	}
	if err := e.Cancel(id); err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Kind == EventResult && ev.TransferID == id {
			if ev.Result.State != StateFailed {
				t.Fatalf("cancelled upload: %+v", ev.Result)
			}
			break
		}
	}
	if _, err := os.Stat(filepath.Join(e.DownloadDir(), "half.bin.partial")); !os.IsNotExist(err) {
		t.Fatalf("the partial stayed: %v", err)
	}
}
