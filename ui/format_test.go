package ui

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var escapeCases = []struct{ in, want string }{
	{"report.pdf", "report.pdf"},
	{"Ferien 2026/Strand.jpg", "Ferien 2026/Strand.jpg"},
	{"日本語.txt", "日本語.txt"},
	{"a\u202etxt.exe", `"a\u202etxt.exe"`},   // right-to-left override
	{"new\nline", `"new\nline"`},             // control character
	{"zero\u200bwidth", `"zero\u200bwidth"`}, // zero-width space
	{"bad\xffutf8", `"bad\xffutf8"`},         // invalid UTF-8
	{"quote\"\x01", `"quote\"\x01"`},         // quote inside an escaped name
	{"tab\there", `"tab\there"`},
	{"nbsp\u00a0x", `"nbsp\u00a0x"`},
}

func TestEscapeName(t *testing.T) {
	for _, c := range escapeCases {
		if got := EscapeName(c.in); got != c.want {
			t.Errorf("EscapeName(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// FuzzEscapeName checks that what we show never contains a rune that can
// disguise a name, and that printable names are left alone.
func FuzzEscapeName(f *testing.F) {
	for _, c := range escapeCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := EscapeName(s)
		if !utf8.ValidString(got) {
			t.Fatalf("EscapeName(%q) = %q is not valid UTF-8", s, got)
		}
		for _, r := range got {
			if suspicious(r) {
				t.Fatalf("EscapeName(%q) = %q keeps %U", s, got, r)
			}
		}
		if !needsEscape(s) && got != s {
			t.Fatalf("EscapeName changed a plain name %q to %q", s, got)
		}
		if needsEscape(s) && !strings.HasPrefix(got, `"`) {
			t.Fatalf("escaped name %q not quoted", got)
		}
	})
}

func TestHumanFormats(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {999, "999 B"}, {1000, "1.0 kB"}, {1_500_000, "1.5 MB"}, {-1, "unknown"}, {3_200_000_000, "3.2 GB"}} {
		if got := HumanBytes(c.n); got != c.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if got := HumanETA(90 * time.Second); got != "2 min left" {
		t.Errorf("HumanETA = %q", got)
	}
	if got := ShortID("ABCDEFGHIJ"); got != "ABCD-EFGH" {
		t.Errorf("ShortID = %q", got)
	}
	if got := GroupID("ABCDEFGHIJ"); got != "ABCD-EFGH-IJ" {
		t.Errorf("GroupID = %q", got)
	}
}
