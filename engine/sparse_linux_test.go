package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/weblink"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/fileio"
	"github.com/ferrydrop/ferry/internal/lspeer"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// writeSparse makes a sparse file of size bytes at path: a hole, with
// piece bytes of random data every every bytes from off (truncate and
// dd's way); it returns the bytes of data.
func writeSparse(t testing.TB, path string, size, off, every int64, piece int) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, piece)
	var data int64
	for ; off+int64(piece) <= size; off += every {
		rand.Read(b)
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
		data += int64(piece)
	}
	return data
}

// onDisk is the disk the file at path takes (its allocated blocks).
func onDisk(t testing.TB, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// A sparse file (a disk image) arrives sparse: its chunks of zeros are
// holes on the receiver, not written, and their preallocation is given
// back. It arrived taking its whole size: a 10 GB image with 200 MB of data
// took 10 GB. Its data and zeros are verified as before.
func TestSparseFileArrivesSparse(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	src := filepath.Join(t.TempDir(), "disk.img")
	// 3 MiB of data in pieces not on chunk bounds, spread over 64 MiB.
	data := writeSparse(t, src, 64<<20, 100<<10, 21<<20, 1<<20)
	if held := onDisk(t, src); held > data+1<<20 {
		t.Skipf("the sender's file system keeps no holes (%d bytes for %d of data)", held, data)
	}
	for _, tp := range transportsUnderTest() {
		res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp})
		if res.State != StateDone || res.Verified != 1 {
			t.Fatalf("%s: %s %q", tp, res.State, res.Err)
		}
		got := filepath.Join(recv.DownloadDir(), "disk.img")
		sameTree(t, src, recv.DownloadDir())
		// Each piece of data spans two chunks of 1 MiB at most (and a
		// block of the file system's own).
		if on := onDisk(t, got); on > 2*data+1<<20 {
			t.Errorf("%s: the file takes %d bytes on the receiver, for %d of data in 64 MiB", tp, on, data)
		}
		os.Remove(got)
	}
}

// A sparse file's transfer that stopped part way resumes: the chunks of
// zeros it left as holes are held as the data written is (their CRC32C is
// checked again, and a hole reads as the zeros it stands for), the rest
// arrives, and the file is whole and still sparse. To a receiver that takes
// runs of zeros (wire.FeatureZeroChunks) only data travels, in both
// attempts: the second sends what the first did not.
func TestSparseFileResumes(t *testing.T) {
	skipIfShort(t)
	older := slices.DeleteFunc(slices.Clone(features), func(f string) bool { return f == wire.FeatureZeroChunks })
	for _, c := range []struct {
		name     string
		features []string
	}{{"older receiver", older}, {"current", nil}} {
		t.Run(c.name, func(t *testing.T) {
			recv := startReceiver(t, Options{})
			recv.features = c.features
			send := testEngine(t, Options{})
			src := filepath.Join(t.TempDir(), "disk.img")
			const size = 96 << 20
			data := writeSparse(t, src, size, 0, 4<<20, 1<<20) // a chunk of data in four
			opts := SendOptions{Transport: "tcp", Streams: 1}
			// interruptWith stops the send past half of moves: half its
			// chunks to the older receiver; to the current one, which is
			// told the zeros first (wire.FeatureZerosFirst) and counts them
			// then, as the sender does, the zeros and half the data.
			moves := int64(size)
			if c.features == nil {
				moves = 2*size - data
			}
			interruptWith(t, send, recv, []string{src}, opts, moves)
			res := sendWait(t, send, target(recv), []string{src}, opts)
			if res.State != StateDone || res.Kept == 0 {
				t.Fatalf("resume: %s %q (kept %d), want done with part kept", res.State, res.Err, res.Kept)
			}
			if c.features == nil && res.Bytes >= data {
				t.Errorf("the second attempt sent %d bytes of chunks, for %d of data, part of it kept", res.Bytes, data)
			}
			got := filepath.Join(recv.DownloadDir(), "disk.img")
			sameTree(t, src, recv.DownloadDir())
			if on := onDisk(t, got); on > data+4<<20 {
				t.Errorf("the file takes %d bytes on the receiver, for %d of data in %d", on, data, size)
			}
		})
	}
}

// A sparse file larger than the receiver's free space arrives when its data
// fits: the offer says how much of it is holes (wire.FileEntry.Holes), and
// the space check counts its data alone. It was refused: a 64 MiB image
// with 3 MiB of data could not be sent to a disk with 16 MiB free ("67.1 MB
// needed, 16.8 MB free").
func TestSparseFileLargerThanTheFreeSpaceArrives(t *testing.T) {
	recv := startReceiver(t, Options{DownloadDir: testutil.SmallDisk(t, "size=16m")})
	send := testEngine(t, Options{})
	src := filepath.Join(t.TempDir(), "disk.img")
	data := writeSparse(t, src, 64<<20, 100<<10, 21<<20, 1<<20)
	if held := onDisk(t, src); held > data+1<<20 {
		t.Skipf("the sender's file system keeps no holes (%d bytes for %d of data)", held, data)
	}
	for _, tp := range transportsUnderTest() {
		res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp})
		if res.State != StateDone || res.Verified != 1 {
			t.Fatalf("%s: %s %q, want the sparse file delivered", tp, res.State, res.Err)
		}
		got := filepath.Join(recv.DownloadDir(), "disk.img")
		sameTree(t, src, recv.DownloadDir())
		if on := onDisk(t, got); on > 2*data+1<<20 {
			t.Errorf("%s: the file takes %d bytes on the receiver, for %d of data in 64 MiB", tp, on, data)
		}
		os.Remove(got)
	}
}

// A sender that says a file is nearly all holes and then sends data in
// them is stopped at the data it said: the file is not saved, its partial
// goes, both sides are told why, and the disk holds no more than the offer
// asked for. Without the check, the 64 KiB it claimed let it fill the 4 MiB
// disk.
func TestSenderLyingAboutHolesIsStopped(t *testing.T) {
	disk := testutil.SmallDisk(t, "size=4m")
	recv := startReceiver(t, Options{DownloadDir: disk})
	got := resultsOf(t, recv, Receiving, 1)
	const chunk, size = 64 << 10, 64 << 20 // rawPeer.offer's chunk size
	results := make(chan *wire.FileResult, 1)
	runRaw(t, recv, func(p *rawPeer) {
		if p.hello() != nil {
			return
		}
		p.offer(wire.FileEntry{Path: "disk.img", Size: size, Holes: size - chunk}) // one chunk of data
		if !p.waitAccepted() {
			return
		}
		// A chunk of data (as said), one of zeros, then data where it said
		// there were holes: as much as the disk holds.
		frames := make([][]byte, 0, 64)
		for c := range uint32(64) {
			b := make([]byte, chunk)
			if c != 1 {
				rand.Read(b)
			}
			frames = append(frames, frame(0, c, b, merkle.Leaf(b)))
		}
		go p.data(frames...)
		for {
			m, err := p.ctl.recvTimeout(30 * time.Second)
			if err != nil {
				return
			}
			switch m := m.(type) {
			case *wire.FileResult:
				results <- m
				p.ctl.send(&wire.SenderDone{})
			case *wire.Result:
				p.conn.Close(nil)
				return
			}
		}
	})
	var fr *wire.FileResult
	select {
	case fr = <-results:
	default:
		t.Fatal("the sender was told nothing about the file")
	}
	const why = "then sent more data than that"
	if fr.OK || fr.Code != wire.CodeProtocol || !strings.Contains(fr.Reason, why) {
		t.Errorf("the sender was told %+v, want the file refused for more data than offered", fr)
	}
	r := next(t, got)
	if r.State == StateDone && r.Verified > 0 || !strings.Contains(r.Err, why) {
		t.Errorf("receive: %s %q (%d verified), want the file not saved, saying why", r.State, r.Err, r.Verified)
	}
	if ents, _ := os.ReadDir(disk); len(ents) != 0 {
		t.Errorf("the refused file left %d entries in the download folder", len(ents))
	}
}

// An upload written in order (from a LocalSend app, from a browser) leaves
// its chunks of zeros as holes too: its partial gets its size first
// (store.Partial.SparseUpload), so its writes of zeros fall inside it. A
// 16 MiB image with 1 MiB of data took 16 MiB on the receiver either way.
func TestUploadsOfZerosLeaveHoles(t *testing.T) {
	data := make([]byte, 16<<20)
	rand.Read(data[7<<20 : 8<<20])
	check := func(t *testing.T, dir string) {
		t.Helper()
		got := filepath.Join(dir, "disk.img")
		if b, err := os.ReadFile(got); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("the file did not arrive whole: %v", err)
		}
		on := onDisk(t, got)
		if on > 2<<20 {
			t.Errorf("the file takes %d bytes on the receiver, for 1 MiB of data in 16 MiB", on)
		}
		t.Logf("%d KiB on disk", on>>10)
	}
	t.Run("localsend", func(t *testing.T) {
		e, srv, addr := lsEngine(t, Options{}, LocalSendOptions{})
		if !fileio.LeavesHoles(e.DownloadDir()) {
			t.Skip("the download folder's file system keeps no holes")
		}
		res := receivedResult(t, e)
		sr, err := testPeer(t).Send(context.Background(), addr, srv.Fingerprint(), true, "", "",
			[]lspeer.SendFile{{Name: "disk.img", Data: data}}, nil)
		if err != nil || sr.PrepareStatus != 200 {
			t.Fatalf("%+v %v", sr, err)
		}
		if r := <-res; r.State != StateDone || r.Files != 1 {
			t.Fatalf("result %+v", r)
		}
		check(t, e.DownloadDir())
	})
	t.Run("browser", func(t *testing.T) {
		e := testEngine(t, Options{})
		if !fileio.LeavesHoles(e.DownloadDir()) {
			t.Skip("the download folder's file system keeps no holes")
		}
		res := receivedResult(t, e)
		endpoint, _ := browserLink(t, e, browserIdle)
		// In the pieces a page sends (weblink.ChunkSize each).
		status, loc, _ := testutil.TusCreateMeta(t, endpoint, "disk.img", len(data), nil)
		if status != 201 {
			t.Fatalf("tus create: %d", status)
		}
		for off := 0; off < len(data); off += weblink.ChunkSize {
			testutil.TusPatch(t, loc, int64(off), data[off:off+weblink.ChunkSize])
		}
		if r := <-res; r.State != StateDone || r.Verified != 1 {
			t.Fatalf("result %+v", r)
		}
		check(t, e.DownloadDir())
	})
}

// A sparse file's holes do not cross the network: a receiver that takes
// them (wire.FeatureZeroChunks) is told which chunks hold only zeros, in
// the file's root frame, and the sender neither reads nor sends them; the
// receiver takes their leaves as those of zeros and verifies the file's
// root as ever. A 256 MiB image with 1 MiB of data cost its 256 MiB on the
// wire; now about 2 MiB (the chunks its data touches). Both transports; the
// file arrives identical and sparse.
func TestSparseFileHolesAreNotSent(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{})
	src := filepath.Join(t.TempDir(), "disk.img")
	const size = 256 << 20
	data := writeSparse(t, src, size, 100<<10, 128<<20, 512<<10) // 2 pieces of 512 KiB
	if held := onDisk(t, src); held > data+1<<20 {
		t.Skipf("the sender's file system keeps no holes (%d bytes for %d of data)", held, data)
	}
	for _, tp := range transportsUnderTest() {
		res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp})
		if res.State != StateDone || res.Verified != 1 {
			t.Fatalf("%s: %s %q", tp, res.State, res.Err)
		}
		// Each piece lies in one chunk of 1 MiB, and one chunk of the
		// file (its last) goes whatever it holds.
		if res.Bytes > 3<<20 || res.WireBytes > 8<<20 {
			t.Errorf("%s: %d bytes of chunks sent, %d bytes on the wire, for %d of data in %d", tp, res.Bytes, res.WireBytes, data, size)
		}
		got := filepath.Join(recv.DownloadDir(), "disk.img")
		sameTree(t, src, recv.DownloadDir())
		if on := onDisk(t, got); on > 2*data+1<<20 {
			t.Errorf("%s: the file takes %d bytes on the receiver, for %d of data", tp, on, data)
		}
		t.Logf("%s: %d bytes of chunks, %d on the wire, %d KiB on the receiver's disk", tp, res.Bytes, res.WireBytes, onDisk(t, got)>>10)
		os.Remove(got)
	}
}

// Both sides count a sparse file's holes as they begin it, not at its end:
// to a receiver that takes a zeros frame (wire.FeatureZerosFirst) the
// sender names its chunks of zeros before its first chunk of data, and
// both count them then. Before, both counted them at the file's root
// frame, after its last chunk: a bar sat at half of an image half holes
// while its data went, then leapt. Read in order: no progress event of
// either side counts some data without the holes (one stream, so the
// zeros frame goes before the data on it).
func TestSparseFileCountsItsHolesFirst(t *testing.T) {
	recv := startReceiver(t, Options{})
	recv.opts.ProgressInterval = 2 * time.Millisecond
	send := testEngine(t, Options{})
	send.opts.ProgressInterval = 2 * time.Millisecond
	src := filepath.Join(t.TempDir(), "disk.img")
	const size = 128 << 20
	data := writeSparse(t, src, size, 0, size, 64<<20) // its first half data, then a hole
	if held := onDisk(t, src); held > data+1<<20 {
		t.Skipf("the sender's file system keeps no holes (%d bytes for %d of data)", held, data)
	}
	holes := size - data - 1<<20 // the last chunk goes whatever it holds
	sent, unsub := send.Subscribe(4096)
	defer unsub()
	received, unsub2 := recv.Subscribe(4096)
	defer unsub2()
	res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: "tcp", Streams: 1})
	if res.State != StateDone || res.Verified != 1 || res.Bytes > data+1<<20 {
		t.Fatalf("%s %q, %d bytes of chunks sent", res.State, res.Err, res.Bytes)
	}
	for side, events := range map[string]<-chan Event{"sender": sent, "receiver": received} {
		var seen int
		for len(events) > 0 {
			ev := <-events
			if ev.Kind != EventProgress || ev.Progress.Bytes == 0 {
				continue
			}
			seen++
			if ev.Progress.Bytes < holes {
				t.Errorf("the %s's progress counted %d bytes, some data without the %d bytes of holes", side, ev.Progress.Bytes, holes)
				break
			}
		}
		t.Logf("%s: %d progress events", side, seen)
	}
	sameTree(t, src, recv.DownloadDir())
}

// Between versions: to a receiver that does not take runs of zeros (its
// hello lacks wire.FeatureZeroChunks, as every Ferry before it), and from
// a sender that does not send them, every chunk travels, as before, and the
// file arrives identical and sparse.
func TestSparseFileBetweenVersions(t *testing.T) {
	older := slices.DeleteFunc(slices.Clone(features), func(f string) bool { return f == wire.FeatureZeroChunks })
	noZerosFirst := slices.DeleteFunc(slices.Clone(features), func(f string) bool { return f == wire.FeatureZerosFirst })
	src := filepath.Join(t.TempDir(), "disk.img")
	const size = 16 << 20 // 13 MiB of holes: every chunk sent, or not, shows; so does a file not sparse
	data := writeSparse(t, src, size, 100<<10, 5<<20, 1<<20)
	if held := onDisk(t, src); held > data+1<<20 {
		t.Skipf("the sender's file system keeps no holes (%d bytes for %d of data)", held, data)
	}
	for _, c := range []struct {
		name             string
		sender, receiver []string
		wantAll          bool
	}{
		{"older receiver", nil, older, true},
		{"older sender", older, nil, true},
		{"receiver without zeros-first", nil, noZerosFirst, false},
		{"sender without zeros-first", noZerosFirst, nil, false},
		{"both current", nil, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			recv := startReceiver(t, Options{})
			recv.features = c.receiver
			send := testEngine(t, Options{})
			send.features = c.sender
			for _, tp := range transportsUnderTest() {
				res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp})
				if res.State != StateDone || res.Verified != 1 {
					t.Fatalf("%s: %s %q", tp, res.State, res.Err)
				}
				if all := res.Bytes == size; all != c.wantAll {
					t.Errorf("%s: %d bytes of chunks sent of %d, want all: %v", tp, res.Bytes, size, c.wantAll)
				}
				got := filepath.Join(recv.DownloadDir(), "disk.img")
				sameTree(t, src, recv.DownloadDir())
				if on := onDisk(t, got); on > 2*data+1<<20 {
					t.Errorf("%s: the file takes %d bytes on the receiver, for %d of data", tp, on, data)
				}
				os.Remove(got)
			}
		})
	}
}

// BenchmarkSparseFile sends a 1 GiB disk image holding 8 MiB of data (8
// pieces of 1 MiB, 128 MiB apart) over loopback, to a receiver that takes
// runs of zeros (wire.FeatureZeroChunks) and to one that does not (every
// Ferry before it), which gets every chunk. It reports the chunk bytes the
// sender sent and the bytes on the wire per send; figures in
// docs/compatibility.md ("Sparse files").
func BenchmarkSparseFile(b *testing.B) {
	src := filepath.Join(b.TempDir(), "disk.img")
	const size = 1 << 30
	data := writeSparse(b, src, size, 100<<10, 128<<20, 1<<20)
	if held := onDisk(b, src); held > data+1<<20 {
		b.Skipf("the sender's file system keeps no holes (%d bytes for %d of data)", held, data)
	}
	older := slices.DeleteFunc(slices.Clone(features), func(f string) bool { return f == wire.FeatureZeroChunks })
	for _, tp := range transportsUnderTest() {
		for _, v := range []struct {
			name     string
			features []string
		}{{"older-receiver", older}, {"zero-runs", nil}} {
			b.Run(tp+"/"+v.name, func(b *testing.B) {
				recv := startReceiverB(b)
				recv.features = v.features
				send, _ := New(Options{ConfigDir: b.TempDir()})
				defer send.Close()
				b.SetBytes(size)
				var sent, onWire int64
				for b.Loop() {
					os.RemoveAll(recv.DownloadDir())
					os.MkdirAll(recv.DownloadDir(), 0o755)
					res := sendWait(nil, send, target(recv), []string{src}, SendOptions{Transport: tp})
					if res.State != StateDone {
						b.Fatal(res.Err)
					}
					sent, onWire = sent+res.Bytes, onWire+res.WireBytes
				}
				b.ReportMetric(float64(sent)/float64(b.N), "sent-B/op")
				b.ReportMetric(float64(onWire)/float64(b.N), "wire-B/op")
			})
		}
	}
}

// BenchmarkSparseFileOfMuchData sends a 1 GiB disk image holding 512 MiB of
// data (64 pieces of 8 MiB, 16 MiB apart) over loopback, to a receiver that
// takes runs of zeros: what its data costs the receiver to write, where
// BenchmarkSparseFile's 8 MiB cost nothing. It reports the receiver's
// allocated bytes; figures in docs/compatibility.md ("Sparse files").
//
//	go test -run - -bench SparseFileOfMuchData -benchtime 5x ./engine
func BenchmarkSparseFileOfMuchData(b *testing.B) {
	src := filepath.Join(b.TempDir(), "disk.img")
	const size = 1 << 30
	data := writeSparse(b, src, size, 4<<20, 16<<20, 8<<20)
	if held := onDisk(b, src); held > data+1<<20 {
		b.Skipf("the sender's file system keeps no holes (%d bytes for %d of data)", held, data)
	}
	recv := startReceiverB(b)
	send, _ := New(Options{ConfigDir: b.TempDir()})
	defer send.Close()
	b.SetBytes(data)
	var on int64
	for b.Loop() {
		os.RemoveAll(recv.DownloadDir())
		os.MkdirAll(recv.DownloadDir(), 0o755)
		res := sendWait(nil, send, target(recv), []string{src}, SendOptions{Transport: "tcp"})
		if res.State != StateDone {
			b.Fatal(res.Err)
		}
		on = onDisk(b, filepath.Join(recv.DownloadDir(), "disk.img"))
	}
	if on > data+1<<20 {
		b.Errorf("the file takes %d bytes on the receiver, for %d of data", on, data)
	}
	b.ReportMetric(float64(on), "disk-B")
}
