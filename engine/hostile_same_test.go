package engine

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
)

// sameFrame is a same frame (wire.SameChunk) of file naming runs.
func sameFrame(file uint32, runs ...wire.ZeroRun) []byte {
	b := make([]byte, wire.DataHeaderLen)
	wire.DataHeader{File: file, Chunk: wire.SameChunk, Length: uint32(len(runs) * wire.ZeroRunLen)}.Put(b)
	return wire.AppendZeroRuns(b, runs)
}

// TestHostileSameFrames: a sender this device trusts, which says it takes
// the leaves of files here (wire.FeatureSame), lies in its same frames.
// The receiver holds "a.txt" as the sender offers it, and not "b.txt".
// Each lie ends the transfer with the reason, and the file here is left
// as it was, nothing saved beside it.
func TestHostileSameFrames(t *testing.T) {
	// Of sameMinSize or more: a smaller file is not compared.
	here := bytes.Repeat([]byte("what the file here holds"), 200)
	now := bytes.Repeat([]byte("what the sender has now!"), 200) // of the same size
	cases := []struct {
		name   string
		frames [][]byte
		want   string
		alone  bool // a.txt alone is offered
		early  bool // the frames go right after the offer, before the decision is read
	}{
		{"a same frame for a file not held here", [][]byte{sameFrame(1, wire.ZeroRun{Start: 0, Count: 1})},
			"names chunks 0 to 0 of file 1, whose leaves this device did not send", false, false},
		{"a same frame without runs", [][]byte{sameFrame(0)}, "a same frame with 0 bytes of payload", false, false},
		{"a same frame beyond the file", [][]byte{sameFrame(0, wire.ZeroRun{Start: 0, Count: 2})}, "goes beyond the file's 1 chunks", false, false},
		// It says the file here is what it sends, and roots what it has.
		{"the same, rooted otherwise", [][]byte{sameFrame(0, wire.ZeroRun{Start: 0, Count: 1}), rootFrame(0, merkle.Root([]merkle.Hash{merkle.Leaf(now)}))},
			"did not match", true, false},
		// As the receiver decides (a data stream opens once it accepted,
		// while it looks for the files it holds): run under -race, the
		// receiver's notes of them were written unguarded then.
		// The stream is refused, or its frame names chunks whose leaves
		// were not sent yet, as the receiver is quicker or not.
		{"a same frame before the decision", [][]byte{sameFrame(0, wire.ZeroRun{Start: 0, Count: 1})},
			"Protocol violation", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recv := testEngine(t, Options{Accept: AcceptAll})
			dst := recv.DownloadDir()
			if err := os.WriteFile(filepath.Join(dst, "a.txt"), here, 0o644); err != nil {
				t.Fatal(err)
			}
			events, unsub := recv.Subscribe(256)
			defer unsub()
			p, done := connectRaw(t, recv)
			if err := recv.trust.SetAlwaysAccept(p.id.ID.Peer(), "mallory", true); err != nil {
				t.Fatal(err)
			}
			go func() {
				defer p.drain()
				if err := p.helloWith(wire.FeatureSame); err != nil {
					return
				}
				offered := []wire.FileEntry{{Path: "a.txt", Size: int64(len(now))}, {Path: "b.txt", Size: 5}}
				if c.alone {
					offered = offered[:1]
				}
				p.offer(offered...)
				if c.early {
					p.data(c.frames...)
					p.hangUpAfterResult()
					return
				}
				d, err := expect[*wire.Decision](p.ctl.recvTimeout(5 * time.Second))
				if err != nil || !d.SameHolds(0) || d.SameHolds(1) {
					t.Errorf("decision %+v (%v): want a.txt named as held, b.txt not", d, err)
					return
				}
				// The leaves of a.txt as it is here.
				s, err := expect[*wire.Same](p.ctl.recvTimeout(5 * time.Second))
				if err != nil || s.File != 0 || s.Count() != 1 || s.Leaf(0) != merkle.Leaf(here) || !s.Done {
					t.Errorf("leaves %+v (%v): want the one leaf of a.txt", s, err)
					return
				}
				p.data(c.frames...)
				p.ctl.send(&wire.SenderDone{})
				p.hangUpAfterResult()
			}()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				p.conn.Close(nil)
				<-done
				t.Fatal("the receiver did not end the session by itself")
			}
			var result *Result
			for len(events) > 0 {
				if ev := <-events; ev.Kind == EventResult {
					result = ev.Result
				}
			}
			if result == nil || result.State == StateDone || !strings.Contains(result.Err, c.want) {
				t.Errorf("result %+v, want a failure mentioning %q", result, c.want)
			} else if result.Kept != 0 {
				t.Errorf("the receiver says it kept %d bytes of what failed", result.Kept)
			}
			if b, err := os.ReadFile(filepath.Join(dst, "a.txt")); err != nil || !bytes.Equal(b, here) {
				t.Errorf("a.txt here now holds %q (%v)", b, err)
			}
			entries, _ := os.ReadDir(dst)
			for _, e := range entries {
				if e.Name() != "a.txt" {
					t.Errorf("written: %s", e.Name())
				}
			}
		})
	}
}

// TestSameFileChangedMeanwhileIsFetched: the file here under an offered
// name changes between its leaves going out and the sender saying it holds
// the same (its same frame and root): the receiver finds it changed as it
// keeps it, asks for the chunk, and saves what was sent beside it,
// numbered. The file here stays as it now is.
func TestSameFileChangedMeanwhileIsFetched(t *testing.T) {
	here := bytes.Repeat([]byte("what the file here holds"), 200)
	changed := bytes.Repeat([]byte("what it holds a moment o"), 200)
	recv := testEngine(t, Options{Accept: AcceptAll})
	dst := recv.DownloadDir()
	if err := os.WriteFile(filepath.Join(dst, "a.txt"), here, 0o644); err != nil {
		t.Fatal(err)
	}
	received := resultsOf(t, recv, Receiving, 1)
	p, done := connectRaw(t, recv)
	if err := recv.trust.SetAlwaysAccept(p.id.ID.Peer(), "sender", true); err != nil {
		t.Fatal(err)
	}
	leaf := merkle.Leaf(here)
	asked := make(chan *wire.NeedChunk, 1)
	go func() {
		defer p.drain()
		if err := p.helloWith(wire.FeatureSame); err != nil {
			return
		}
		p.offer(wire.FileEntry{Path: "a.txt", Size: int64(len(here))})
		if d, err := expect[*wire.Decision](p.ctl.recvTimeout(5 * time.Second)); err != nil || !d.SameHolds(0) {
			t.Errorf("decision %+v (%v): want a.txt named as held", d, err)
			return
		}
		if s, err := expect[*wire.Same](p.ctl.recvTimeout(5 * time.Second)); err != nil || s.Leaf(0) != leaf {
			t.Errorf("leaves %+v (%v): want the one leaf of a.txt", s, err)
			return
		}
		if err := os.WriteFile(filepath.Join(dst, "a.txt"), changed, 0o644); err != nil {
			t.Error(err)
			return
		}
		p.data(sameFrame(0, wire.ZeroRun{Start: 0, Count: 1}), rootFrame(0, merkle.Root([]merkle.Hash{leaf})))
		n, err := expect[*wire.NeedChunk](p.ctl.recvTimeout(5 * time.Second))
		if err != nil {
			t.Errorf("no chunk asked for (%v)", err)
			return
		}
		asked <- n
		p.data(frame(0, 0, here, leaf))
		p.ctl.send(&wire.SenderDone{})
		p.hangUpAfterResult()
	}()
	r := next(t, received)
	<-done
	if r.State != StateDone || r.Verified != 1 {
		t.Fatalf("received: %s %q, %d verified", r.State, r.Err, r.Verified)
	}
	if n := <-asked; n.File != 0 || n.Chunk != 0 {
		t.Errorf("asked for chunk %d of file %d", n.Chunk, n.File)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "a.txt")); err != nil || !bytes.Equal(b, changed) {
		t.Errorf("a.txt holds %q (%v), want what it was changed to", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "a (1).txt")); err != nil || !bytes.Equal(b, here) {
		t.Errorf("a (1).txt holds %q (%v), want what was sent", b, err)
	}
}

// TestLeavesOfAFileResolvedAreLetGo: the receiver may resolve a file it
// named as held before it sent all of that file's leaves (the sender gave
// it up, it could not be saved); leaves still coming for it are not a
// lie, and the sender does not end the session over them.
func TestLeavesOfAFileResolvedAreLetGo(t *testing.T) {
	said := encode(&wire.Decision{Accept: true, Same: []byte{1}}, &wire.FileResult{File: 0, OK: false, Code: wire.CodeIO, Reason: "disk error"},
		&wire.Same{File: 0, Leaves: make([]byte, 3*32), Done: true}, &wire.Cancel{Code: wire.CodeCancelled, Reason: "that will do"})
	err, _ := againstLiar(t, []string{wire.FeatureSame}, func(r *rawReceiver) { r.answer(said) })
	var re *wire.RemoteError
	if !errors.As(err, &re) || re.Reason != "that will do" {
		t.Fatalf("the sender ended with %v; want the receiver's cancel, the leaves of the file resolved let go", err)
	}
}
