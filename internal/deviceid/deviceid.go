// Package deviceid writes the short form of a device ID the one way every
// screen and line of Ferry shows it ("PT27-TYCL": the app, ferry-cli, the
// engine's warnings and errors), and reads a typed ID in any of its forms.
// It is a leaf: the ui may use it, which imports nothing of the engine.
package deviceid

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Len is the length of a Ferry device ID as stored: the base32 (no
// padding) of a SHA-256.
const Len = 52

// ErrNotAnID is returned by Parse for text that is not a Ferry device ID.
var ErrNotAnID = errors.New("not a device ID")

// Short is the short form of a device ID: its first eight characters in two
// groups of four, "PT27-TYCL", as the full ID is shown in groups of four.
// An ID of fewer than eight characters (not a Ferry device's) is returned
// as it is.
func Short(id string) string {
	if len(id) < 8 {
		return id
	}
	return id[:4] + "-" + id[4:8]
}

// Compact is a typed device ID, or a prefix or short form of one, in the
// stored form: upper case, without the dashes and spaces that group it
// ("pt27-tycl" and "PT27 TYCL" are "PT27TYCL").
func Compact(s string) string {
	return strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(s)))
}

// Parse reads a Ferry device ID typed, pasted or advertised in its full or
// human form (dashes, spaces and case are ignored) and returns it in the
// stored form. Every string it takes is one the engine's
// peer.ParseFerryKey takes as the same device, and the other way round (a
// test holds them to that: peer may import nothing of the module), so a
// device has one ID wherever it came from. It refuses:
//   - anything not ASCII, before case is folded: strings.ToUpper makes
//     "ı" (a dotless i) an I and "ſ" (a long s) an S;
//   - anything but 52 characters of base32 (A-Z, 2-7);
//   - a last character other than A or Q: it holds the key's last bit and
//     four bits no key sets, so fifteen other spellings would name each
//     device.
func Parse(s string) (string, error) {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return "", fmt.Errorf("device ID %q: not ASCII: %w", s, ErrNotAnID)
		}
	}
	id := Compact(s)
	if len(id) != Len {
		return "", fmt.Errorf("device ID %q: %d characters, want %d: %w", s, len(id), Len, ErrNotAnID)
	}
	for i := range len(id) {
		if c := id[i]; !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return "", fmt.Errorf("device ID %q: %q is not a letter or a digit 2-7: %w", s, id[i:i+1], ErrNotAnID)
		}
	}
	if last := id[Len-1]; last != 'A' && last != 'Q' {
		return "", fmt.Errorf("device ID %q: last character %q has bits no key sets (an ID ends in A or Q): %w", s, id[Len-1:], ErrNotAnID)
	}
	return id, nil
}
