package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"
)

// fileResultCases: every optional field, names that need escaping, the
// largest index.
var fileResultCases = []*FileResult{
	{},
	{File: 1, OK: true},
	{File: 1<<32 - 1, OK: false, Code: CodeVerifyFailed, Reason: "the file's BLAKE3 root does not match"},
	{File: 7, OK: true, SavedAs: "a <b> & \"c\" (1).go"},
	{File: 8, SavedAs: "\u2028\u2029日本\xff\xfe\x00\x1f\x7f\n", Code: "x\"y", Reason: "\\"},
}

// A FileResult is written as encoding/json writes it, byte for byte, and
// reads back as itself.
func TestFileResultEncoderMatchesJSON(t *testing.T) {
	for _, m := range fileResultCases {
		checkFileResult(t, m)
	}
}

func FuzzFileResultEncoder(f *testing.F) {
	for _, m := range fileResultCases {
		f.Add(m.File, m.OK, m.SavedAs, string(m.Code), m.Reason)
	}
	f.Fuzz(func(t *testing.T, file uint32, ok bool, savedAs, code, reason string) {
		checkFileResult(t, &FileResult{File: file, OK: ok, SavedAs: savedAs, Code: Code(code), Reason: reason})
	})
}

func checkFileResult(t *testing.T, m *FileResult) {
	t.Helper()
	want, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var frame bytes.Buffer
	if err := WriteMessage(&frame, m); err != nil {
		t.Fatal(err)
	}
	if got := frame.Bytes()[5:]; !bytes.Equal(got, want) {
		t.Fatalf("wrote %s, encoding/json %s", got, want)
	}
	back, err := ReadMessage(&frame)
	if err != nil {
		return // a code or text validate refuses: the same frame as encoding/json's
	}
	var exp FileResult
	json.Unmarshal(want, &exp)
	if !reflect.DeepEqual(back, &exp) {
		t.Fatalf("read back %+v, want %+v", back, &exp)
	}
}

// A receiver writes one FileResult per file: one allocation (its frame),
// where encoding/json took two (and its reflection).
func TestFileResultAllocations(t *testing.T) {
	m := &FileResult{File: 12345, OK: true}
	if allocs := testing.AllocsPerRun(100, func() { WriteMessage(io.Discard, m) }); allocs > 1 {
		t.Errorf("WriteMessage(FileResult): %.0f allocations, want 1", allocs)
	}
}

// BenchmarkFileResult: one FileResult written, as a receiver does per file.
func BenchmarkFileResult(b *testing.B) {
	m := &FileResult{File: 12345, OK: true}
	b.ReportAllocs()
	for b.Loop() {
		WriteMessage(io.Discard, m)
	}
}

var fileResultFields = []string{"file", "ok", "saved_as", "code", "reason"}

// compareFileResultWithJSON is compareDecoder (offerfiles_test.go) for
// FileResult.
func compareFileResultWithJSON(t *testing.T, body []byte) (*FileResult, error) {
	t.Helper()
	return compareDecoder[FileResult](t, body, fileResultFields)
}

// fileResultBodies seed FuzzFileResultDecoder too.
var fileResultBodies = []decoderCase[*FileResult]{
	{"plain", `{"file":3,"ok":true}`, &FileResult{File: 3, OK: true}},
	{"every field", `{"file":4294967295,"ok":false,"saved_as":"a/b (1).go","code":"verify_failed","reason":"r"}`,
		&FileResult{File: 1<<32 - 1, SavedAs: "a/b (1).go", Code: CodeVerifyFailed, Reason: "r"}},
	{"whitespace", " \t\r\n{ \"file\" : 1 ,\n\"ok\" : false } \n", &FileResult{File: 1}},
	{"top-level null", `null`, &FileResult{}},
	{"empty object", `{}`, &FileResult{}},
	{"field nulls", `{"file":null,"ok":null,"saved_as":null,"code":null,"reason":null}`, &FileResult{}},
	{"keys folded", `{"FILE":2,"Ok":true,"SAVED_AS":"x","Code":"cancelled","REASON":"y"}`,
		&FileResult{File: 2, OK: true, SavedAs: "x", Code: CodeCancelled, Reason: "y"}},
	{"key with long s", `{"ſaved_as":"z"}`, &FileResult{SavedAs: "z"}},
	{"key escaped", `{"\u0066ile":5}`, &FileResult{File: 5}},
	{"unknown fields skipped", `{"x":[1,{"y":null},"z"],"file":6,"w":{"ok":false},"ok":true}`, &FileResult{File: 6, OK: true}},
	{"escapes kept", `{"saved_as":"a\"b\\c\/d\u00e9\ud83d\ude00"}`, &FileResult{SavedAs: "a\"b\\c/dé😀"}},
	{"lone surrogate", `{"reason":"\ud800x"}`, &FileResult{Reason: "\ufffdx"}},
	{"file negative", `{"file":-1}`, nil},
	{"file minus zero", `{"file":-0}`, nil},
	{"file too large", `{"file":4294967296}`, nil},
	{"file fraction", `{"file":1.0}`, nil},
	{"file exponent", `{"file":1e3}`, nil},
	{"file a string", `{"file":"1"}`, nil},
	{"file leading zero", `{"file":01}`, nil},
	{"ok a number", `{"ok":1}`, nil},
	{"ok a string", `{"ok":"true"}`, nil},
	{"ok misspelled", `{"ok":tru}`, nil},
	{"ok run on", `{"ok":truex}`, nil},
	{"name a number", `{"saved_as":5}`, nil},
	{"name an array", `{"saved_as":["a"]}`, nil},
	{"code unknown", `{"code":"from_a_newer_peer"}`, &FileResult{Code: "from_a_newer_peer"}},
	{"code too long", `{"code":"` + string(bytes.Repeat([]byte("c"), 33)) + `"}`, nil},
	{"reason too long", `{"reason":"` + string(bytes.Repeat([]byte("r"), MaxReasonLen+1)) + `"}`, nil},
	{"raw control character", "{\"reason\":\"a\x01b\"}", nil},
	{"twice", `{"file":1,"file":2}`, nil},
	{"twice folded", `{"ok":true,"OK":false}`, nil},
	{"array", `[]`, nil},
	{"string", `"file"`, nil},
	{"trailing", `{"file":1} {}`, nil},
	{"trailing comma", `{"file":1,}`, nil},
	{"no colon", `{"file" 1}`, nil},
	{"unclosed", `{"file":1`, nil},
	{"empty", ``, nil},
	{"deep unknown", `{"x":` + string(bytes.Repeat([]byte("["), 10001)) + string(bytes.Repeat([]byte("]"), 10001)) + `}`, nil},
}

func TestFileResultDecoderCases(t *testing.T) {
	checkDecoderCases[FileResult](t, fileResultBodies, fileResultFields)
}

// Every cut of a valid body is refused, as encoding/json refuses it.
func TestFileResultDecoderTruncated(t *testing.T) {
	body := appendFileResult(nil, &FileResult{File: 123, OK: true, SavedAs: "a/\"b\"/<c> (1).txt", Code: CodeCancelled, Reason: "日本\u2028"})
	for n := range len(body) {
		if _, err := compareFileResultWithJSON(t, body[:n]); err == nil {
			t.Fatalf("%d of %d bytes taken", n, len(body))
		}
	}
	if _, err := compareFileResultWithJSON(t, body); err != nil {
		t.Fatal(err)
	}
}

// FuzzFileResultDecoder checks the decoder against encoding/json on any
// body: compareFileResultWithJSON.
func FuzzFileResultDecoder(f *testing.F) {
	fuzzDecoder[FileResult](f, fileResultBodies, fileResultFields)
}

// A sender reads one FileResult per file: the message itself and its name
// are all it allocates, where encoding/json took seven allocations.
func TestFileResultReadAllocations(t *testing.T) {
	var frame bytes.Buffer
	WriteMessage(&frame, &FileResult{File: 12345, OK: true, SavedAs: "src/cmd/go/main.go"})
	r := bytes.NewReader(frame.Bytes())
	rd := NewReader(r)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(frame.Bytes())
		if _, err := rd.ReadMessage(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("ReadMessage(FileResult): %.0f allocations, want at most 2", allocs)
	}
}

// BenchmarkFileResultRead: one FileResult read, as a sender does per file.
func BenchmarkFileResultRead(b *testing.B) {
	var frame bytes.Buffer
	WriteMessage(&frame, &FileResult{File: 12345, OK: true, SavedAs: "src/cmd/go/main.go"})
	r := bytes.NewReader(frame.Bytes())
	rd := NewReader(r)
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(frame.Bytes())
		if _, err := rd.ReadMessage(); err != nil {
			b.Fatal(err)
		}
	}
}
