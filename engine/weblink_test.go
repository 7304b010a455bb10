package engine

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/weblink"
	"github.com/ferrydrop/ferry/internal/testutil"
)

func TestBrowserInbox(t *testing.T) {
	e := testEngine(t, Options{Accept: AcceptAsk, ProgressInterval: 20 * time.Millisecond}) // no prompt for a link the user showed
	events, unsub := e.Subscribe(1024)
	defer unsub()
	endpoint, _ := browserLink(t, e, browserIdle)
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
	endpoint, _ := browserLink(t, e, browserIdle)
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

// TestBrowserNameWithBackslash: a browser's file whose name holds a
// backslash (legal on Linux and macOS) arrives with "_" for it, as a Ferry
// or LocalSend device's does, and its transfer names it as the browser did
// and says where it was saved ("a\b.txt", saved as "a_b.txt"); it was
// refused as "the name has a folder in it".
func TestBrowserNameWithBackslash(t *testing.T) {
	e := testEngine(t, Options{Accept: AcceptAsk})
	events, unsub := e.Subscribe(1024)
	defer unsub()
	endpoint, _ := browserLink(t, e, browserIdle)
	testutil.TusUpload(t, endpoint, `a\b.txt`, 5, []byte("hello"))
	var offer *OfferInfo
	var file *FileResult
	for ev := range events {
		switch ev.Kind {
		case EventOffer:
			offer = ev.Offer
		case EventFile:
			file = ev.File
		}
		if ev.Kind == EventResult {
			if ev.Result.State != StateDone || ev.Result.Verified != 1 {
				t.Fatalf("result %+v", ev.Result)
			}
			break
		}
	}
	if offer == nil || len(offer.Files) != 1 || offer.Files[0].Path != `a\b.txt` {
		t.Fatalf("offer %+v", offer)
	}
	if file == nil || file.Path != `a\b.txt` || file.SavedAs != "a_b.txt" || !file.Verified {
		t.Fatalf("file %+v", file)
	}
	if got, err := os.ReadFile(filepath.Join(e.DownloadDir(), "a_b.txt")); err != nil || string(got) != "hello" {
		t.Fatalf("saved: %q, %v", got, err)
	}
}

// browserLink is a receive link served through e's BrowserInbox (idle:
// how long a set waits for its next file); it returns the tus endpoint.
func browserLink(t *testing.T, e *Engine, idle time.Duration) (endpoint string, in *BrowserInbox) {
	t.Helper()
	s, err := weblink.Listen("127.0.0.1:0", weblink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	in = e.BrowserInbox()
	in.idle = idle
	l, err := s.Receive(in, weblink.ReceiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in.Attach(l)
	t.Cleanup(func() { l.Stop(); in.Close() })
	return "http://" + s.Addr().String() + l.Path() + "tus/", in
}

// batchMeta is the page's metadata for a set of files.
func batchMeta(id string, files int, bytes int64, top string) map[string]string {
	m := map[string]string{"batch": id, "batchfiles": strconv.Itoa(files), "batchbytes": strconv.FormatInt(bytes, 10)}
	if top != "" {
		m["batchtop"] = top
	}
	return m
}

// TestBrowserSetIsOneTransfer: the files a page sends together (a folder
// dropped, files picked at once) are one receiving transfer, as a Ferry
// device's are: one offer naming the folder and the count, an event per
// file, one result with every file verified; a second set is a transfer
// of its own. Before, each file was a transfer (a row, a history entry and
// a notification for each of a folder's 500 photos).
func TestBrowserSetIsOneTransfer(t *testing.T) {
	e := testEngine(t, Options{Accept: AcceptAsk, ProgressInterval: 20 * time.Millisecond})
	events, unsub := e.Subscribe(4096)
	defer unsub()
	endpoint, _ := browserLink(t, e, time.Minute)
	data := bytes.Repeat([]byte("z"), 10_000)
	set := batchMeta("00112233445566778899aabbccddeeff", 3, 3*int64(len(data)), "Trip")
	for _, name := range []string{"Trip/a.jpg", "Trip/day 1/b.jpg", "Trip/day 1/c.jpg"} {
		testutil.TusUploadMeta(t, endpoint, name, len(data), data, set)
	}
	var offers, files []Event
	var res *Event
	for res == nil {
		select {
		case ev := <-events:
			switch ev.Kind {
			case EventOffer:
				offers = append(offers, ev)
			case EventFile:
				files = append(files, ev)
			case EventResult:
				res = &ev
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no result: %d offers, %d files", len(offers), len(files))
		}
	}
	if len(offers) != 1 || offers[0].Offer.Count != 3 || len(offers[0].Offer.Folders) != 1 || offers[0].Offer.Folders[0].Path != "Trip" ||
		offers[0].Offer.TotalBytes != 3*int64(len(data)) {
		t.Fatalf("offers %+v", offers)
	}
	if len(files) != 3 || res.TransferID != offers[0].TransferID {
		t.Fatalf("%d file events; result of %s, offer of %s", len(files), res.TransferID, offers[0].TransferID)
	}
	if r := res.Result; r.State != StateDone || r.Files != 3 || r.Verified != 3 || r.Bytes != 3*int64(len(data)) {
		t.Fatalf("result %+v", r)
	}
	for _, name := range []string{"a.jpg", "day 1/b.jpg", "day 1/c.jpg"} {
		if _, err := os.Stat(filepath.Join(e.DownloadDir(), "Trip", filepath.FromSlash(name))); err != nil {
			t.Error(err)
		}
	}

	// Files of another set, and a file without one: transfers of their own.
	testutil.TusUploadMeta(t, endpoint, "x.jpg", len(data), data, batchMeta("ffeeddccbbaa99887766554433221100", 1, int64(len(data)), ""))
	testutil.TusUpload(t, endpoint, "y.jpg", len(data), data)
	ids := map[string]bool{}
	for len(ids) < 2 {
		select {
		case ev := <-events:
			if ev.Kind == EventResult {
				if ev.Result.State != StateDone || ev.Result.Files != 1 {
					t.Errorf("result %+v", ev.Result)
				}
				ids[ev.TransferID] = true
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no result for the other files")
		}
	}
}

// TestBrowserSetEnds: Cancel on a set's transfer refuses the rest of its
// files; a file the page cancels ends its set as cancelled by the browser.
// (A set whose page stops sending does not end: TestBrowserSetInterrupted.)
func TestBrowserSetEnds(t *testing.T) {
	e := testEngine(t, Options{Accept: AcceptAsk, ProgressInterval: 20 * time.Millisecond})
	events, unsub := e.Subscribe(4096)
	defer unsub()
	endpoint, _ := browserLink(t, e, time.Hour)
	data := bytes.Repeat([]byte("q"), 1000)
	result := func() *Result {
		t.Helper()
		for {
			select {
			case ev := <-events:
				if ev.Kind == EventResult {
					return ev.Result
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no result")
			}
		}
	}
	set := batchMeta("abcdef0123456789abcdef0123456789", 3, 3000, "")
	testutil.TusUploadMeta(t, endpoint, "c.jpg", len(data), data, set)
	var id string
	for id == "" {
		if ev := <-events; ev.Kind == EventFile {
			id = ev.TransferID
		}
	}
	if err := e.Cancel(id); err != nil {
		t.Fatal(err)
	}
	if r := result(); r.State != StateFailed || r.Verified != 1 || !strings.Contains(r.Err, "cancelled on the receiving device") ||
		r.Code != "cancelled" || r.ByPeer {
		t.Fatalf("a cancelled set: %+v", r)
	}
	status, _, body := testutil.TusCreateMeta(t, endpoint, "d.jpg", len(data), set)
	if status < 400 || !strings.Contains(string(body), "cancelled on the receiving device") {
		t.Fatalf("the next file of a cancelled set: %d %s", status, body)
	}

	// A file the page cancelled (tus's termination): cancelled by the
	// browser, not by this device's user.
	loc := testutil.TusUploadMeta(t, endpoint, "e.jpg", 2*len(data), data, batchMeta("99999999999999999999999999999999", 1, 2000, ""))
	req, _ := http.NewRequest(http.MethodDelete, loc, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	if res, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
	}
	if r := result(); r.State != StateFailed || r.Code != "cancelled" || !r.ByPeer {
		t.Fatalf("a set the page cancelled: %+v", r)
	}
}

// TestBrowserSetCountsRefusedFiles: a file of a set the link refuses (its
// name cannot be stored) counts in its set, before the set's first file
// arrived or after: the set ends with its last file, saying what did not
// arrive and why, instead of waiting for a file that never comes.
func TestBrowserSetCountsRefusedFiles(t *testing.T) {
	e := testEngine(t, Options{Accept: AcceptAsk, ProgressInterval: 20 * time.Millisecond})
	events, unsub := e.Subscribe(4096)
	defer unsub()
	endpoint, _ := browserLink(t, e, time.Hour)
	data := bytes.Repeat([]byte("r"), 100)
	set := batchMeta("0f1e2d3c4b5a69788796a5b4c3d2e1f0", 4, 400, "Trip")
	for _, name := range []string{"Trip/bad\x1b.jpg", "Trip/a.jpg", "Trip/also\x1b.jpg", "Trip/b.jpg"} {
		if strings.Contains(name, "\x1b") {
			if status, _, _ := testutil.TusCreateMeta(t, endpoint, name, len(data), set); status != 422 {
				t.Fatalf("%s: %d, want it refused", name, status)
			}
			continue
		}
		testutil.TusUploadMeta(t, endpoint, name, len(data), data, set)
	}
	var files []*FileResult
	for {
		select {
		case ev := <-events:
			if ev.Kind == EventFile {
				files = append(files, ev.File)
			}
			if ev.Kind != EventResult {
				continue
			}
			r := ev.Result
			if r.State != StateFailed || r.Files != 4 || r.Verified != 2 || r.Code != "" ||
				r.Err != "2 of 4 files arrived from the browser; 2 did not, the first: this name cannot be saved: control character U+001B not allowed" {
				t.Fatalf("result %+v", r)
			}
			if len(files) != 4 {
				t.Fatalf("%d file events, want 4", len(files))
			}
			return
		case <-time.After(20 * time.Second):
			t.Fatalf("the set did not end: %d file events", len(files))
		}
	}
}

// TestBrowserSetInterrupted: a set whose page stops sending, between two
// files or in the middle of one (the tab closed, a phone asleep), is
// interrupted after the idle time, not ended: what arrived is kept, the
// row says so, and the page's next byte or file makes the same transfer
// active again, so a page that comes back (tus resumes the file on the
// way; the page sends the rest under the same set ID) finishes the set as
// one transfer with every file. It used to end at the idle time with a
// file on the way ("the browser stopped sending"), or, with one on the way,
// to stay "Receiving" forever. The link's end ends an interrupted set.
func TestBrowserSetInterrupted(t *testing.T) {
	e := testEngine(t, Options{Accept: AcceptAsk, ProgressInterval: 20 * time.Millisecond})
	events, unsub := e.Subscribe(4096)
	defer unsub()
	endpoint, in := browserLink(t, e, 200*time.Millisecond)
	data := bytes.Repeat([]byte("i"), 1000)
	// next is the next state or result event of the transfer.
	next := func() Event {
		t.Helper()
		for {
			select {
			case ev := <-events:
				if ev.Kind == EventState || ev.Kind == EventResult {
					return ev
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no state or result")
			}
		}
	}
	want := func(kind EventKind, state State) Event {
		t.Helper()
		ev := next()
		for ev.Kind == EventState && ev.State == StateActive && state != StateActive {
			ev = next() // the start's own active
		}
		if ev.Kind != kind || ev.State != state {
			t.Fatalf("got %s %s (%+v), want %s %s", ev.Kind, ev.State, ev.Result, kind, state)
		}
		return ev
	}

	set := batchMeta("00112233445566778899aabbccddeeff", 3, 3000, "")
	testutil.TusUploadMeta(t, endpoint, "a.jpg", len(data), data, set)
	first := want(EventState, StateInterrupted).TransferID // between two files
	tr, err := e.transfer(first)
	if err != nil {
		t.Fatal(err)
	}
	if state := tr.currentState(); state != StateInterrupted {
		t.Fatalf("the transfer's state: %s", state)
	}
	// The second file: half of it, then nothing.
	loc := testutil.TusUploadMeta(t, endpoint, "b.jpg", len(data), data[:400], set)
	if ev := want(EventState, StateActive); ev.TransferID != first {
		t.Fatalf("the set's next file woke another transfer: %s", ev.TransferID)
	}
	want(EventState, StateInterrupted) // in the middle of a file
	// The page comes back: tus resumes the file where it stopped.
	testutil.TusPatch(t, loc, 400, data[400:])
	want(EventState, StateActive)
	testutil.TusUploadMeta(t, endpoint, "c.jpg", len(data), data, set)
	for {
		ev := next()
		if ev.Kind != EventResult {
			continue // interrupted again between the last two files, and woken
		}
		if ev.TransferID != first || ev.Result.State != StateDone || ev.Result.Verified != 3 {
			t.Fatalf("the set the page came back to: %s %+v", ev.TransferID, ev.Result)
		}
		break
	}

	// A page that never comes back: its set waits, interrupted, until the
	// link ends, then says what arrived.
	testutil.TusUploadMeta(t, endpoint, "d.jpg", len(data), data[:10], batchMeta("ffeeddccbbaa99887766554433221100", 2, 2000, ""))
	want(EventState, StateInterrupted)
	in.Close()
	if r := want(EventResult, StateFailed).Result; r.Verified != 0 || r.Err != "0 of 2 files arrived from the browser: the link ended" {
		t.Fatalf("an interrupted set at the link's end: %+v", r)
	}
}

// TestBrowserSetRefusedWhole: a set whose every file the link refuses
// before one began (no space, names it cannot store) is a declined
// transfer here, in the words of its refusal, as an offer's decline is; it
// used to be reported to nobody on this side. The page gets the figures,
// never this device's folder.
func TestBrowserSetRefusedWhole(t *testing.T) {
	e := testEngine(t, Options{Accept: AcceptAsk, ProgressInterval: 20 * time.Millisecond})
	events, unsub := e.Subscribe(4096)
	defer unsub()
	endpoint, _ := browserLink(t, e, time.Hour)
	if free, err := store.FreeSpace(e.DownloadDir()); err != nil || free >= 1<<40 {
		t.Skipf("a file of 1 TiB (the link's most) fits here: %d bytes free, %v", free, err)
	}
	for _, c := range []struct {
		names []string
		size  int
		want  string
		page  string
	}{
		{[]string{"bad\x1b", "worse\x1b"}, 10,
			`Declined: none of the 2 files could be taken; the first: this name cannot be saved: control character U+001B not allowed`,
			"this name cannot be saved"},
		{[]string{"huge.bin"}, 1 << 40, "Declined: Not enough space on " + e.DownloadDir() + ": ",
			"not enough space on the receiving device: "},
	} {
		set := batchMeta(fmt.Sprintf("%032x", len(c.names)), len(c.names), int64(len(c.names)*c.size), "")
		for _, name := range c.names {
			status, _, body := testutil.TusCreateMeta(t, endpoint, name, c.size, set)
			if status != 422 || !strings.Contains(string(body), c.page) || strings.Contains(string(body), e.DownloadDir()) {
				t.Fatalf("%s: %d %q, want it refused saying %q", name, status, body, c.page)
			}
		}
		for r := (*Result)(nil); r == nil; {
			select {
			case ev := <-events:
				if ev.Kind == EventResult {
					r = ev.Result
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%v: no result", c.names)
			}
			if r != nil && (r.State != StateDeclined || r.Files != len(c.names) || r.Verified != 0 || !strings.HasPrefix(r.Err, c.want)) {
				t.Fatalf("%v: result %s %q", c.names, r.State, r.Err)
			}
		}
	}
}
