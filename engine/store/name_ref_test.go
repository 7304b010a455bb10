package store

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// This file keeps the plain form of ValidatePath and ValidateReceived, as
// they were before the name checks were made cheaper per name (issue #30):
// the reference the fast ones must agree with, verdict and message, on every
// input (TestNameChecksMatchReference, FuzzNameChecksMatchReference).

// refValidatePath applies Windows's own rules (its characters, a final dot
// or space, its device names) only when portable is set, as validatePath.
func refValidatePath(rel string, portable bool) error {
	bad := func(err error, format string, args ...any) error {
		return badName(rel, err, format, args...)
	}
	switch {
	case rel == "":
		return bad(ErrBadName, "empty")
	case len(rel) > MaxPathBytes:
		return bad(ErrNameTooLong, "path is %d bytes, limit %d", len(rel), MaxPathBytes)
	case !utf8.ValidString(rel):
		return bad(ErrBadName, "invalid UTF-8")
	case rel[0] == '/':
		return bad(ErrBadName, "absolute path")
	}
	for _, r := range rel {
		switch {
		case r == '\\':
			return bad(ErrBadName, "backslash not allowed")
		case portable && r == ':':
			return bad(ErrBadName, "colon not allowed")
		case portable && strings.ContainsRune(`<>"|?*`, r):
			return bad(ErrBadName, "character %q not allowed", r)
		case isControl(r):
			return bad(ErrBadName, "control character %U not allowed", r)
		case isBidi(r):
			return bad(ErrBadName, "bidi control %U not allowed", r)
		}
	}
	elems := strings.Split(rel, "/")
	if len(elems) > MaxDepth {
		return bad(ErrNameTooLong, "%d levels deep, limit %d", len(elems), MaxDepth)
	}
	for _, e := range elems {
		switch {
		case e == "":
			return bad(ErrBadName, "empty element")
		case e == "." || e == "..":
			return bad(ErrBadName, "element %q not allowed", e)
		case len(e) > MaxElementBytes:
			return bad(ErrNameTooLong, "element is %d bytes, limit %d", len(e), MaxElementBytes)
		case portable && (strings.HasSuffix(e, ".") || strings.HasSuffix(e, " ")):
			return bad(ErrBadName, "element %q ends in a dot or space", e)
		case portable && refIsWindowsDevice(e):
			return bad(ErrReservedName, "element %q is a Windows device name", e)
		}
	}
	return nil
}

// refValidateReceived is ValidateReceived as first written: the path's
// check for this system (a name of 248-255 bytes is taken: its partial's
// name is shortened, partialName), of the name it is saved under
// (LocalName, which TestLocalName and FuzzLocalName check).
func refValidateReceived(rel string) error {
	return refValidatePath(LocalName(rel), portableHere)
}

func refIsWindowsDevice(e string) bool {
	if i := strings.IndexByte(e, '.'); i >= 0 {
		e = e[:i]
	}
	e = strings.TrimRight(e, " ")
	if len(e) < 3 || len(e) > 8 {
		return false
	}
	for i := 0; i < len(e); i++ {
		if e[i] >= utf8.RuneSelf {
			e = strings.ToUpper(e)
			break
		}
	}
	for _, dev := range []string{"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"} {
		if strings.EqualFold(e, dev) {
			return true
		}
	}
	if len(e) < 4 {
		return false
	}
	prefix, digit := e[:3], e[3:]
	if !strings.EqualFold(prefix, "COM") && !strings.EqualFold(prefix, "LPT") {
		return false
	}
	switch digit {
	case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³":
		return true
	}
	return false
}

// hostileNames are names the fast checks must judge as the reference does,
// chosen where the two are most likely to part: which of two faults is
// reported first, the boundaries of the limits, what ASCII and non-ASCII
// fold or upper-case to. They seed the fuzz target too.
var hostileNames = []string{
	// Device names: every stem, cases, extensions, trailing spaces, and the
	// non-ASCII letters that upper-case or fold to ASCII.
	"CON", "con", "Con.txt", "PRN", "prn.x", "AUX", "aux.c", "NUL", "nul ", "NUL .txt", "NUL  . txt",
	"CONIN$", "conin$.x", "CONOUT$", "conout$", "COM1", "com0", "COM9.log", "COM10", "COM", "LPT", "LPT1",
	"lpt9.txt", "COM¹", "com².txt", "LPT³", "LPT⁴", "COM₁", "conın$", "conİn$", "cοn", "ⅽon", "ſon", "ＣＯＮ",
	"ℂON", "Kelvin\u212a", "\u212aON", "LPTı", "ÇON", "ñul", "a/CON/b", "a/b/con", "x.con", "con.", "con ",
	".con", "CONX", "CONINS", "COM1 ", "COM1 .txt", "COM1.", "lpt1$", "pRn.tar.gz", "nUl.partial",
	// Our partials' suffix, which names may end in: cases, boundaries, cut
	// runes, the Kelvin sign.
	"a.partial", "A.PARTIAL", ".partial", "partial", "x.partial.txt", "x.partial/y", "a.partiaL",
	"a.parti\u212al", "a.part\u0130al", "é.partial", "a.partia", "a.partialé", strings.Repeat("é", 3) + "artial",
	// Dots, spaces and empty elements.
	"", ".", "..", "...", "./a", "../a", "a/.", "a/..", "a/./b", "a/../b", "a//b", "/", "//", "/a", "//a/b",
	"a/", "a/b/", " ", "a ", "a.", "a /b", "a./b", " a", ".a", "..a", "a..b", "a/ /b", "a/./", "\u3000",
	// Characters, in every order against each other and the element faults.
	`\`, `a\b`, `\\server\share`, "C:x", "c:/x", "a:b", "a<b", "a>b", `a"b`, "a|b", "a?b", "a*b",
	"a\x00b", "\x00", "\x01", "\x1f", "\x7f", "a\tb", "a\nb", "a\x1bb", "\u0080", "\u0085", "\u009f", "\u00a0",
	"\u202a", "\u202e", "\u2066", "\u2069", "\u200e", "\u200f", "\u061c", "\u200b", "\u2028", "\ufeff",
	"../a\\b", "a/../b:c", "a./b*", "con/a?b", "a\u202e/..", "a\x00/", "a//\x7f", ":/", "a.partial/\\",
	"\\" + strings.Repeat("a/", 70), strings.Repeat("a/", 70) + "?",
	// Invalid UTF-8, also after other faults.
	"a\xffb", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x80", "\xf4\x90\x80\x80", "/\xff", "..\xff", "a\\\xff",
	"\x80", "é\xa9", "\xf0\x9f\x8e",
	// Limits: elements, file names, paths and depth at and over each one.
	strings.Repeat("a", 247), strings.Repeat("a", 248), strings.Repeat("a", 255), strings.Repeat("a", 256),
	"d/" + strings.Repeat("a", 247), "d/" + strings.Repeat("a", 248), strings.Repeat("a", 248) + "/f",
	strings.Repeat("é", 124), strings.Repeat("é", 123) + "ab", strings.Repeat("é", 128), strings.Repeat("日", 85),
	strings.Repeat("a/", 63) + "a", strings.Repeat("a/", 64) + "a", strings.Repeat("a/", 64),
	strings.Repeat("/", 70), strings.Repeat("../", 70),
	strings.Repeat(strings.Repeat("b", 255)+"/", 15) + strings.Repeat("b", 255),
	strings.Repeat(strings.Repeat("b", 255)+"/", 15) + strings.Repeat("b", 256),
	strings.Repeat("b", MaxPathBytes), strings.Repeat("b", MaxPathBytes+1), strings.Repeat("a/", 2048),
	strings.Repeat("\xff", MaxPathBytes+1), strings.Repeat("a/", 64) + strings.Repeat("a", 300),
	// Ordinary names, which both must accept.
	"a.txt", "photos/2024/IMG_0001.JPG", "src/net/http/server.go", "ünïcödé/日本語/файл.txt", "emoji 🎉.png",
	"console.txt", "Makefile", "lib/time/zoneinfo.zip", "a b/c d.txt", "...a",
}

// checkSame fails t when the fast checks and the reference differ on rel:
// in nil-ness, in the message, or in which sentinel the error matches.
func checkSame(t *testing.T, rel string) {
	t.Helper()
	for _, f := range []struct {
		name      string
		fast, ref func(string) error
	}{
		{"ValidatePath", ValidatePath, func(rel string) error { return refValidatePath(rel, true) }},
		{"ValidateHere", ValidateHere, func(rel string) error { return refValidatePath(rel, portableHere) }},
		// Both sets of rules on every system.
		{"validatePath(unix)", func(rel string) error { return validatePath(rel, false) }, func(rel string) error { return refValidatePath(rel, false) }},
		{"ValidateReceived", ValidateReceived, refValidateReceived},
	} {
		got, want := f.fast(rel), f.ref(rel)
		if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
			t.Fatalf("%s(%q) = %v, the reference says %v", f.name, rel, got, want)
		}
		if got == nil {
			continue
		}
		g, w := got.(*NameError), want.(*NameError)
		if g.Err != w.Err || g.Name != w.Name || g.Reason != w.Reason {
			t.Fatalf("%s(%q) = %#v, the reference says %#v", f.name, rel, g, w)
		}
	}
}

func TestNameChecksMatchReference(t *testing.T) {
	for _, rel := range hostileNames {
		checkSame(t, rel)
	}
	for _, tc := range pathCases {
		checkSame(t, tc.name)
	}
	// Every byte and a sample of runes, alone and between letters, at the
	// start and end of an element.
	for c := 0; c < 256; c++ {
		for _, f := range []string{"%s", "a%sb", "%s/a", "a/%s", "con%s", "a%s.partial", "%s.."} {
			checkSame(t, strings.Replace(f, "%s", string([]byte{byte(c)}), 1))
		}
	}
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		forms := []string{"%son", "con%s", "%sul.txt"}
		if r < 0x3000 {
			forms = append(forms, "%s", "a%sb", "com%s", "a.partia%s")
		}
		for _, f := range forms {
			checkSame(t, strings.Replace(f, "%s", string(r), 1))
		}
	}
}

// FuzzNameChecksMatchReference compares the fast checks with the reference
// on any input: same verdict, same message.
func FuzzNameChecksMatchReference(f *testing.F) {
	for _, rel := range hostileNames {
		f.Add(rel)
	}
	for _, tc := range pathCases {
		f.Add(tc.name)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		checkSame(t, rel)
	})
}

// TestValidateReceivedAllocs: accepting a name costs no allocation.
func TestValidateReceivedAllocs(t *testing.T) {
	names := []string{"photos/2024/IMG_0001.JPG", "ünïcödé/日本語/файл.txt", "src/cmd/compile/internal/ssa/rewriteAMD64.go"}
	for _, rel := range names {
		if n := testing.AllocsPerRun(100, func() { ValidateReceived(rel) }); n != 0 {
			t.Errorf("ValidateReceived(%q): %v allocations, want 0", rel, n)
		}
	}
}

// goRootNames are the names workload D's receiver checks
// (scripts/workload-d.sh): the files of a Go distribution, as "D/go-1/...",
// real names, mostly ASCII, up to 16 levels deep (about 15,000 of them,
// those of $GOROOT here).
func goRootNames(b *testing.B) []string {
	b.Helper()
	root := runtime.GOROOT()
	var names []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if rel, err := filepath.Rel(root, p); err == nil {
				names = append(names, "D/go-1/"+filepath.ToSlash(rel))
			}
		}
		return nil
	})
	if len(names) < 1000 {
		if _, err := os.Stat(root); err != nil {
			b.Skipf("no Go tree to take names from: %v", err)
		}
		b.Fatalf("found only %d names under %s", len(names), root)
	}
	return names
}

// BenchmarkValidateReceived checks goRootNames with the fast check and the
// reference. An op is one name, so ns/op is ns per name; "accepted" counts
// the names each accepts (the same, or TestNameChecksMatchReference fails),
// "bytes/name" is their mean length.
func BenchmarkValidateReceived(b *testing.B) {
	names := goRootNames(b)
	total := 0
	for _, rel := range names {
		total += len(rel)
	}
	for _, impl := range []struct {
		name string
		fn   func(string) error
	}{{"fast", ValidateReceived}, {"reference", refValidateReceived}} {
		b.Run(impl.name, func(b *testing.B) {
			accepted := 0
			for _, rel := range names {
				if impl.fn(rel) == nil {
					accepted++
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				impl.fn(names[i%len(names)])
			}
			b.StopTimer()
			b.ReportMetric(float64(len(names)), "names")
			b.ReportMetric(float64(total)/float64(len(names)), "bytes/name")
			b.ReportMetric(float64(accepted), "accepted")
		})
	}
}
