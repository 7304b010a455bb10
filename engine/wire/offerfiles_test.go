package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// reference is how ReadMessage read a body of M before M had its own
// decoder: encoding/json, then validate.
func reference[M any, P interface {
	*M
	Message
}](body []byte) (P, error) {
	if !utf8.Valid(body) {
		return nil, errors.New("invalid UTF-8")
	}
	m := P(new(M))
	if err := json.Unmarshal(body, m); err != nil {
		return nil, err
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m, nil
}

func referenceOfferFiles(body []byte) (*OfferFiles, error) { return reference[OfferFiles](body) }

// wireOfferFiles is what ReadMessage does to the body now.
func wireOfferFiles(body []byte) (*OfferFiles, error) {
	if !utf8.Valid(body) {
		return nil, errors.New("invalid UTF-8")
	}
	var m OfferFiles
	if err := decodeOfferFiles(body, &m); err != nil {
		return nil, err
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// readBody reads body, framed as a message of M's type, as ReadMessage
// does now.
func readBody[M any, P interface {
	*M
	Message
}](body []byte) (P, error) {
	frame := append([]byte{byte(P(new(M)).Type()), 0, 0, 0, 0}, body...)
	binary.BigEndian.PutUint32(frame[1:], uint32(len(body)))
	m, err := ReadMessage(bytes.NewReader(frame))
	if err != nil {
		return nil, err
	}
	return m.(P), nil
}

// compareDecoder fails t unless ReadMessage and encoding/json agree on a
// body of M: both refuse it, or both take it with the same result, or the
// decoder alone refuses it for a key given twice, and the body has one of
// top's (duplicateKey).
func compareDecoder[M any, P interface {
	*M
	Message
}](t *testing.T, body []byte, top []string) (P, error) {
	t.Helper()
	want, werr := reference[M, P](body)
	got, err := readBody[M, P](body)
	switch {
	case err != nil && !errors.Is(err, ErrProtocol):
		t.Fatalf("%q: error %v is not ErrProtocol", body, err)
	case err == nil && werr != nil:
		t.Fatalf("%q: decoded to %+v, encoding/json refuses it: %v", body, got, werr)
	case err != nil && werr == nil:
		if !errors.Is(err, errDuplicateKey) || !duplicateKey(body, top) {
			t.Fatalf("%q: refused (%v), encoding/json takes it: %+v", body, err, want)
		}
	case err == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("%q: decoded to %+v, encoding/json to %+v", body, got, want)
	}
	return got, err
}

// decoderCase is a hostile or odd body, with what ReadMessage makes of it:
// ok is the decoded message, or nil for ErrProtocol.
type decoderCase[P any] struct {
	name string
	body string
	ok   P
}

// checkDecoderCases runs cases through compareDecoder, each a subtest.
func checkDecoderCases[M any, P interface {
	*M
	Message
}](t *testing.T, cases []decoderCase[P], top []string) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := compareDecoder[M, P](t, []byte(c.body), top)
			switch {
			case c.ok == nil && err == nil:
				t.Fatalf("took it: %+v", got)
			case c.ok != nil && err != nil:
				t.Fatalf("refused it: %v", err)
			case c.ok != nil && !reflect.DeepEqual(got, c.ok):
				t.Fatalf("got %+v, want %+v", got, c.ok)
			}
		})
	}
}

var offerFilesFields = []string{"start", "files"}

// compareWithJSON is compareDecoder for OfferFiles.
func compareWithJSON(t *testing.T, body []byte) (*OfferFiles, error) {
	t.Helper()
	return compareDecoder[OfferFiles](t, body, offerFilesFields)
}

// duplicateKey says whether body (valid JSON) names one of top's fields
// twice in its top-level object, or, under a key "files", one of an offer
// entry's fields twice in one of its elements.
func duplicateKey(body []byte, top []string) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	dup := false
	// walk reads one value; fields are the names that object may hold, and
	// elem those of the objects in an array under the key "files".
	var walk func(fields []string) error
	walk = func(fields []string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				var sub []string
				for _, f := range fields {
					if strings.EqualFold(key, f) {
						if seen[f] {
							dup = true
						}
						seen[f] = true
						if f == "files" {
							sub = []string{"[]"}
						}
					}
				}
				if err := walk(sub); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			var sub []string
			if len(fields) == 1 && fields[0] == "[]" {
				sub = []string{"path", "size", "mode", "mtime", "holes"}
			}
			for dec.More() {
				if err := walk(sub); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if walk(top) != nil {
		return false
	}
	return dup
}

// offerFilesCases seed FuzzOfferFilesDecoder too.
var offerFilesCases = []decoderCase[*OfferFiles]{
	{"plain", `{"start":3,"files":[{"path":"a/b","size":5,"mode":420,"mtime":17}]}`,
		&OfferFiles{Start: 3, Files: []FileEntry{{Path: "a/b", Size: 5, Mode: 420, MTime: 17}}}},
	{"holes", `{"files":[{"path":"disk.img","size":10485760,"holes":9437184},{"path":"zeros","size":5,"holes":5}]}`,
		&OfferFiles{Files: []FileEntry{{Path: "disk.img", Size: 10 << 20, Holes: 9 << 20}, {Path: "zeros", Size: 5, Holes: 5}}}},
	{"holes zero", `{"files":[{"path":"a","size":3,"holes":0}]}`, &OfferFiles{Files: []FileEntry{{Path: "a", Size: 3}}}},
	{"holes null", `{"files":[{"size":3,"holes":null}]}`, &OfferFiles{Files: []FileEntry{{Size: 3}}}},
	{"holes folded", `{"files":[{"size":3,"HOLES":2}]}`, &OfferFiles{Files: []FileEntry{{Size: 3, Holes: 2}}}},
	{"whitespace", " \t\r\n{ \"start\" : 0 ,\n\"files\" : [ ] } \n", &OfferFiles{Files: []FileEntry{}}},
	{"top-level null", `null`, &OfferFiles{}},
	{"files null", `{"start":1,"files":null}`, &OfferFiles{Start: 1}},
	{"entry null", `{"files":[null]}`, &OfferFiles{Files: []FileEntry{{}}}},
	{"field nulls", `{"start":null,"files":[{"path":null,"size":null,"mode":null,"mtime":null}]}`, &OfferFiles{Files: []FileEntry{{}}}},
	{"keys folded", `{"START":2,"Files":[{"PATH":"x","Size":1,"MoDe":1,"mTime":-1}]}`,
		&OfferFiles{Start: 2, Files: []FileEntry{{Path: "x", Size: 1, Mode: 1, MTime: -1}}}},
	{"key with long s", `{"files":[{"ſize":7}]}`, &OfferFiles{Files: []FileEntry{{Size: 7}}}},
	{"key with kelvin sign", `{"files":[{"\u212aey":1,"path":"k"}]}`, &OfferFiles{Files: []FileEntry{{Path: "k"}}}},
	{"key escaped", `{"\u0073tart":4,"files":[]}`, &OfferFiles{Start: 4, Files: []FileEntry{}}},
	{"unknown fields", `{"x":[1,{"y":[true,false,null,"s",-0.5e+7]}],"files":[{"z":{},"path":"p","w":[]}],"start":0}`,
		&OfferFiles{Files: []FileEntry{{Path: "p"}}}},
	{"escapes", `{"files":[{"path":"a\"\\\/\b\f\n\r\t\u0041\u00e9\u20AC"}]}`,
		&OfferFiles{Files: []FileEntry{{Path: "a\"\\/\b\f\n\r\tAé€"}}}},
	{"surrogate pair", `{"files":[{"path":"\ud83d\ude00"}]}`, &OfferFiles{Files: []FileEntry{{Path: "😀"}}}},
	{"lone surrogate", `{"files":[{"path":"\ud83dx"}]}`, &OfferFiles{Files: []FileEntry{{Path: "\ufffdx"}}}},
	{"surrogate then escape", `{"files":[{"path":"\ud83d\u0041"}]}`, &OfferFiles{Files: []FileEntry{{Path: "\ufffdA"}}}},
	{"low surrogate alone", `{"files":[{"path":"\ude00\ud83d"}]}`, &OfferFiles{Files: []FileEntry{{Path: "\ufffd\ufffd"}}}},
	{"NUL escaped", `{"files":[{"path":"a\u0000b"}]}`, &OfferFiles{Files: []FileEntry{{Path: "a\x00b"}}}},
	{"UTF-8 name", `{"files":[{"path":"日本/ü.txt","size":0}]}`, &OfferFiles{Files: []FileEntry{{Path: "日本/ü.txt"}}}},
	{"int64 extremes", `{"files":[{"size":9223372036854775807,"mtime":-9223372036854775808}]}`,
		&OfferFiles{Files: []FileEntry{{Size: 1<<63 - 1, MTime: -1 << 63}}}},
	{"minus zero", `{"start":-0,"files":[{"size":-0}]}`, &OfferFiles{Files: []FileEntry{{}}}},
	{"mode max", `{"files":[{"mode":4294967295}]}`, &OfferFiles{Files: []FileEntry{{Mode: 1<<32 - 1}}}},
	{"path 4096 bytes", `{"files":[{"path":"` + strings.Repeat("p", 4096) + `"}]}`,
		&OfferFiles{Files: []FileEntry{{Path: strings.Repeat("p", 4096)}}}},
	{"8192 entries", `{"files":[` + strings.Repeat(`{},`, MaxFilesPerPart-1) + `{}]}`,
		&OfferFiles{Files: make([]FileEntry, MaxFilesPerPart)}},
	{"nesting 9998 in an unknown field", `{"x":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}`, &OfferFiles{}},

	{"nesting 10000 in an unknown field", `{"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`, nil},
	{"nesting 10^5", `{"x":` + strings.Repeat(`{"a":`, 100000), nil},
	{"duplicate start", `{"start":1,"start":2,"files":[]}`, nil},
	{"duplicate files", `{"files":[{"path":"a"}],"files":[{"size":1}]}`, nil},
	{"duplicate path folded", `{"files":[{"path":"a","PATH":"b"}]}`, nil},
	{"duplicate size long s", `{"files":[{"size":1,"ſize":2}]}`, nil},
	{"8193 entries", `{"files":[` + strings.Repeat(`{},`, MaxFilesPerPart) + `{}]}`, nil},
	{"holes over the size", `{"files":[{"size":3,"holes":4}]}`, nil},
	{"holes without a size", `{"files":[{"holes":1}]}`, nil},
	{"holes negative", `{"files":[{"size":3,"holes":-1}]}`, nil},
	{"holes huge", `{"files":[{"size":9223372036854775807,"holes":9223372036854775808}]}`, nil},
	{"holes fraction", `{"files":[{"size":3,"holes":0.5}]}`, nil},
	{"holes string", `{"files":[{"size":3,"holes":"1"}]}`, nil},
	{"duplicate holes folded", `{"files":[{"size":3,"holes":1,"Holes":2}]}`, nil},
	{"size too large", `{"files":[{"size":9223372036854775808}]}`, nil},
	{"size huge", `{"files":[{"size":` + strings.Repeat("9", 400) + `}]}`, nil},
	{"mtime too small", `{"files":[{"mtime":-9223372036854775809}]}`, nil},
	{"size exponent", `{"files":[{"size":1e3}]}`, nil},
	{"size fraction", `{"files":[{"size":1.0}]}`, nil},
	{"size leading zero", `{"files":[{"size":01}]}`, nil},
	{"size plus", `{"files":[{"size":+1}]}`, nil},
	{"size string", `{"files":[{"size":"1"}]}`, nil},
	{"size negative", `{"files":[{"size":-1}]}`, nil},
	{"mode negative", `{"files":[{"mode":-1}]}`, nil},
	{"mode minus zero", `{"files":[{"mode":-0}]}`, nil},
	{"mode over 32 bits", `{"files":[{"mode":4294967296}]}`, nil},
	{"start negative", `{"start":-1,"files":[]}`, nil},
	{"start over max", `{"start":1000001,"files":[]}`, nil},
	{"path number", `{"files":[{"path":1}]}`, nil},
	{"path 4097 bytes", `{"files":[{"path":"` + strings.Repeat("p", 4097) + `"}]}`, nil},
	{"raw control character", "{\"files\":[{\"path\":\"a\nb\"}]}", nil},
	{"bad escape", `{"files":[{"path":"\x41"}]}`, nil},
	{"short unicode escape", `{"files":[{"path":"\u12"}]}`, nil},
	{"invalid UTF-8", "{\"files\":[{\"path\":\"\xc3\x28\"}]}", nil},
	{"invalid UTF-8 in an unknown key", "{\"\xff\":1,\"files\":[]}", nil},
	{"files object", `{"files":{}}`, nil},
	{"entry array", `{"files":[[]]}`, nil},
	{"top-level array", `[]`, nil},
	{"top-level string", `"x"`, nil},
	{"empty", ``, nil},
	{"trailing garbage", `{"files":[]}x`, nil},
	{"two values", `{"files":[]}{}`, nil},
	{"trailing comma in object", `{"files":[],}`, nil},
	{"trailing comma in array", `{"files":[{},]}`, nil},
	{"single quotes", `{'files':[]}`, nil},
	{"bare key", `{files:[]}`, nil},
	{"literal misspelled", `{"x":nul,"files":[]}`, nil},
	{"literal run on", `{"x":truex,"files":[]}`, nil},
	{"truncated", `{"start":0,"files":[{"path":"a","size":1}`, nil},
}

func TestOfferFilesDecoderCases(t *testing.T) {
	checkDecoderCases[OfferFiles](t, offerFilesCases, offerFilesFields)
}

// Every cut of a valid body is refused, as encoding/json refuses it
// (only the whole body is a complete value).
func TestOfferFilesDecoderTruncated(t *testing.T) {
	body := appendOfferFiles(nil, &OfferFiles{Start: 9, Files: []FileEntry{
		{Path: "a/\"b\"/<c>.txt", Size: 1 << 40, Mode: 0o644, MTime: 1764680000123456789},
		{Path: "日本/\u2028", Size: 0},
	}})
	for n := range len(body) {
		if _, err := compareWithJSON(t, body[:n]); err == nil {
			t.Fatalf("%d of %d bytes taken", n, len(body))
		}
	}
	if _, err := compareWithJSON(t, body); err != nil {
		t.Fatal(err)
	}
}

// The encoder writes what encoding/json writes, byte for byte.
func TestOfferFilesEncoderMatchesJSON(t *testing.T) {
	for _, m := range []*OfferFiles{
		{},
		{Start: 1, Files: []FileEntry{}},
		{Start: 1 << 20, Files: []FileEntry{
			{Path: "plain/name.go", Size: 12, Mode: 0o644, MTime: 1},
			{Path: "disk.img", Size: 1 << 40, MTime: 2, Holes: 1<<40 - 1<<20},
			{Path: "", Size: 0},
			{Path: "q\"u\\o<t>e&\x00\x1f\x7f\n", Size: -1, Mode: 1<<32 - 1, MTime: -1 << 63},
			{Path: "\u2028\u2029日本\xff\xfe", Size: 1<<63 - 1},
		}},
	} {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendOfferFiles(nil, m); !bytes.Equal(got, want) {
			t.Errorf("wrote %s, encoding/json %s", got, want)
		}
	}
}

// FuzzOfferFilesDecoder checks the decoder against encoding/json on any
// body: compareWithJSON.
func FuzzOfferFilesDecoder(f *testing.F) {
	fuzzDecoder[OfferFiles](f, offerFilesCases, offerFilesFields)
}

// fuzzDecoder seeds f with the short bodies of cases and checks every body
// with compareDecoder.
func fuzzDecoder[M any, P interface {
	*M
	Message
}](f *testing.F, cases []decoderCase[P], top []string) {
	for _, c := range cases {
		if len(c.body) < 1<<10 {
			f.Add([]byte(c.body))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		compareDecoder[M, P](t, body, top)
	})
}

// FuzzOfferFilesEncoder: what the encoder writes is encoding/json's
// output, and reads back as the message written.
func FuzzOfferFilesEncoder(f *testing.F) {
	f.Add(0, "a/b", int64(1), uint32(0o644), int64(5), "c", int64(0), int64(0))
	f.Add(7, "<\"\\\n\xff", int64(-1), uint32(0), int64(-1), "\u2028", int64(1<<62), int64(1<<61))
	f.Fuzz(func(t *testing.T, start int, p1 string, s1 int64, m1 uint32, t1 int64, p2 string, s2, h2 int64) {
		m := &OfferFiles{Start: start, Files: []FileEntry{{Path: p1, Size: s1, Mode: m1, MTime: t1}, {Path: p2, Size: s2, Holes: h2}}}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got := appendOfferFiles(nil, m)
		if !bytes.Equal(got, want) {
			t.Fatalf("wrote %s, encoding/json %s", got, want)
		}
		compareWithJSON(t, got)
	})
}

// benchOffer is one manifest part as a copy of workload D sends it: 2048
// entries of a Go source tree.
func benchOffer() *OfferFiles {
	m := &OfferFiles{Start: 4096}
	dirs := []string{"go-3/src/cmd/compile/internal/ssa", "go-3/src/net/http", "go-3/test/fixedbugs", "go-3/src/runtime"}
	for i := range 2048 {
		m.Files = append(m.Files, FileEntry{
			Path:  fmt.Sprintf("%s/file_%d_test.go", dirs[i%len(dirs)], i),
			Size:  int64(1000 + i*37),
			Mode:  0o644,
			MTime: 1764680000123456789 + int64(i),
		})
	}
	return m
}

// BenchmarkOfferFilesDecode: a D-like part, per entry, by this package's
// decoder and by encoding/json (each with ReadMessage's UTF-8 check and
// validate).
func BenchmarkOfferFilesDecode(b *testing.B) {
	m := benchOffer()
	body := appendOfferFiles(nil, m)
	for _, c := range []struct {
		name   string
		decode func([]byte) (*OfferFiles, error)
	}{{"wire", wireOfferFiles}, {"encoding-json", referenceOfferFiles}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := c.decode(body); err != nil {
					b.Fatal(err)
				}
			}
			perEntry(b, len(m.Files))
		})
	}
}

// BenchmarkOfferFilesEncode: the same part written, per entry.
func BenchmarkOfferFilesEncode(b *testing.B) {
	m := benchOffer()
	for _, c := range []struct {
		name   string
		encode func() error
	}{
		{"wire", func() error { return WriteMessage(io.Discard, m) }},
		{"encoding-json", func() error { // WriteMessage before offerfiles.go
			body, err := json.Marshal(m)
			if err == nil {
				_, err = io.Discard.Write(append(make([]byte, 5, 5+len(body)), body...))
			}
			return err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.encode(); err != nil {
					b.Fatal(err)
				}
			}
			perEntry(b, len(m.Files))
		})
	}
}

func perEntry(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
}

// A Reader keeps its body buffer from one message to the next: reading a
// large part again allocates nothing for the body.
func TestReaderKeepsItsBuffer(t *testing.T) {
	m := benchOffer()
	frame := appendOfferFiles(make([]byte, 5), m)
	frame[0] = byte(TOfferFiles)
	n := len(frame) - 5
	frame[1], frame[2], frame[3], frame[4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	if n <= 128<<10 {
		t.Fatalf("a body of %d bytes: the test wants more than two 64 KiB steps", n)
	}
	br := bytes.NewReader(nil)
	r := NewReader(br)
	allocs := func(read func() (Message, error)) float64 {
		return testing.AllocsPerRun(10, func() {
			br.Reset(frame)
			if _, err := read(); err != nil {
				t.Fatal(err)
			}
		})
	}
	kept := allocs(r.ReadMessage)
	fresh := allocs(func() (Message, error) { return ReadMessage(br) })
	if kept > fresh-2 {
		t.Errorf("%v allocations per message with a Reader, %v without", kept, fresh)
	}
}
