package engine

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/internal/lspeer"
)

// lsEngine starts a receiving engine with its LocalSend row on
// 127.0.0.1:0; the sender is the independent test peer.
func lsEngine(t *testing.T, opts Options, lsOpts LocalSendOptions) (*Engine, *LocalSendReceiver, string) {
	t.Helper()
	e := startReceiver(t, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lsOpts.Listener = ln
	srv, err := e.AddLocalSend(lsOpts)
	if err != nil {
		t.Fatal(err)
	}
	return e, srv, ln.Addr().String()
}

func testPeer(t *testing.T) *lspeer.Peer {
	t.Helper()
	p, err := lspeer.New("Pixel")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLocalSendReceiveThroughInbox(t *testing.T) {
	e, srv, addr := lsEngine(t, Options{}, LocalSendOptions{})
	// A file of the same name is already there: it must not be overwritten.
	if err := os.WriteFile(filepath.Join(e.DownloadDir(), "a.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := receivedResult(t, e)
	p := testPeer(t)
	files := []lspeer.SendFile{{Name: "a.txt", Data: []byte("alpha"), WithSHA: true}, {Name: "album/x/b.bin", Data: bytes.Repeat([]byte{1}, 100_000)}}
	sr, err := p.Send(context.Background(), addr, srv.Fingerprint(), true, "", "", files, nil)
	if err != nil || sr.PrepareStatus != 200 {
		t.Fatalf("%+v %v", sr, err)
	}
	r := <-res
	if r.State != StateDone || r.Files != 2 || r.Verified != 2 {
		t.Fatalf("result %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(e.DownloadDir(), "a.txt")); string(b) != "mine" {
		t.Fatal("an existing file was overwritten")
	}
	if b, _ := os.ReadFile(filepath.Join(e.DownloadDir(), "a (1).txt")); string(b) != "alpha" {
		t.Fatalf("a (1).txt: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(e.DownloadDir(), "album", "x", "b.bin")); len(b) != 100_000 {
		t.Fatal("the folder's file did not arrive")
	}
	noPartials(t, e.DownloadDir())
}

// A LocalSend app sends two files of one name (two report.pdf picked
// from two folders): both arrive, the second numbered, as LocalSend's own
// receiver keeps them. The second was refused ("names this file twice").
// Which is numbered goes by the files' IDs (id0 before id1), whichever is
// uploaded first, not by the order the uploads land in or the offer's map
// is read in.
func TestLocalSendSameNameTwiceBothArrive(t *testing.T) {
	first := lspeer.SendFile{ID: "id0", Name: "report.pdf", Data: []byte("first")}
	second := lspeer.SendFile{ID: "id1", Name: "report.pdf", Data: bytes.Repeat([]byte{2}, 300_000)}
	for _, tc := range []struct {
		name  string
		files []lspeer.SendFile
	}{
		{"in the offer's order", []lspeer.SendFile{first, second}},
		{"the second uploaded first", []lspeer.SendFile{second, first}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, srv, addr := lsEngine(t, Options{}, LocalSendOptions{})
			res := receivedResult(t, e)
			sr, err := testPeer(t).Send(context.Background(), addr, srv.Fingerprint(), true, "", "", tc.files, nil)
			if err != nil || sr.PrepareStatus != 200 {
				t.Fatalf("%+v %v", sr, err)
			}
			if r := <-res; r.State != StateDone || r.Files != 2 || r.Verified != 2 {
				t.Fatalf("result %+v", r)
			}
			got := map[string]int{}
			for _, name := range []string{"report.pdf", "report (1).pdf"} {
				b, err := os.ReadFile(filepath.Join(e.DownloadDir(), name))
				if err != nil {
					t.Fatal(err)
				}
				got[name] = len(b)
			}
			if got["report.pdf"] != 5 || got["report (1).pdf"] != 300_000 {
				t.Errorf("saved %v, want report.pdf of 5 bytes (id0) and report (1).pdf of 300000 (id1)", got)
			}
			noPartials(t, e.DownloadDir())
		})
	}
}

// A LocalSend app's file with its modification time (metadata.modified)
// keeps it; one without gets the time it arrived; one whose time cannot
// be read arrives all the same.
func TestLocalSendKeepsModificationTimes(t *testing.T) {
	e, srv, addr := lsEngine(t, Options{}, LocalSendOptions{})
	res := receivedResult(t, e)
	files := []lspeer.SendFile{
		{Name: "IMG_0420.jpg", Data: []byte("photo"), Modified: "2017-06-30T14:05:01.5+02:00"},
		{Name: "plain.txt", Data: []byte("text")},
		{Name: "odd.txt", Data: []byte("odd"), Modified: "yesterday"},
	}
	sr, err := testPeer(t).Send(context.Background(), addr, srv.Fingerprint(), true, "", "", files, nil)
	if err != nil || sr.PrepareStatus != 200 {
		t.Fatalf("%+v %v", sr, err)
	}
	if r := <-res; r.State != StateDone || r.Verified != 3 {
		t.Fatalf("result %+v", r)
	}
	stat := func(name string) time.Time {
		st, err := os.Stat(filepath.Join(e.DownloadDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		return st.ModTime()
	}
	if got, want := stat("IMG_0420.jpg"), time.Date(2017, 6, 30, 12, 5, 1, 500_000_000, time.UTC); !got.Equal(want) {
		t.Errorf("IMG_0420.jpg modified %v, want %v", got, want)
	}
	for _, name := range []string{"plain.txt", "odd.txt"} {
		if age := time.Since(stat(name)); age < 0 || age > time.Hour {
			t.Errorf("%s modified %v, want about now", name, stat(name))
		}
	}
}

func TestLocalSendPromptSaysLocalSend(t *testing.T) {
	e, srv, addr := lsEngine(t, Options{Accept: AcceptAsk}, LocalSendOptions{})
	events, unsub := e.Subscribe(256)
	defer unsub()
	p := testPeer(t)
	done := make(chan *lspeer.SendResult, 1)
	go func() {
		sr, _ := p.Send(context.Background(), addr, srv.Fingerprint(), false, "", "", []lspeer.SendFile{{Name: "n.txt", Data: []byte("x")}}, nil)
		done <- sr
	}()
	for ev := range events {
		if ev.Kind != EventOffer || ev.Direction != Receiving {
			continue
		}
		pi := ev.Peer
		if pi.Protocol != ProtocolLocalSend || pi.Name != "Pixel" || pi.Model != "lspeer" || !strings.EqualFold(pi.Fingerprint, p.Fingerprint) || !pi.Unverified || pi.Trusted {
			t.Fatalf("prompt peer %+v", pi)
		}
		if err := e.Decide(ev.TransferID, Decision{Accept: false}); err != nil {
			t.Fatal(err)
		}
		break
	}
	if sr := <-done; sr == nil || sr.PrepareStatus != http.StatusForbidden {
		t.Fatalf("declined offer answered %+v", sr)
	}
}

func TestLocalSendClaimedTrustedFingerprintIsRefused(t *testing.T) {
	e, srv, addr := lsEngine(t, Options{Accept: AcceptTrusted}, LocalSendOptions{})
	p := testPeer(t)
	// The real device is trusted.
	if err := e.SetTrusted(mustFingerprint(t, p.Fingerprint).String(), true); err != nil {
		t.Fatal(err)
	}
	// With its certificate it gets through; claiming its fingerprint
	// without the certificate does not.
	one := []lspeer.SendFile{{Name: "t.txt", Data: []byte("x")}}
	res := receivedResult(t, e)
	if sr, err := p.Send(context.Background(), addr, srv.Fingerprint(), true, "", "", one, nil); err != nil || sr.PrepareStatus != 200 {
		t.Fatalf("trusted device: %+v %v", sr, err)
	}
	if r := <-res; r.State != StateDone {
		t.Fatalf("%+v", r)
	}
	if sr, err := p.Send(context.Background(), addr, srv.Fingerprint(), false, "", "", one, nil); err != nil || sr.PrepareStatus != http.StatusForbidden {
		t.Fatalf("unproven claim: %+v %v", sr, err)
	}
}

func TestLocalSendChecksumLeavesNothing(t *testing.T) {
	e, srv, addr := lsEngine(t, Options{}, LocalSendOptions{})
	res := receivedResult(t, e)
	p := testPeer(t)
	sr, err := p.Send(context.Background(), addr, srv.Fingerprint(), true, "", "", []lspeer.SendFile{{Name: "bad.bin", Data: []byte("data"), SHA256: strings.Repeat("0", 64)}}, nil)
	if err != nil || sr.UploadStatus["bad.bin"] != http.StatusUnprocessableEntity {
		t.Fatalf("%+v %v", sr, err)
	}
	if r := <-res; r.State != StateFailed || r.Verified != 0 {
		t.Fatalf("result %+v", r)
	}
	emptyDir(t, e.DownloadDir())
}

func TestLocalSendText(t *testing.T) {
	e, srv, addr := lsEngine(t, Options{}, LocalSendOptions{})
	res := receivedResult(t, e)
	p := testPeer(t)
	sr, err := p.Send(context.Background(), addr, srv.Fingerprint(), true, "", "https://example.org/a link", nil, nil)
	if err != nil || sr.PrepareStatus != http.StatusNoContent {
		t.Fatalf("%+v %v", sr, err)
	}
	if r := <-res; r.State != StateDone || r.Text != "https://example.org/a link" {
		t.Fatalf("result %+v", r)
	}
	emptyDir(t, e.DownloadDir())
}

// lsPeerServer serves the test peer on 127.0.0.1:0.
func lsPeerServer(t *testing.T, p *lspeer.Peer) LocalSendTarget {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	t.Cleanup(func() { p.Close(); <-done })
	return LocalSendTarget{Addr: ln.Addr().String(), Fingerprint: p.Fingerprint, Alias: p.Alias}
}

func lsSendWait(t *testing.T, e *Engine, to LocalSendTarget, items Items, opts LocalSendSendOptions) (*Transfer, Result) {
	t.Helper()
	tr, err := e.SendLocalSend(context.Background(), to, items, opts)
	if err != nil {
		t.Fatal(err)
	}
	<-tr.Done()
	return tr, tr.Result()
}

// Ferry sends a file's modification time to a LocalSend device, as the
// apps do: a Ferry receiving over LocalSend keeps it.
func TestLocalSendSendCarriesModificationTimes(t *testing.T) {
	recv, srv, addr := lsEngine(t, Options{}, LocalSendOptions{})
	send := testEngine(t, Options{})
	p := filepath.Join(t.TempDir(), "IMG_0420.jpg")
	writeFile(t, p, 70_000)
	when := time.Date(2016, 2, 29, 23, 59, 58, 987654321, time.UTC)
	if err := os.Chtimes(p, when, when); err != nil {
		t.Fatal(err)
	}
	_, res := lsSendWait(t, send, LocalSendTarget{Addr: addr, Fingerprint: srv.Fingerprint()}, Items{Paths: []string{p}}, LocalSendSendOptions{})
	if res.State != StateDone {
		t.Fatalf("send: %s %q", res.State, res.Err)
	}
	st, err := os.Stat(filepath.Join(recv.DownloadDir(), "IMG_0420.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	if !st.ModTime().Equal(when) {
		t.Fatalf("received modified %v, want %v", st.ModTime(), when)
	}
}

func TestLocalSendSendFilesFolderText(t *testing.T) {
	e := testEngine(t, Options{})
	p := testPeer(t)
	p.RequireClientCert = true
	to := lsPeerServer(t, p)
	src := t.TempDir()
	a := writeFile(t, filepath.Join(src, "a.bin"), 70_000)
	for i := range 12 {
		writeFile(t, filepath.Join(src, "dir", "sub", "f"+strings.Repeat("x", i)+".txt"), 100+i)
	}
	if err := os.MkdirAll(filepath.Join(src, "dir", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	events, unsub := e.Subscribe(256)
	defer unsub()
	_, r := lsSendWait(t, e, to, Items{Paths: []string{filepath.Join(src, "a.bin"), filepath.Join(src, "dir")}, Text: "and a note"}, LocalSendSendOptions{})
	// Files and Verified count the text too (it went as text.txt): it
	// counted in Files, not in Verified, and the CLI ended "1 of 2 files
	// verified" with an error after every one arrived.
	if r.State != StateDone || r.Files != 14 || r.Verified != 14 {
		t.Fatalf("result %+v", r)
	}
	// LocalSend carries files only: the empty folder is not sent, and the
	// send says so.
	var skipped *SkippedInfo
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventOffer {
			skipped = ev.Offer.Skipped
		}
	}
	if skipped == nil || skipped.Summary() != "1 empty folder (LocalSend takes files only)" || !slices.Contains(skipped.Examples, "dir/empty/") {
		t.Errorf("skipped %+v", skipped)
	}
	got, _, offers, _, _, _ := p.Snapshot()
	if !bytes.Equal(got["a.bin"], a) || len(got["dir/sub/fxxx.txt"]) != 103 {
		t.Fatalf("peer got %d files", len(got))
	}
	// LocalSend has no text beside files: the text goes as a .txt file.
	if len(got) != 14 || string(got["text.txt"]) != "and a note" {
		t.Fatalf("peer got %d files, text %q", len(got), got["text.txt"])
	}
	if info := offers[0]["info"].(map[string]any); !strings.EqualFold(info["fingerprint"].(string), localsendFingerprint(t, e)) {
		t.Fatalf("the offer's fingerprint is not Ferry's certificate's: %v", info)
	}
}

// A device given by its address alone is asked its name first, as
// LocalSend apps do with an address typed in: the transfer names it ("Declined
// by Pixel.", not "by the other device"). One that does not say is sent to
// all the same.
func TestLocalSendSendByAddressLearnsTheName(t *testing.T) {
	e := testEngine(t, Options{})
	p := testPeer(t)
	p.Decline = true
	to := lsPeerServer(t, p)
	to.Alias = ""
	tr, r := lsSendWait(t, e, to, Items{Text: "hi"}, LocalSendSendOptions{})
	if r.State != StateDeclined || r.Err != "Declined by Pixel." {
		t.Fatalf("result %+v", r)
	}
	if name := tr.peerName(); name != "Pixel" {
		t.Errorf("peer %q", name)
	}
	// A receiver that does not give its info.
	p.Decline, p.NoInfo = false, true
	if _, r := lsSendWait(t, e, to, Items{Text: "hi"}, LocalSendSendOptions{}); r.State != StateDone {
		t.Fatalf("to a device that does not give its info: %+v", r)
	}
}

func localsendFingerprint(t *testing.T, e *Engine) string {
	t.Helper()
	c, err := e.LocalSendCert()
	if err != nil {
		t.Fatal(err)
	}
	return localsendCertFingerprint(c)
}

func TestLocalSendSendDeclinedAndPIN(t *testing.T) {
	e := testEngine(t, Options{})
	p := testPeer(t)
	p.Decline = true
	to := lsPeerServer(t, p)
	_, r := lsSendWait(t, e, to, Items{Text: "hi"}, LocalSendSendOptions{})
	if r.State != StateDeclined || r.Err != "Declined by Pixel." {
		t.Fatalf("result %+v", r)
	}
	p.Decline, p.PIN = false, "77"
	_, r = lsSendWait(t, e, to, Items{Text: "hi"}, LocalSendSendOptions{})
	if r.State != StateDeclined || r.Err != "Pixel asks for a PIN: ask its owner for it and send again with it." {
		t.Fatalf("no PIN: %+v", r)
	}
	_, r = lsSendWait(t, e, to, Items{Text: "hi"}, LocalSendSendOptions{AskPIN: func(context.Context, bool) (string, error) { return "77", nil }})
	if r.State != StateDone {
		t.Fatalf("with the PIN asked: %+v", r)
	}
	// A wrong PIN given, and none more: it says the PIN was wrong, not
	// that one is needed.
	tries := 0
	_, r = lsSendWait(t, e, to, Items{Text: "hi"}, LocalSendSendOptions{AskPIN: func(context.Context, bool) (string, error) {
		if tries++; tries == 1 {
			return "99", nil
		}
		return "", errors.New("no more PINs")
	}})
	if r.State != StateDeclined || r.Err != "Pixel refused the PIN: it was wrong." {
		t.Fatalf("a wrong PIN: %+v", r)
	}
	// Wrong PINs until the receiver turns this device away: its rule,
	// not its owner declining anything.
	_, r = lsSendWait(t, e, to, Items{Text: "hi"}, LocalSendSendOptions{AskPIN: func(context.Context, bool) (string, error) {
		return "99", nil
	}})
	if r.State != StateDeclined || r.Err != "Pixel turned this device away after 3 wrong PINs; try again in a few minutes." {
		t.Fatalf("locked out: %+v", r)
	}
}

func TestLocalSendRetrySendsOnlyUnfinished(t *testing.T) {
	e := testEngine(t, Options{RetryFor: -1})
	p := testPeer(t)
	fail := true
	p.FailUpload = func(name string) bool { return fail && name == "b.bin" }
	to := lsPeerServer(t, p)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a.bin"), 1000)
	b := writeFile(t, filepath.Join(src, "b.bin"), 2000)
	tr, r := lsSendWait(t, e, to, Items{Paths: []string{filepath.Join(src, "a.bin"), filepath.Join(src, "b.bin")}}, LocalSendSendOptions{})
	if r.State != StateFailed || r.Verified != 1 {
		t.Fatalf("first attempt %+v", r)
	}
	fail = false
	tr2, err := e.Retry(context.Background(), tr.ID())
	if err != nil {
		t.Fatal(err)
	}
	<-tr2.Done()
	if r := tr2.Result(); r.State != StateDone || r.Verified != 2 {
		t.Fatalf("retry %+v", r)
	}
	if n := p.UploadCount("a.bin"); n != 1 {
		t.Fatalf("a.bin was uploaded %d times; Retry must re-send only what did not arrive", n)
	}
	if got, _, _, _, _, _ := p.Snapshot(); !bytes.Equal(got["b.bin"], b) {
		t.Fatal("b.bin did not arrive on retry")
	}
}

func localsendCertFingerprint(c tls.Certificate) string { return localsend.CertFingerprint(c) }

func mustFingerprint(t *testing.T, fp string) peer.ID {
	t.Helper()
	id, err := peer.Fingerprint(fp)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestLocalSendLeftOutFilesAreTold: a LocalSend receiver may take only some
// of the offered files (its user unticks one). The send is done, but the
// result counts the one left out as refused, with a file event that says
// so, and the attempt that reconnects after a failed upload does not offer
// it again; the result names what carried it.
func TestLocalSendLeftOutFilesAreTold(t *testing.T) {
	e := testEngine(t, Options{})
	p := testPeer(t)
	p.Skip = func(name string) bool { return name == "b.bin" }
	var failed atomic.Bool
	p.FailUpload = func(name string) bool { return name == "a.bin" && failed.CompareAndSwap(false, true) }
	to := lsPeerServer(t, p)
	src := t.TempDir()
	a := writeFile(t, filepath.Join(src, "a.bin"), 1000)
	writeFile(t, filepath.Join(src, "b.bin"), 2000)
	c := writeFile(t, filepath.Join(src, "c.bin"), 3000)
	events, unsub := e.Subscribe(256)
	defer unsub()
	_, r := lsSendWait(t, e, to, Items{Paths: []string{filepath.Join(src, "a.bin"), filepath.Join(src, "b.bin"), filepath.Join(src, "c.bin")}}, LocalSendSendOptions{})
	if r.State != StateDone || r.Verified != 2 || r.Refused != 1 || r.Files != 2 {
		t.Fatalf("result %+v; want done, 2 of 2 verified, 1 refused", r)
	}
	if r.Transport != "https" {
		t.Fatalf("transport %q, want https", r.Transport)
	}
	got, _, offers, _, _, _ := p.Snapshot()
	if !bytes.Equal(got["a.bin"], a) || !bytes.Equal(got["c.bin"], c) || got["b.bin"] != nil {
		t.Fatalf("peer got %d files", len(got))
	}
	if !failed.Load() || len(offers) != 2 {
		t.Fatalf("%d offers; want the first and one after the failed upload", len(offers))
	}
	if files := offers[1]["files"].(map[string]any); len(files) != 1 {
		t.Fatalf("the second offer holds %d files; want only a.bin, which did not arrive", len(files))
	}
	told := 0
	for ev := range events {
		if ev.Kind == EventResult {
			break
		}
		if ev.Kind == EventFile && ev.File.Path == "b.bin" {
			told++
			if ev.File.Verified || ev.File.Err != "Pixel did not take this file." {
				t.Fatalf("b.bin's event %+v", ev.File)
			}
		}
	}
	if told != 1 {
		t.Fatalf("b.bin told %d times, want once", told)
	}
}

// A receiver that goes away in the middle of an upload ends the send in a
// sentence ("The connection to Pixel was lost"), never the HTTP client's
// raw error, whose URL holds the session's token.
func TestLocalSendReceiverGoneMidUpload(t *testing.T) {
	e := testEngine(t, Options{RetryFor: -1})
	p := testPeer(t)
	var once sync.Once
	p.UploadStarted = func(name string) { once.Do(func() { go p.Close() }) }
	to := lsPeerServer(t, p)
	src := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, src, 8<<20)
	_, r := lsSendWait(t, e, to, Items{Paths: []string{src}}, LocalSendSendOptions{})
	if r.State != StateFailed || strings.Contains(r.Err, "token=") || strings.Contains(r.Err, "Post ") || strings.Contains(r.Detail, "token=") {
		t.Fatalf("result %s %q (%s)", r.State, r.Err, r.Detail)
	}
	if !strings.HasPrefix(r.Err, "The connection to Pixel was lost") {
		t.Fatalf("result %q, want the connection to Pixel lost", r.Err)
	}
}

// A LocalSend sender that goes away while its offer is asked about ends
// it as a lost connection, not as "Ferry was closed before the transfer
// finished" (a request's plain cancel read so).
func TestLocalSendSenderGoneWhileAsked(t *testing.T) {
	e, srv, addr := lsEngine(t, Options{Accept: AcceptAsk}, LocalSendOptions{})
	events, unsub := e.Subscribe(256)
	defer unsub()
	p := testPeer(t)
	ctx, gone := context.WithCancel(context.Background())
	defer gone()
	go p.Send(ctx, addr, srv.Fingerprint(), false, "", "", []lspeer.SendFile{{Name: "n.txt", Data: []byte("x")}}, nil)
	for ev := range events {
		if ev.Kind == EventOffer && ev.Direction == Receiving {
			gone() // the phone's user closed the app
		}
		if ev.Kind == EventResult && ev.Direction == Receiving {
			if r := ev.Result; r.State != StateFailed || !strings.HasPrefix(r.Err, "The connection to Pixel was lost") {
				t.Fatalf("result %s %q", r.State, r.Err)
			}
			return
		}
	}
}

// A LocalSend upload cut short leaves no partial: LocalSend has no resume,
// and nothing listed or aged out the partial it used to keep.
func TestLocalSendCutUploadLeavesNothing(t *testing.T) {
	e, srv, addr := lsEngine(t, Options{}, LocalSendOptions{})
	res := receivedResult(t, e)
	p := testPeer(t)
	cut := io.MultiReader(bytes.NewReader(make([]byte, 300_000)), iotest.ErrReader(errors.New("the phone went away")))
	p.Send(context.Background(), addr, srv.Fingerprint(), true, "", "", []lspeer.SendFile{{Name: "cut.bin", Body: cut, Size: 1 << 20}}, nil)
	// Said as what it was: the sender stopped, not "Read or write error"
	// nor "the upload was not the size offered".
	if r := <-res; r.State == StateDone || r.Verified != 0 || !strings.HasPrefix(r.Err, "The connection to Pixel was lost") {
		t.Fatalf("result %+v", r)
	}
	if ents, _ := os.ReadDir(e.DownloadDir()); len(ents) != 0 {
		t.Fatalf("left in the download folder: %v", ents)
	}
}
