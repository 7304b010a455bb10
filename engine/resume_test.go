package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/resume"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/clock"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// interrupt starts a send and cancels it once about half of it was written.
func interrupt(t *testing.T, send, recv *Engine, paths []string, tp string, total int64) Result {
	t.Helper()
	return interruptWith(t, send, recv, paths, SendOptions{Transport: tp}, total)
}

// interruptWith is interrupt with the send's options.
func interruptWith(t *testing.T, send, recv *Engine, paths []string, opts SendOptions, total int64) Result {
	t.Helper()
	return interruptAfter(t, send, recv, paths, opts, total, nil)
}

// interruptAfter is interruptWith that cancels only once ready (when not
// nil) said yes to one of the receiver's events: "the receiver saved the
// first file", which the sender's progress runs ahead of by what is in
// flight, the more so on a loaded machine.
func interruptAfter(t *testing.T, send, recv *Engine, paths []string, opts SendOptions, total int64, ready func(Event) bool) Result {
	t.Helper()
	send.opts.ProgressInterval = 2 * time.Millisecond // see the transfer mid-way even on a fast loopback (send is idle here)
	events, unsub := send.Subscribe(1024)
	defer unsub()
	revents, runsub := recv.Subscribe(1024)
	defer runsub()
	tr, err := send.Send(context.Background(), target(recv), paths, opts)
	if err != nil {
		t.Fatal(err)
	}
	isReady := ready == nil
	for cancelled := false; !cancelled; {
		select {
		case ev := <-revents:
			isReady = isReady || ready(ev)
		case ev := <-events:
			if ev.TransferID == tr.ID() && ev.Kind == EventProgress && ev.Progress.Bytes > total/2 && isReady {
				tr.Cancel()
				cancelled = true
			}
			if ev.TransferID == tr.ID() && ev.Kind == EventResult {
				t.Fatal("finished before it could be interrupted")
			}
		}
	}
	<-tr.Done()
	// Wait until the receiver's session ended: its final resume state is
	// saved by then. It ends once the chunks it holds are written: on a
	// FAT stick through fusefat (TestResumeOntoAFATStick) that took over
	// 15 s on a busy machine.
	timeout := time.After(time.Minute)
	for done := false; !done; {
		select {
		case ev := <-revents:
			done = ev.Kind == EventResult
		case <-timeout:
			t.Fatal("the receiver did not notice the interruption")
		}
	}
	if len(recv.Partials()) == 0 {
		t.Fatal("no resume state saved")
	}
	return tr.Result()
}

func TestResumeSendsOnlyWhatIsMissing(t *testing.T) {
	skipIfShort(t)
	src := t.TempDir() // one source for both transports: only read
	const size = 96 << 20
	big := filepath.Join(src, "big.bin")
	writeFile(t, big, size)
	small := filepath.Join(src, "small.txt")
	writeFile(t, small, 1000)
	for _, tp := range transportsUnderTest() {
		t.Run(tp, func(t *testing.T) {
			recv := startReceiver(t, Options{})
			send := testEngine(t, Options{})

			first := interrupt(t, send, recv, []string{small, big}, tp, size)
			held := recv.Partials()[0].Bytes
			_, err := os.Stat(filepath.Join(recv.DownloadDir(), "small.txt"))
			savedBefore := err == nil
			if p, want := recv.Partials()[0], map[bool]int{true: 1}[savedBefore]; p.Files != 2 || p.Saved != want {
				t.Errorf("the kept transfer lists %d files, %d saved; want 2, %d", p.Files, p.Saved, want)
			}
			caches, _ := filepath.Glob(filepath.Join(send.resume.Path(), "send-*.log"))
			if len(caches) != 1 {
				t.Fatalf("sender leaf caches after the interruption: %v", caches)
			}
			if st, err := os.Stat(caches[0]); err != nil || st.Size() == 0 {
				t.Fatal("the sender's leaf cache is empty")
			}
			if held == 0 {
				t.Fatal("the partial holds nothing")
			}
			got := receivedResult(t, recv)
			res := sendWait(t, send, target(recv), []string{small, big}, SendOptions{Transport: tp})
			if res.State != StateDone || res.Verified != 2 {
				t.Fatalf("resume: %s %q (%d verified)", res.State, res.Err, res.Verified)
			}
			// Both sides say what the receiver kept from the first send:
			// what its partial held, and the small file if it was saved.
			kept := held
			if savedBefore {
				kept += 1000
			}
			if res.Kept != kept {
				t.Errorf("the sender says the receiver kept %d bytes; it held %d", res.Kept, kept)
			}
			if r := <-got; r.Kept != kept || r.Bytes != size+1000 {
				t.Errorf("the receiver says it kept %d of %d bytes; it held %d of %d", r.Kept, r.Bytes, kept, size+1000)
			}
			// A new send is a delivery of its own, and it resumes the
			// partial data the cancelled one left.
			if res.Delivery == "" || res.Delivery == first.Delivery {
				t.Errorf("the second send is delivery %q, the first was %q", res.Delivery, first.Delivery)
			}
			sameTree(t, big, recv.DownloadDir())
			sameTree(t, small, recv.DownloadDir())
			// Only what was missing travelled again (plus chunks in flight when it stopped).
			if res.Bytes > size-held+int64(8<<20) {
				t.Errorf("second attempt sent %d bytes; %d of %d were already there", res.Bytes, held, size)
			}
			t.Logf("first attempt sent %d, receiver held %d, second sent %d", first.Bytes, held, res.Bytes)
			if len(recv.Partials()) != 0 {
				t.Error("resume state left after success")
			}
			if caches, _ := filepath.Glob(filepath.Join(send.resume.Path(), "send-*.log")); len(caches) != 0 {
				t.Errorf("sender leaf cache left after success: %v", caches)
			}
			noPartials(t, recv.DownloadDir())
		})
	}
}

func TestResumeRefetchesCorruptChunk(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	src := t.TempDir()
	const size = 64 << 20
	big := filepath.Join(src, "big.bin")
	writeFile(t, big, size)
	interrupt(t, send, recv, []string{big}, "quic", size)
	held := recv.Partials()[0].Bytes

	// Flip a byte in the first chunk on disk: its CRC32C no longer matches.
	part := filepath.Join(recv.DownloadDir(), "big.bin.partial")
	f, err := os.OpenFile(part, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	f.ReadAt(b[:], 100)
	b[0] ^= 0xff
	f.WriteAt(b[:], 100)
	f.Close()

	res := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "quic"})
	if res.State != StateDone {
		t.Fatalf("%s %q", res.State, res.Err)
	}
	sameTree(t, big, recv.DownloadDir())
	if res.Bytes < size-held+(1<<20) {
		t.Errorf("sent %d bytes; the corrupt chunk (1 MiB) should have travelled again on top of the %d missing", res.Bytes, size-held)
	}
}

func TestResumeStateFromAnotherPeerIsIgnored(t *testing.T) {
	recv := startReceiver(t, Options{})
	alice := testEngine(t, Options{})
	mallory := testEngine(t, Options{})
	src := t.TempDir()
	big := filepath.Join(src, "big.bin")
	writeFile(t, big, 48<<20)
	interrupt(t, alice, recv, []string{big}, "quic", 48<<20)
	// Mallory offers the very same files: the state is keyed by the proven
	// device, so nothing of Alice's partial is trusted for Mallory.
	res := sendWait(t, mallory, target(recv), []string{big}, SendOptions{Transport: "quic"})
	if res.State != StateDone || res.Bytes != 48<<20 {
		t.Fatalf("%s %q: sent %d bytes, want all %d", res.State, res.Err, res.Bytes, 48<<20)
	}
}

func TestTamperedResumeStateIsIgnored(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	src := t.TempDir()
	big := filepath.Join(src, "big.bin")
	writeFile(t, big, 48<<20)
	interrupt(t, send, recv, []string{big}, "quic", 48<<20)
	key := recv.Partials()[0].Key
	for _, garbage := range []string{"{not json", `{"version":1,"files":[{"index":0,"path":"../../etc/passwd","size":5}]}`, ""} {
		os.WriteFile(filepath.Join(recv.resume.Path(), key+".json"), []byte(garbage), 0o600)
		if _, err := recv.resume.Load(key); garbage == "{not json" && err == nil {
			t.Error("garbage state loaded")
		}
	}
	res := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "quic"})
	if res.State != StateDone {
		t.Fatalf("%s %q", res.State, res.Err)
	}
	sameTree(t, big, recv.DownloadDir())
}

func TestOldPartialsAreCleanedUp(t *testing.T) {
	cfg, dl := t.TempDir(), t.TempDir()
	recv := startReceiver(t, Options{ConfigDir: cfg, DownloadDir: dl})
	send := testEngine(t, Options{})
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, 48<<20)
	interrupt(t, send, recv, []string{big}, "quic", 48<<20)
	p := recv.Partials()[0]
	if p.Bytes == 0 || p.PeerID != send.ID() {
		t.Fatalf("partial %+v", p)
	}
	recv.Close()
	// Young partials survive a restart ...
	r2 := startReceiver(t, Options{ConfigDir: cfg, DownloadDir: dl, MaxPartialAge: time.Hour})
	r2.Close()
	if len(r2.Partials()) != 1 {
		t.Fatal("a young partial was discarded")
	}
	// ... old ones do not.
	r3 := startReceiver(t, Options{ConfigDir: cfg, DownloadDir: dl, MaxPartialAge: time.Nanosecond})
	r3.Close() // waits for the clean-up
	if len(r3.Partials()) != 0 {
		t.Fatal("old resume state kept")
	}
	entries, _ := os.ReadDir(dl)
	if len(entries) != 0 {
		t.Fatalf("old partial files kept: %v", entries)
	}
}

// The same files sent again into another download folder (the user changed
// it since) start there afresh, and the partial the first try left in the
// old folder goes with its state: nothing would list it or age it out once
// the state was dropped (a helper found 100 MB left so).
func TestResumeIntoAnotherFolderRemovesTheOldPartial(t *testing.T) {
	first := t.TempDir()
	recv := startReceiver(t, Options{DownloadDir: first})
	send := testEngine(t, Options{})
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, 48<<20)
	interrupt(t, send, recv, []string{big}, "quic", 48<<20)
	if n := len(recv.Partials()[0].Partials); n != 1 {
		t.Fatalf("the interrupted transfer kept %d partials", n)
	}
	// What discarding it would free: the partial was preallocated whole,
	// so it takes more than the bytes verified in it.
	if p := recv.Partials()[0]; p.OnDisk < 48<<20 || p.Bytes >= 48<<20 {
		t.Fatalf("the partial takes %d bytes on disk and holds %d verified; want the whole file's on disk", p.OnDisk, p.Bytes)
	}
	second := t.TempDir()
	if err := recv.SetDownloadDir(second); err != nil {
		t.Fatal(err)
	}
	if res := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "quic"}); res.State != StateDone {
		t.Fatalf("%s %q", res.State, res.Err)
	}
	sameTree(t, big, second)
	if entries, _ := os.ReadDir(first); len(entries) != 0 {
		t.Fatalf("the first folder still holds %v", entries)
	}
	if ps := recv.Partials(); len(ps) != 0 {
		t.Fatalf("partials left: %+v", ps)
	}
}

// Discarding an interrupted transfer's partial files ends it: its row and
// history said "will resume when ... is back", and a result now says it
// was discarded, under the same transfer and peer (it stayed "Interrupted"
// with nothing to clear it).
func TestDiscardEndsTheInterruptedTransfer(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	events, unsub := recv.Subscribe(4096)
	defer unsub()
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, 48<<20)
	interrupt(t, send, recv, []string{big}, "quic", 48<<20)
	var first *Event
	for first == nil {
		select {
		case ev := <-events:
			if ev.Kind == EventResult && ev.Direction == Receiving {
				first = &ev
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no result of the interrupted transfer")
		}
	}
	if first.Result.State == StateDone {
		t.Fatalf("the receiver's first result: %s %q", first.Result.State, first.Result.Err)
	}
	if err := recv.DiscardPartial(recv.Partials()[0].Key); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.Kind != EventResult || ev.TransferID != first.TransferID || ev.Delivery != first.Delivery || ev.Peer.ID != first.Peer.ID ||
			ev.Direction != Receiving || ev.Result.State != StateCancelled || !strings.HasPrefix(ev.Result.Err, "Discarded") {
			t.Fatalf("after the discard: %+v (the transfer was %s of %s)", ev, first.TransferID, first.Peer.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no result after the discard")
	}
}

// A file a peer named like a partial arrives as any other, and an earlier
// transfer's resume state that names a partial of that name (its user
// deleted the partial since) never takes the file for it: resuming, and
// discarding what it kept, leave the file as it arrived.
func TestFileNamedLikeAPartialIsNeverTakenForOne(t *testing.T) {
	for _, way := range []string{"resume", "discard"} {
		t.Run(way, func(t *testing.T) {
			recv := startReceiver(t, Options{})
			send := testEngine(t, Options{})
			const size = 48 << 20
			big := filepath.Join(t.TempDir(), "big.bin")
			writeFile(t, big, size)
			interrupt(t, send, recv, []string{big}, "tcp", size)
			ps := recv.Partials()
			if len(ps) != 1 || len(ps[0].Partials) != 1 || ps[0].Partials[0] != "big.bin.partial" {
				t.Fatalf("partials %+v", ps)
			}
			if err := os.Remove(filepath.Join(recv.DownloadDir(), "big.bin.partial")); err != nil {
				t.Fatal(err)
			}
			precious := filepath.Join(t.TempDir(), "big.bin.partial")
			if err := os.WriteFile(precious, []byte("a file of its own"), 0o644); err != nil {
				t.Fatal(err)
			}
			if res := sendWait(t, send, target(recv), []string{precious}, SendOptions{Transport: "tcp"}); res.State != StateDone {
				t.Fatalf("a file named like a partial: %s %q", res.State, res.Err)
			}
			if way == "discard" {
				if err := recv.DiscardPartial(ps[0].Key); err != nil {
					t.Fatal(err)
				}
			} else if res := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "tcp"}); res.State != StateDone {
				t.Fatalf("the resumed send: %s %q", res.State, res.Err)
			} else {
				sameTree(t, big, recv.DownloadDir())
			}
			if b, err := os.ReadFile(filepath.Join(recv.DownloadDir(), "big.bin.partial")); err != nil || string(b) != "a file of its own" {
				t.Fatalf("the received big.bin.partial: %q, %v", b, err)
			}
		})
	}
}

// A receiver that ended right after a file got its name, before its record
// of that reached the journal (a crash, SIGKILL), finds the file by its
// partial's identity at the next attempt: not fetched again, not saved a
// second time as "big (1).bin".
func TestResumeFindsAFileSavedWithoutItsRecord(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	const size = 48 << 20
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, size)
	interrupt(t, send, recv, []string{big}, "tcp", size)
	dl := recv.DownloadDir()
	// What the crash left: the partial whole and named, no record of it.
	data, err := os.ReadFile(big)
	if err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(dl, "big.bin.partial")
	if err := os.WriteFile(part, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(part, filepath.Join(dl, "big.bin")); err != nil {
		t.Fatal(err)
	}
	res := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "tcp"})
	if res.State != StateDone || res.Verified != 1 {
		t.Fatalf("%s %q, %d verified", res.State, res.Err, res.Verified)
	}
	if res.Bytes != 0 {
		t.Errorf("sent %d bytes of a file the receiver has whole", res.Bytes)
	}
	if ents, _ := os.ReadDir(dl); len(ents) != 1 || ents[0].Name() != "big.bin" {
		t.Errorf("in the folder: %v, want big.bin alone", ents)
	}
	sameTree(t, big, dl)
}

// A file changed at its source between two attempts makes another offer,
// so its first attempt's partial is not resumed: once the new version is
// saved under the same name from the same device, that partial goes (it
// stayed until it aged out, a week, taking the file's size on disk). Another
// device's partial for the same name stays: it may still be resumed.
func TestSavedNewVersionRemovesTheOldPartial(t *testing.T) {
	recv := startReceiver(t, Options{})
	alice := testEngine(t, Options{})
	mallory := testEngine(t, Options{})
	const size = 48 << 20
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, size)
	theirs := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, theirs, size)
	interrupt(t, mallory, recv, []string{theirs}, "tcp", size)
	interrupt(t, alice, recv, []string{big}, "tcp", size)
	if n := len(recv.Partials()); n != 2 {
		t.Fatalf("%d unfinished transfers, want 2", n)
	}
	writeFile(t, big, size) // a new version, a new mtime
	if err := os.Chtimes(big, time.Time{}, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	received := resultsOf(t, recv, Receiving, 1)
	res := sendWait(t, alice, target(recv), []string{big}, SendOptions{Transport: "tcp"})
	if res.State != StateDone || res.Kept != 0 {
		t.Fatalf("%s %q, %d bytes kept from before", res.State, res.Err, res.Kept)
	}
	// The receiver drops the old version's partial as its session ends,
	// which its result follows; the sender's can come first (6 runs in 10
	// without -race failed so).
	if r := next(t, received); r.State != StateDone {
		t.Fatalf("received: %s %q", r.State, r.Err)
	}
	sameTree(t, big, recv.DownloadDir())
	ps := recv.Partials()
	if len(ps) != 1 || ps[0].PeerID != mallory.ID() {
		t.Fatalf("unfinished transfers left: %+v; want Mallory's alone", ps)
	}
	if len(ps[0].Partials) != 1 {
		t.Fatalf("Mallory's transfer lists %q", ps[0].Partials)
	}
	var names []string
	ents, _ := os.ReadDir(recv.DownloadDir())
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"big.bin", ps[0].Partials[0]}; !slices.Equal(names, want) {
		t.Errorf("in the folder: %q, want %q", names, want)
	}
	if _, err := os.Stat(filepath.Join(recv.DownloadDir(), filepath.FromSlash(ps[0].Partials[0]))); err != nil {
		t.Errorf("Mallory's partial: %v", err)
	}
}

// A damaged resume state (its snapshot cut short, or garbage) no longer
// loses its partial file: it was left unlisted, never resumed nor aged
// out nor discardable, taking the file's size on disk for good. Now it is
// listed as damaged with the partial its journal names, found by its
// identity; discarding it removes the partial; and where what is left of
// the snapshot still fits the offer, a send of the same file resumes it.
func TestDamagedResumeStateKeepsTrackOfItsPartial(t *testing.T) {
	const size = 48 << 20
	for _, c := range []struct {
		name    string
		damage  func([]byte) []byte
		resumes bool // else: listed and discarded
	}{
		{"its end cut", func(b []byte) []byte { return b[:len(b)-2] }, true},
		{"cut after its head", func(b []byte) []byte { return b[:bytes.Index(b, []byte(`"files"`))+10] }, false},
		{"garbage", func(b []byte) []byte { return bytes.Repeat([]byte{0xa5}, len(b)) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			recv := startReceiver(t, Options{})
			send := testEngine(t, Options{})
			big := filepath.Join(t.TempDir(), "big.bin")
			writeFile(t, big, size)
			interrupt(t, send, recv, []string{big}, "tcp", size)
			p := recv.Partials()[0]
			held := p.Bytes
			snap := filepath.Join(recv.resume.Path(), p.Key+".json")
			b, err := os.ReadFile(snap)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(snap, c.damage(b), 0o600); err != nil {
				t.Fatal(err)
			}
			ps := recv.Partials()
			if len(ps) != 1 || ps[0].Key != p.Key || ps[0].Damaged == "" {
				t.Fatalf("after the damage, partials lists %+v", ps)
			}
			if !slices.Equal(ps[0].Partials, p.Partials) || ps[0].Dest != recv.DownloadDir() || ps[0].OnDisk != p.OnDisk {
				t.Errorf("the damaged state lists %q in %s (%d bytes on disk); before, %q in %s (%d)",
					ps[0].Partials, ps[0].Dest, ps[0].OnDisk, p.Partials, p.Dest, p.OnDisk)
			}
			if !c.resumes {
				if err := recv.DiscardPartial(p.Key); err != nil {
					t.Fatal(err)
				}
				if ents, _ := os.ReadDir(recv.DownloadDir()); len(ents) != 0 {
					t.Errorf("left after discarding: %v", ents)
				}
				if ps := recv.Partials(); len(ps) != 0 {
					t.Errorf("listed after discarding: %+v", ps)
				}
				return
			}
			res := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "tcp"})
			if res.State != StateDone || res.Kept != held {
				t.Fatalf("%s %q: the receiver kept %d bytes of the %d its damaged state lists", res.State, res.Err, res.Kept, held)
			}
			sameTree(t, big, recv.DownloadDir())
			noPartials(t, recv.DownloadDir())
		})
	}
}

// A damaged resume state no longer sends again what the transfer saved,
// nor the chunks its partials hold: each compaction starts the journal
// with what the snapshot says (its head, its saved files, its partials'
// chunks), so a snapshot cut short, garbled or gone is salvaged whole. A
// saved file the snapshot no longer listed travelled again and was saved
// beside itself as "small (1).txt"; with its head lost nothing resumed.
func TestDamagedResumeStateResendsNothingItHeld(t *testing.T) {
	const size = 48 << 20
	src := t.TempDir()
	small := filepath.Join(src, "small.txt")
	writeFile(t, small, 1000)
	big := filepath.Join(src, "big.bin")
	writeFile(t, big, size)
	for _, c := range []struct {
		name   string
		damage func([]byte) []byte // nil: the snapshot is removed
	}{
		{"cut in its saved file", func(b []byte) []byte { return b[:bytes.Index(b, []byte(`"saved_as"`))] }},
		{"cut in its partial", func(b []byte) []byte { return b[:bytes.Index(b, []byte(`"have"`))] }},
		{"garbage", func(b []byte) []byte { return bytes.Repeat([]byte{0xa5}, len(b)) }},
		{"gone", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			recv := startReceiver(t, Options{})
			send := testEngine(t, Options{})
			interruptAfter(t, send, recv, []string{small, big}, SendOptions{Transport: "tcp"}, size, func(ev Event) bool {
				return ev.Kind == EventFile && ev.File != nil && ev.File.Path == "small.txt" && ev.File.Verified
			})
			p := recv.Partials()[0]
			if p.Saved != 1 || p.Bytes == 0 {
				t.Fatalf("before the damage: %d saved, %d bytes held", p.Saved, p.Bytes)
			}
			snap := filepath.Join(recv.resume.Path(), p.Key+".json")
			b, err := os.ReadFile(snap)
			if err != nil {
				t.Fatal(err)
			}
			if c.damage == nil {
				err = os.Remove(snap)
			} else {
				err = os.WriteFile(snap, c.damage(b), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			res := sendWait(t, send, target(recv), []string{small, big}, SendOptions{Transport: "tcp"})
			if res.State != StateDone || res.Kept != p.Bytes+1000 {
				t.Errorf("%s %q: the receiver kept %d bytes; it held %d and small.txt", res.State, res.Err, res.Kept, p.Bytes)
			}
			var names []string
			ents, _ := os.ReadDir(recv.DownloadDir())
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if want := []string{"big.bin", "small.txt"}; !slices.Equal(names, want) {
				t.Errorf("in the folder: %q, want %q", names, want)
			}
			sameTree(t, small, recv.DownloadDir())
			sameTree(t, big, recv.DownloadDir())
		})
	}
}

// A receiver killed after a file of one chunk got its name and before the
// journal's record that it was saved finds it saved at the next attempt,
// by the identity it journaled before naming it: not fetched again and
// saved a second time as "b (1).bin". Such a file is created without a
// name (store.CreateWhole), so no partial record named it; a folder of
// 2000 small files sent while ferry-cli receive was killed 6 times (kill
// -9) left 4 such duplicates.
func TestResumeFindsASmallFileSavedWithoutItsRecord(t *testing.T) {
	e := testEngine(t, Options{})
	files := []wire.FileEntry{{Path: "d/a.bin", Size: 64<<10 + 500}, {Path: "d/b.bin", Size: 3000}}
	a, b := randomBytes(int(files[0].Size)), randomBytes(int(files[1].Size))
	rx := testReceiverOn(t, e, 64<<10, files)
	const key = "crash"
	j, err := e.resume.Start(key, &resume.State{Version: resume.Version, Peer: "p", ChunkSize: 64 << 10, Dest: rx.DestDir, Accepted: 2})
	if err != nil {
		t.Fatal(err)
	}
	rx.journal = j
	landAll(t, rx, 0, a, 0) // a.bin begun, so the state has something to resume
	landAll(t, rx, 1, b, 0)
	rootOf(t, rx, 1, b)
	checkSaved(t, rx, "b.bin", b)
	j.Close()
	// What the kill left: the journal without its last record, the one
	// that says b.bin was saved (length, type, file, name, CRC).
	log := filepath.Join(e.resume.Path(), key+".log")
	st, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(log, st.Size()-int64(4+5+len("d/b.bin")+4)); err != nil {
		t.Fatal(err)
	}
	s, err := e.resume.Load(key)
	if err != nil || s == nil {
		t.Fatalf("the state after the kill: %v, %v", s, err)
	}
	for _, f := range s.Files {
		if f.Index == 1 && f.Done {
			t.Fatalf("the truncated journal still says b.bin was saved: %+v", f)
		}
	}
	again := testReceiverOn(t, e, 64<<10, files)
	_, done := again.restore(s)
	if len(done) != 1 || done[0].idx != 1 || done[0].savedAs != "d/b.bin" {
		var got []string
		for _, f := range done {
			got = append(got, fmt.Sprintf("%d as %q", f.idx, f.savedAs))
		}
		t.Fatalf("the next attempt found saved %v, want b.bin (file 1) as d/b.bin", got)
	}
}

// A small file saved under another name than its own ("b (1).bin", its name
// taken) is not one its identity finds at its own name, so the record that
// it was saved reaches the journal at once (Journal.Saved), not with the
// next record (SavedFound, as in the test above): a kill right after it
// must not lose it.
func TestSmallFileSavedUnderAnotherNameIsJournaledAtOnce(t *testing.T) {
	e := testEngine(t, Options{})
	files := []wire.FileEntry{{Path: "d/b.bin", Size: 3000}}
	b := randomBytes(int(files[0].Size))
	rx := testReceiverOn(t, e, 64<<10, files)
	if err := os.MkdirAll(filepath.Join(rx.Dest.Dir(), "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rx.Dest.Dir(), "d", "b.bin"), []byte("another file"), 0o644); err != nil {
		t.Fatal(err)
	}
	const key = "taken"
	j, err := e.resume.Start(key, &resume.State{Version: resume.Version, Peer: "p", ChunkSize: 64 << 10, Dest: rx.DestDir, Accepted: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	rx.journal = j
	landAll(t, rx, 0, b, 0)
	rootOf(t, rx, 0, b)
	checkSaved(t, rx, "b (1).bin", b)
	// What a process started after a kill right now reads.
	s, err := e.resume.Load(key)
	if err != nil || s == nil {
		t.Fatalf("the state: %v, %v", s, err)
	}
	for _, f := range s.Files {
		if f.Index == 0 && f.Done && f.SavedAs == "d/b (1).bin" {
			return
		}
	}
	t.Fatalf("the journal does not say b.bin was saved as d/b (1).bin: %+v", s.Files)
}

// A session that ends after it restored what an earlier one kept, and
// before it told the sender, keeps the files that earlier one saved in its
// state: they were counted saved only once their Have reached the sender,
// so the state such a session left listed none of them, and the next
// attempt fetched them all again and saved them a second time as
// "f (1).txt" (ferry-cli send --transport auto killed three times, the
// third while its session checked what was kept: 509 and 713 of 2001 files
// twice, in 2 of 2 runs).
func TestSessionEndedWhileRestoringKeepsTheSavedFiles(t *testing.T) {
	skipIfShort(t)
	const size = 48 << 20
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	src := t.TempDir()
	small := filepath.Join(src, "small.txt")
	writeFile(t, small, 1000)
	big := filepath.Join(src, "big.bin")
	writeFile(t, big, size)
	interruptAfter(t, send, recv, []string{small, big}, SendOptions{Transport: "auto"}, size, func(ev Event) bool {
		return ev.Kind == EventFile && ev.File != nil && ev.File.Path == "small.txt" && ev.File.Verified
	})
	if p := recv.Partials()[0]; p.Saved != 1 {
		t.Fatalf("before the cut: %d saved", p.Saved)
	}
	// The next session loses its connection right after its check, as when
	// its sender is killed, or a newer session takes it over, then.
	revents, unsub := recv.Subscribe(1024)
	defer unsub()
	var cut atomic.Bool
	recv.restored = func(rx *receiver) {
		if cut.CompareAndSwap(false, true) {
			rx.c.Close(nil)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr, err := send.Send(ctx, target(recv), []string{small, big}, SendOptions{Transport: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	for timeout := time.After(time.Minute); ; {
		select {
		case ev := <-revents:
			if ev.Kind != EventResult {
				continue
			}
		case <-timeout:
			t.Fatal("the cut session did not end")
		}
		break
	}
	tr.Cancel()
	<-tr.Done()
	if ps := recv.Partials(); len(ps) != 1 || ps[0].Saved != 1 {
		t.Fatalf("after the cut session: %+v, want small.txt listed saved", ps)
	}
	res := sendWait(t, send, target(recv), []string{small, big}, SendOptions{Transport: "auto"})
	if res.State != StateDone || res.Verified != 2 {
		t.Fatalf("the last send: %s %q", res.State, res.Err)
	}
	var names []string
	ents, _ := os.ReadDir(recv.DownloadDir())
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{"big.bin", "small.txt"}; !slices.Equal(names, want) {
		t.Errorf("in the folder: %q, want %q", names, want)
	}
	sameTree(t, small, recv.DownloadDir())
	sameTree(t, big, recv.DownloadDir())
}

// A receiving session whose connection the transport closed under the
// read of its control stream (TCP aborts a stream whose write failed, the
// sender being gone) ends interrupted, to resume: ferry-cli receive said
// "failed: Control stream: read tcp ...: use of closed network
// connection." of a killed --transport auto sender (2 of 3 tries), though
// the transfer then resumed.
func TestControlClosedUnderItsReadIsInterrupted(t *testing.T) {
	skipIfShort(t)
	const size = 32 << 20
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, size)
	interrupt(t, send, recv, []string{big}, "tcp", size)
	revents, unsub := recv.Subscribe(1024)
	defer unsub()
	var cut atomic.Bool
	recv.restored = func(rx *receiver) {
		if cut.CompareAndSwap(false, true) {
			rx.c.Close(nil)
		}
	}
	tr, err := send.Send(context.Background(), target(recv), []string{big}, SendOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { tr.Cancel(); <-tr.Done() }()
	for timeout := time.After(time.Minute); ; {
		select {
		case ev := <-revents:
			if ev.Kind != EventResult {
				continue
			}
			if ev.Result.State != StateInterrupted {
				t.Errorf("the cut session: %s %q, want interrupted", ev.Result.State, ev.Result.Err)
			}
			return
		case <-timeout:
			t.Fatal("the cut session did not end")
		}
	}
}

// A receiver that keeps running discards the unfinished transfers that aged
// past MaxPartialAge while it ran, not only those it finds old when it
// starts: one left receiving from the tray for weeks kept every interrupted
// transfer since, with its preallocated partial files (the soak in
// docs/architecture.md: 11 partials and 470 MB more per 100 transfers).
func TestOldPartialsAreCleanedUpWhileReceiving(t *testing.T) {
	clk := clock.NewFake(time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC))
	dl := t.TempDir()
	recv := startReceiver(t, Options{DownloadDir: dl, Clock: clk, MaxPartialAge: 24 * time.Hour})
	send := testEngine(t, Options{})
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, 48<<20)
	interrupt(t, send, recv, []string{big}, "quic", 48<<20)
	clk.Advance(25 * time.Hour)
	testutil.WaitFor(t, "the aged partial discarded", func() bool { return len(recv.Partials()) == 0 })
	if entries, _ := os.ReadDir(dl); len(entries) != 0 {
		t.Fatalf("the aged partial's files kept: %v", entries)
	}
}

// TestAgedPartialResumedMeanwhileIsKept: the age check lists an unfinished
// transfer past the age, then discards it; its sender, back at the age
// limit between the two (a hook, not timing), resumed it and was cut off
// again, and the check discarded what it had just received, fresh. The
// discard checks the age again once no session can take the transfer over,
// and keeps it; the next send resumes it to its end.
func TestAgedPartialResumedMeanwhileIsKept(t *testing.T) {
	const size = 48 << 20
	clk := clock.NewFake(time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC))
	dl := t.TempDir()
	recv := startReceiver(t, Options{DownloadDir: dl, Clock: clk, MaxPartialAge: -1}) // aged by the test's call alone
	send := testEngine(t, Options{})
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, size)
	interrupt(t, send, recv, []string{big}, "quic", size)
	first := recv.Partials()
	if len(first) != 1 {
		t.Fatalf("partials after the cut: %+v", first)
	}
	clk.Advance(25 * time.Hour)

	listed, resumed := make(chan string, 1), make(chan struct{})
	recv.agedListed = func(key string) {
		listed <- key
		<-resumed
	}
	cleaned := make(chan int, 1)
	go func() { cleaned <- recv.CleanPartials(24 * time.Hour) }()
	key := <-listed
	// Its sender is back, and is cut off again.
	interrupt(t, send, recv, []string{big}, "quic", size)
	close(resumed)
	if n := <-cleaned; n != 0 {
		t.Errorf("the age check discarded %d unfinished transfers, one of them resumed since it listed it", n)
	}
	ps := recv.Partials()
	if len(ps) != 1 || ps[0].Key != key || !ps[0].Updated.After(first[0].Updated) {
		t.Fatalf("after the age check: %+v, want the resumed transfer kept", ps)
	}
	if entries, _ := os.ReadDir(dl); len(entries) != 1 {
		t.Fatalf("in the download folder: %v, want the partial file kept", entries)
	}
	res := sendWait(t, send, target(recv), []string{big}, SendOptions{Transport: "quic"})
	if res.State != StateDone {
		t.Fatalf("the last send: %s %q", res.State, res.Err)
	}
	sameTree(t, big, dl)
}

// TestResumeDuringADiscardWaitsForIt: a discard (the user's, or the age
// check's) lists an unfinished transfer, then removes its partials; its
// sender, back between the two (a hook, not timing), had its session
// restore the partials that were then removed under it. The session now
// waits for the discard to end, and receives the files afresh, whole.
func TestResumeDuringADiscardWaitsForIt(t *testing.T) {
	const size = 48 << 20
	dl := t.TempDir()
	recv := startReceiver(t, Options{DownloadDir: dl})
	send := testEngine(t, Options{})
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, size)
	interrupt(t, send, recv, []string{big}, "quic", size)
	ps := recv.Partials()
	if len(ps) != 1 {
		t.Fatalf("partials after the cut: %+v", ps)
	}
	met := make(chan string, 2)
	recv.restored = func(*receiver) { met <- "restored" }
	recv.resumeWaits = func() { met <- "waits" }
	results := make(chan Result, 1)
	recv.discardListed = func() {
		recv.discardListed = nil
		tr, err := send.Send(context.Background(), target(recv), []string{big}, SendOptions{Transport: "quic"})
		if err != nil {
			results <- Result{State: StateFailed, Err: err.Error()}
			return
		}
		go func() {
			<-tr.Done()
			results <- tr.Result()
		}()
		// The session is in the middle of resuming, or waiting to.
		if m := <-met; m != "waits" {
			t.Errorf("the session %s the partials being discarded", m)
		}
	}
	if err := recv.DiscardPartial(ps[0].Key); err != nil {
		t.Fatal(err)
	}
	if res := <-results; res.State != StateDone {
		t.Fatalf("the send that came back during the discard: %s %q", res.State, res.Err)
	}
	sameTree(t, big, dl)
	if ps := recv.Partials(); len(ps) != 0 {
		t.Errorf("partials after: %+v", ps)
	}
}

// TestResumeWaitsForADiscardInAnotherProcess is
// TestResumeDuringADiscardWaitsForIt with the discard in another engine on
// the same config, as ferry-cli partials --discard beside the app: the
// in-memory reservation is an engine's own, so the session restored the
// partials the other engine then removed under it. Both now hold the
// key's reservation on disk (resume.Dir.Reserve): the session waits for
// the discard to end, and receives the file afresh, whole.
func TestResumeWaitsForADiscardInAnotherProcess(t *testing.T) {
	const size = 48 << 20
	dl, config := t.TempDir(), t.TempDir()
	recv := startReceiver(t, Options{ConfigDir: config, DownloadDir: dl})
	other := testEngine(t, Options{ConfigDir: config, DownloadDir: dl}) // not receiving: ferry-cli partials
	send := testEngine(t, Options{})
	big := filepath.Join(t.TempDir(), "big.bin")
	writeFile(t, big, size)
	interrupt(t, send, recv, []string{big}, "quic", size)
	ps := other.Partials()
	if len(ps) != 1 {
		t.Fatalf("partials after the cut, as the other engine lists them: %+v", ps)
	}
	met := make(chan string, 2)
	recv.restored = func(*receiver) { met <- "restored" }
	recv.resumeWaits = func() { met <- "waits" }
	results := make(chan Result, 1)
	other.discardListed = func() {
		other.discardListed = nil
		tr, err := send.Send(context.Background(), target(recv), []string{big}, SendOptions{Transport: "quic"})
		if err != nil {
			results <- Result{State: StateFailed, Err: err.Error()}
			return
		}
		go func() {
			<-tr.Done()
			results <- tr.Result()
		}()
		// The session is in the middle of resuming, or waiting to.
		if m := <-met; m != "waits" {
			t.Errorf("the session %s the partials being discarded by the other engine", m)
		}
	}
	d, err := other.DiscardPartialFiles(ps[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	if d.Files != 1 {
		t.Errorf("the discard removed %d partial files, want 1", d.Files)
	}
	if res := <-results; res.State != StateDone {
		t.Fatalf("the send that came back during the discard: %s %q", res.State, res.Err)
	}
	sameTree(t, big, dl)
	if ps := recv.Partials(); len(ps) != 0 {
		t.Errorf("partials after: %+v", ps)
	}
	if locks, _ := filepath.Glob(filepath.Join(config, "resume", ".*.lock")); len(locks) > 1 { // .states.lock may stay
		t.Errorf("reservations left: %q", locks)
	}
}

// A device that only sends (ferry-cli send, an engine for each send) drops
// the leaf caches of its sends left unfinished longer than MaxPartialAge
// when it sends again: only receiving dropped them, so its config folder
// kept one for every send ever cancelled or killed mid-way (the soak in
// docs/architecture.md: 13 more files per 100 sends).
func TestOldLeafCachesAreCleanedWhenSending(t *testing.T) {
	recv := startReceiver(t, Options{})
	cfg := t.TempDir()
	send := testEngine(t, Options{ConfigDir: cfg, MaxPartialAge: 24 * time.Hour})
	src := t.TempDir()
	big, small := filepath.Join(src, "big.bin"), filepath.Join(src, "small.txt")
	writeFile(t, big, 48<<20)
	writeFile(t, small, 1000)
	interrupt(t, send, recv, []string{big}, "tcp", 48<<20)
	send.Close()
	caches, _ := filepath.Glob(filepath.Join(cfg, "resume", "send-*.log"))
	if len(caches) != 1 {
		t.Fatalf("sender leaf caches after the interruption: %v", caches)
	}
	day := time.Now().Add(-25 * time.Hour)
	if err := os.Chtimes(caches[0], day, day); err != nil {
		t.Fatal(err)
	}
	again := testEngine(t, Options{ConfigDir: cfg, MaxPartialAge: 24 * time.Hour})
	if r := sendWait(t, again, target(recv), []string{small}, SendOptions{Transport: "tcp"}); r.State != StateDone {
		t.Fatalf("%s %q", r.State, r.Err)
	}
	testutil.WaitFor(t, "the aged leaf cache removed", func() bool {
		_, err := os.Stat(caches[0])
		return errors.Is(err, fs.ErrNotExist)
	})
}
