package engine

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/wire"
)

// unreadableSend offers a folder of four files to recv, which asks; as the
// offer arrives (before any byte is read) one file is deleted and one cut
// short. It returns the send's result and the sender's file events and
// states.
func unreadableSend(t *testing.T, recv *Engine, tp string) (src string, res Result, files map[string]FileResult, states []State) {
	t.Helper()
	send := testEngine(t, Options{RetryFor: 5 * time.Second})
	src = filepath.Join(t.TempDir(), "folder")
	writeFile(t, filepath.Join(src, "a.txt"), 1000)
	writeFile(t, filepath.Join(src, "gone.txt"), 2000)
	writeFile(t, filepath.Join(src, "short.bin"), 8<<20) // several chunks
	writeFile(t, filepath.Join(src, "z.txt"), 3000)
	offers, unsub := recv.Subscribe(256)
	t.Cleanup(unsub)
	go func() {
		for ev := range offers {
			if ev.Kind == EventOffer && ev.Direction == Receiving {
				os.Remove(filepath.Join(src, "gone.txt"))
				os.Truncate(filepath.Join(src, "short.bin"), 1<<20)
				recv.Decide(ev.TransferID, Decision{Accept: true})
			}
		}
	}()
	events, unsubSend := send.Subscribe(1024)
	var mu sync.Mutex
	files = map[string]FileResult{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			mu.Lock()
			switch {
			case ev.Kind == EventFile:
				files[ev.File.Path] = *ev.File
			case ev.Kind == EventState:
				states = append(states, ev.State)
			}
			mu.Unlock()
		}
	}()
	res = sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp})
	unsubSend()
	<-done
	return src, res, files, states
}

// A file that cannot be read on the sending device (deleted after it was
// offered, cut short while it is sent) is not sent: the receiver gives it
// up, the others arrive, and the send ends at once, failed, saying which
// and why. It looped on reconnects for two minutes and ended "gave up",
// every file of the folder lost to one unreadable one.
func TestUnreadableFilesAreNotSent(t *testing.T) {
	for _, tp := range transportsUnderTest() {
		t.Run(tp, func(t *testing.T) {
			recv := startReceiver(t, Options{Accept: AcceptAsk})
			got := receivedResult(t, recv)
			src, res, files, states := unreadableSend(t, recv, tp)
			if res.State != StateFailed || res.Verified != 2 || res.Files != 4 ||
				!strings.HasPrefix(res.Err, "2 of 4 files could not be sent; the first: it could not be read on this device (") ||
				!strings.HasSuffix(res.Err, "; the others arrived.") {
				t.Fatalf("send: %s %q (%d of %d verified)", res.State, res.Err, res.Verified, res.Files)
			}
			for _, s := range states {
				if s == StateRetrying {
					t.Error("the send reconnected: an unreadable file is no lost connection")
				}
			}
			for name, want := range map[string]string{"gone.txt": "no such file", "short.bin": "became shorter"} {
				f, ok := files["folder/"+name]
				if !ok || f.Verified || !strings.HasPrefix(f.Err, "Not sent: it could not be read on this device") || !strings.Contains(f.Err, want) {
					t.Errorf("%s: %+v, want not sent: %s", name, f, want)
				}
			}
			r := <-got
			if r.State != StateFailed || r.Verified != 2 || !strings.Contains(r.Err, "2 of 4 files could not be read on the sending device") {
				t.Errorf("receiver: %s %q (%d verified)", r.State, r.Err, r.Verified)
			}
			dst := filepath.Join(recv.DownloadDir(), "folder")
			for _, name := range []string{"a.txt", "z.txt"} {
				sameTree(t, filepath.Join(src, name), dst)
			}
			for _, name := range []string{"gone.txt", "short.bin"} {
				if _, err := os.Lstat(filepath.Join(dst, name)); err == nil {
					t.Errorf("%s was saved", name)
				}
			}
			noPartials(t, recv.DownloadDir())
		})
	}
}

// A receiver of an older build cannot be told that one file is not sent:
// the send ends at once, saying which file this device could not read,
// rather than reconnect for two minutes to meet it again.
func TestUnreadableFileEndsASendToAnOlderReceiver(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAsk})
	recv.features = []string{wire.FeatureResume, wire.FeatureText}
	if err := recv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, res, _, states := unreadableSend(t, recv, "tcp")
	if res.State != StateFailed || !strings.HasPrefix(res.Err, "Cannot read ") ||
		!(strings.Contains(res.Err, "no such file") || strings.Contains(res.Err, "became shorter")) {
		t.Fatalf("send: %s %q", res.State, res.Err)
	}
	for _, s := range states {
		if s == StateRetrying {
			t.Fatal("the send reconnected to meet the same file again")
		}
	}
}

// A send that failed here before its data stream carried a byte (its one
// file could not be read) ends at once: it waited for the receiver, which
// never heard of it, until the stall timeout (30 s; never, here, where the
// timeout is longer than sendWait's two minutes).
func TestAFailedSendDoesNotWaitForThePeer(t *testing.T) {
	long := TransportConfig{StallTimeout: 10 * time.Minute}
	recv := testEngine(t, Options{Accept: AcceptAsk, Transport: long})
	recv.features = []string{wire.FeatureResume, wire.FeatureText} // an older build: the send cannot go on without the file
	if err := recv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	send := testEngine(t, Options{Transport: long})
	src := filepath.Join(t.TempDir(), "gone.txt")
	writeFile(t, src, 2000)
	offers, unsub := recv.Subscribe(256)
	defer unsub()
	go func() {
		for ev := range offers {
			if ev.Kind == EventOffer && ev.Direction == Receiving {
				os.Remove(src)
				recv.Decide(ev.TransferID, Decision{Accept: true})
			}
		}
	}()
	res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: "tcp"})
	if res.State != StateFailed || !strings.Contains(res.Err, "no such file") {
		t.Fatalf("send: %s %q", res.State, res.Err)
	}
}

// lsSendMeddled sends a 32 MiB file to a LocalSend test peer, which calls
// meddle with the file's path as its upload starts; it returns the
// send's result, the file's path, whether the send ever retried, and how
// many files the peer kept.
func lsSendMeddled(t *testing.T, meddle func(path string)) (r Result, big string, retried bool, kept int) {
	t.Helper()
	e := testEngine(t, Options{})
	p := testPeer(t)
	big = filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, 32<<20)
	p.UploadStarted = func(name string) {
		if name == "big.bin" {
			meddle(big)
		}
	}
	to := lsPeerServer(t, p)
	events, unsub := e.Subscribe(1024)
	defer unsub()
	_, r = lsSendWait(t, e, to, Items{Paths: []string{big}}, LocalSendSendOptions{})
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventState && ev.State == StateRetrying {
			retried = true
		}
	}
	got, _, _, _, _, _ := p.Snapshot()
	return r, big, retried, len(got)
}

// A LocalSend receiver cannot be told that one file is not sent: a file cut
// short while it is uploaded ends the send at once, saying which file and
// why, rather than reconnecting for two minutes to meet it again.
func TestUnreadableFileEndsALocalSendSend(t *testing.T) {
	r, big, retried, _ := lsSendMeddled(t, func(path string) { os.Truncate(path, 1<<20) })
	if r.State != StateFailed || !strings.HasPrefix(r.Err, "Cannot read "+big+": it became shorter while it was being sent") {
		t.Fatalf("result %s %q", r.State, r.Err)
	}
	if retried {
		t.Fatal("the send reconnected to meet the same file again")
	}
}

// A file written to while it is uploaded to a LocalSend device would arrive
// as parts of two versions: its last bytes are not sent, so the receiver
// does not keep it, and the send says why.
func TestAFileChangedWhileSentToLocalSend(t *testing.T) {
	r, big, _, kept := lsSendMeddled(t, func(path string) {
		f, _ := os.OpenFile(path, os.O_WRONLY, 0)
		f.WriteAt([]byte("written meanwhile"), 16<<20)
		f.Close()
		os.Chtimes(path, time.Now(), time.Now().Add(time.Hour))
	})
	if r.State != StateFailed || r.Err != big+": it changed while it was being sent (send it again once it is written)." {
		t.Fatalf("result %s %q", r.State, r.Err)
	}
	if kept != 0 {
		t.Errorf("the receiver kept %d files", kept)
	}
}

// A file of several chunks written to while it is sent would arrive torn,
// its chunks from different versions, and verify (the receiver checks what
// was read): it is not sent, and says so. Here it is written to as the
// offer arrives, the same size, a new modification time.
func TestAFileChangedWhileSentIsNotSent(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{})
	src := filepath.Join(t.TempDir(), "folder")
	writeFile(t, filepath.Join(src, "a.txt"), 1000)
	growing := filepath.Join(src, "growing.bin")
	writeFile(t, growing, 8<<20) // several chunks
	events, unsub := recv.Subscribe(256)
	defer unsub()
	go func() {
		for ev := range events {
			if ev.Kind == EventOffer && ev.Direction == Receiving {
				f, _ := os.OpenFile(growing, os.O_WRONLY, 0)
				f.WriteAt([]byte("written meanwhile"), 4<<20)
				f.Close()
				later := time.Now().Add(2 * time.Second)
				os.Chtimes(growing, later, later)
				recv.Decide(ev.TransferID, Decision{Accept: true})
			}
		}
	}()
	res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: "tcp"})
	if res.State != StateFailed || res.Verified != 1 || res.Err != "1 of 2 files could not be sent: it changed while it was being sent (send it again once it is written); the others arrived." {
		t.Fatalf("send: %s %q (%d verified)", res.State, res.Err, res.Verified)
	}
	if _, err := os.Lstat(filepath.Join(recv.DownloadDir(), "folder", "growing.bin")); err == nil {
		t.Error("the changed file was saved")
	}
	sameTree(t, filepath.Join(src, "a.txt"), filepath.Join(recv.DownloadDir(), "folder"))
	noPartials(t, recv.DownloadDir())
}

// TestLocalSendReceiverThatStopsTakingTheFile: a LocalSend receiver that
// stops taking an upload (a phone asleep or out of range) ends the send in
// words that name it, after the stall timeout; before, the send stayed
// "active" at the same percentage until TCP gave up, some 15 minutes later.
func TestLocalSendReceiverThatStopsTakingTheFile(t *testing.T) {
	e := testEngine(t, Options{})
	p := testPeer(t)
	p.Alias = "Pixel"
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, 64<<20)
	asleep := make(chan struct{})
	defer close(asleep)
	p.UploadStarted = func(string) { <-asleep } // its body is never read
	to := lsPeerServer(t, p)
	_, r := lsSendWait(t, e, to, Items{Paths: []string{big}}, LocalSendSendOptions{StallTimeout: 300 * time.Millisecond})
	if r.State != StateFailed || r.Err != `Pixel stopped taking the files (asleep, or out of range?).` {
		t.Fatalf("result %s %q", r.State, r.Err)
	}
	if core.Retryable(&lsStalledError{who: "Pixel"}) {
		t.Error("tried again on its own: each attempt is taken and stalls again")
	}
}
