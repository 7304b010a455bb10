package safetext

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// cases double as the fuzz corpus.
var cases = []struct{ in, want string }{
	{"report.pdf", "report.pdf"},
	{"Ferien 2026/Strand.jpg", "Ferien 2026/Strand.jpg"},
	{"日本語.txt", "日本語.txt"},
	{"a\u202etxt.exe", `"a\u202etxt.exe"`},   // right-to-left override
	{"new\nline", `"new\nline"`},             // control character
	{"zero\u200bwidth", `"zero\u200bwidth"`}, // zero-width space
	{"\ufeffbom.txt", `"\ufeffbom.txt"`},     // byte order mark
	{"bad\xffutf8", `"bad\xffutf8"`},         // invalid UTF-8
	{"quote\"\x01", `"quote\"\x01"`},         // quote inside an escaped name
	{"tab\there", `"tab\there"`},
	{"nbsp\u00a0x", `"nbsp\u00a0x"`},
	{" leading.txt", `" leading.txt"`},
	{"dir/ inner.txt", `"dir/ inner.txt"`},
	{"trailing /x", `"trailing /x"`},
	{"in between.txt", "in between.txt"},
}

func TestName(t *testing.T) {
	for _, c := range cases {
		if got := Name(c.in); got != c.want {
			t.Errorf("Name(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// FuzzName: whatever a peer sends, the shown text has no invisible or
// display-changing character, and a name that needed no escaping is shown as is.
func FuzzName(f *testing.F) {
	for _, c := range cases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Name(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Name(%q) = %q is not valid UTF-8", s, got)
		}
		if NeedsEscape(s) && !strings.HasPrefix(got, `"`) {
			t.Fatalf("escaped name %q not quoted", got)
		}
		for _, r := range got {
			if Suspicious(r) {
				t.Fatalf("Name(%q) = %q shows %U", s, got, r)
			}
		}
		if !NeedsEscape(s) && got != s {
			t.Fatalf("Name(%q) = %q changed a plain name", s, got)
		}
		if fast, slow := NeedsEscape(s), needsEscape(s); fast != slow {
			t.Fatalf("NeedsEscape(%q) = %v, needsEscape %v", s, fast, slow)
		}
	})
}

// NeedsEscape's pass over ASCII agrees with the general rule on every
// ASCII character in every position of an element.
func TestNeedsEscapeASCII(t *testing.T) {
	for c := range 0x80 {
		for _, f := range []string{"%c", "%cx", "x%c", "x%cx", "a/%c/b", "a/%cb", "a/b%c", "%c/"} {
			s := fmt.Sprintf(f, c)
			if fast, slow := NeedsEscape(s), needsEscape(s); fast != slow {
				t.Errorf("NeedsEscape(%q) = %v, needsEscape %v", s, fast, slow)
			}
		}
	}
}

// A plain name is checked without allocating (the general rule split it
// at every slash).
func TestNeedsEscapeAllocations(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { NeedsEscape("go-3/src/cmd/go/internal/load/pkg.go") }); n != 0 {
		t.Errorf("%.0f allocations", n)
	}
}

func BenchmarkNeedsEscape(b *testing.B) {
	for b.Loop() {
		NeedsEscape("go-3/src/cmd/go/internal/load/pkg.go")
	}
}

// textCases double as the fuzz corpus of FuzzText.
var textCases = []struct{ in, want string }{
	{"see you at 8", "see you at 8"},
	{"line one\nline two\n\tindented", "line one\nline two\n\tindented"},
	{"windows\r\nlines\r\n", "windows\nlines\n"},
	{"lone\rreturn", `lone\rreturn`},
	{"https://example.org/\u202egnp.exe", `https://example.org/\u202egnp.exe`},
	{"zero\u200bwidth and \ufeffbom", `zero\u200bwidth and \ufeffbom`},
	{"bad\xffutf8", `bad\xffutf8`},
	{"bell\x07 and nul\x00", `bell\a and nul\x00`},
	{"日本語 ✈ émoji 🙂", "日本語 ✈ émoji 🙂"},
	{`C:\Users\sam`, `C:\Users\sam`},
	{"", ""},
}

func TestText(t *testing.T) {
	for _, c := range textCases {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzText: whatever a peer sends as text, what is shown is valid UTF-8 with
// no invisible or display-changing character but line breaks and tabs, and
// a plain text is shown as is.
func FuzzText(f *testing.F) {
	for _, c := range textCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Text(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Text(%q) = %q is not valid UTF-8", s, got)
		}
		for _, r := range got {
			if r != '\n' && r != '\t' && Suspicious(r) {
				t.Fatalf("Text(%q) = %q shows %U", s, got, r)
			}
		}
		if !textNeedsEscape(s) && got != s {
			t.Fatalf("Text(%q) = %q changed a plain text", s, got)
		}
	})
}

// lineCases double as the fuzz corpus of FuzzLine.
var lineCases = []struct{ in, want string }{
	{"Declined by Bob's laptop.", "Declined by Bob's laptop."},
	{"Declined by \x1b[31mEVIL\x1b[0m\rX.", `Declined by \x1b[31mEVIL\x1b[0m\rX.`},
	{"Cancelled by Eve: gone\nferry-cli send: done", `Cancelled by Eve: gone\nferry-cli send: done`},
	{"tab\there", `tab\there`},
	{"a \u202egnp.exe name", `a \u202egnp.exe name`},
	{"bad\xffutf8", `bad\xffutf8`},
	{"日本語 ✈ émoji 🙂", "日本語 ✈ émoji 🙂"},
	{"", ""},
}

func TestLine(t *testing.T) {
	for _, c := range lineCases {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzLine: whatever a peer's words hold, the line shown is valid UTF-8 with
// no invisible or display-changing character (no line break, no tab), and a
// plain line is shown as is.
func FuzzLine(f *testing.F) {
	for _, c := range lineCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Line(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Line(%q) = %q is not valid UTF-8", s, got)
		}
		for _, r := range got {
			if Suspicious(r) {
				t.Fatalf("Line(%q) = %q shows %U", s, got, r)
			}
		}
		if !needsEscapeRunes(s) && got != s {
			t.Fatalf("Line(%q) = %q changed a plain line", s, got)
		}
		if Line(got) != got {
			t.Fatalf("Line(%q) = %q is escaped again by a second Line", s, got)
		}
	})
}

func TestMessage(t *testing.T) {
	if got, want := Message("tcp: refused\nquic: \x1b[2Jtimeout"), `tcp: refused; quic: \x1b[2Jtimeout`; got != want {
		t.Fatalf("Message = %q, want %q", got, want)
	}
}

// A long path keeps its start and its end, cut at slashes, within n bytes.
func TestElide(t *testing.T) {
	deep := "Projects/" + strings.Repeat("aaaaaaaaa/", 30) + "notes.txt"
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"a/b.txt", 7, "a/b.txt"},
		{deep, 60, "Projects/aaaaaaaaa/…/aaaaaaaaa/aaaaaaaaa/notes.txt"},
		{"abcdefghijklmnop", 12, "abc…klmnop"},
		{"éééééééééé", 12, "é…ééé"},
		{"abcdefgh", 5, "…gh"},
		{"abcdefgh", 2, ""},
	} {
		got := Elide(tc.s, tc.n)
		if got != tc.want || len(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("Elide(%q, %d) = %q (%d bytes), want %q", tc.s, tc.n, got, len(got), tc.want)
		}
	}
}

func TestOnlyComposed(t *testing.T) {
	for _, c := range []struct {
		name, saved string
		want        bool
	}{
		{"Re\u0301sume\u0301.md", "R\u00e9sum\u00e9.md", true},
		{"sub/cafe\u0301.txt", "sub/caf\u00e9.txt", true},
		{"cafe\u0301.txt", "caf\u00e9 (1).txt", false},
		{"caf\u00e9.txt", "caf\u00e9.txt", false}, // not changed at all
		{"a.txt", "", false},
		{"a:b.txt", "a_b.txt", false},
	} {
		if got := OnlyComposed(c.name, c.saved); got != c.want {
			t.Errorf("OnlyComposed(%q, %q) = %v, want %v", c.name, c.saved, got, c.want)
		}
	}
}
