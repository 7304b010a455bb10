package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/weblink"
	"github.com/ferrydrop/ferry/internal/testutil"
)

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
	testutil.TusUpload(t, endpoint, "photo.jpg", len(data), data)
	// Its events are a receiving transfer's: an offer that asks nothing,
	// naming the file and its size, progress up to the whole file, the
	// file, the result.
	var r *Result
	var offer *OfferInfo
	var last *Progress
	for ev := range events {
		switch ev.Kind {
		case EventOffer:
			if ev.State != StateActive || ev.Direction != Receiving {
				t.Fatalf("a browser's file was offered as %s, %s: nobody is asked", ev.Direction, ev.State)
			}
			offer = ev.Offer
		case EventProgress:
			last = ev.Progress
		case EventState, EventFile:
			if offer == nil {
				t.Fatalf("%s before the offer", ev.Kind)
			}
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
	if offer == nil || offer.Count != 1 || len(offer.Files) != 1 || offer.Files[0].Path != "photo.jpg" ||
		offer.Files[0].Size != int64(len(data)) || offer.TotalBytes != int64(len(data)) || offer.Dest != e.DownloadDir() {
		t.Fatalf("offer %+v", offer)
	}
	if last == nil || last.Bytes != int64(len(data)) || last.TotalBytes != int64(len(data)) || last.Files != 1 || last.TotalFiles != 1 {
		t.Fatalf("last progress %+v", last)
	}
	if got, err := os.ReadFile(filepath.Join(e.DownloadDir(), "photo.jpg")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("saved: %v", err)
	}

	// Cancel on the engine's transfer cancels the upload: its partial goes.
	testutil.TusUpload(t, endpoint, "half.bin", 200, data[:100])
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

// TestBrowserInboxFolder: a file of a folder a page sends lands at its path
// below the download folder (its folders made there), and its transfer
// names it by that path; a file of it cancelled takes away its partial and
// the folders made for it alone.
func TestBrowserInboxFolder(t *testing.T) {
	e := testEngine(t, Options{Accept: AcceptAsk, ProgressInterval: 20 * time.Millisecond})
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
	data := bytes.Repeat([]byte("y"), 50_000)
	testutil.TusUpload(t, endpoint, "Trip/day 1/IMG_1.jpg", len(data), data)
	var offer *OfferInfo
	for ev := range events {
		if ev.Kind == EventOffer {
			offer = ev.Offer
		}
		if ev.Kind == EventResult {
			if ev.Result.State != StateDone {
				t.Fatalf("result %+v", ev.Result)
			}
			break
		}
	}
	if offer == nil || len(offer.Files) != 1 || offer.Files[0].Path != "Trip/day 1/IMG_1.jpg" {
		t.Fatalf("offer %+v", offer)
	}
	if got, err := os.ReadFile(filepath.Join(e.DownloadDir(), "Trip", "day 1", "IMG_1.jpg")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("saved: %v", err)
	}

	testutil.TusUpload(t, endpoint, "Trip/day 2/night/half.bin", 200, data[:100])
	var id string
	for ev := range events {
		if ev.Kind == EventProgress && ev.Progress.Bytes == 100 && ev.Progress.TotalBytes == 200 {
			id = ev.TransferID
			break
		}
	}
	if err := e.Cancel(id); err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Kind == EventResult && ev.TransferID == id {
			break
		}
	}
	if _, err := os.Stat(filepath.Join(e.DownloadDir(), "Trip", "day 2")); !os.IsNotExist(err) {
		t.Errorf("the folders made for the cancelled file stayed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.DownloadDir(), "Trip", "day 1", "IMG_1.jpg")); err != nil {
		t.Errorf("the file that arrived: %v", err)
	}
}
