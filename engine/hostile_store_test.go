package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// runRaw runs script against recv's serve and waits for the session to end.
func runRaw(t *testing.T, recv *Engine, script func(p *rawPeer)) {
	t.Helper()
	p, done := connectRaw(t, recv)
	go script(p)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		p.conn.Close(0, "")
		<-done
	}
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
		p.conn.Close(0, "")
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
		p.conn.Close(0, "")
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
