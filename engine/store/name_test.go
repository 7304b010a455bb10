package store

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// pathCases is the table of ValidatePath cases; it is also the seed corpus of
// FuzzValidatePath. want is nil for names that must be accepted.
var pathCases = []struct {
	name string
	want error
}{
	// Accepted.
	{"a.txt", nil},
	{"photos/2024/IMG_0001.JPG", nil},
	{".bashrc", nil},
	{"archive.tar.gz", nil},
	{"a b/c d.txt", nil},
	{" leading space", nil},
	{"...a", nil},
	{"ünïcödé/日本語/файл.txt", nil},
	{"emoji 🎉.png", nil},
	{"console.txt", nil}, // CON only as the whole stem
	{"COM10", nil},       // only COM0-9 are devices
	{"LPT", nil},         // no digit
	{"x.partial.txt", nil},
	{"notes.partial", nil}, // like our partials' names: taken too
	{"dir/a.txt.PARTIAL", nil},
	{"x.partial/y", nil},
	{"partial", nil},
	{strings.Repeat("a", 255), nil},       // element at the limit
	{strings.Repeat("a/", 63) + "a", nil}, // 64 levels
	{strings.Repeat("é", 127) + "a", nil}, // 255 bytes of UTF-8
	{"\u200b", nil},                       // zero-width space is not a bidi control
	{"a\u00a0b", nil},                     // NBSP is not a control character
	{strings.Repeat(strings.Repeat("b", 255)+"/", 15) + strings.Repeat("b", 255), nil}, // 4095 bytes

	// Empty, absolute, drive, UNC.
	{"", ErrBadName},
	{"/etc/passwd", ErrBadName},
	{"/", ErrBadName},
	{`\x`, ErrBadName},
	{`C:x`, ErrBadName},
	{`C:\Windows\x`, ErrBadName},
	{`c:/x`, ErrBadName},
	{`\\server\share\x`, ErrBadName},
	{`//server/share/x`, ErrBadName},
	{`\\?\C:\x`, ErrBadName},
	{`\\.\PhysicalDrive0`, ErrBadName},
	// Dot elements and empty elements.
	{"..", ErrBadName},
	{".", ErrBadName},
	{"../x", ErrBadName},
	{"a/../../x", ErrBadName},
	{"a/..", ErrBadName},
	{"a/./b", ErrBadName},
	{"./a", ErrBadName},
	{"a//b", ErrBadName},
	{"a/", ErrBadName},
	// Backslashes anywhere.
	{`a\b`, ErrBadName},
	{`..\x`, ErrBadName},
	{`a\`, ErrBadName},
	// Controls.
	{"a\x00b", ErrBadName},
	{"a\nb", ErrBadName},
	{"a\rb", ErrBadName},
	{"\tx", ErrBadName},
	{"a\x1bb", ErrBadName},
	{"a\x7fb", ErrBadName},
	{"a\u0085b", ErrBadName},
	{"a\u009bb", ErrBadName},
	// Bidi controls.
	{"invoice\u202Etxt.exe", ErrBadName},
	{"a\u202Ab", ErrBadName},
	{"a\u2066b", ErrBadName},
	{"a\u2069b", ErrBadName},
	{"a\u200Eb", ErrBadName},
	{"a\u200Fb", ErrBadName},
	{"a\u061Cb", ErrBadName},
	// Invalid UTF-8.
	{"a\xffb", ErrBadName},
	{"\xc0\xaf", ErrBadName},       // overlong "/"
	{"a\xed\xa0\x80b", ErrBadName}, // surrogate
	{"\xe2\x80", ErrBadName},       // truncated
	// Windows-invalid characters and trailing dot/space.
	{"a<b", ErrBadName},
	{"a>b", ErrBadName},
	{`a"b`, ErrBadName},
	{"a|b", ErrBadName},
	{"a?b", ErrBadName},
	{"a*b", ErrBadName},
	{"a:b", ErrBadName},
	{"file.txt:stream", ErrBadName},
	{"a.", ErrBadName},
	{"a ", ErrBadName},
	{"dir./b", ErrBadName},
	{"dir /b", ErrBadName},
	{"...", ErrBadName},
	{" ", ErrBadName},
	// Windows device names.
	{"CON", ErrReservedName},
	{"con", ErrReservedName},
	{"con.txt", ErrReservedName},
	{"Con.tar.gz", ErrReservedName},
	{"a/nul/b", ErrReservedName},
	{"NUL .txt", ErrReservedName},
	{"PRN", ErrReservedName},
	{"aux.c", ErrReservedName},
	{"COM1", ErrReservedName},
	{"com9.log", ErrReservedName},
	{"COM0", ErrReservedName},
	{"LPT1", ErrReservedName},
	{"lpt5.txt", ErrReservedName},
	{"COM¹", ErrReservedName},
	{"com².txt", ErrReservedName},
	{"LPT³", ErrReservedName},
	{"CONIN$", ErrReservedName},
	{"conout$.txt", ErrReservedName},
	{"conın$.txt", ErrReservedName}, // a dotless ı upper-cases to I
	// Limits.
	{strings.Repeat("a", 256), ErrNameTooLong},
	{"d/" + strings.Repeat("é", 128), ErrNameTooLong},
	{strings.Repeat("a/", 64) + "a", ErrNameTooLong},                                              // 65 levels
	{strings.Repeat(strings.Repeat("b", 250)+"/", 16) + strings.Repeat("b", 250), ErrNameTooLong}, // 4266 bytes
}

func TestValidatePath(t *testing.T) {
	for _, tc := range pathCases {
		err := ValidatePath(tc.name)
		if tc.want == nil {
			if err != nil {
				t.Errorf("ValidatePath(%q) = %v, want nil", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("ValidatePath(%q) = %v, want %v", tc.name, err, tc.want)
			continue
		}
		if !errors.Is(err, ErrBadName) {
			t.Errorf("ValidatePath(%q) = %v, does not match ErrBadName", tc.name, err)
		}
		var ne *NameError
		if !errors.As(err, &ne) || ne.Name != tc.name || ne.Reason == "" {
			t.Errorf("ValidatePath(%q) = %#v, want a *NameError naming it with a reason", tc.name, err)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "store: ") || !printable(msg) {
			t.Errorf("ValidatePath(%q) message %q: want a safe, printable \"store: \" message", tc.name, msg)
		}
	}
}

// printable reports whether s is valid UTF-8 without control or bidi
// characters, so it can go into a log line or dialog as it is.
func printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || isControl(r) || isBidi(r) {
			return false
		}
	}
	return true
}

// containsForbidden reports whether s holds a rune that no accepted name may
// contain.
func containsForbidden(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r == '\\' || r == ':' || strings.ContainsRune(`<>"|?*`, r) || isControl(r) || isBidi(r) {
			return true
		}
	}
	return false
}

func FuzzValidatePath(f *testing.F) {
	for _, tc := range pathCases {
		f.Add(tc.name)
	}
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, rel string) {
		if ValidatePath(rel) != nil {
			return
		}
		if containsForbidden(rel) || !utf8.ValidString(rel) {
			t.Fatalf("accepted %q, which holds a forbidden character", rel)
		}
		local := filepath.FromSlash(rel)
		if !filepath.IsLocal(local) {
			t.Fatalf("accepted %q, which filepath.IsLocal refuses", rel)
		}
		joined := filepath.Join(root, local)
		r, err := filepath.Rel(root, joined)
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || r != filepath.Clean(local) {
			t.Fatalf("accepted %q, which resolves to %q (rel %q, %v) outside %q", rel, joined, r, err, root)
		}
		if len(rel) > MaxPathBytes || strings.Count(rel, "/") >= MaxDepth {
			t.Fatalf("accepted %q beyond the length limits", rel)
		}
		for _, e := range strings.Split(rel, "/") {
			if e == "" || e == "." || e == ".." || len(e) > MaxElementBytes ||
				strings.HasSuffix(e, ".") || strings.HasSuffix(e, " ") ||
				isWindowsDevice(e) {
				t.Fatalf("accepted %q with bad element %q", rel, e)
			}
			// A numbered copy of an accepted element must be acceptable too.
			for _, file := range []bool{true, false} {
				if c := numbered(e, 12345, file); ValidatePath(c) != nil {
					t.Fatalf("numbered(%q, file=%v) = %q, which ValidatePath refuses: %v", e, file, c, ValidatePath(c))
				}
			}
		}
	})
}

// On Windows a peer's name that only Windows refuses is saved under a
// name that Windows takes (LocalName); elsewhere it is kept as it is, but
// for its backslashes, which are "_" everywhere (elsewhere: "" for in
// itself).
var localNameCases = []struct{ in, windows, elsewhere string }{
	{"Meeting: notes.md", "Meeting_ notes.md", ""},
	{"what?.txt", "what_.txt", ""},
	{`a<b>c|d"e*f`, "a_b_c_d_e_f", ""},
	{"end.", "end", ""},
	{"end. . ", "end", ""},
	{"...", "_", ""},
	{"dir./x: y/z", "dir/x_ y/z", ""},
	{"CON", "CON_", ""},
	{"con.txt", "con_.txt", ""},
	{"src/aux.c", "src/aux_.c", ""},
	{"COM1.tar.gz", "COM1_.tar.gz", ""},
	{"CON.", "CON_", ""},
	{"photos/2024:06/IMG?.jpg", "photos/2024_06/IMG_.jpg", ""},
	{"ok/name.txt", "ok/name.txt", ""},
	{"été/ñ.txt", "été/ñ.txt", ""},
	{`a\b.txt`, "a_b.txt", "a_b.txt"},
	{`notes\`, "notes_", "notes_"},
	{`..\..\evil.sh`, ".._.._evil.sh", ".._.._evil.sh"},
	{`\\server\share\x`, "__server_share_x", "__server_share_x"},
	{`C:\x`, "C__x", "C:_x"},
	{`CON\`, "CON_", "CON_"},
	{`dir\./x\:y`, "dir_/x__y", "dir_./x_:y"},
	// What is unsafe anywhere is not made safe: it stays refused.
	{"../x:y", "../x_y", ""},
	{"a\x00b:c", "a\x00b_c", ""},
	{"x.partial", "x.partial", ""},
	{"/abs", "/abs", ""},
	{`../a\b`, "../a_b", "../a_b"},
	{"a\\b/\x00", "a_b/\x00", "a_b/\x00"},
}

func TestLocalName(t *testing.T) {
	for _, c := range localNameCases {
		elsewhere := c.elsewhere
		if elsewhere == "" {
			elsewhere = c.in
		}
		if got := localName(c.in, true); got != c.windows {
			t.Errorf("localName(%q) on Windows = %q, want %q", c.in, got, c.windows)
		}
		if got := localName(c.in, false); got != elsewhere {
			t.Errorf("localName(%q) elsewhere = %q, want %q", c.in, got, elsewhere)
		}
		if got := localName(c.windows, true); got != c.windows {
			t.Errorf("localName(%q) = %q: a local name must map to itself", c.windows, got)
		}
		if got := localName(elsewhere, false); got != elsewhere {
			t.Errorf("localName(%q) elsewhere = %q: a local name must map to itself", elsewhere, got)
		}
		// Safe anywhere but for its backslashes: safe on Windows too,
		// and a name unsafe for anything else stays so on both.
		unsafe := validatePath(elsewhere, false) != nil
		if err := validatePath(c.windows, true); (err != nil) != unsafe {
			t.Errorf("%q -> %q: valid on Windows %v, want %v", c.in, c.windows, err == nil, !unsafe)
		}
		if err := validatePath(strings.ReplaceAll(c.in, `\`, "x"), false); (err != nil) != unsafe {
			t.Errorf("%q -> %q: valid elsewhere %v, want %v", c.in, elsewhere, !unsafe, err == nil)
		}
	}
}

// composedCases are peers' names and the composed form (NFC) they are
// saved under off macOS (LocalName): a Mac's decomposed accents composed,
// what needs no composing kept, and nothing refused made acceptable.
var composedCases = []struct{ in, want string }{
	{"cafe\u0301.txt", "caf\u00e9.txt"},
	{"E\u0301te\u0301/Re\u0301sume\u0301.md", "\u00c9t\u00e9/R\u00e9sum\u00e9.md"},
	{"caf\u00e9.txt", "caf\u00e9.txt"},
	{"plain/ascii.txt", "plain/ascii.txt"},
	{"\u1100\u1161\u11a8.txt", "\uac01.txt"},  // Hangul jamo from a Mac
	{"a\u0323\u0307", "\u1ea1\u0307"},         // marks reordered, then composed
	{"\u212b.txt", "\u00c5.txt"},              // the Angstrom sign is Å
	{"e\u0301\xff.txt", "e\u0301\xff.txt"},    // not UTF-8: left to be refused
	{"e\u0301\u202e.txt", "\u00e9\u202e.txt"}, // still refused: its bidi control
	{"e\u0301/../x", "\u00e9/../x"},
	{"<\u0338.txt", "\u226e.txt"}, // composed before Windows's rules, which then keep it
}

func TestComposed(t *testing.T) {
	for _, c := range composedCases {
		if got := composed(c.in); got != c.want {
			t.Errorf("composed(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := composed(c.want); got != c.want {
			t.Errorf("composed(%q) = %q: a composed name must map to itself", c.want, got)
		}
		if composeHere {
			if got, want := LocalName(c.in), localName(c.want, portableHere); got != want {
				t.Errorf("LocalName(%q) = %q, want %q", c.in, got, want)
			}
		}
	}
}

// shortenedCases are peers' names with an element over MaxElementBytes
// (a Mac or Windows counts characters: 100 Japanese ones are 300 bytes)
// and what they are saved under: a file's stem cut at a character
// boundary, its extension kept; what is refused anyway is not cut.
var shortenedCases = []struct{ in, want string }{
	{strings.Repeat("日", 100) + ".pdf", strings.Repeat("日", 83) + ".pdf"},
	{strings.Repeat("é", 150) + "/x.txt", strings.Repeat("é", 127) + "/x.txt"},
	{strings.Repeat("a", 300) + ".tar.gz", strings.Repeat("a", 248) + ".tar.gz"},
	{"d/" + strings.Repeat("a", 256), "d/" + strings.Repeat("a", 255)},
	{"x." + strings.Repeat("e", 300), ("x." + strings.Repeat("e", 300))[:255]}, // all extension: cut whole
	{strings.Repeat("a", 255), strings.Repeat("a", 255)},
	{strings.Repeat("a", 300) + "\x1b.txt", strings.Repeat("a", 300) + "\x1b.txt"},
	{strings.Repeat("a", 300) + "\u202e.txt", strings.Repeat("a", 300) + "\u202e.txt"},
	{strings.Repeat("a", 300) + "\xff", strings.Repeat("a", 300) + "\xff"},
	{"../" + strings.Repeat("a", 300), "../" + strings.Repeat("a", 255)},
	// Cut where no character is parted from what it is drawn with: not
	// between a letter and its accent (a Mac's decomposed name, cut
	// before composing), not within a family's ZWJ sequence (which left
	// a ZWJ before ".txt"), a thumb and its skin tone, or a flag's two
	// regional indicators.
	{strings.Repeat("e\u0301", 100) + ".pdf", strings.Repeat("e\u0301", 83) + ".pdf"},
	{strings.Repeat("👨\u200d👩\u200d👧", 20) + ".txt", strings.Repeat("👨\u200d👩\u200d👧", 13) + ".txt"},
	{"abcd" + strings.Repeat("👍🏽", 40) + ".txt", "abcd" + strings.Repeat("👍🏽", 30) + ".txt"},
	{"abcd" + strings.Repeat("🇫🇷", 40) + ".txt", "abcd" + strings.Repeat("🇫🇷", 30) + ".txt"},
	{"a" + strings.Repeat("\u0301", 300) + ".txt", ("a" + strings.Repeat("\u0301", 300))[:251] + ".txt"}, // no whole cluster: cut at a character
}

// visibleCases are peers' names holding characters that show nothing
// and what they are saved under (LocalName): "report\u200b.pdf" beside a
// "report.pdf" looked the same in every file manager.
var visibleCases = []struct{ in, want string }{
	{"report\u200b.pdf", "report.pdf"},
	{"re\u00adport.pdf", "report.pdf"},
	{"\ufeffreport\u2060.pdf", "report.pdf"},
	{"a\u200b/b\u2061\u2062\u2063\u2064\u180e.txt", "a/b.txt"},
	{"report\u200d.pdf", "report.pdf"},                                                                   // a joiner between ASCII does nothing
	{"\u200creport.pdf", "report.pdf"},                                                                   // nor at an edge
	{"👨\u200d👩\u200d👧.jpg", "👨\u200d👩\u200d👧.jpg"},                                                       // a family stays one
	{"👨\u200d\u200b👩.jpg", "👨\u200d👩.jpg"},                                                               // its joiner's neighbours are those left
	{"\u0645\u06cc\u200c\u062e\u0648\u0627\u0645.txt", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0645.txt"}, // Persian keeps its ZWNJ
	{"\u200b", "_"},
	{"\u200b.txt", "_.txt"}, // not a hidden file
	{"\u200b.\u200b.", "_.."},
	{"d/\u200b/x", "d/_/x"},
	{".bashrc\u200b", ".bashrc"},
	{".\u200b", "_."},                      // not "."
	{"a\u200b\u202e.txt", "a\u202e.txt"},   // still refused: its bidi control
	{"a\u200b\xff.txt", "a\u200b\xff.txt"}, // not UTF-8: left to be refused
	{"a\u200b//b", "a//b"},                 // an empty element stays
	{"a\u200b/../b", "a/../b"},             // and ".."
	{"plain/ascii.txt", "plain/ascii.txt"},
}

func TestVisible(t *testing.T) {
	for _, c := range visibleCases {
		if got := visible(c.in); got != c.want {
			t.Errorf("visible(%q) = %q, want %q", c.in, got, c.want)
		}
		checkVisible(t, c.in)
	}
	if got := LocalName("report\u200b.pdf"); got != "report.pdf" {
		t.Errorf("LocalName = %q", got)
	}
}

// checkVisible: visible(rel) maps to itself, holds no invisible
// character and no joiner beside ASCII or an edge, never makes an
// element "", "." or ".." or a hidden one, and is refused whenever rel
// is refused for anything but its length, by the rules for every system.
func checkVisible(t *testing.T, rel string) {
	t.Helper()
	v := visible(rel)
	if again := visible(v); again != v {
		t.Fatalf("%q -> %q -> %q", rel, v, again)
	}
	if !utf8.ValidString(rel) {
		if v != rel {
			t.Fatalf("%q, not UTF-8, -> %q", rel, v)
		}
		return
	}
	if strings.ContainsFunc(v, invisible) {
		t.Fatalf("%q -> %q, which holds an invisible character", rel, v)
	}
	re, ve := strings.Split(rel, "/"), strings.Split(v, "/")
	if len(re) != len(ve) {
		t.Fatalf("%q -> %q: %d elements, was %d", rel, v, len(ve), len(re))
	}
	for i, e := range ve {
		if e != re[i] && (e == "" || e == "." || e == ".." || (e[0] == '.' && re[i][0] != '.')) {
			t.Fatalf("%q -> %q: element %q made %q", rel, v, re[i], e)
		}
		rs := []rune(e)
		for j, r := range rs {
			if (r == zwj || r == zwnj) && (!beyondASCII(rs[:j], -1) || !beyondASCII(rs[j+1:], 1)) {
				t.Fatalf("%q -> %q: a joiner beside ASCII or an edge", rel, v)
			}
		}
	}
	if err := validatePath(rel, false); err != nil && !errors.Is(err, ErrNameTooLong) && validatePath(v, false) == nil {
		t.Fatalf("%q (%v) -> %q, accepted", rel, err, v)
	}
}

func TestShortened(t *testing.T) {
	for _, c := range shortenedCases {
		if got := shortened(c.in); got != c.want {
			t.Errorf("shortened(%.20q… %d bytes) = %.20q… %d bytes, want %d bytes", c.in, len(c.in), got, len(got), len(c.want))
		}
		checkShortened(t, c.in)
	}
}

// checkShortened: shortened(rel) maps to itself, changes nothing of a name
// with no element over MaxElementBytes, and leaves every element within
// it unless the element is refused for something else; a name refused
// for anything but an element's length stays refused by the rules for
// every system (what only Windows refuses, or a backslash, LocalName
// changes anyway, so its cutting off is no matter).
func checkShortened(t *testing.T, rel string) {
	t.Helper()
	s := shortened(rel)
	if again := shortened(s); again != s {
		t.Fatalf("%q -> %q -> %q", rel, s, again)
	}
	for _, e := range strings.Split(s, "/") {
		if len(e) > MaxElementBytes && utf8.ValidString(e) && !strings.ContainsFunc(e, func(r rune) bool { return isControl(r) || isBidi(r) }) {
			t.Fatalf("%q -> %q: an element of %d bytes", rel, s, len(e))
		}
	}
	u := strings.ReplaceAll(rel, `\`, "_")
	err := validatePath(u, false)
	if err != nil && !errors.Is(err, ErrNameTooLong) && validatePath(shortened(u), false) == nil {
		t.Fatalf("%q (%v) -> %q, accepted", rel, err, shortened(u))
	}
	if err == nil && s != rel {
		t.Fatalf("%q, accepted, -> %q", rel, s)
	}
}

// FuzzLocalName: a local name maps to itself; off Windows only a
// backslash changes, to "_", and the name it gives is refused whenever the
// name is refused for anything but its backslashes; a name safe anywhere
// but Windows (or but for its backslashes) becomes one Windows takes
// (within the length limits).
func FuzzLocalName(f *testing.F) {
	for _, c := range localNameCases {
		f.Add(c.in)
	}
	for _, c := range composedCases {
		f.Add(c.in)
	}
	for _, c := range shortenedCases {
		f.Add(c.in)
	}
	for _, c := range visibleCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		checkComposed(t, rel)
		checkVisible(t, rel)
		checkShortened(t, rel)
		if l := LocalName(rel); LocalName(l) != l {
			t.Fatalf("%q -> %q -> %q", rel, l, LocalName(l))
		}
		if c := composed(rel); c != rel {
			checkComposed(t, c)
			// A composed name keeps its form under Windows's rules and
			// the backslash's.
			for _, windows := range []bool{false, true} {
				if l := localName(c, windows); composed(l) != l {
					t.Fatalf("%q -> %q -> %q (Windows %v), which is not composed", rel, c, l, windows)
				}
			}
		}
		u := localName(rel, false)
		if len(u) != len(rel) || strings.Contains(u, `\`) || localName(u, false) != u {
			t.Fatalf("%q -> %q off Windows", rel, u)
		}
		for i := range len(rel) {
			if u[i] != rel[i] && (rel[i] != '\\' || u[i] != '_') {
				t.Fatalf("%q -> %q off Windows: byte %d changed, not a backslash", rel, u, i)
			}
		}
		// Anything but a backslash refuses the name as before: a
		// backslash read as any other letter gives the same verdict.
		if (validatePath(u, false) == nil) != (validatePath(strings.ReplaceAll(rel, `\`, "x"), false) == nil) {
			t.Fatalf("%q -> %q off Windows: %v, but as a letter %v", rel, u, validatePath(u, false), validatePath(strings.ReplaceAll(rel, `\`, "x"), false))
		}
		l := localName(rel, true)
		if again := localName(l, true); again != l {
			t.Fatalf("%q -> %q -> %q", rel, l, again)
		}
		if strings.Contains(l, `\`) {
			t.Fatalf("%q -> %q on Windows, a backslash kept", rel, l)
		}
		if validatePath(u, false) == nil {
			if err := validatePath(l, true); err != nil && !errors.Is(err, ErrNameTooLong) {
				t.Fatalf("%q -> %q, which Windows refuses: %v", rel, l, err)
			}
		}
	})
}

// checkComposed: composed(rel) maps to itself, is what the norm package
// makes of a valid rel and rel itself otherwise, and is refused whenever
// rel is refused for anything but its length (composing may shorten or
// lengthen an element) by the rules for every system. (Windows's own
// may take the composed name: "<" and a combining long solidus overlay
// compose to "≮".)
func checkComposed(t *testing.T, rel string) {
	t.Helper()
	c := composed(rel)
	if again := composed(c); again != c {
		t.Fatalf("%q -> %q -> %q", rel, c, again)
	}
	switch {
	case !utf8.ValidString(rel) && c != rel:
		t.Fatalf("%q, not UTF-8, -> %q", rel, c)
	case utf8.ValidString(rel) && c != norm.NFC.String(rel):
		t.Fatalf("%q -> %q, want %q", rel, c, norm.NFC.String(rel))
	}
	if err := validatePath(rel, false); err != nil && !errors.Is(err, ErrNameTooLong) && validatePath(c, false) == nil {
		t.Fatalf("%q (%v) -> %q, accepted", rel, err, c)
	}
}

// TestSameNameKey: the spellings a file system that ignores case or
// Unicode's forms, or Windows's rules, saves as one name share a key;
// different names do not.
func TestSameNameKey(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"report.pdf", "REPORT.pdf", true},
		{"dir/Report.PDF", "DIR/report.pdf", true},
		{"cafe\u0301.txt", "CAF\u00c9.TXT", true},
		{"report\u200b.pdf", "REPORT.pdf", true},
		{"a:b.txt", "a_b.txt", true},
		{"CON", "con_", true},
		{`a\b`, "a_b", true},
		{"report.pdf", "report.pdf.txt", false},
		{"a/b", "a_b", false},
		{"cafe.txt", "caf\u00e9.txt", false},
	} {
		if got := SameNameKey(c.a) == SameNameKey(c.b); got != c.same {
			t.Errorf("%q and %q: same key %v (%q, %q), want %v", c.a, c.b, got, SameNameKey(c.a), SameNameKey(c.b), c.same)
		}
	}
}
