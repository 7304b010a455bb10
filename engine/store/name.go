// Package store is the receiving side's file-system safety layer. Every byte
// a peer sends is written through an os.Root opened on the destination
// folder, under a name that ValidateHere accepted, into a ".partial" file
// that only Finalize turns into a final name, and Finalize never overwrites
// anything: a clash becomes "name (1).ext".
//
// The package is plain Go: it imports neither Fyne nor the rest of the engine.
package store

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// PartialSuffix is appended to a file's name while it is being received.
// A peer's names may end in it too ("notes.partial"): partials are created
// exclusively (a name taken gets a number) and found again by name and
// Partial.Identity, so a file named like a partial is never taken for one.
const PartialSuffix = ".partial"

// Limits on peer-supplied paths.
const (
	MaxElementBytes = 255  // bytes in one path element (a folder or file name)
	MaxPathBytes    = 4096 // bytes in a whole relative path
	MaxDepth        = 64   // elements in a whole relative path
)

// Errors returned by ValidatePath, wrapped in a *NameError. Every one of them
// matches ErrBadName with errors.Is.
var (
	// ErrBadName means a peer-supplied name is not a safe relative path.
	ErrBadName = errors.New("bad name")
	// ErrNameTooLong means a name exceeds MaxElementBytes, MaxPathBytes or MaxDepth.
	ErrNameTooLong = fmt.Errorf("name too long: %w", ErrBadName)
	// ErrReservedName means a name is a Windows device name (CON, COM1, ...).
	ErrReservedName = fmt.Errorf("reserved name: %w", ErrBadName)
)

// NameError says why a peer-supplied name was refused.
type NameError struct {
	Name   string // the name as the peer sent it
	Reason string // what is wrong with it, e.g. `element ".." not allowed`
	Err    error  // ErrBadName, ErrNameTooLong or ErrReservedName
}

func (e *NameError) Error() string {
	// %q escapes control and bidi characters, so the message cannot be
	// used to spoof what a log line or dialog shows.
	return fmt.Sprintf("store: %q: %s: %v", e.Name, e.Reason, e.Err)
}

func (e *NameError) Unwrap() error { return e.Err }

// ValidatePath reports whether rel, a slash-separated relative path sent by a
// peer, is safe to create under the destination folder on every platform we
// support. It refuses (with a *NameError matching ErrBadName):
//   - empty paths, absolute paths (`/x`, `\x`), drive (`C:x`) and UNC
//     (`\\server\share`, `//server`) paths;
//   - `.`, `..` and empty elements (`a//b`, a trailing `/`);
//   - backslashes anywhere (the wire format uses `/` only);
//   - invalid UTF-8, NUL and other C0/C1 control characters, DEL, and Unicode
//     bidi controls (which can disguise "exe.txt" as "txt.exe");
//   - characters Windows does not allow in names (`<>:"|?*`), and elements
//     ending in a dot or a space (Windows silently strips them);
//   - Windows device names in any element, in any case and with any
//     extension (`CON`, `con.txt`, `COM1`, `LPT²`, `CONIN$`, ...);
//   - elements over MaxElementBytes, paths over MaxPathBytes or MaxDepth.
func ValidatePath(rel string) error { return validatePath(rel, true) }

// ValidateHere is ValidatePath for a name to be created on this system:
// on Windows the same; elsewhere the rules that only Windows needs (its
// characters `<>:"|?*`, elements ending in a dot or a space, its device
// names) do not refuse a name, which the file system stores as it is
// ("Meeting: notes.md", "what?.txt", "aux.c" from a Mac or a Linux tree).
// Everything that makes a name unsafe anywhere still refuses it.
func ValidateHere(rel string) error { return validatePath(rel, portableHere) }

// portableHere: names created on this system must also suit Windows.
const portableHere = runtime.GOOS == "windows"

// LocalName is the name a peer's path rel is saved under here. Off macOS
// it is in Unicode's composed form (NFC, composedHere): a Mac names files
// decomposed ("e" and a combining acute, NFD), which Linux and Windows
// store byte for byte, so "café.txt" from a Mac would sit beside a
// "café.txt" typed here as a second file that looks the same, and a name
// typed here would not find it; composed, the same name clashes and the
// file arrives as "café (1).txt". An element over MaxElementBytes is cut
// to fit (shortened: a Mac or Windows name of 100 Japanese characters is
// 300 bytes), its extension kept. On every
// system a backslash, which a Linux or Mac file name may hold ("a\b.txt")
// but which is a folder separator on Windows and in what the name may
// travel on to (an archive, a share), becomes "_" ("a_b.txt"): no name
// saved here holds one, so "..\x" is the one harmless name ".._x". On
// Windows, what only Windows keeps out of names is changed too, so that a
// file named on a Mac or Linux arrives instead of being refused: each of
// `<>:"|?*` becomes "_" ("Meeting: notes.md" -> "Meeting_ notes.md"), an
// element's final dots and spaces go (Windows would drop them itself; an
// element of nothing else becomes "_"), and a device name gets "_" after
// its stem ("CON" -> "CON_", "aux.c" -> "aux_.c"). For any name that needs
// none of it, it is rel itself; a name it returns maps to itself. What
// else makes a name unsafe anywhere (ValidatePath) is not changed: such a
// name is still refused.
func LocalName(rel string) string {
	if composeHere {
		rel = composed(rel)
	}
	return localName(shortened(visible(rel)), portableHere)
}

// visible is rel without the characters that show nothing and mean
// nothing in a file name, so that a peer's "report\u200b.pdf" cannot sit
// beside a "report.pdf" looking the same in every file manager: saved as
// "report.pdf", it clashes with it ("report (1).pdf") and is reported as
// "saved as". Dropped everywhere: the zero-width space (U+200B), the word
// joiner (U+2060), the zero-width no-break space or byte order mark
// (U+FEFF), the soft hyphen (U+00AD), the Mongolian vowel separator
// (U+180E) and the invisible operators (U+2061-2064). The joiners (ZWJ
// U+200D, ZWNJ U+200C) are kept where they do their work, between two
// characters beyond ASCII (a family's emoji, Persian or Indic letters:
// the nearest characters each side that are not joiners), and dropped
// elsewhere ("report\u200d.pdf"). An element left empty, "." or "..",
// or starting with a dot it did not start with (a hidden file), gets "_"
// before it ("\u200b.txt" is "_.txt"). rel itself when it holds none of
// them (every ASCII name: no allocation) or is not valid UTF-8 (which
// stays refused).
func visible(rel string) string {
	if !strings.ContainsFunc(rel, func(r rune) bool { return invisible(r) || r == zwj || r == zwnj }) || !utf8.ValidString(rel) {
		return rel
	}
	elems := strings.Split(rel, "/")
	for i, e := range elems {
		rs := []rune(e)
		kept := rs[:0]
		for _, r := range rs {
			if !invisible(r) {
				kept = append(kept, r)
			}
		}
		out := make([]rune, 0, len(kept))
		for j, r := range kept {
			if (r == zwj || r == zwnj) && !(beyondASCII(kept[:j], -1) && beyondASCII(kept[j+1:], 1)) {
				continue
			}
			out = append(out, r)
		}
		v := string(out)
		if len(out) == len(rs) {
			continue // nothing dropped (an empty element stays refused)
		}
		if v == "" || v == "." || v == ".." || (v[0] == '.' && e[0] != '.') {
			v = "_" + v
		}
		elems[i] = v
	}
	return strings.Join(elems, "/")
}

// invisible reports a character visible drops wherever it is.
func invisible(r rune) bool {
	switch r {
	case 0x200b, 0x2060, 0xfeff, 0x00ad, 0x180e, 0x2061, 0x2062, 0x2063, 0x2064:
		return true
	}
	return false
}

// beyondASCII reports whether the nearest character of rs that is not a
// joiner, the last (dir -1) or the first (dir 1), is beyond ASCII.
func beyondASCII(rs []rune, dir int) bool {
	for k := range rs {
		r := rs[k]
		if dir < 0 {
			r = rs[len(rs)-1-k]
		}
		if r != zwj && r != zwnj {
			return r >= utf8.RuneSelf
		}
	}
	return false
}

// shortened is rel with each element over MaxElementBytes cut to fit: a
// file's stem at a character boundary, its extension kept ("a very long
// title….pdf" from a Mac or Windows, which count a name's length in
// characters: 100 Japanese ones are 300 bytes, more than Linux takes),
// and so a folder's (its last dot's tail kept too). An element holding
// what refuses a name anyway (invalid UTF-8, a control or bidi
// character) is left whole, to be refused: cutting must not drop the
// fault. rel itself when nothing is too long (no allocation).
func shortened(rel string) string {
	long := false
	for start := 0; start <= len(rel); {
		end := strings.IndexByte(rel[start:], '/')
		if end < 0 {
			end = len(rel)
		} else {
			end += start
		}
		if end-start > MaxElementBytes {
			long = true
			break
		}
		start = end + 1
	}
	if !long {
		return rel
	}
	elems := strings.Split(rel, "/")
	for i, e := range elems {
		if len(e) > MaxElementBytes && utf8.ValidString(e) && !strings.ContainsFunc(e, func(r rune) bool { return isControl(r) || isBidi(r) }) {
			elems[i] = numberedWithin(e, 0, true, MaxElementBytes)
		}
	}
	return strings.Join(elems, "/")
}

// SameNameKey is the key under which peer paths that are one name where
// they are saved are equal: what LocalName makes of them on any system
// (composed, and Windows's rules), in upper case, as a file system that
// ignores case (Windows's, a Mac's, vfat, exFAT) compares them. Names of
// one key are saved numbered ("report (1).pdf"), each trying the numbers
// before it: an offer's bound on copies of one name counts them by it, so
// that "A.txt", "a.txt" and "a.TXT" count as three copies of one name.
func SameNameKey(rel string) string {
	return strings.ToUpper(localName(shortened(visible(composed(rel))), true))
}

// composeHere: names are saved composed (NFC) on this system. A Mac's own
// file systems find a name in either form (APFS) or store it decomposed
// whatever it is given (HFS+), so there a name is kept as it came.
const composeHere = runtime.GOOS != "darwin"

// composed is rel in Unicode's composed form (NFC), or rel itself when it
// is that already (every ASCII name: no allocation) or not valid UTF-8
// (which stays refused, never made valid).
func composed(rel string) string {
	for i := 0; i < len(rel); i++ {
		if rel[i] >= utf8.RuneSelf {
			// QuickSpanString (which allocates nothing, unlike
			// IsNormalString) passes a composed name whole; the rest is
			// composed, which may give it back unchanged.
			if norm.NFC.QuickSpanString(rel) == len(rel) || !utf8.ValidString(rel) {
				return rel
			}
			return norm.NFC.String(rel)
		}
	}
	return rel
}

// localName is LocalName with Windows's rules when windows is set.
func localName(rel string, windows bool) string {
	if !windows {
		if strings.IndexByte(rel, '\\') < 0 {
			return rel
		}
		return strings.ReplaceAll(rel, `\`, "_")
	}
	if validatePath(rel, true) == nil {
		return rel
	}
	elems := strings.Split(rel, "/")
	for i, e := range elems {
		e = strings.Map(func(r rune) rune {
			if r < utf8.RuneSelf && strings.IndexByte(`\<>:"|?*`, byte(r)) >= 0 {
				return '_'
			}
			return r
		}, e)
		if e != "" && e != "." && e != ".." { // those stay refused
			if e = strings.TrimRight(e, ". "); e == "" {
				e = "_"
			}
		}
		if isWindowsDevice(e) {
			stem := len(e)
			if j := strings.IndexByte(e, '.'); j >= 0 {
				stem = j
			}
			e = e[:stem] + "_" + e[stem:]
		}
		elems[i] = e
	}
	return strings.Join(elems, "/")
}

// validatePath is ValidatePath, with Windows's own rules only when
// portable is set.
func validatePath(rel string, portable bool) error {
	// This runs for every name of every offer (105,252 of them in workload
	// D), so it is one pass over the bytes, a table lookup for each ASCII
	// one, and it allocates nothing unless it refuses. Its verdicts and
	// messages, and which fault it reports first, are those of the plain
	// form kept in name_ref_test.go, which a fuzz test compares it with.
	switch {
	case rel == "":
		return badName(rel, ErrBadName, "empty")
	case len(rel) > MaxPathBytes:
		return badName(rel, ErrNameTooLong, "path is %d bytes, limit %d", len(rel), MaxPathBytes)
	case rel[0] == '/':
		// Also catches UNC-style "//server/share".
		if !utf8.ValidString(rel) {
			return errInvalidUTF8(rel)
		}
		return badName(rel, ErrBadName, "absolute path")
	}
	// The characters below are wrong wherever they appear: the first one is
	// reported, unless the path is not UTF-8 at all, which comes first. The
	// same pass checks the UTF-8 and the elements, but a bad element is
	// reported only if no character and not the depth is.
	classes := &byteClassUnix
	if portable {
		classes = &byteClass
	}
	depth, start, badStart, badEnd := 1, 0, -1, 0
	for i := 0; i < len(rel); {
		c := rel[i]
		switch classes[c] {
		case byteOK:
			i++
			continue
		case byteSlash:
			if badStart < 0 && !elementOK(rel[start:i], portable) {
				badStart, badEnd = start, i
			}
			depth++
			i++
			start = i
			continue
		case byteBad:
			if !utf8.ValidString(rel[i:]) {
				return errInvalidUTF8(rel)
			}
			return badByte(rel, c)
		}
		r, size := utf8.DecodeRuneInString(rel[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return errInvalidUTF8(rel)
		case isControl(r) || isBidi(r):
			if !utf8.ValidString(rel[i:]) {
				return errInvalidUTF8(rel)
			}
			if isControl(r) {
				return badName(rel, ErrBadName, "control character %U not allowed", r)
			}
			return badName(rel, ErrBadName, "bidi control %U not allowed", r)
		}
		i += size
	}
	if depth > MaxDepth {
		return badName(rel, ErrNameTooLong, "%d levels deep, limit %d", depth, MaxDepth)
	}
	if badStart < 0 && !elementOK(rel[start:], portable) {
		badStart, badEnd = start, len(rel)
	}
	if badStart >= 0 {
		return checkElement(rel, rel[badStart:badEnd], portable)
	}
	return nil
}

// elementOK reports whether checkElement accepts e, without building the
// error.
func elementOK(e string, portable bool) bool {
	return checkElement("", e, portable) == nil
}

// checkElement checks one element e of rel, in the order ValidatePath
// documents; Windows's own rules only when portable is set.
func checkElement(rel, e string, portable bool) error {
	switch {
	case e == "":
		return badName(rel, ErrBadName, "empty element")
	case e == "." || e == "..":
		return badName(rel, ErrBadName, "element %q not allowed", e)
	case len(e) > MaxElementBytes:
		return badName(rel, ErrNameTooLong, "element is %d bytes, limit %d", len(e), MaxElementBytes)
	case portable && (e[len(e)-1] == '.' || e[len(e)-1] == ' '):
		return badName(rel, ErrBadName, "element %q ends in a dot or space", e)
	case portable && isWindowsDevice(e):
		return badName(rel, ErrReservedName, "element %q is a Windows device name", e)
	}
	return nil
}

// ValidateReceived is ValidateHere for a file to be received here, under
// the name it is saved by (LocalName). Every name it takes can be received:
// a name of 248-255 bytes arrives in a partial whose name is shortened to
// leave room for PartialSuffix (partialName).
func ValidateReceived(rel string) error {
	return ValidateHere(LocalName(rel))
}

func errInvalidUTF8(rel string) error {
	return badName(rel, ErrBadName, "invalid UTF-8")
}

func badName(rel string, err error, format string, args ...any) error {
	return &NameError{Name: rel, Reason: fmt.Sprintf(format, args...), Err: err}
}

// badByte is the error for an ASCII byte that byteClass calls byteBad.
func badByte(rel string, c byte) error {
	switch {
	case c == '\\':
		return badName(rel, ErrBadName, "backslash not allowed")
	case c == ':':
		// Drive letters ("C:x") and NTFS alternate data streams ("a:b").
		return badName(rel, ErrBadName, "colon not allowed")
	case isControl(rune(c)):
		return badName(rel, ErrBadName, "control character %U not allowed", rune(c))
	}
	return badName(rel, ErrBadName, "character %q not allowed", rune(c))
}

// Classes of bytes for ValidatePath's pass over the characters.
const (
	byteOK    = iota // allowed anywhere
	byteSlash        // the separator
	byteBad          // an ASCII character no name may hold
	byteMulti        // the first byte of a character beyond ASCII
)

// byteClass classes every byte: the ASCII controls and DEL, the backslash,
// the colon and `<>"|?*` are byteBad. byteClassUnix is the same but for
// the colon and `<>"|?*`, which only Windows keeps out of names.
var byteClass, byteClassUnix = classes(`\:<>"|?*`), classes(`\`)

func classes(bad string) (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = byteMulti
		case c == '/':
			t[c] = byteSlash
		case c < 0x20 || c == 0x7f || strings.IndexByte(bad, byte(c)) >= 0:
			t[c] = byteBad
		}
	}
	return t
}

// isControl reports C0 controls (incl. NUL), DEL and C1 controls.
func isControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f)
}

// isBidi reports the Unicode bidi formatting characters: embeddings and
// overrides (U+202A-202E), isolates (U+2066-2069), LRM/RLM (U+200E/F) and
// the Arabic letter mark (U+061C).
func isBidi(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) ||
		r == 0x200e || r == 0x200f || r == 0x061c
}

// isWindowsDevice reports whether Windows would treat the element as a
// device. Windows looks only at the part before the first dot, ignores
// trailing spaces there ("NUL .txt" is NUL) and ignores letter case.
func isWindowsDevice(e string) bool {
	// This runs for every element of every received file's path. Every
	// device name starts with C, P, A, N or L, whose only case partners are
	// c, p, a, n and l: an element whose first letter does not upper-case
	// to one of them is none (a stem starting with a dot or a space is none
	// either). That rules most out at once.
	if e == "" {
		return false
	}
	r := rune(e[0])
	if r >= utf8.RuneSelf {
		r, _ = utf8.DecodeRuneInString(e)
	}
	switch unicode.ToUpper(r) {
	case 'C', 'P', 'A', 'N', 'L':
	default:
		return false
	}
	if i := strings.IndexByte(e, '.'); i >= 0 {
		e = e[:i]
	}
	e = strings.TrimRight(e, " ")
	// Then by length (names are 3-7 bytes; upper-casing shrinks a dotless ı
	// by a byte), and upper-case only what is not ASCII (which allocates).
	if len(e) < 3 || len(e) > 8 {
		return false
	}
	// An ASCII stem is upper-cased into a buffer and looked up: no ASCII
	// character folds to a letter beyond ASCII that a device name holds.
	var up [8]byte
	for i := 0; i < len(e); i++ {
		c := e[i]
		if c >= utf8.RuneSelf {
			return isWindowsDeviceUpper(strings.ToUpper(e))
		}
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		up[i] = c
	}
	switch s := string(up[:len(e)]); s {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	default:
		return len(s) == 4 && (s[:3] == "COM" || s[:3] == "LPT") && '0' <= s[3] && s[3] <= '9'
	}
}

// isWindowsDeviceUpper is isWindowsDevice for a stem beyond ASCII, already
// upper-cased.
func isWindowsDeviceUpper(e string) bool {
	for _, dev := range []string{"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"} {
		if strings.EqualFold(e, dev) {
			return true
		}
	}
	// COM0-9, LPT0-9 and the superscript digits ¹ ² ³, which Windows also
	// maps to COM1-3/LPT1-3.
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
