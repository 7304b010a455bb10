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
