package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/ferrydrop/ferry/engine/internal/pack"
	"github.com/ferrydrop/ferry/engine/merkle"
	"github.com/ferrydrop/ferry/engine/wire"
)

// writeText writes size bytes of Go's own source at path (its folders
// made): bytes that compress to about a quarter.
func writeText(t testing.TB, path string, size int) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "net", "http", "server.go"))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 0, size)
	for len(data) < size {
		data = append(data, src[:min(len(src), size-len(data))]...)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

// TestChunksTravelPacked: to a receiver that takes them
// (wire.FeaturePacked), chunks that compress travel compressed and arrive
// as they were, verified; chunks that do not (random bytes), small files
// under pack.MinLen and empty files travel as they are. Both sides count
// the same bytes packed. A receiver of a build before, and a sender told
// never to, send every chunk as it is.
func TestChunksTravelPacked(t *testing.T) {
	src := filepath.Join(t.TempDir(), "Tree")
	writeText(t, filepath.Join(src, "big.go"), 3<<20+5)
	writeText(t, filepath.Join(src, "sub", "small.go"), 5000)
	writeText(t, filepath.Join(src, "tiny.go"), 100)
	writeFile(t, filepath.Join(src, "photo.jpg"), 2<<20)
	if err := os.WriteFile(filepath.Join(src, "empty"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	text := int64(3<<20 + 5000) // what packs: not big.go's last chunk of 5 bytes
	for _, tc := range []struct {
		name     string
		send     Options
		older    bool // the receiver is of a build before the feature
		tp       string
		packable bool
	}{
		{"tcp", Options{Compression: "always"}, false, "tcp", true},
		{"quic", Options{Compression: "always"}, false, "quic", true},
		{"a receiver of a build before", Options{Compression: "always"}, true, "tcp", false},
		{"never", Options{Compression: "never"}, false, "tcp", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recv := startReceiver(t, Options{})
			if tc.older {
				recv.features = slices.DeleteFunc(slices.Clone(features), func(f string) bool { return f == wire.FeaturePacked })
			}
			send := testEngine(t, tc.send)
			received := resultsOf(t, recv, Receiving, 1)
			res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tc.tp})
			if res.State != StateDone || res.Verified != res.Files || res.Files != 5 {
				t.Fatalf("send: %s %q, %d of %d files verified", res.State, res.Err, res.Verified, res.Files)
			}
			r := next(t, received)
			if r.State != StateDone {
				t.Fatalf("received: %s %q", r.State, r.Err)
			}
			sameTree(t, src, recv.DownloadDir())
			noPartials(t, recv.DownloadDir())
			if !tc.packable {
				if res.Packed != 0 || r.Packed != 0 {
					t.Fatalf("%d bytes sent packed (%d received)", res.Packed, r.Packed)
				}
				return
			}
			if res.Packed != text || r.Packed != text {
				t.Errorf("sent %d bytes packed, received %d; want the text files' %d", res.Packed, r.Packed, text)
			}
			if res.PackedTo != r.PackedTo || res.PackedTo <= 0 || res.PackedTo > text/2 {
				t.Errorf("packed into %d bytes (the receiver counts %d) of %d", res.PackedTo, r.PackedTo, text)
			}
			if res.Bytes != res.TotalBytes || r.Bytes != res.TotalBytes {
				t.Errorf("bytes %d sent, %d received, of %d: packing counts the chunks' bytes", res.Bytes, r.Bytes, res.TotalBytes)
			}
		})
	}
}

// TestPackedSendResumes: a send whose chunks travel packed, cut half-way,
// resumes where it was: the receiver journaled the chunks it unpacked as
// the chunks' own bytes, the second attempt sends only what is missing
// (packed again), and the file arrives exact.
func TestPackedSendResumes(t *testing.T) {
	skipIfShort(t)
	src := filepath.Join(t.TempDir(), "big.go")
	const size = 48 << 20
	writeText(t, src, size)
	for _, tp := range transportsUnderTest() {
		t.Run(tp, func(t *testing.T) {
			recv := startReceiver(t, Options{})
			send := testEngine(t, Options{Compression: "always"})
			first := interrupt(t, send, recv, []string{src}, tp, size)
			if first.Packed == 0 {
				t.Fatal("the first attempt packed nothing")
			}
			held := recv.Partials()[0].Bytes
			if held == 0 {
				t.Fatal("the partial holds nothing")
			}
			got := receivedResult(t, recv)
			res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp})
			if res.State != StateDone || res.Verified != 1 {
				t.Fatalf("resume: %s %q (%d verified)", res.State, res.Err, res.Verified)
			}
			if res.Kept != held {
				t.Errorf("the sender says the receiver kept %d bytes; it held %d", res.Kept, held)
			}
			if res.Bytes > size-held+int64(8<<20) {
				t.Errorf("the second attempt sent %d bytes; %d of %d were there", res.Bytes, held, size)
			}
			if res.Packed == 0 || res.Packed > res.Bytes {
				t.Errorf("the second attempt packed %d of the %d bytes it sent", res.Packed, res.Bytes)
			}
			if r := <-got; r.State != StateDone || r.Kept != held || r.Packed != res.Packed {
				t.Errorf("the receiver: %s, kept %d (held %d), %d packed (the sender says %d)", r.State, r.Kept, held, r.Packed, res.Packed)
			}
			sameTree(t, src, recv.DownloadDir())
			noPartials(t, recv.DownloadDir())
		})
	}
}

// TestSentAgainPacked: a text folder sent again to a device that trusts
// the sender, one chunk of one file changed, sends that chunk alone, and
// packed; the rest is copied from the file there, and the new version
// arrives exact beside the first.
func TestSentAgainPacked(t *testing.T) {
	recv := startReceiver(t, Options{})
	send := testEngine(t, Options{Compression: "always"})
	pairEngines(t, send, recv)
	src := filepath.Join(t.TempDir(), "Code")
	writeText(t, filepath.Join(src, "a.go"), 300<<10)
	edit := writeText(t, filepath.Join(src, "sub", "edit.go"), 3<<20)
	chunk := int64(minBatchChunk) // a batch this small is cut so (batchChunkSize)
	for round, tp := range []string{"tcp", "quic"} {
		if round == 1 {
			edit[chunk+7] ^= 0x20 // its second chunk: a letter's case
			if err := os.WriteFile(filepath.Join(src, "sub", "edit.go"), edit, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		received := resultsOf(t, recv, Receiving, 1)
		res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp})
		if res.State != StateDone || res.Verified != res.Files {
			t.Fatalf("send %d: %s %q, %d of %d files verified", round+1, res.State, res.Err, res.Verified, res.Files)
		}
		r := next(t, received)
		if r.State != StateDone {
			t.Fatalf("received %d: %s %q", round+1, r.State, r.Err)
		}
		sent := res.TotalBytes
		if round == 1 {
			sent = chunk
		}
		if res.Bytes != sent || res.Packed != sent || r.Packed != sent || res.PackedTo >= sent/2 {
			t.Errorf("send %d over %s: sent %d bytes, %d of them packed (the receiver says %d) into %d; want %d, all packed",
				round+1, tp, res.Bytes, res.Packed, r.Packed, res.PackedTo, sent)
		}
	}
	dst := filepath.Join(recv.DownloadDir(), "Code")
	if got, want := filesUnder(t, dst), []string{"a.go", "sub/edit (1).go", "sub/edit.go"}; !slices.Equal(got, want) {
		t.Fatalf("the folder holds %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "sub", "edit (1).go")); err != nil || !bytes.Equal(b, edit) {
		t.Errorf("the changed file's second version: %d bytes (%v), not what was sent", len(b), err)
	}
	noPartials(t, recv.DownloadDir())
}

// packedFrame is a packed chunk frame (wire.DataHeader.Packed) of file's
// chunk with payload, whatever it holds, and leaf.
func packedFrame(file, chunk uint32, payload []byte, leaf merkle.Hash) []byte {
	b := make([]byte, wire.DataHeaderLen+len(payload))
	wire.DataHeader{File: file, Chunk: chunk, Length: uint32(len(payload)), Packed: true, Leaf: leaf}.Put(b)
	copy(b[wire.DataHeaderLen:], payload)
	return b
}

// TestHostilePackedFrames: a sender's packed frames that are not the
// chunk they stand for end the transfer with the reason, nothing saved; a
// packed frame that is the chunk is saved, verified. The offer holds one
// file of 8000 bytes (one chunk).
func TestHostilePackedFrames(t *testing.T) {
	text := bytes.Repeat([]byte("func (srv *Server) Serve(l net.Listener) error {\n"), 170)[:8000]
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf := merkle.Leaf(text)
	root := merkle.Root([]merkle.Hash{leaf})
	good := enc.EncodeAll(text, nil)
	cases := []struct {
		name   string
		frames [][]byte
		want   string // "" : saved
		older  bool   // the receiver does not take packed frames
	}{
		{"the chunk, packed", [][]byte{packedFrame(0, 0, good, leaf), rootFrame(0, root)}, "", false},
		{"not zstd", [][]byte{packedFrame(0, 0, []byte("not zstd, only some bytes"), leaf)}, "does not unpack", false},
		{"more than the chunk once unpacked", [][]byte{packedFrame(0, 0, enc.EncodeAll(append(text, text...), nil), leaf)}, "does not unpack", false},
		{"less than the chunk once unpacked", [][]byte{packedFrame(0, 0, enc.EncodeAll(text[:7999], nil), leaf)}, "does not unpack", false},
		{"a payload as long as the chunk", [][]byte{packedFrame(0, 0, make([]byte, 8000), leaf)}, "has 8000 bytes; the chunk has 8000", false},
		{"an empty payload", [][]byte{packedFrame(0, 0, nil, leaf)}, "has 0 bytes", false},
		{"a chunk beyond the file", [][]byte{packedFrame(0, 1, good, leaf)}, "packed chunk 1 of file 0", false},
		{"a packed root frame", [][]byte{packedFrame(0, wire.RootChunk, nil, root)}, "a packed root, zeros or same frame", false},
		{"to a receiver that does not take them", [][]byte{packedFrame(0, 0, good, leaf)}, "which this receiver does not take", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recv := testEngine(t, Options{Accept: AcceptAll})
			if c.older {
				recv.features = slices.DeleteFunc(slices.Clone(features), func(f string) bool { return f == wire.FeaturePacked })
			}
			events, unsub := recv.Subscribe(256)
			defer unsub()
			p, done := connectRaw(t, recv)
			go func() {
				defer p.drain()
				if err := p.hello(); err != nil {
					return
				}
				p.offer(wire.FileEntry{Path: "a.go", Size: int64(len(text))})
				if _, err := expect[*wire.Decision](p.ctl.recvTimeout(5 * time.Second)); err != nil {
					t.Errorf("decision: %v", err)
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
			got, readErr := os.ReadFile(filepath.Join(recv.DownloadDir(), "a.go"))
			if c.want == "" {
				if result == nil || result.State != StateDone || readErr != nil || !bytes.Equal(got, text) || result.Packed != 8000 {
					t.Fatalf("result %+v; a.go %d bytes (%v): want it saved, as sent, 8000 bytes packed", result, len(got), readErr)
				}
				return
			}
			if result == nil || result.State == StateDone || !strings.Contains(result.Err+" "+result.Detail, c.want) {
				t.Errorf("result %+v, want a failure mentioning %q", result, c.want)
			}
			if readErr == nil {
				t.Errorf("a.go was saved (%d bytes)", len(got))
			}
		})
	}
}

// TestPacksTo: in auto a receiver on this machine is never sent packed
// chunks (no link to spare, the same CPUs); one elsewhere is, as the gate
// judges; always and never are what they say.
func TestPacksTo(t *testing.T) {
	for _, c := range []struct {
		mode   pack.Mode
		remote string
		want   bool
	}{
		{pack.Auto, "127.0.0.1:47800", false},
		{pack.Auto, "[::1]:47800", false},
		{pack.Auto, "127.3.4.5:1", false},
		{pack.Auto, "192.168.1.20:47800", true},
		{pack.Auto, "[fe80::1%eth0]:47800", true},
		{pack.Auto, "pipe", true},
		{pack.Always, "127.0.0.1:47800", true},
		{pack.Never, "192.168.1.20:47800", false},
	} {
		e := &Engine{packMode: c.mode}
		if got := e.packsTo(c.remote); got != c.want {
			t.Errorf("mode %v to %s: %v, want %v", c.mode, c.remote, got, c.want)
		}
	}
}
