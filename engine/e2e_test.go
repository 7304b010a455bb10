package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
)

func transportsUnderTest() []string {
	var out []string
	for _, k := range transportTable(TransportConfig{}, nil) {
		out = append(out, string(k.Kind))
	}
	return out
}

// receivedResult delivers the result of the next transfer e receives.
func receivedResult(t *testing.T, e *Engine) <-chan Result {
	t.Helper()
	events, unsub := e.Subscribe(4096)
	out := make(chan Result, 1)
	go func() {
		defer unsub()
		for ev := range events {
			if ev.Kind == EventResult && ev.Direction == Receiving && ev.Result != nil {
				out <- *ev.Result
				return
			}
		}
		close(out)
	}()
	return out
}

func TestTransferEndToEnd(t *testing.T) {
	for _, tp := range transportsUnderTest() {
		t.Run(tp, func(t *testing.T) {
			recv := startReceiver(t, Options{})
			send := testEngine(t, Options{})
			src := t.TempDir()

			big := filepath.Join(src, "big.bin")
			writeFile(t, big, 37<<20+12345) // not a multiple of the chunk size
			tree := filepath.Join(src, "tree")
			for i := 0; i < 500; i++ {
				writeFile(t, filepath.Join(tree, "many", fmt.Sprintf("f%03d.dat", i)), i*37%5000)
			}
			deep := tree
			for i := 0; i < 30; i++ {
				deep = filepath.Join(deep, fmt.Sprintf("d%d", i))
			}
			writeFile(t, filepath.Join(deep, "leaf.txt"), 100)
			writeFile(t, filepath.Join(tree, "empty"), 0)
			writeFile(t, filepath.Join(tree, "ünïcødé 文件 🚀.txt"), 999)

			got := receivedResult(t, recv)
			res := sendWait(t, send, target(recv), []string{big, tree}, SendOptions{Transport: tp})
			if res.State != StateDone {
				t.Fatalf("state %s: %s", res.State, res.Err)
			}
			// The receiving side reports its streams' stalls (head-of-line
			// blocking) with the threshold it used.
			if rr := <-got; rr.Verified != 504 || rr.Stalls == nil || rr.Stalls.ThresholdMs < 10 {
				t.Errorf("receiver's result: %+v, stalls %+v", rr, rr.Stalls)
			}
			if res.Verified != res.Files || res.Files != 504 {
				t.Fatalf("verified %d of %d files, want 504", res.Verified, res.Files)
			}
			if res.Transport != tp {
				t.Errorf("transport %s, want %s", res.Transport, tp)
			}
			dl := recv.DownloadDir()
			sameTree(t, big, dl)
			if n := sameTree(t, tree, dl); n != 503 {
				t.Errorf("%d files in tree, want 503", n)
			}
			noPartials(t, dl)
		})
	}
}

func TestExistingFileIsNeverOverwritten(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	src := t.TempDir()
	p := filepath.Join(src, "report.pdf")
	want := writeFile(t, p, 5000)
	old := []byte("precious data already here")
	os.WriteFile(filepath.Join(recv.DownloadDir(), "report.pdf"), old, 0o644)
	for i := 1; i <= 2; i++ {
		res := sendWait(t, send, target(recv), []string{p}, SendOptions{Transport: "quic"})
		if res.State != StateDone {
			t.Fatalf("state %s: %s", res.State, res.Err)
		}
		got, err := os.ReadFile(filepath.Join(recv.DownloadDir(), fmt.Sprintf("report (%d).pdf", i)))
		if err != nil || !bytes.Equal(got, want) {
			ents, _ := os.ReadDir(recv.DownloadDir())
			for _, e := range ents {
				t.Logf("in the folder: %q", e.Name())
			}
			t.Fatalf("copy %d: %v (%+v)", i, err, res)
		}
	}
	got, _ := os.ReadFile(filepath.Join(recv.DownloadDir(), "report.pdf"))
	if !bytes.Equal(got, old) {
		t.Fatal("existing file was overwritten")
	}
}

func TestDeclineAndAsk(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{})
	events, unsub := recv.Subscribe(64)
	defer unsub()
	src := t.TempDir()
	p := filepath.Join(src, "a.txt")
	writeFile(t, p, 10)
	go func() {
		for ev := range events {
			if ev.Kind == EventOffer {
				if ev.Peer.ID != send.ID() || len(ev.Offer.Files) != 1 || ev.Offer.Files[0].Path != "a.txt" {
					t.Errorf("offer event %+v", ev)
				}
				if o := ev.Offer; o.TotalBytes != 10 || o.DiskBytes != 4096 || o.FreeBytes < o.DiskBytes {
					t.Errorf("offer of %d bytes taking %d on disk, %d free; want 10, one block, and room", o.TotalBytes, o.DiskBytes, o.FreeBytes)
				}
				recv.Decide(ev.TransferID, Decision{Accept: false, Reason: "not now"})
			}
		}
	}()
	res := sendWait(t, send, target(recv), []string{p}, SendOptions{Transport: "quic"})
	if res.State != StateDeclined || !strings.Contains(res.Err, "not now") {
		t.Fatalf("got %s %q, want declined with the reason", res.State, res.Err)
	}
	entries, _ := os.ReadDir(recv.DownloadDir())
	if len(entries) != 0 {
		t.Fatalf("declined transfer wrote %v", entries)
	}
}

func TestTrustedOnlyRefusesStrangers(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptTrusted})
	send := testEngine(t, Options{})
	p := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, p, 10)
	res := sendWait(t, send, target(recv), []string{p}, SendOptions{Transport: "quic"})
	if res.State != StateDeclined {
		t.Fatalf("got %s %q, want declined", res.State, res.Err)
	}
	if err := recv.SetTrusted(send.ID(), true); err != nil {
		t.Fatal(err)
	}
	res = sendWait(t, send, target(recv), []string{p}, SendOptions{Transport: "quic"})
	if res.State != StateDone {
		t.Fatalf("trusted sender: %s %q", res.State, res.Err)
	}
}

func TestPinnedIDMismatchIsRefused(t *testing.T) {
	recv := startReceiver(t, Options{})
	other := testEngine(t, Options{})
	send := testEngine(t, Options{})
	p := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, p, 10)
	to := target(recv)
	to.ID = other.ID()
	for _, tp := range transportsUnderTest() {
		res := sendWait(t, send, to, []string{p}, SendOptions{Transport: tp})
		if res.State != StateFailed || !strings.Contains(res.Err, "not the expected device") || res.PresentedID != recv.ID() {
			t.Fatalf("%s: got %s %q, presented %q", tp, res.State, res.Err, res.PresentedID)
		}
	}
	to.ID = recv.ID()
	if res := sendWait(t, send, to, []string{p}, SendOptions{Transport: "quic"}); res.State != StateDone {
		t.Fatalf("right ID: %s %q", res.State, res.Err)
	}
}

func TestKnownAddressWithNewKeyIsRefused(t *testing.T) {
	cfg := t.TempDir()
	recv := startReceiver(t, Options{ConfigDir: cfg})
	send := testEngine(t, Options{})
	p := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, p, 10)
	to := target(recv)
	if res := sendWait(t, send, to, []string{p}, SendOptions{Transport: "quic"}); res.State != StateDone {
		t.Fatal(res.Err)
	}
	recv.Close()
	// A different device takes over the same address.
	imp := startReceiver(t, Options{Listen: hostPortOf(to, addr.QUIC), NoListen: onlyListen("quic")})
	_ = imp
	res := sendWait(t, send, targetAt(addr.QUIC, hostPortOf(to, addr.QUIC)), []string{p}, SendOptions{Transport: "quic"})
	if res.State != StateFailed || !strings.Contains(res.Err, "different key") {
		t.Fatalf("got %s %q", res.State, res.Err)
	}
}

// A send cancelled mid-way leaves the receiver its .partial (for resume),
// never a final-named file. The gate holds the data after 4 MiB of 64, so
// the cancel comes mid-way for certain.
func TestCancelBySenderLeavesNoFinalFile(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	p := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, p, 64<<20)
	gate := newTCPGate(t, listening(recv, addr.TCP), 4<<20)
	got := resultsOf(t, recv, Receiving, 1)
	recvEvents, unsub := recv.Subscribe(4096)
	t.Cleanup(unsub)
	tr, err := send.Send(context.Background(), targetAt(addr.TCP, gate.Addr()), []string{p}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-gate.Held():
	case <-tr.Done():
		t.Fatalf("ended before 4 MiB of 64 passed: %+v", tr.Result())
	}
	// The receiver counts a chunk once it landed and was journaled: wait for
	// one, or (on a loaded machine) the cancel may come before any chunk
	// landed and there is rightly nothing to resume.
	for landed := false; !landed; {
		select {
		case ev := <-recvEvents:
			landed = ev.Kind == EventProgress && ev.Direction == Receiving && ev.Progress.Bytes > 0
		case <-time.After(30 * time.Second):
			t.Fatal("the receiver landed no chunk of the 4 MiB the gate let through")
		}
	}
	tr.Cancel()
	<-tr.Done()
	if r := tr.Result(); r.State != StateCancelled {
		t.Fatalf("state %s %q", r.State, r.Err)
	}
	gate.Release() // the receiver hears the end
	if r := next(t, got); r.State != StateCancelled && r.State != StateInterrupted {
		t.Fatalf("receiver: %s %q", r.State, r.Err)
	}
	// Its session has ended: the resume state is saved by then.
	if len(recv.Partials()) == 0 {
		t.Fatal("the receiver saved no resume state")
	}
	entries, _ := os.ReadDir(recv.DownloadDir())
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".partial") {
			t.Errorf("final-named file after cancel: %s", e.Name())
		}
	}
}

func TestNothingToSend(t *testing.T) {
	send := testEngine(t, Options{})
	_, err := send.Send(context.Background(), Target{Addrs: AddrsAt("127.0.0.1:1")}, []string{t.TempDir()}, SendOptions{})
	if !errors.Is(err, ErrNothingToSend) {
		t.Fatalf("err = %v", err)
	}
	_, err = send.Send(context.Background(), Target{Addrs: AddrsAt("127.0.0.1:1")}, []string{"/does/not/exist"}, SendOptions{})
	if err == nil {
		t.Fatal("missing path accepted")
	}
	// A folder of links says what it holds instead (the folder itself, with
	// nothing to send in it, is the empty one).
	links := t.TempDir()
	if err := os.Symlink("/etc/hostname", filepath.Join(links, "host")); err != nil {
		t.Fatal(err)
	}
	_, err = send.Send(context.Background(), Target{Addrs: AddrsAt("127.0.0.1:1")}, []string{links}, SendOptions{})
	if want := "nothing to send: no regular files in the given paths; they hold only 1 symbolic link (not followed), 1 empty folder"; !errors.Is(err, ErrNothingToSend) || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}
