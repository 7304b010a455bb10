// Package store is the receiving side's file-system safety layer. Every byte
// a peer sends is written through an os.Root opened on the destination
// folder, under a name that ValidatePath accepted, into a ".partial" file
// that only Finalize turns into a final name, and Finalize never overwrites
// anything: a clash becomes "name (1).ext".
//
// The package is plain Go: it imports neither Fyne nor the rest of the engine.
package store

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// PartialSuffix is appended to a file's name while it is being received.
// Peer names ending in it (in any letter case) are refused, so a peer can
// never name a file after another file's partial.
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
	// ErrReservedName means a name is a Windows device name (CON, COM1, ...)
	// or ends in PartialSuffix.
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
//   - elements ending in PartialSuffix (in any case);
//   - elements over MaxElementBytes, paths over MaxPathBytes or MaxDepth.
func ValidatePath(rel string) error {
	bad := func(err error, format string, args ...any) error {
		return &NameError{Name: rel, Reason: fmt.Sprintf(format, args...), Err: err}
	}
	switch {
	case rel == "":
		return bad(ErrBadName, "empty")
	case len(rel) > MaxPathBytes:
		return bad(ErrNameTooLong, "path is %d bytes, limit %d", len(rel), MaxPathBytes)
	case !utf8.ValidString(rel):
		return bad(ErrBadName, "invalid UTF-8")
	case rel[0] == '/':
		// Also catches UNC-style "//server/share".
		return bad(ErrBadName, "absolute path")
	}
	// One pass over the runes: these are wrong wherever they appear.
	for _, r := range rel {
		switch {
		case r == '\\':
			return bad(ErrBadName, "backslash not allowed")
		case r == ':':
			// Drive letters ("C:x") and NTFS alternate data streams ("a:b").
			return bad(ErrBadName, "colon not allowed")
		case strings.ContainsRune(`<>"|?*`, r):
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
		case strings.HasSuffix(e, ".") || strings.HasSuffix(e, " "):
			return bad(ErrBadName, "element %q ends in a dot or space", e)
		case isWindowsDevice(e):
			return bad(ErrReservedName, "element %q is a Windows device name", e)
		case hasPartialSuffix(e):
			return bad(ErrReservedName, "element %q ends in %s", e, PartialSuffix)
		}
	}
	return nil
}

// ValidateReceived is ValidatePath for a file to be received here: its
// name must also leave room for PartialSuffix, which it carries while it
// arrives (a name of 248-255 bytes is valid but cannot be received).
func ValidateReceived(rel string) error {
	_, _, err := split(rel)
	return err
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
	if i := strings.IndexByte(e, '.'); i >= 0 {
		e = e[:i]
	}
	e = strings.TrimRight(e, " ")
	// This runs for every element of every received file's path: rule most
	// out by length (names are 3-7 bytes; upper-casing shrinks a dotless ı
	// by a byte) and upper-case only what is not ASCII.
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

func hasPartialSuffix(e string) bool {
	return len(e) >= len(PartialSuffix) &&
		strings.EqualFold(e[len(e)-len(PartialSuffix):], PartialSuffix)
}
