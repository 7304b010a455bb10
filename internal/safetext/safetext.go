// Package safetext shows text that came from a peer (file and device names)
// so that it cannot disguise itself: what the user reads is exactly what was
// sent. The GUI and the CLI both use it, so a name looks the same in both.
package safetext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Name returns a file or device name as it is safe to show: names made only
// of printable characters, with no space at either end, come back unchanged;
// any other name (control characters, bidirectional overrides that could
// disguise an extension, zero-width characters or a BOM, odd spaces, leading
// or trailing spaces, invalid UTF-8) is shown quoted with the invisible
// characters escaped, the way strconv.Quote does.
func Name(s string) string {
	if !NeedsEscape(s) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case Suspicious(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// NeedsEscape reports whether Name would quote s: it has an invisible or
// display-changing character, a space at either end of s or of one of its
// slash-separated elements, or is not valid UTF-8.
func NeedsEscape(s string) bool {
	// Printable ASCII, the common case, is decided in one pass without
	// Unicode's tables (a CLI shows a name per file: 10^5 for a tree).
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			return needsEscape(s)
		case c < ' ' || c == 0x7f: // what Suspicious says of ASCII
			return true
		case c == ' ' && (i == 0 || i == len(s)-1 || s[i-1] == '/' || s[i+1] == '/'):
			return true
		}
	}
	return false
}

// needsEscape is NeedsEscape for any text.
func needsEscape(s string) bool {
	if needsEscapeRunes(s) {
		return true
	}
	for _, e := range strings.Split(s, "/") {
		if strings.HasPrefix(e, " ") || strings.HasSuffix(e, " ") {
			return true
		}
	}
	return false
}

// Suspicious reports runes that are invisible or change how the text around
// them is displayed.
func Suspicious(r rune) bool {
	switch {
	case r == ' ':
		return false
	case unicode.IsControl(r):
		return true
	case unicode.Is(unicode.Bidi_Control, r):
		return true
	case r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\u2060' || r == '\ufeff':
		return true // zero-width characters and the BOM
	case unicode.IsSpace(r):
		return true // odd spaces: only the plain space is shown as is
	case !unicode.IsPrint(r):
		return true
	}
	return false
}

// Text returns a text item from a peer (a message, a link, a clipboard) as
// it is safe to show across several lines: line breaks (\n, and \r\n as
// one) and tabs stay; every other invisible or display-changing character,
// and invalid UTF-8, is shown escaped in place (\u202e, \r, \xff), so
// nothing in it can reorder or hide what the user reads. Plain text comes
// back unchanged. It does not quote: a text is not one name.
func Text(s string) string {
	if !textNeedsEscape(s) {
		return s
	}
	return escapeInPlace(s, true)
}

// Line returns a one-line message that may carry words from a peer (an
// error naming its device, a reason it gave) as it is safe to show on one
// line: every invisible or display-changing character, line breaks and
// tabs included, and invalid UTF-8, is shown escaped in place (\x1b, \n,
// \u202e), so a peer's words can neither colour nor move the terminal's
// cursor, nor seem to end the message and start another. Plain text comes
// back unchanged; it does not quote.
func Line(s string) string {
	if !lineNeedsEscape(s) {
		return s
	}
	return escapeInPlace(s, false)
}

// Message is a message on one line as it is safe to show: the lines of
// several errors joined in it apart by "; ", the rest escaped as Line does.
func Message(s string) string { return Line(strings.ReplaceAll(s, "\n", "; ")) }

func lineNeedsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf {
			return needsEscapeRunes(s)
		} else if c < ' ' || c == 0x7f {
			return true
		}
	}
	return false
}

// needsEscapeRunes reports whether s is not valid UTF-8 or has a
// suspicious rune.
func needsEscapeRunes(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if Suspicious(r) {
			return true
		}
	}
	return false
}

// escapeInPlace escapes s's suspicious runes and invalid bytes where they
// stand; lines keeps line breaks (\r\n as \n) and tabs.
func escapeInPlace(s string, lines bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case lines && r == '\r' && i+1 < len(s) && s[i+1] == '\n':
			// \r\n reads as the line break it is.
		case lines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case Suspicious(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func textNeedsEscape(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && Suspicious(r) {
			return true
		}
	}
	return false
}

// Elide returns a path shown (Name) in at most n bytes: s itself when it
// fits, else its start and its end with "…" between, each cut at a slash
// where one is near and never inside a character; the end, which names
// the file, keeps two thirds. A refusal that names a path of 4 KB keeps
// room for why (errcode.MaxReason).
func Elide(s string, n int) string {
	const ellipsis = "…"
	if len(s) <= n {
		return s
	}
	avail := n - len(ellipsis)
	if avail < 2 {
		if avail < 0 {
			return ""
		}
		return ellipsis
	}
	head := avail / 3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	if i := strings.LastIndexByte(s[:head], '/'); i >= head/2 {
		head = i + 1
	}
	tail := len(s) - (avail - head)
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	if i := strings.IndexByte(s[tail:], '/'); i >= 0 && i <= (len(s)-tail)/2 {
		tail += i
	}
	return s[:head] + ellipsis + s[tail:]
}

// OnlyComposed reports whether savedAs is name with its accents composed
// (Unicode NFC) and nothing else: what a receiver off macOS does to a Mac's
// decomposed names (store.LocalName). The two look the same, so "saved as"
// the one would read as a change of name that shows none.
func OnlyComposed(name, savedAs string) bool {
	return savedAs != name && savedAs == norm.NFC.String(name)
}
