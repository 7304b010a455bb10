package wire_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ferrydrop/ferry/engine/wire"
)

// validID is a 52-character device ID, the length Hello requires.
var validID = strings.Repeat("A", 52)

func root32(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// validMessages holds at least one fully populated value of every message type.
func validMessages() []wire.Message {
	return []wire.Message{
		&wire.Hello{Version: wire.Version, Name: "Ana's laptop ✈", ID: validID, OS: "linux",
			Features: []string{"resume", "pair", "rendezvous"}, Pair: "commit", Rendezvous: "0123456789abcdef", DataStreams: 56},
		&wire.Hello{Version: 1, ID: validID, DataStreams: wire.LegacyDataStreams},
		&wire.Hello{Version: 1, ID: validID, DataStreams: wire.MaxDataStreams},
		&wire.Hello{Version: 1, Name: "", ID: validID},
		&wire.Offer{Transfer: "t-1", ChunkSize: wire.MinChunkSize, Files: 3, TotalBytes: 1 << 40, Manifest: "m"},
		&wire.Offer{Transfer: strings.Repeat("x", 64), ChunkSize: wire.MaxChunkSize, Files: wire.MaxFiles},
		&wire.Offer{Transfer: "t-2", ChunkSize: wire.MinChunkSize, Text: "see https://example.org/?q=1\n\tand \u202e this ✈"},
		// A text item is bounded in bytes: 32768 two-byte runes are exactly MaxTextLen.
		&wire.Offer{Transfer: "t-3", ChunkSize: wire.MinChunkSize, Files: 1, TotalBytes: 5, Text: strings.Repeat("é", wire.MaxTextLen/2)},
		&wire.OfferFiles{Start: 2, Files: []wire.FileEntry{
			{Path: "a/b.txt", Size: 10, Mode: 0o644, MTime: 1_700_000_000_000_000_000},
			{Path: "empty", Size: 0},
			{Path: "ünïcode/名前.bin", Size: 1 << 33, Mode: 0o755, MTime: -1},
		}},
		&wire.OfferFiles{Start: 0, Files: []wire.FileEntry{}},
		&wire.OfferFiles{Start: 0},
		&wire.Decision{Accept: true},
		&wire.Decision{Accept: true, Files: []uint32{0, 2, 4294967295}},
		// An explicit empty list accepts no file; it must not turn into nil
		// ("all files") on the way.
		&wire.Decision{Accept: true, Files: []uint32{}},
		&wire.Decision{Accept: false, Code: wire.CodeNoSpace, Reason: "3.2 GB needed, 1.1 GB free"},
		&wire.Decision{Accept: true, Files: []uint32{1}, Refused: []wire.Refusal{{File: 0, Code: wire.CodeBadName, Reason: "tab in the name"}}},
		&wire.Decision{Accept: true, CodeShown: true},
		&wire.Prompt{Shown: true},
		&wire.Prompt{},
		&wire.Prompt{Ahead: 8},
		&wire.Prompt{Ahead: wire.MaxPromptAhead},
		&wire.Have{File: 7, Chunks: []byte{0xff, 0x01, 0x00}},
		&wire.Have{File: 0, Chunks: []byte{}},
		&wire.Have{File: 0},
		&wire.Decision{Accept: true, Same: []byte{0x05}},
		&wire.Same{File: 2, Start: 0, Leaves: make([]byte, 64)},
		&wire.Same{File: 2, Start: 7, Leaves: make([]byte, 32*wire.MaxSameLeaves), Done: true},
		&wire.Same{File: 1<<32 - 1, Done: true},
		&wire.NeedChunk{File: 1, Chunk: 99},
		&wire.FileResult{File: 3, OK: true, SavedAs: "b (1).txt"},
		&wire.FileResult{File: 3, OK: false, Code: wire.CodeVerifyFailed, Reason: "chunk 4 mismatched twice"},
		&wire.SenderDone{},
		&wire.FileUnsent{File: 4, Code: wire.CodeIO, Reason: "permission denied"},
		&wire.FileUnsent{File: 1<<32 - 1, Code: wire.CodeIO},
		&wire.Offer{Transfer: "t1", ChunkSize: 1 << 20, Files: 2, TotalBytes: 10, Folders: wire.MaxFolders},
		&wire.OfferFolders{Start: 3, Paths: []string{"photos/empty", "photos/a/b/c", strings.Repeat("p", wire.MaxFolderPath)}},
		&wire.Result{OK: true, Files: 5, Verified: 5},
		&wire.Result{OK: false, Files: 5, Verified: 2, Code: wire.CodeIO, Reason: "disk error"},
		&wire.Cancel{Code: wire.CodeCancelled, Reason: "user pressed cancel"},
		&wire.PairReveal{Nonce: strings.Repeat("ab", 32)},
		&wire.PairReveal{Nonce: strings.Repeat("ab", 32), Only: true},
		&wire.PairConfirm{OK: true},
		&wire.PairConfirm{},
		&wire.Cancel{Code: wire.CodeTimeout},
		// Limits are in bytes: 512 two-byte runes are exactly MaxReasonLen.
		&wire.Cancel{Code: wire.CodeBusy, Reason: strings.Repeat("é", wire.MaxReasonLen/2)},
		&wire.Hello{Version: 1, Name: strings.Repeat("n", wire.MaxNameLen), ID: validID},
	}
}

func encode(t testing.TB, m wire.Message) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := wire.WriteMessage(&buf, m); err != nil {
		t.Fatalf("WriteMessage(%T): %v", m, err)
	}
	return buf.Bytes()
}

// normalize maps values the protocol treats as equal onto one form, so
// reflect.DeepEqual compares meaning.
func normalize(m wire.Message) wire.Message {
	if h, ok := m.(*wire.Hello); ok && len(h.Features) == 0 {
		c := *h
		c.Features = nil // "features" is omitempty: [] and absent both mean none
		return &c
	}
	return m
}

func TestMessageRoundTrip(t *testing.T) {
	covered := map[wire.Type]bool{}
	for _, m := range validMessages() {
		covered[m.Type()] = true
		t.Run(m.Type().String(), func(t *testing.T) {
			frame := encode(t, m)
			if got, want := frame[0], byte(m.Type()); got != want {
				t.Fatalf("type byte %d, want %d", got, want)
			}
			if n := binary.BigEndian.Uint32(frame[1:5]); int(n) != len(frame)-5 {
				t.Fatalf("length field %d, body is %d bytes", n, len(frame)-5)
			}
			r := bytes.NewReader(frame)
			got, err := wire.ReadMessage(r)
			if err != nil {
				t.Fatalf("ReadMessage: %v", err)
			}
			if !reflect.DeepEqual(normalize(got), normalize(m)) {
				t.Fatalf("round trip:\n got  %#v\n want %#v", got, m)
			}
			if r.Len() != 0 {
				t.Fatalf("%d bytes left unread", r.Len())
			}
			if _, err := wire.ReadMessage(r); err != io.EOF {
				t.Fatalf("after last frame: %v, want io.EOF", err)
			}
		})
	}
	// Every type ReadMessage knows must appear in the table above.
	for i := 0; i < 256; i++ {
		typ := wire.Type(i)
		// A known type goes on to read its (missing) body; an unknown one is
		// refused from the header.
		_, err := wire.ReadMessage(bytes.NewReader(header(typ, 2)))
		known := errors.Is(err, io.ErrUnexpectedEOF)
		if known && !covered[typ] {
			t.Errorf("message type %v has no round-trip case", typ)
		}
		if !known && covered[typ] {
			t.Errorf("message type %v is written but not read", typ)
		}
	}
}

// TestReadMessageStream reads several frames back to back, byte by byte and
// with the data arriving together with io.EOF, as slow streams deliver them.
func TestReadMessageStream(t *testing.T) {
	msgs := validMessages()
	var all []byte
	for _, m := range msgs {
		all = append(all, encode(t, m)...)
	}
	readers := map[string]func() io.Reader{
		"one-byte":  func() io.Reader { return iotest.OneByteReader(bytes.NewReader(all)) },
		"data-err":  func() io.Reader { return iotest.DataErrReader(bytes.NewReader(all)) },
		"half-read": func() io.Reader { return iotest.HalfReader(bytes.NewReader(all)) },
	}
	for name, mk := range readers {
		t.Run(name, func(t *testing.T) {
			r := mk()
			for i, want := range msgs {
				got, err := wire.ReadMessage(r)
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				if !reflect.DeepEqual(normalize(got), normalize(want)) {
					t.Fatalf("message %d: got %#v, want %#v", i, got, want)
				}
			}
			if _, err := wire.ReadMessage(r); err != io.EOF {
				t.Fatalf("at end: %v, want io.EOF", err)
			}
		})
	}
}

func TestReadMessageReaderError(t *testing.T) {
	errBoom := errors.New("boom")
	full := encode(t, &wire.Cancel{Code: wire.CodeCancelled, Reason: "bye"})
	for _, cut := range []int{0, 3, 5, len(full) - 1} {
		r := io.MultiReader(bytes.NewReader(full[:cut]), iotest.ErrReader(errBoom))
		if _, err := wire.ReadMessage(r); !errors.Is(err, errBoom) {
			t.Errorf("cut at %d: %v, want it to wrap %v", cut, err, errBoom)
		}
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestWriteMessageErrors(t *testing.T) {
	errBoom := errors.New("boom")
	if err := wire.WriteMessage(failWriter{errBoom}, &wire.SenderDone{}); !errors.Is(err, errBoom) {
		t.Errorf("write error: %v, want it to wrap %v", err, errBoom)
	}

	// A message whose body would exceed MaxMessage is refused and nothing is
	// written, so the peer never sees a frame it must reject.
	files := make([]wire.FileEntry, wire.MaxMessage/4096+1)
	for i := range files {
		files[i] = wire.FileEntry{Path: strings.Repeat("p", 4096), Size: 1}
	}
	var buf bytes.Buffer
	if err := wire.WriteMessage(&buf, &wire.OfferFiles{Files: files}); err == nil {
		t.Error("oversized OfferFiles was written")
	}
	if buf.Len() != 0 {
		t.Errorf("oversized message wrote %d bytes", buf.Len())
	}
}

// frame builds a raw control frame with a correct length field.
func frame(typ wire.Type, body string) []byte {
	b := header(typ, uint32(len(body)))
	return append(b, body...)
}

// header builds a raw frame header claiming n body bytes.
func header(typ wire.Type, n uint32) []byte {
	b := []byte{byte(typ), 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], n)
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func b64root(n int) string {
	// n zero bytes in standard base64.
	return `"` + strings.Repeat("AAAA", n/3) + map[int]string{0: "", 1: "AA==", 2: "AAA="}[n%3] + `"`
}

// hostileCases are raw inputs ReadMessage must refuse. They double as the seed
// corpus of FuzzReadMessage.
var hostileCases = []struct {
	name string
	in   []byte
	want error // errors.Is target
}{
	{"empty", nil, io.EOF},
	{"header 1 byte", []byte{byte(wire.THello)}, io.ErrUnexpectedEOF},
	{"header 4 bytes", header(wire.THello, 10)[:4], io.ErrUnexpectedEOF},
	{"body missing", header(wire.TCancel, 20), io.ErrUnexpectedEOF},
	{"body truncated", frame(wire.TCancel, `{"code":"cancelled"}`)[:12], io.ErrUnexpectedEOF},
	{"length MaxMessage+1", header(wire.TCancel, wire.MaxMessage+1), wire.ErrProtocol},
	{"length 0xFFFFFFFF", header(wire.THello, 0xFFFFFFFF), wire.ErrProtocol},
	{"length 0xFFFFFFFF unknown type", header(200, 0xFFFFFFFF), wire.ErrProtocol},
	{"type 0", frame(0, `{}`), wire.ErrProtocol},
	{"type 17", frame(17, `{}`), wire.ErrProtocol},
	{"prompt shown as string", frame(wire.TPrompt, `{"shown":"true"}`), wire.ErrProtocol},
	{"prompt not an object", frame(wire.TPrompt, `[true]`), wire.ErrProtocol},
	{"prompt no body", header(wire.TPrompt, 0), wire.ErrProtocol},
	{"prompt ahead negative", frame(wire.TPrompt, `{"shown":false,"ahead":-1}`), wire.ErrProtocol},
	{"prompt ahead over the limit", frame(wire.TPrompt, `{"shown":false,"ahead":1001}`), wire.ErrProtocol},
	{"prompt ahead beyond int", frame(wire.TPrompt, `{"ahead":99999999999999999999}`), wire.ErrProtocol},
	{"prompt ahead as string", frame(wire.TPrompt, `{"ahead":"3"}`), wire.ErrProtocol},
	{"prompt shown with offers ahead", frame(wire.TPrompt, `{"shown":true,"ahead":2}`), wire.ErrProtocol},
	{"offer folders negative", frame(wire.TOffer, `{"transfer":"t","chunk_size":65536,"files":1,"total_bytes":1,"folders":-1}`), wire.ErrProtocol},
	{"offer folders over the limit", frame(wire.TOffer, `{"transfer":"t","chunk_size":65536,"files":1,"total_bytes":1,"folders":1000001}`), wire.ErrProtocol},
	{"offer folders as string", frame(wire.TOffer, `{"transfer":"t","chunk_size":65536,"files":1,"total_bytes":1,"folders":"3"}`), wire.ErrProtocol},
	{"offer-folders no paths", frame(wire.TOfferFolders, `{"start":0,"paths":[]}`), wire.ErrProtocol},
	{"offer-folders null paths", frame(wire.TOfferFolders, `{"start":0,"paths":null}`), wire.ErrProtocol},
	{"offer-folders negative start", frame(wire.TOfferFolders, `{"start":-1,"paths":["a"]}`), wire.ErrProtocol},
	{"offer-folders start over the limit", frame(wire.TOfferFolders, `{"start":1000001,"paths":["a"]}`), wire.ErrProtocol},
	{"offer-folders empty path", frame(wire.TOfferFolders, `{"start":0,"paths":[""]}`), wire.ErrProtocol},
	{"offer-folders path 4097 bytes", frame(wire.TOfferFolders, `{"start":0,"paths":["`+strings.Repeat("p", wire.MaxFolderPath+1)+`"]}`), wire.ErrProtocol},
	{"offer-folders 8193 paths", frame(wire.TOfferFolders, `{"start":0,"paths":[`+strings.Repeat(`"a",`, wire.MaxFilesPerPart)+`"a"]}`), wire.ErrProtocol},
	{"offer-folders path as number", frame(wire.TOfferFolders, `{"start":0,"paths":[1]}`), wire.ErrProtocol},
	{"file unsent reason 257 bytes", frame(wire.TFileUnsent, `{"file":1,"code":"io","reason":"`+strings.Repeat("r", wire.MaxRefusalLen+1)+`"}`), wire.ErrProtocol},
	{"file unsent reason invalid utf-8", frame(wire.TFileUnsent, "{\"file\":1,\"code\":\"io\",\"reason\":\"a\xffb\"}"), wire.ErrProtocol},
	{"file unsent code 33 bytes", frame(wire.TFileUnsent, `{"file":1,"code":"`+strings.Repeat("c", 33)+`"}`), wire.ErrProtocol},
	{"file unsent index over uint32", frame(wire.TFileUnsent, `{"file":4294967296,"code":"io"}`), wire.ErrProtocol},
	{"file unsent file as string", frame(wire.TFileUnsent, `{"file":"1","code":"io"}`), wire.ErrProtocol},
	{"pair reveal nonce 257 bytes", frame(wire.TPairReveal, `{"nonce":"`+strings.Repeat("a", 257)+`"}`), wire.ErrProtocol},
	{"pair confirm not an object", frame(wire.TPairConfirm, `[1]`), wire.ErrProtocol},
	{"type 200", frame(200, `{}`), wire.ErrProtocol},
	{"type 255 no body", header(255, 0), wire.ErrProtocol},
	{"empty body", frame(wire.TSenderDone, ``), wire.ErrProtocol},
	{"malformed json", frame(wire.THello, `{"version":1,`), wire.ErrProtocol},
	{"trailing garbage", frame(wire.TSenderDone, `{}x`), wire.ErrProtocol},
	{"two objects", frame(wire.TSenderDone, `{}{}`), wire.ErrProtocol},
	{"json array", frame(wire.TOffer, `[1,2,3]`), wire.ErrProtocol},
	{"json string", frame(wire.TCancel, `"cancelled"`), wire.ErrProtocol},
	{"version as string", frame(wire.THello, `{"version":"1","id":"`+validID+`"}`), wire.ErrProtocol},
	{"version float", frame(wire.THello, `{"version":1.5,"id":"`+validID+`"}`), wire.ErrProtocol},
	{"files as object", frame(wire.TOfferFiles, `{"start":0,"files":{}}`), wire.ErrProtocol},
	{"file index negative", frame(wire.TNeedChunk, `{"file":-1,"chunk":0}`), wire.ErrProtocol},
	{"file index over uint32", frame(wire.TNeedChunk, `{"file":4294967296,"chunk":0}`), wire.ErrProtocol},
	{"hello version 0", frame(wire.THello, `{"version":0,"id":"`+validID+`"}`), wire.ErrProtocol},
	{"hello version negative", frame(wire.THello, `{"version":-1,"id":"`+validID+`"}`), wire.ErrProtocol},
	{"hello no id", frame(wire.THello, `{"version":1}`), wire.ErrProtocol},
	{"hello short id", frame(wire.THello, `{"version":1,"id":"`+validID[:51]+`"}`), wire.ErrProtocol},
	{"hello name 256 bytes", frame(wire.THello, `{"version":1,"id":"`+validID+`","name":"`+strings.Repeat("n", 256)+`"}`), wire.ErrProtocol},
	{"hello name invalid utf-8", frame(wire.THello, "{\"version\":1,\"id\":\""+validID+"\",\"name\":\"a\xffb\"}"), wire.ErrProtocol},
	{"hello 33 features", frame(wire.THello, `{"version":1,"id":"`+validID+`","features":[`+strings.Repeat(`"f",`, 32)+`"f"]}`), wire.ErrProtocol},
	{"hello long os", frame(wire.THello, `{"version":1,"id":"`+validID+`","os":"`+strings.Repeat("o", 33)+`"}`), wire.ErrProtocol},
	{"hello long pair", frame(wire.THello, `{"version":1,"id":"`+validID+`","pair":"`+strings.Repeat("p", 257)+`"}`), wire.ErrProtocol},
	{"hello rendezvous short", frame(wire.THello, `{"version":1,"id":"`+validID+`","rendezvous":"abc"}`), wire.ErrProtocol},
	{"hello rendezvous long", frame(wire.THello, `{"version":1,"id":"`+validID+`","rendezvous":"`+strings.Repeat("a", 17)+`"}`), wire.ErrProtocol},
	{"hello rendezvous upper case", frame(wire.THello, `{"version":1,"id":"`+validID+`","rendezvous":"`+strings.Repeat("A", 16)+`"}`), wire.ErrProtocol},
	{"hello rendezvous not hex", frame(wire.THello, `{"version":1,"id":"`+validID+`","rendezvous":"`+strings.Repeat("g", 16)+`"}`), wire.ErrProtocol},
	{"hello rendezvous a secret", frame(wire.THello, `{"version":1,"id":"`+validID+`","rendezvous":"`+strings.Repeat("a", 64)+`"}`), wire.ErrProtocol},
	{"hello data streams negative", frame(wire.THello, `{"version":1,"id":"`+validID+`","data_streams":-1}`), wire.ErrProtocol},
	{"hello data streams under legacy", frame(wire.THello, `{"version":1,"id":"`+validID+`","data_streams":31}`), wire.ErrProtocol},
	{"hello data streams one", frame(wire.THello, `{"version":1,"id":"`+validID+`","data_streams":1}`), wire.ErrProtocol},
	{"hello data streams over max", frame(wire.THello, `{"version":1,"id":"`+validID+`","data_streams":65}`), wire.ErrProtocol},
	{"hello data streams huge", frame(wire.THello, `{"version":1,"id":"`+validID+`","data_streams":9223372036854775807}`), wire.ErrProtocol},
	{"hello data streams overflow", frame(wire.THello, `{"version":1,"id":"`+validID+`","data_streams":1e30}`), wire.ErrProtocol},
	{"hello data streams string", frame(wire.THello, `{"version":1,"id":"`+validID+`","data_streams":"64"}`), wire.ErrProtocol},
	{"offer no transfer", frame(wire.TOffer, `{"chunk_size":4096,"files":1}`), wire.ErrProtocol},
	{"offer transfer 65 bytes", frame(wire.TOffer, `{"transfer":"`+strings.Repeat("t", 65)+`","chunk_size":4096}`), wire.ErrProtocol},
	{"offer chunk size 0", frame(wire.TOffer, `{"transfer":"t","chunk_size":0}`), wire.ErrProtocol},
	{"offer chunk size under min", frame(wire.TOffer, `{"transfer":"t","chunk_size":4095}`), wire.ErrProtocol},
	{"offer chunk size over max", frame(wire.TOffer, `{"transfer":"t","chunk_size":4194305}`), wire.ErrProtocol},
	{"offer chunk size negative", frame(wire.TOffer, `{"transfer":"t","chunk_size":-4096}`), wire.ErrProtocol},
	{"offer too many files", frame(wire.TOffer, `{"transfer":"t","chunk_size":4096,"files":1000001}`), wire.ErrProtocol},
	{"offer negative files", frame(wire.TOffer, `{"transfer":"t","chunk_size":4096,"files":-1}`), wire.ErrProtocol},
	{"offer negative total", frame(wire.TOffer, `{"transfer":"t","chunk_size":4096,"total_bytes":-1}`), wire.ErrProtocol},
	{"offer long manifest", frame(wire.TOffer, `{"transfer":"t","chunk_size":4096,"manifest":"`+strings.Repeat("m", 129)+`"}`), wire.ErrProtocol},
	{"offer text over MaxTextLen", frame(wire.TOffer, `{"transfer":"t","chunk_size":4096,"text":"`+strings.Repeat("t", wire.MaxTextLen+1)+`"}`), wire.ErrProtocol},
	{"offer text escaped over MaxTextLen", frame(wire.TOffer, `{"transfer":"t","chunk_size":4096,"text":"`+strings.Repeat(`\u00e9`, wire.MaxTextLen/2+1)+`"}`), wire.ErrProtocol},
	{"offer text invalid utf-8", frame(wire.TOffer, "{\"transfer\":\"t\",\"chunk_size\":4096,\"text\":\"a\xffb\"}"), wire.ErrProtocol},
	{"offer text as number", frame(wire.TOffer, `{"transfer":"t","chunk_size":4096,"text":42}`), wire.ErrProtocol},
	{"offer files negative start", frame(wire.TOfferFiles, `{"start":-1,"files":[]}`), wire.ErrProtocol},
	{"offer files start over max", frame(wire.TOfferFiles, `{"start":1000001,"files":[]}`), wire.ErrProtocol},
	{"offer files too many entries", frame(wire.TOfferFiles, `{"start":0,"files":[`+strings.Repeat(`{},`, wire.MaxFilesPerPart)+`{}]}`), wire.ErrProtocol},
	{"offer files negative size", frame(wire.TOfferFiles, `{"start":0,"files":[{"path":"a","size":-1}]}`), wire.ErrProtocol},
	{"offer files holes over the size", frame(wire.TOfferFiles, `{"start":0,"files":[{"path":"a","size":1,"holes":2}]}`), wire.ErrProtocol},
	{"offer files negative holes", frame(wire.TOfferFiles, `{"start":0,"files":[{"path":"a","size":1,"holes":-1}]}`), wire.ErrProtocol},
	{"offer files path 4097 bytes", frame(wire.TOfferFiles, `{"start":0,"files":[{"path":"`+strings.Repeat("p", 4097)+`","size":1}]}`), wire.ErrProtocol},
	{"offer files invalid utf-8 path", frame(wire.TOfferFiles, "{\"start\":0,\"files\":[{\"path\":\"\xc3\x28\",\"size\":1}]}"), wire.ErrProtocol},
	{"decision reason 1025 bytes", frame(wire.TDecision, `{"accept":false,"reason":"`+strings.Repeat("r", 1025)+`"}`), wire.ErrProtocol},
	{"decision reason invalid utf-8", frame(wire.TDecision, "{\"accept\":false,\"reason\":\"\xed\xa0\x80\"}"), wire.ErrProtocol},
	{"decision negative index", frame(wire.TDecision, `{"accept":true,"files":[-1]}`), wire.ErrProtocol},
	{"decision code shown as string", frame(wire.TDecision, `{"accept":true,"code_shown":"yes"}`), wire.ErrProtocol},
	{"decision too many refusals", frame(wire.TDecision, `{"accept":true,"files":[],"refused":[`+strings.Repeat(`{"file":1,"code":"bad_name"},`, wire.MaxRefusals)+`{"file":1,"code":"bad_name"}]}`), wire.ErrProtocol},
	{"decision refusal reason 257 bytes", frame(wire.TDecision, `{"accept":true,"refused":[{"file":1,"code":"bad_name","reason":"`+strings.Repeat("r", 257)+`"}]}`), wire.ErrProtocol},
	{"decision refusal huge code", frame(wire.TDecision, `{"accept":true,"refused":[{"file":1,"code":"`+strings.Repeat("c", 33)+`"}]}`), wire.ErrProtocol},
	{"decision refusal negative index", frame(wire.TDecision, `{"accept":true,"refused":[{"file":-1,"code":"bad_name"}]}`), wire.ErrProtocol},
	{"file result saved-as invalid utf-8", frame(wire.TFileResult, "{\"file\":0,\"ok\":true,\"saved_as\":\"\xff\"}"), wire.ErrProtocol},
	{"file result saved-as 4097 bytes", frame(wire.TFileResult, `{"file":0,"ok":true,"saved_as":"`+strings.Repeat("s", 4097)+`"}`), wire.ErrProtocol},
	{"file result reason 1025 bytes", frame(wire.TFileResult, `{"file":0,"reason":"`+strings.Repeat("r", 1025)+`"}`), wire.ErrProtocol},
	{"result verified > files", frame(wire.TResult, `{"ok":true,"files":1,"verified":2}`), wire.ErrProtocol},
	{"result with more files than any offer", frame(wire.TResult, `{"ok":true,"files":1000001,"verified":0}`), wire.ErrProtocol},
	{"cancel with a huge code", frame(wire.TCancel, `{"code":"`+strings.Repeat("x", 33)+`"}`), wire.ErrProtocol},
	{"result negative files", frame(wire.TResult, `{"ok":false,"files":-1,"verified":-1}`), wire.ErrProtocol},
	{"result negative verified", frame(wire.TResult, `{"ok":false,"files":1,"verified":-1}`), wire.ErrProtocol},
	{"result reason invalid utf-8", frame(wire.TResult, "{\"ok\":false,\"reason\":\"\x80\"}"), wire.ErrProtocol},
	{"cancel reason 1025 bytes", frame(wire.TCancel, `{"code":"cancelled","reason":"`+strings.Repeat("r", 1025)+`"}`), wire.ErrProtocol},
	{"cancel reason invalid utf-8", frame(wire.TCancel, "{\"code\":\"cancelled\",\"reason\":\"bad \xfe\xfe\"}"), wire.ErrProtocol},
	{"same leaves not whole", frame(wire.TSame, `{"file":0,"leaves":"`+base64.StdEncoding.EncodeToString(make([]byte, 33))+`"}`), wire.ErrProtocol},
	{"same over its leaves", frame(wire.TSame, `{"file":0,"leaves":"`+base64.StdEncoding.EncodeToString(make([]byte, 32*wire.MaxSameLeaves+32))+`"}`), wire.ErrProtocol},
	{"same empty, not done", frame(wire.TSame, `{"file":0}`), wire.ErrProtocol},
	{"same beyond chunk 2^32", frame(wire.TSame, `{"file":0,"start":4294967295,"leaves":"`+base64.StdEncoding.EncodeToString(make([]byte, 64))+`"}`), wire.ErrProtocol},
	{"same start negative", frame(wire.TSame, `{"file":0,"start":-1,"done":true}`), wire.ErrProtocol},
	{"same leaves as a number", frame(wire.TSame, `{"file":0,"leaves":7,"done":true}`), wire.ErrProtocol},
	{"decision same bitmap over MaxFiles", frame(wire.TDecision, `{"accept":true,"same":"`+base64.StdEncoding.EncodeToString(make([]byte, (wire.MaxFiles+7)/8+1))+`"}`), wire.ErrProtocol},
	{"have bitmap over half MaxMessage", frame(wire.THave, `{"file":0,"chunks":`+b64root(wire.MaxMessage/2+3)+`}`), wire.ErrProtocol},
}

func TestReadMessageHostile(t *testing.T) {
	for _, tc := range hostileCases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := wire.ReadMessage(bytes.NewReader(tc.in))
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadMessage = %#v, %v; want an error matching %v", m, err, tc.want)
			}
			if m != nil {
				t.Fatalf("a message (%#v) came with the error", m)
			}
			if tc.want == io.EOF && err != io.EOF {
				t.Fatalf("clean end must be io.EOF itself, got %v", err)
			}
		})
	}
}

// countingReader counts the bytes handed out.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// endless returns an endless stream of one byte value.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// TestReadMessageOversizeNoAlloc checks that a frame claiming a huge body is
// refused from its header alone: no body is allocated and nothing past the
// header is read, even though the stream would supply the bytes.
func TestReadMessageOversizeNoAlloc(t *testing.T) {
	for _, n := range []uint32{wire.MaxMessage + 1, 0xFFFFFFFF} {
		hdr := header(wire.TOfferFiles, n)
		cr := &countingReader{r: io.MultiReader(bytes.NewReader(hdr), endless('{'))}
		if _, err := wire.ReadMessage(cr); !errors.Is(err, wire.ErrProtocol) {
			t.Fatalf("length %d: %v, want ErrProtocol", n, err)
		}
		if cr.n != len(hdr) {
			t.Errorf("length %d: read %d bytes, want only the %d-byte header", n, cr.n, len(hdr))
		}

		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		allocs := testing.AllocsPerRun(100, func() {
			_, _ = wire.ReadMessage(bytes.NewReader(hdr))
		})
		runtime.ReadMemStats(&ms1)
		// The error message itself costs a handful of small allocations; a
		// body would be one allocation of at least MaxMessage bytes.
		if allocs > 16 {
			t.Errorf("length %d: %.0f allocations per refused frame", n, allocs)
		}
		if perRun := (ms1.TotalAlloc - ms0.TotalAlloc) / 101; perRun > 16<<10 {
			t.Errorf("length %d: %d bytes allocated per refused frame", n, perRun)
		}
	}
}

// FuzzReadMessage: ReadMessage never panics; every error is a protocol error
// or the matching io error; whatever it accepts re-encodes, within
// MaxMessage, to a frame that reads back as an equal message.
func FuzzReadMessage(f *testing.F) {
	for _, tc := range hostileCases {
		if len(tc.in) <= 64<<10 {
			f.Add(tc.in)
		}
	}
	for _, m := range validMessages() {
		f.Add(encode(f, m))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cr := &countingReader{r: bytes.NewReader(data)}
		m, err := wire.ReadMessage(cr)
		var claimed uint32
		if len(data) >= 5 {
			claimed = binary.BigEndian.Uint32(data[1:5])
		}
		if err != nil {
			if m != nil {
				t.Fatalf("message %#v returned with error %v", m, err)
			}
			switch {
			case len(data) == 0:
				if err != io.EOF {
					t.Fatalf("empty input: %v, want io.EOF", err)
				}
			case errors.Is(err, io.ErrUnexpectedEOF):
				if claimed > wire.MaxMessage || uint64(len(data)) >= 5+uint64(claimed) {
					t.Fatalf("io.ErrUnexpectedEOF on a complete frame (claims %d, have %d bytes)", claimed, len(data))
				}
			case errors.Is(err, wire.ErrProtocol):
			default:
				t.Fatalf("unexpected error kind: %v", err)
			}
			if claimed > wire.MaxMessage && cr.n > 5 {
				t.Fatalf("read %d bytes of a frame claiming %d", cr.n, claimed)
			}
			return
		}
		if claimed > wire.MaxMessage {
			t.Fatalf("accepted a %d-byte body", claimed)
		}
		if cr.n != 5+int(claimed) {
			t.Fatalf("consumed %d bytes of a %d-byte frame", cr.n, 5+claimed)
		}
		if byte(m.Type()) != data[0] {
			t.Fatalf("type byte %d decoded as %v", data[0], m.Type())
		}
		var buf bytes.Buffer
		if err := wire.WriteMessage(&buf, m); err != nil {
			// Re-encoding can grow a body: json.Marshal writes '<' as
			// \u003c (6x) and fills in absent fields. Near the limit an
			// accepted body may therefore not fit again; a body of a
			// sixteenth of the limit always must.
			if claimed <= wire.MaxMessage/16 {
				t.Fatalf("accepted %d-byte message does not re-encode: %v", claimed, err)
			}
			return
		}
		if buf.Len()-5 > wire.MaxMessage {
			t.Fatalf("re-encoded body of %d bytes", buf.Len()-5)
		}
		m2, err := wire.ReadMessage(&buf)
		if err != nil {
			t.Fatalf("re-encoded message is refused: %v", err)
		}
		if !reflect.DeepEqual(normalize(m), normalize(m2)) {
			t.Fatalf("re-read differs:\n first  %#v\n second %#v", m, m2)
		}
	})
}

func TestDataHeaderRoundTrip(t *testing.T) {
	var leaf [32]byte
	for i := range leaf {
		leaf[i] = byte(i * 7)
	}
	cases := []wire.DataHeader{
		{},
		{File: 1, Chunk: 2, Length: wire.MinChunkSize, Leaf: leaf},
		{File: 0xFFFFFFFF, Chunk: 0xFFFFFFFF, Length: wire.MaxChunkSize, Leaf: leaf},
		{File: 3, Chunk: 4, Length: 1234, Packed: true, Leaf: leaf},
		{File: 3, Chunk: 5, Length: 0, Packed: true},
		{File: 3, Chunk: 6, Length: wire.MaxChunkSize, Packed: true},
	}
	var stream []byte
	for _, h := range cases {
		b := make([]byte, wire.DataHeaderLen)
		h.Put(b)
		stream = append(stream, b...)
		got, err := wire.ReadDataHeader(bytes.NewReader(b), make([]byte, wire.DataHeaderLen))
		if err != nil {
			t.Fatalf("ReadDataHeader(%+v): %v", h, err)
		}
		if got != h {
			t.Fatalf("round trip: got %+v, want %+v", got, h)
		}
	}
	// Back to back on one stream, one byte at a time, then a clean end.
	r := iotest.OneByteReader(bytes.NewReader(stream))
	buf := make([]byte, wire.DataHeaderLen+8) // a larger buffer is fine
	for i, want := range cases {
		got, err := wire.ReadDataHeader(r, buf)
		if err != nil || got != want {
			t.Fatalf("header %d: %+v, %v; want %+v", i, got, err, want)
		}
	}
	if _, err := wire.ReadDataHeader(r, buf); err != io.EOF {
		t.Fatalf("at end: %v, want io.EOF", err)
	}
}

func dataHeaderBytes(length uint32) []byte {
	b := make([]byte, wire.DataHeaderLen)
	wire.DataHeader{File: 1, Chunk: 2, Length: length}.Put(b)
	return b
}

// dataHeaderCases are raw inputs for ReadDataHeader; want nil means accepted.
var dataHeaderCases = []struct {
	name string
	in   []byte
	want error
}{
	{"empty", nil, io.EOF},
	{"one byte", []byte{0}, io.ErrUnexpectedEOF},
	{"43 bytes", dataHeaderBytes(1)[:43], io.ErrUnexpectedEOF},
	{"zero length", dataHeaderBytes(0), nil},
	{"max chunk", dataHeaderBytes(wire.MaxChunkSize), nil},
	{"max chunk + 1", dataHeaderBytes(wire.MaxChunkSize + 1), wire.ErrProtocol},
	{"length 0xFFFFFFFF", dataHeaderBytes(0xFFFFFFFF), wire.ErrProtocol},
	{"packed, max chunk", dataHeaderBytes(1<<31 | wire.MaxChunkSize), nil},
	{"packed, max chunk + 1", dataHeaderBytes(1<<31 | (wire.MaxChunkSize + 1)), wire.ErrProtocol},
	{"length 0x7FFFFFFF", dataHeaderBytes(0x7FFFFFFF), wire.ErrProtocol},
}

func TestReadDataHeader(t *testing.T) {
	for _, tc := range dataHeaderCases {
		t.Run(tc.name, func(t *testing.T) {
			// Trailing bytes must not be consumed: they belong to the chunk.
			r := bytes.NewReader(append(append([]byte{}, tc.in...), "chunk"...))
			if len(tc.in) < wire.DataHeaderLen {
				r = bytes.NewReader(tc.in)
			}
			h, err := wire.ReadDataHeader(r, make([]byte, wire.DataHeaderLen))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("ReadDataHeader: %v", err)
				}
				raw := binary.BigEndian.Uint32(tc.in[8:12])
				if want := raw &^ (1 << 31); h.Length != want || h.Packed != (raw>>31 == 1) {
					t.Fatalf("length %d packed %v, want %d packed %v", h.Length, h.Packed, want, raw>>31 == 1)
				}
				if r.Len() != len("chunk") {
					t.Fatalf("consumed chunk bytes: %d left", r.Len())
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadDataHeader = %+v, %v; want %v", h, err, tc.want)
			}
			if tc.want == io.EOF && err != io.EOF {
				t.Fatalf("clean end must be io.EOF itself, got %v", err)
			}
		})
	}
}

// FuzzReadDataHeader: never panics, consumes exactly one header, accepts
// exactly the lengths up to MaxChunkSize (the top bit is Packed's), and
// re-encodes to the same bytes.
func FuzzReadDataHeader(f *testing.F) {
	for _, tc := range dataHeaderCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cr := &countingReader{r: bytes.NewReader(data)}
		h, err := wire.ReadDataHeader(cr, make([]byte, wire.DataHeaderLen))
		switch {
		case len(data) == 0:
			if err != io.EOF {
				t.Fatalf("empty input: %v", err)
			}
			return
		case len(data) < wire.DataHeaderLen:
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%d-byte input: %v", len(data), err)
			}
			return
		}
		if cr.n != wire.DataHeaderLen {
			t.Fatalf("consumed %d bytes", cr.n)
		}
		raw := binary.BigEndian.Uint32(data[8:12])
		length := raw &^ (1 << 31)
		if h.Packed != (raw>>31 == 1) {
			t.Fatalf("length field %#x read as packed %v", raw, h.Packed)
		}
		if length > wire.MaxChunkSize {
			if !errors.Is(err, wire.ErrProtocol) {
				t.Fatalf("length %d: %v, want ErrProtocol", length, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("length %d refused: %v", length, err)
		}
		out := make([]byte, wire.DataHeaderLen)
		h.Put(out)
		if !bytes.Equal(out, data[:wire.DataHeaderLen]) {
			t.Fatalf("re-encoded %x, read %x", out, data[:wire.DataHeaderLen])
		}
	})
}

func TestReadKind(t *testing.T) {
	cases := []struct {
		in   []byte
		want byte
		err  error
	}{
		{nil, 0, io.EOF},
		{[]byte{wire.KindControl}, wire.KindControl, nil},
		{[]byte{wire.KindData, 0xff}, wire.KindData, nil},
		{[]byte{0}, 0, wire.ErrProtocol},
		{[]byte{3}, 0, wire.ErrProtocol}, // retired: attach is a transport join now
		{[]byte{4}, 0, wire.ErrProtocol},
		{[]byte{0xff}, 0, wire.ErrProtocol},
	}
	for _, tc := range cases {
		r := bytes.NewReader(tc.in)
		k, err := wire.ReadKind(r)
		if tc.err == nil && (err != nil || k != tc.want) {
			t.Errorf("ReadKind(%x) = %d, %v; want %d", tc.in, k, err, tc.want)
		}
		if tc.err != nil && !errors.Is(err, tc.err) {
			t.Errorf("ReadKind(%x) = %d, %v; want %v", tc.in, k, err, tc.err)
		}
		if len(tc.in) > 0 && r.Len() != len(tc.in)-1 {
			t.Errorf("ReadKind(%x) consumed %d bytes, want 1", tc.in, len(tc.in)-r.Len())
		}
	}
}

func TestTypeString(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range validMessages() {
		s := m.Type().String()
		if strings.HasPrefix(s, "type(") {
			t.Errorf("%T has no name", m)
		}
		seen[s] = true
	}
	if len(seen) != 16 {
		t.Errorf("%d distinct type names, want 16", len(seen))
	}
	if got := wire.Type(200).String(); got != "type(200)" {
		t.Errorf("Type(200).String() = %q", got)
	}
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// TestReadMessageNearLimit: a body of exactly MaxMessage bytes is read, one
// more is refused.
func TestReadMessageNearLimit(t *testing.T) {
	pad := func(n int) []byte {
		body := `{"code":"cancelled"}`
		return frame(wire.TCancel, body+strings.Repeat(" ", n-len(body)))
	}
	if _, err := wire.ReadMessage(bytes.NewReader(pad(wire.MaxMessage))); err != nil {
		t.Errorf("body of MaxMessage bytes: %v", err)
	}
	if _, err := wire.ReadMessage(bytes.NewReader(pad(wire.MaxMessage + 1))); !errors.Is(err, wire.ErrProtocol) {
		t.Errorf("body of MaxMessage+1 bytes: %v, want ErrProtocol", err)
	}
}

// A hello that says nothing of its data streams is a Ferry from before
// Hello.DataStreams: it takes LegacyDataStreams, whatever the sender could.
func TestSessionDataStreams(t *testing.T) {
	for _, tc := range []struct {
		json string
		want int
	}{
		{`{"version":1,"id":"` + validID + `"}`, wire.LegacyDataStreams},
		{`{"version":1,"id":"` + validID + `","data_streams":0}`, wire.LegacyDataStreams},
		{`{"version":1,"id":"` + validID + `","data_streams":32}`, 32},
		{`{"version":1,"id":"` + validID + `","data_streams":56}`, 56},
		{`{"version":1,"id":"` + validID + `","data_streams":64}`, wire.MaxDataStreams},
	} {
		m, err := wire.ReadMessage(bytes.NewReader(frame(wire.THello, tc.json)))
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		if got := m.(*wire.Hello).SessionDataStreams(); got != tc.want {
			t.Errorf("%s: %d data streams, want %d", tc.json, got, tc.want)
		}
	}
}

// TestDecisionCodeShownBetweenVersions: Decision.CodeShown travels as
// "code_shown" and only when true; a decision from an older Ferry (no
// field) reads as not said, which the sender tells from "not shown" by
// FeatureCodeShown in the receiver's hello; and a field an older Ferry
// does not know, as "code_shown" is to it, is read past.
func TestDecisionCodeShownBetweenVersions(t *testing.T) {
	var buf bytes.Buffer
	if err := wire.WriteMessage(&buf, &wire.Decision{Accept: true, CodeShown: true}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"code_shown":true`)) {
		t.Fatalf("frame %q does not say code_shown", buf.Bytes()[5:])
	}
	buf.Reset()
	if err := wire.WriteMessage(&buf, &wire.Decision{Accept: true}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("code_shown")) {
		t.Fatalf("frame %q says code_shown when the code was not shown", buf.Bytes()[5:])
	}
	for _, c := range []struct {
		body string
		want bool
	}{
		{`{"accept":true,"files":null}`, false},                                    // an older receiver
		{`{"accept":true,"files":null,"code_shown":true}`, true},                   // this one
		{`{"accept":true,"files":null,"code_shown":true,"later_field":[1]}`, true}, // a later one
	} {
		m, err := wire.ReadMessage(bytes.NewReader(frame(wire.TDecision, c.body)))
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		if d := m.(*wire.Decision); d.CodeShown != c.want {
			t.Errorf("%s: CodeShown %v, want %v", c.body, d.CodeShown, c.want)
		}
	}
}
