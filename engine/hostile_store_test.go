package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
)

// offerManifest offers files under a manifest ID, so the receiver keeps
// resume state for them.
func (p *rawPeer) offerManifest(manifest string, chunk int, files ...wire.FileEntry) {
	var total int64
	for _, f := range files {
		total += f.Size
	}
	p.ctl.send(&wire.Offer{Transfer: "t1", ChunkSize: chunk, Files: len(files), TotalBytes: total, Manifest: manifest})
	p.ctl.send(&wire.OfferFiles{Start: 0, Files: files})
}

// decisionOn offers files to recv as a raw peer and returns the decision
// it sent (nil when none came in 5 s).
func decisionOn(t *testing.T, recv *Engine, files ...wire.FileEntry) *wire.Decision {
	t.Helper()
	var d *wire.Decision
	runRaw(t, recv, func(p *rawPeer) {
		p.hello()
		p.offer(files...)
		d, _ = expect[*wire.Decision](p.ctl.recvTimeout(5 * time.Second))
		p.conn.Close(nil)
	})
	return d
}

// runRaw runs script against recv's serve and waits for both to end.
func runRaw(t *testing.T, recv *Engine, script func(p *rawPeer)) {
	t.Helper()
	p, done := connectRaw(t, recv)
	scripted := make(chan struct{})
	go func() {
		defer close(scripted)
		script(p)
		p.drain() // as a Ferry sender reads: the receiver's cancel need not wait out closeWith's bound
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // a bound for a stuck session, not a speed test
	}
	p.conn.Close(nil) // unblocks a script still reading or writing
	<-done
	<-scripted
}

// Issue #14 (1): a partial left by one device's transfer is never reused by
// another's, and a final file is exactly the declared size.
func TestStalePartialOfAnotherPeerIsNotReused(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAll})
	const chunk = 4096
	a := make([]byte, 4*chunk)
	for i := range a {
		a[i] = 'A'
	}
	events, unsub := recv.Subscribe(256)
	defer unsub()
	runRaw(t, recv, func(p *rawPeer) {
		p.hello()
		p.offerManifest("stale-a", chunk, wire.FileEntry{Path: "stale/report.txt", Size: int64(len(a))})
		if !p.waitAccepted() {
			return
		}
		var frames [][]byte
		for c := range 3 {
			d := a[c*chunk : (c+1)*chunk]
			frames = append(frames, frame(0, uint32(c), d, merkle.Leaf(d)))
		}
		p.data(frames...)
		// Drop the connection once the three chunks landed.
		for ev := range events {
			if ev.Kind == EventProgress && ev.Progress.Bytes == 3*chunk {
				break
			}
		}
		p.conn.Close(nil)
	})
	if n := len(recv.Partials()); n != 1 {
		t.Fatalf("%d resume states after the first peer dropped, want 1", n)
	}
	b := []byte("seventeen bytes!!")
	leaf := merkle.Leaf(b)
	var res wire.Message
	runRaw(t, recv, func(p *rawPeer) {
		p.hello()
		p.offerManifest("stale-b", chunk, wire.FileEntry{Path: "stale/report.txt", Size: int64(len(b))})
		if !p.waitAccepted() {
			return
		}
		p.data(frame(0, 0, b, leaf), rootFrame(0, merkle.Root([]merkle.Hash{leaf})))
		p.ctl.send(&wire.SenderDone{})
		p.ctl.recvTimeout(5 * time.Second) // the file's result
		res, _ = p.ctl.recvTimeout(5 * time.Second)
		p.conn.Close(nil)
	})
	if r, ok := res.(*wire.Result); !ok || !r.OK {
		t.Fatalf("second transfer: %#v", res)
	}
	got, err := os.ReadFile(filepath.Join(recv.DownloadDir(), "stale", "report.txt"))
	if err != nil || string(got) != string(b) {
		t.Fatalf("report.txt holds %d bytes (%v), want the 17 the second peer sent", len(got), err)
	}
	// The first peer's partial is still there, and still listed for its resume.
	if n := len(recv.Partials()); n != 1 {
		t.Errorf("%d resume states, want the first peer's", n)
	}
	if st, err := os.Stat(filepath.Join(recv.DownloadDir(), "stale", "report.txt.partial")); err != nil || st.Size() != 3*chunk {
		t.Errorf("the first peer's partial: %v, %v", st, err)
	}
}

// Issue #14 (7): every partial on disk is either listed for resume or gone.
func TestProtocolErrorLeavesNoUnlistedPartial(t *testing.T) {
	for _, manifest := range []string{"", "m1"} {
		t.Run("manifest="+manifest, func(t *testing.T) {
			recv := testEngine(t, Options{Accept: AcceptAll})
			good := make([]byte, 4096)
			runRaw(t, recv, func(p *rawPeer) {
				p.hello()
				p.offerManifest(manifest, 4096, wire.FileEntry{Path: "x.bin", Size: 2 * 4096})
				if p.waitAccepted() {
					// A good chunk, then a frame for a file that does not exist.
					p.data(frame(0, 0, good, merkle.Leaf(good)), frame(9, 0, good, merkle.Leaf(good)))
				}
			})
			listed := recv.Partials()
			var onDisk []string
			filepath.WalkDir(recv.DownloadDir(), func(path string, d os.DirEntry, err error) error {
				if err == nil && strings.HasSuffix(path, ".partial") {
					onDisk = append(onDisk, path)
				}
				return nil
			})
			switch {
			case manifest == "" && len(onDisk) != 0:
				t.Errorf("partials left without resume state: %v", onDisk)
			case manifest != "" && (len(onDisk) != 1 || len(listed) != 1 || listed[0].Bytes != 4096):
				t.Errorf("on disk %v, listed %+v; want the one partial, listed with its chunk", onDisk, listed)
			}
			if manifest != "" && len(listed) == 1 {
				if err := recv.DiscardPartial(listed[0].Key); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(onDisk[0]); !os.IsNotExist(err) {
					t.Errorf("Discard left %s: %v", onDisk[0], err)
				}
			}
		})
	}
}

// Issue #14 (9): one name the receiver cannot store refuses that file only;
// the prompt shows it escaped with the reason, the rest arrives, and both
// sides report the refusal per file.
func TestOneBadNameRefusesOnlyThatFile(t *testing.T) {
	recv := startReceiver(t, Options{Accept: AcceptAsk})
	send := testEngine(t, Options{})
	revents, unsub := recv.Subscribe(256)
	defer unsub()
	offers := make(chan *OfferInfo, 1)
	go func() {
		for ev := range revents {
			if ev.Kind == EventOffer {
				offers <- ev.Offer
				recv.Decide(ev.TransferID, Decision{Accept: true})
			}
		}
	}()
	src := filepath.Join(t.TempDir(), "album")
	for _, name := range []string{"ok.txt", "tab\there.txt", "photo\u202egpj.exe", "same.txt", "SAME.TXT"} {
		writeFile(t, filepath.Join(src, name), 100)
	}
	sevents, sunsub := send.Subscribe(256)
	defer sunsub()
	res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: "tcp"})
	if res.State != StateDone || res.Files != 3 || res.Verified != 3 || res.Refused != 2 {
		t.Fatalf("result %s %q: %d of %d verified, %d refused; want 3 of 3, 2 refused", res.State, res.Err, res.Verified, res.Files, res.Refused)
	}
	offer := <-offers
	refused := map[string]string{}
	for _, f := range offer.Files {
		if f.Refused != "" {
			refused[f.Path] = f.Refused
		}
	}
	if len(refused) != 2 || refused["album/tab\there.txt"] == "" || refused["album/photo\u202egpj.exe"] == "" {
		t.Errorf("the prompt's refused files: %q", refused)
	}
	var failed []string
	for len(sevents) > 0 {
		if ev := <-sevents; ev.Kind == EventFile && !ev.File.Verified {
			failed = append(failed, ev.File.Path+": "+ev.File.Err)
		}
	}
	if len(failed) != 2 {
		t.Errorf("sender's failed files: %q, want the two refused names", failed)
	}
	for _, name := range []string{"ok.txt", "same.txt", "SAME.TXT"} {
		if _, err := os.Stat(filepath.Join(recv.DownloadDir(), "album", name)); err != nil {
			t.Errorf("%s did not arrive: %v", name, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(recv.DownloadDir(), "album"))
	if len(entries) != 3 {
		t.Errorf("album holds %d entries, want 3", len(entries))
	}
}

// Issue #14 (3): an offer larger than the free space is refused with the
// figures before the user is asked.
func TestNoSpaceRefusedBeforeThePrompt(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAsk})
	events, unsub := recv.Subscribe(256)
	defer unsub()
	d := decisionOn(t, recv, wire.FileEntry{Path: "huge.bin", Size: 1 << 60})
	if d == nil || d.Accept || d.Code != wire.CodeNoSpace || !strings.Contains(d.Reason, "needed") {
		t.Fatalf("decision %+v, want a no-space refusal with the figures", d)
	}
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventOffer && ev.State == StateWaiting {
			t.Fatal("the user was asked about an offer that cannot fit")
		}
	}
}

// A download folder not made yet (~/Downloads on a fresh account: it is
// made with the first files) is measured where it will be made: an offer
// larger than that disk is refused with the figures too. The space check
// took the free space of the folder itself, which failed, and let every
// offer in (the prompt showed no free space either).
func TestNoSpaceRefusedForAFolderNotMadeYet(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAll, DownloadDir: filepath.Join(t.TempDir(), "Downloads", "Ferry")})
	d := decisionOn(t, recv, wire.FileEntry{Path: "huge.bin", Size: 1 << 60})
	if d == nil || d.Accept || d.Code != wire.CodeNoSpace || !strings.Contains(d.Reason, "needed") {
		t.Fatalf("decision %+v, want a no-space refusal with the figures", d)
	}
}

// The very same name many times in one offer: up to core.MaxSameName of
// it are taken (saved numbered), the rest refused, the offer goes on.
func TestSameNameManyTimesRefusesTheCopiesBeyondTheBound(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAll})
	files := make([]wire.FileEntry, core.MaxSameName+3)
	for i := range files {
		files[i] = wire.FileEntry{Path: "a.txt", Size: 1}
	}
	d := decisionOn(t, recv, files...)
	if d == nil || !d.Accept || len(d.Files) != core.MaxSameName || d.Files[core.MaxSameName-1] != core.MaxSameName-1 ||
		len(d.Refused) != 3 || d.Refused[0].File != core.MaxSameName {
		t.Fatalf("decision %+v, want the first %d accepted and the other 3 refused", d, core.MaxSameName)
	}
}

// Issue #14 (6): an accepted session that never sends data is closed after
// the idle timeout, with a reason.
func TestIdleAcceptedSessionIsClosed(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAll, SessionIdleTimeout: 300 * time.Millisecond})
	events, unsub := recv.Subscribe(256)
	defer unsub()
	var closed wire.Message
	runRaw(t, recv, func(p *rawPeer) {
		p.hello()
		p.offer(wire.FileEntry{Path: "a.txt", Size: 10})
		if p.waitAccepted() {
			closed, _ = p.ctl.recvTimeout(10 * time.Second) // the receiver's goodbye
		}
	})
	if c, ok := closed.(*wire.Cancel); !ok || c.Code != wire.CodeTimeout {
		t.Errorf("the idle peer was told %#v, want a timeout cancel", closed)
	}
	var res *Result
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventResult {
			res = ev.Result
		}
	}
	if res == nil || res.State != StateFailed || !strings.Contains(res.Err, "nothing arrived") {
		t.Errorf("receiver result %+v", res)
	}
}

// A sender that says it is done without sending every file (hostile, or
// a bug) and stays connected has its session closed once the session did
// not move on for twice the idle timeout, with a reason that counts what
// did not arrive; the file it sent is saved. It held the session, and its
// transfer showed "Receiving", for as long as it stayed. A peer that goes
// on saying it is done and sending a chunk that landed already, to look
// alive, is closed all the same.
func TestSenderDoneWithAFileMissingIsClosed(t *testing.T) {
	for _, keepAlive := range []bool{false, true} {
		t.Run(map[bool]string{false: "silent", true: "saying it again"}[keepAlive], func(t *testing.T) {
			senderDoneWithAFileMissing(t, keepAlive)
		})
	}
}

func senderDoneWithAFileMissing(t *testing.T, keepAlive bool) {
	recv := testEngine(t, Options{Accept: AcceptAll, SessionIdleTimeout: 300 * time.Millisecond})
	events, unsub := recv.Subscribe(256)
	defer unsub()
	good := []byte("hello, world")
	leaf := merkle.Leaf(good)
	var told []wire.Message
	runRaw(t, recv, func(p *rawPeer) {
		p.hello()
		p.offer(wire.FileEntry{Path: "a.txt", Size: int64(len(good))}, wire.FileEntry{Path: "b.txt", Size: int64(len(good))})
		if !p.waitAccepted() {
			return
		}
		read := make(chan struct{})
		go func() { // what the receiver says, up to its goodbye (or 10 s)
			defer close(read)
			for {
				m, err := p.ctl.recvTimeout(10 * time.Second)
				if err != nil {
					return
				}
				told = append(told, m)
				if _, ok := m.(*wire.Cancel); ok {
					return
				}
			}
		}()
		p.data(frame(0, 0, good, leaf), rootFrame(0, merkle.Root([]merkle.Hash{leaf})))
		p.ctl.send(&wire.SenderDone{})
		if !keepAlive {
			<-read
			return
		}
		s, err := p.conn.OpenStream(context.Background())
		if err != nil {
			t.Error(err)
			return
		}
		s.Write([]byte{wire.KindData})
		for {
			select {
			case <-read:
				return
			case <-time.After(50 * time.Millisecond):
				s.Write(frame(0, 0, good, leaf)) // landed already
				p.ctl.send(&wire.SenderDone{})
			}
		}
	})
	if len(told) == 0 {
		t.Fatal("the receiver said nothing")
	}
	if c, ok := told[len(told)-1].(*wire.Cancel); !ok || c.Code != wire.CodeTimeout {
		t.Errorf("the peer was told %#v last, want a timeout cancel", told[len(told)-1])
	}
	var res *Result
	for len(events) > 0 {
		if ev := <-events; ev.Kind == EventResult {
			res = ev.Result
		}
	}
	if res == nil || !strings.Contains(res.Err, "1 of 2 files did not arrive") {
		t.Fatalf("receiver result %+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(recv.DownloadDir(), "a.txt")); err != nil || string(b) != string(good) {
		t.Errorf("a.txt: %q, %v", b, err)
	}
}

// limitsBudget and limitsDisk are the manifest budgets (memory, disk) of
// TestOfferAndStreamLimits.
const (
	limitsBudget = 16 << 20
	limitsDisk   = 4 << 20
)

// Issue #14 (4): what a peer controls is bounded: the memory of an offer's
// file list (its files and their names), data streams per session.
func TestOfferAndStreamLimits(t *testing.T) {
	cases := []struct {
		name   string
		script func(p *rawPeer)
		want   string
	}{
		{"too many files", func(p *rawPeer) {
			// Refused as soon as the count is known, before any name.
			p.ctl.send(&wire.Offer{Transfer: "t1", ChunkSize: 64 << 10, Files: limitsBudget/core.ManifestFileCost + 1, TotalBytes: 0})
		}, "takes file lists of at most 16 MB"},
		{"too many name bytes for the disk budget", func(p *rawPeer) {
			const n = 5000
			long := strings.Repeat("n", 250) + "/" // 16 of them: over 4000 bytes per name, 20 MB in all
			p.ctl.send(&wire.Offer{Transfer: "t1", ChunkSize: 64 << 10, Files: n})
			for start := 0; start < n; start += 500 {
				var files []wire.FileEntry
				for i := start; i < start+500; i++ {
					files = append(files, wire.FileEntry{Path: strings.Repeat(long, 15) + fmt.Sprint(i)})
				}
				if p.ctl.send(&wire.OfferFiles{Start: start, Files: files}) != nil {
					return
				}
			}
		}, "keeps file lists of at most 4 MB on its disk for one network address"},
		{"too many data streams", func(p *rawPeer) {
			p.offer(wire.FileEntry{Path: "a.txt", Size: 10})
			if p.waitAccepted() {
				for range maxDataStreams + 1 {
					s, err := p.conn.OpenStream(context.Background())
					if err != nil {
						return
					}
					s.Write([]byte{wire.KindData})
				}
			}
		}, "more than " + strconv.Itoa(maxDataStreams) + " data streams"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recv := testEngine(t, Options{Accept: AcceptAll, ManifestBudget: limitsBudget, ManifestDisk: limitsDisk})
			events, unsub := recv.Subscribe(256)
			defer unsub()
			runRaw(t, recv, func(p *rawPeer) {
				if p.hello() == nil {
					c.script(p)
					p.hangUpAfterResult() // the refusal, or the cancel
				}
			})
			var res *Result
			for len(events) > 0 {
				if ev := <-events; ev.Kind == EventResult {
					res = ev.Result
				}
			}
			if res == nil || res.State == StateDone || !strings.Contains(res.Err, c.want) {
				t.Errorf("result %+v, want a failure mentioning %q", res, c.want)
			}
		})
	}
}
