package engine

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/fileio"
)

// rootFrameRuns is a root frame that names runs of chunks of zeros
// (wire.FeatureZeroChunks): pairs of (first chunk, count).
func rootFrameRuns(file uint32, root merkle.Hash, pairs ...uint32) []byte {
	var runs []wire.ZeroRun
	for i := 0; i+1 < len(pairs); i += 2 {
		runs = append(runs, wire.ZeroRun{Start: pairs[i], Count: pairs[i+1]})
	}
	payload := wire.AppendZeroRuns(nil, runs)
	b := make([]byte, wire.DataHeaderLen, wire.DataHeaderLen+len(payload))
	wire.DataHeader{File: file, Chunk: wire.RootChunk, Length: uint32(len(payload)), Leaf: root}.Put(b)
	return append(b, payload...)
}

// zerosFrame is a zeros frame (wire.ZerosChunk) of file with the runs in
// pairs (start, count, ...).
func zerosFrame(file uint32, pairs ...uint32) []byte {
	b := rootFrameRuns(file, merkle.Hash{}, pairs...)
	h, _ := wire.ReadDataHeader(bytes.NewReader(b), make([]byte, wire.DataHeaderLen))
	h.Chunk = wire.ZerosChunk
	h.Put(b)
	return b
}

// sparseImage is a file of 4 chunks of rawPeer.offer's 64 KiB: data, two
// chunks of zeros, data; its entry says the two as holes.
type sparseImage struct {
	chunks [4][]byte
	leaves []merkle.Hash
	root   merkle.Hash
	entry  wire.FileEntry
}

const rawChunk = 64 << 10 // rawPeer.offer's chunk size

func newSparseImage() *sparseImage {
	s := &sparseImage{entry: wire.FileEntry{Path: "disk.img", Size: 4 * rawChunk, Holes: 2 * rawChunk}}
	for c := range s.chunks {
		s.chunks[c] = make([]byte, rawChunk)
		if c == 0 || c == 3 {
			rand.Read(s.chunks[c])
		}
		s.leaves = append(s.leaves, merkle.Leaf(s.chunks[c]))
	}
	s.root = merkle.Root(s.leaves)
	return s
}

func (s *sparseImage) frame(c uint32) []byte { return frame(0, c, s.chunks[c], s.leaves[c]) }

func (s *sparseImage) whole() []byte { return bytes.Join(s.chunks[:], nil) }

// finish reads the receiver's messages until its result, answering the
// file's result with SenderDone, and hangs up, as a sender does; it returns
// the file's result (nil when none came).
func (p *rawPeer) finish() *wire.FileResult {
	var fr *wire.FileResult
	p.untilEnd(func(m wire.Message) {
		if m, ok := m.(*wire.FileResult); ok {
			fr = m
			p.ctl.send(&wire.SenderDone{})
		}
	})
	return fr
}

// A sender's runs of chunks of zeros (a root frame's payload) are peer
// input: runs the wire refuses end the session as a protocol error, and a
// claim the file's data belies fails the file, whose partial goes. Nothing
// is left in the download folder either way.
func TestHostileZeroRuns(t *testing.T) {
	img := newSparseImage()
	// The root a sender computes that says chunk 1 is zeros though it
	// holds data: the leaf of what it holds, not of zeros.
	lying := newSparseImage()
	rand.Read(lying.chunks[1])
	lying.leaves[1] = merkle.Leaf(lying.chunks[1])
	lying.root = merkle.Root(lying.leaves)
	// The same, offered with one chunk of holes (so that its three chunks
	// of data are within what the offer said), whose root frame says chunk
	// 1 is zeros though it sent its data.
	sent := *lying
	sent.entry.Holes = rawChunk
	cases := []struct {
		name   string
		img    *sparseImage
		frames func(s *sparseImage) [][]byte
		want   string // in the file's result to the sender, else the transfer's error here
	}{
		{"overlapping runs", img, func(s *sparseImage) [][]byte {
			return [][]byte{s.frame(0), s.frame(3), rootFrameRuns(0, s.root, 1, 2, 2, 1)}
		}, "overlaps"},
		{"a run beyond the file", img, func(s *sparseImage) [][]byte {
			return [][]byte{s.frame(0), rootFrameRuns(0, s.root, 1, 4)}
		}, "beyond the file"},
		{"more runs than chunks", img, func(s *sparseImage) [][]byte {
			return [][]byte{s.frame(0), rootFrameRuns(0, s.root, 0, 1, 1, 1, 2, 1, 3, 1, 4, 1)}
		}, "5 runs for 4 chunks"},
		{"runs of more zeros than the offer's holes", img, func(s *sparseImage) [][]byte {
			return [][]byte{s.frame(0), rootFrameRuns(0, s.root, 1, 3)}
		}, "bytes of holes"},
		{"a payload that is not whole runs", img, func(s *sparseImage) [][]byte {
			return [][]byte{s.frame(0), rootFrameRuns(0, s.root, 1, 2)[:wire.DataHeaderLen+4]}
		}, ""}, // the header says 8 bytes: the frame is cut, the stream ends
		{"a chunk said to be zeros that was sent with data", &sent, func(s *sparseImage) [][]byte {
			return [][]byte{s.frame(0), s.frame(1), s.frame(2), s.frame(3), rootFrameRuns(0, s.root, 1, 1)}
		}, "sent data for it"},
		{"data sent after the root said the chunk is zeros", &sent, func(s *sparseImage) [][]byte {
			return [][]byte{s.frame(0), s.frame(2), rootFrameRuns(0, s.root, 1, 1), s.frame(1), s.frame(3)}
		}, "sent data for it"},
		{"a lying claim", lying, func(s *sparseImage) [][]byte {
			return [][]byte{s.frame(0), s.frame(3), rootFrameRuns(0, s.root, 1, 2)}
		}, "said 2 of its chunks hold only zeros and did not send them, and the file's BLAKE3 root does not match"},
		// The same claims in a zeros frame (wire.FeatureZerosFirst), before
		// the data.
		{"a zeros frame of overlapping runs", img, func(s *sparseImage) [][]byte {
			return [][]byte{zerosFrame(0, 1, 2, 2, 1), s.frame(0), s.frame(3), rootFrameRuns(0, s.root, 1, 2)}
		}, "overlaps"},
		{"a zeros frame of more zeros than the offer's holes", img, func(s *sparseImage) [][]byte {
			return [][]byte{zerosFrame(0, 1, 3), s.frame(0), s.frame(3), rootFrameRuns(0, s.root, 1, 2)}
		}, "zeros frame says 196608 bytes of it are zeros"},
		{"an empty zeros frame", img, func(s *sparseImage) [][]byte {
			return [][]byte{zerosFrame(0), s.frame(0), s.frame(3), rootFrameRuns(0, s.root, 1, 2)}
		}, "a zeros frame with 0 bytes of payload"},
		{"a zeros frame naming a chunk sent with data", &sent, func(s *sparseImage) [][]byte {
			return [][]byte{s.frame(0), s.frame(1), zerosFrame(0, 1, 1), s.frame(2), s.frame(3), rootFrameRuns(0, s.root, 1, 1)}
		}, "sent data for it"},
		{"data sent after a zeros frame said the chunk is zeros", &sent, func(s *sparseImage) [][]byte {
			return [][]byte{zerosFrame(0, 1, 1), s.frame(0), s.frame(1), s.frame(2), s.frame(3)}
		}, "sent data for it"},
		{"a lying zeros frame", lying, func(s *sparseImage) [][]byte {
			return [][]byte{zerosFrame(0, 1, 2), s.frame(0), s.frame(3), rootFrameRuns(0, s.root, 1, 2)}
		}, "said 2 of its chunks hold only zeros and did not send them, and the file's BLAKE3 root does not match"},
		{"a lying zeros frame, its root frame naming none", lying, func(s *sparseImage) [][]byte {
			return [][]byte{zerosFrame(0, 1, 2), s.frame(0), s.frame(3), rootFrameRuns(0, s.root)}
		}, "said 2 of its chunks hold only zeros and did not send them, and the file's BLAKE3 root does not match"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recv := testEngine(t, Options{Accept: AcceptAll})
			got := resultsOf(t, recv, Receiving, 1)
			var fr *wire.FileResult
			runRaw(t, recv, func(p *rawPeer) {
				if p.hello() != nil {
					return
				}
				p.offer(c.img.entry)
				if !p.waitAccepted() {
					return
				}
				go p.data(c.frames(c.img)...)
				fr = p.finish()
			})
			r := next(t, got)
			said := r.Err + r.Detail
			if fr != nil {
				if fr.OK || fr.Code != wire.CodeVerifyFailed {
					t.Errorf("the file's result %+v, want it failed verification", fr)
				}
				said = fr.Reason
			}
			if r.State == StateDone || r.Verified != 0 || !strings.Contains(said, c.want) {
				t.Errorf("receive: %s %q (%d verified), told %q, want the file not saved, saying %q", r.State, r.Err, r.Verified, said, c.want)
			}
			if ents, _ := os.ReadDir(recv.DownloadDir()); len(ents) != 0 {
				t.Errorf("%d entries left in the download folder", len(ents))
			}
		})
	}
	// The honest sender of the same file: its zeros are not sent, and it
	// arrives whole.
	recv := testEngine(t, Options{Accept: AcceptAll})
	got := resultsOf(t, recv, Receiving, 1)
	runRaw(t, recv, func(p *rawPeer) {
		if p.hello() != nil {
			return
		}
		p.offer(img.entry)
		if p.waitAccepted() {
			p.data(img.frame(0), img.frame(3), rootFrameRuns(0, img.root, 1, 2))
			p.finish()
		}
	})
	if r := next(t, got); r.State != StateDone || r.Verified != 1 {
		t.Fatalf("receive: %s %q, want the file saved", r.State, r.Err)
	}
	if b, err := os.ReadFile(filepath.Join(recv.DownloadDir(), "disk.img")); err != nil || !bytes.Equal(b, img.whole()) {
		t.Errorf("the file did not arrive as sent (%v)", err)
	}
}

// A receiver whose hello lists wire.FeatureZerosFirst counts a file's
// chunks of zeros when its zeros frame comes, before the file's data, where
// it counted them only at the file's root frame, after its last chunk: a
// 1 GiB image with 512 MiB of data sat at half while the sender skipped its
// holes, then leapt. The root frame names them again, counted once. The
// progress is read in order: the zeros are counted before any data is sent.
func TestZerosFrameCountsTheZerosFirst(t *testing.T) {
	img := newSparseImage()
	recv := testEngine(t, Options{Accept: AcceptAll})
	recv.opts.ProgressInterval = 2 * time.Millisecond
	results := resultsOf(t, recv, Receiving, 1)
	events, unsub := recv.Subscribe(1024)
	defer unsub()
	counted := make(chan int64, 1)
	go func() {
		for ev := range events {
			if ev.Kind == EventProgress && ev.Progress.Bytes > 0 {
				counted <- ev.Progress.Bytes
				return
			}
		}
	}()
	runRaw(t, recv, func(p *rawPeer) {
		if p.hello() != nil {
			return
		}
		p.offer(img.entry)
		if !p.waitAccepted() {
			return
		}
		p.data(zerosFrame(0, 1, 2))
		select {
		case n := <-counted:
			if n != 2*rawChunk {
				t.Errorf("the first progress counted %d bytes before any data, want the 2 chunks of zeros (%d)", n, 2*rawChunk)
			}
		case <-time.After(time.Minute): // a bound for a stuck session, not a speed test
			t.Error("no progress before the file's data: its zeros were not counted")
		}
		p.data(img.frame(0), img.frame(3), rootFrameRuns(0, img.root, 1, 2))
		p.finish()
	})
	r := next(t, results)
	if r.State != StateDone || r.Verified != 1 || r.Bytes != img.entry.Size {
		t.Errorf("receive: %s %q, %d verified, %d bytes, want the file saved and its %d bytes counted once", r.State, r.Err, r.Verified, r.Bytes, img.entry.Size)
	}
	if b, err := os.ReadFile(filepath.Join(recv.DownloadDir(), "disk.img")); err != nil || !bytes.Equal(b, img.whole()) {
		t.Errorf("the file did not arrive as sent (%v)", err)
	}
}

// A receiver whose hello does not list wire.FeatureZerosFirst (a Ferry with
// zero-chunks before it) refuses a zeros frame as a protocol error; a Ferry
// sender sends it none (TestSparseFileBetweenVersions).
func TestZerosFrameToAnOlderReceiverIsRefused(t *testing.T) {
	img := newSparseImage()
	recv := testEngine(t, Options{Accept: AcceptAll})
	recv.features = slices.DeleteFunc(slices.Clone(features), func(f string) bool { return f == wire.FeatureZerosFirst })
	got := resultsOf(t, recv, Receiving, 1)
	runRaw(t, recv, func(p *rawPeer) {
		if p.hello() != nil {
			return
		}
		p.offer(img.entry)
		if p.waitAccepted() {
			p.data(zerosFrame(0, 1, 2), img.frame(0), img.frame(3), rootFrameRuns(0, img.root, 1, 2))
			p.finish()
		}
	})
	if r := next(t, got); r.State == StateDone || !strings.Contains(r.Err+r.Detail, "a zeros frame, which this receiver does not take") {
		t.Errorf("receive: %s %q (%q), want a protocol error", r.State, r.Err, r.Detail)
	}
}

// A receiver whose hello does not list wire.FeatureZeroChunks (every Ferry
// before it) refuses a root frame with a payload, as it always did.
func TestZeroRunsToAnOlderReceiverAreRefused(t *testing.T) {
	img := newSparseImage()
	recv := testEngine(t, Options{Accept: AcceptAll})
	recv.features = []string{wire.FeatureResume, wire.FeatureText, wire.FeatureUnsent, wire.FeatureFolders, wire.FeatureCodeShown}
	got := resultsOf(t, recv, Receiving, 1)
	runRaw(t, recv, func(p *rawPeer) {
		if p.hello() != nil {
			return
		}
		p.offer(img.entry)
		if p.waitAccepted() {
			p.data(img.frame(0), img.frame(3), rootFrameRuns(0, img.root, 1, 2))
			p.finish()
		}
	})
	if r := next(t, got); r.State == StateDone || !strings.Contains(r.Err+r.Detail, "root frame with 8 bytes of payload") {
		t.Errorf("receive: %s %q (%q), want a protocol error", r.State, r.Err, r.Detail)
	}
}

// The chunks a root frame said hold only zeros are landed as any other for
// resume: a session that ended before the file's last chunk of data leaves a
// state that holds them (journaled with the CRC32C of zeros, which the next
// attempt checks on the holes), and the next attempt's Have lists them.
// Where the file system tells holes (SEEK_HOLE), the next attempt reads
// back only the chunk of data: a chunk in a hole reads as zeros, whose
// CRC32C needs no read (it read every chunk, 1 s per 20 GiB of holes).
func TestZeroRunsAreKeptForResume(t *testing.T) {
	img := newSparseImage()
	recv := testEngine(t, Options{Accept: AcceptAll})
	recv.opts.ProgressInterval = 2 * time.Millisecond
	var mu sync.Mutex
	var readBack []int
	recv.readingBack = func(_ string, c int) {
		mu.Lock()
		readBack = append(readBack, c)
		mu.Unlock()
	}
	id := newIdentity(t)
	results := resultsOf(t, recv, Receiving, 2)
	events, unsub := recv.Subscribe(1024)
	defer unsub()
	p, done := connectRawAs(t, recv, id, "")
	go func() {
		if p.hello() != nil {
			return
		}
		p.offerManifest("zeros-resume", rawChunk, img.entry)
		if p.waitAccepted() {
			// Chunk 3 never comes: the connection ends without it.
			p.data(img.frame(0), rootFrameRuns(0, img.root, 1, 2))
		}
	}()
	for landed := false; !landed; { // the first chunk and the zeros
		select {
		case ev := <-events:
			landed = ev.Kind == EventProgress && ev.Progress.Bytes >= 3*rawChunk
		case <-time.After(time.Minute): // a bound for a stuck session, not a speed test
			t.Fatal("the first chunk and the zeros did not land")
		}
	}
	p.conn.Close(nil)
	<-done
	if r := next(t, results); r.State == StateDone {
		t.Fatalf("the first session ended done")
	}
	p, done = connectRawAs(t, recv, id, "")
	var have *wire.Have
	go func() {
		if p.hello() != nil {
			return
		}
		p.offerManifest("zeros-resume", rawChunk, img.entry)
		for {
			m, err := p.ctl.recvTimeout(10 * time.Second)
			if err != nil {
				return
			}
			if h, ok := m.(*wire.Have); ok {
				have = h
				continue
			}
			if d, ok := m.(*wire.Decision); !ok || !d.Accept {
				return
			}
			break
		}
		p.data(img.frame(3), rootFrameRuns(0, img.root, 1, 2))
		p.finish()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // a bound for a stuck session, not a speed test
		p.conn.Close(nil)
		<-done
	}
	if r := next(t, results); r.State != StateDone || r.Verified != 1 || r.Kept != 3*rawChunk {
		t.Errorf("resumed: %s %q, %d verified, %d bytes kept, want done with 3 chunks kept", r.State, r.Err, r.Verified, r.Kept)
	}
	if have == nil || len(have.Chunks) != 1 || have.Chunks[0] != 0b0111 {
		t.Errorf("the resumed session's Have is %+v, want chunks 0, 1 and 2", have)
	}
	if b, err := os.ReadFile(filepath.Join(recv.DownloadDir(), "disk.img")); err != nil || !bytes.Equal(b, img.whole()) {
		t.Errorf("the file did not arrive as sent (%v)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fileio.LeavesHoles(recv.DownloadDir()) && !slices.Equal(readBack, []int{0}) {
		t.Errorf("the resume read back chunks %v, want only chunk 0 (1 and 2 are holes)", readBack)
	}
}
