package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The manifest's parts (OfferFiles) are most of what a large offer puts on
// the wire: a tree of 10^5 files is 10^5 entries, and encoding/json's
// reflection was most of the CPU both sides spent between the offer and the
// prompt (docs/benchmarks/trees.md, "The start on D"). So this one message
// has its own encoder and decoder. The format is unchanged (what
// encoding/json writes and reads), and so is what a peer may send: the
// decoder accepts exactly what encoding/json and validate accept, with one
// exception, stricter: a key given twice in one object (two "files", or
// "path" and "PATH") is ErrProtocol, where encoding/json would keep the
// last or merge the two arrays. FuzzOfferFilesDecoder checks it against
// encoding/json.

// appendOfferFiles appends m as encoding/json would write it, byte for byte.
func appendOfferFiles(b []byte, m *OfferFiles) []byte {
	b = append(b, `{"start":`...)
	b = strconv.AppendInt(b, int64(m.Start), 10)
	b = append(b, `,"files":`...)
	if m.Files == nil {
		b = append(b, "null"...)
		return append(b, '}')
	}
	b = append(b, '[')
	for i := range m.Files {
		f := &m.Files[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"path":`...)
		b = appendJSONString(b, f.Path)
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, f.Size, 10)
		if f.Mode != 0 {
			b = append(b, `,"mode":`...)
			b = strconv.AppendUint(b, uint64(f.Mode), 10)
		}
		if f.MTime != 0 {
			b = append(b, `,"mtime":`...)
			b = strconv.AppendInt(b, f.MTime, 10)
		}
		if f.Holes != 0 {
			b = append(b, `,"holes":`...)
			b = strconv.AppendInt(b, f.Holes, 10)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendFileResult appends m as encoding/json would write it, byte for byte:
// a receiver sends one per file, 10^5 for a tree of 10^5 small files, and
// encoding/json's reflection cost each more than the rest of its frame.
func appendFileResult(b []byte, m *FileResult) []byte {
	b = append(b, `{"file":`...)
	b = strconv.AppendUint(b, uint64(m.File), 10)
	b = append(b, `,"ok":`...)
	b = strconv.AppendBool(b, m.OK)
	if m.SavedAs != "" {
		b = append(b, `,"saved_as":`...)
		b = appendJSONString(b, m.SavedAs)
	}
	if m.Code != "" {
		b = append(b, `,"code":`...)
		b = appendJSONString(b, string(m.Code))
	}
	if m.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, m.Reason)
	}
	return append(b, '}')
}

// fileResultLen is about the length of a FileResult's frame besides its
// strings (which take their length plus quotes, more if escaped).
const fileResultLen = 64

// offerFilesLen is about the length of m's frame, so that it is written
// into one allocation: an entry's fields and punctuation take at most 112
// bytes beside its name.
func offerFilesLen(m *OfferFiles) int {
	n := 5 + 40
	for i := range m.Files {
		n += 112 + len(m.Files[i].Path)
	}
	return n
}

// appendJSONString appends s quoted as encoding/json quotes it. A name of
// printable ASCII other than what it escapes (`"`, `\`, `<`, `>`, `&`) is
// copied; any other goes through encoding/json, so the rules stay its own.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainJSON[s[i]] {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainJSON marks the bytes encoding/json copies into a string as they are.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// errDuplicateKey: an object names the same field twice.
var errDuplicateKey = errors.New("a key given twice")

// maxJSONDepth is encoding/json's bound on nesting ({ and [ open at once).
const maxJSONDepth = 10000

// jsonDec reads one OfferFiles or FileResult body. Its errors are wrapped into
// ErrProtocol by ReadMessage.
type jsonDec struct {
	b       []byte
	i       int
	depth   int
	scratch []byte // unescaped strings
}

// decodeOfferFiles decodes body (valid UTF-8: ReadMessage checks it) into m,
// as json.Unmarshal would, m zero on entry.
func decodeOfferFiles(body []byte, m *OfferFiles) error {
	d := jsonDec{b: body}
	return d.top(func() error { return d.offerFiles(m) })
}

// top reads the body as one value, which decode reads unless it is null
// (encoding/json then leaves the message as it was: zero), and nothing
// after it.
func (d *jsonDec) top(decode func() error) error {
	d.ws()
	if !d.null() {
		if err := decode(); err != nil {
			return err
		}
	}
	d.ws()
	if d.i != len(d.b) {
		return d.syntax("after the top-level value")
	}
	return nil
}

func (d *jsonDec) syntax(where string) error {
	if d.i >= len(d.b) {
		return fmt.Errorf("unexpected end of JSON input %s", where)
	}
	return fmt.Errorf("invalid character %q at offset %d %s", d.b[d.i], d.i, where)
}

func (d *jsonDec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *jsonDec) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// null consumes a null literal if one is next.
func (d *jsonDec) null() bool {
	if bytes.HasPrefix(d.b[d.i:], []byte("null")) {
		d.i += 4
		return true
	}
	return false
}

// open consumes c ('{' or '['), counting the depth as encoding/json does.
func (d *jsonDec) open(c byte, what string) error {
	if d.peek() != c {
		if d.i < len(d.b) && isValueStart(d.b[d.i]) {
			return fmt.Errorf("%s is not an %s", what, map[byte]string{'{': "object", '[': "array"}[c])
		}
		return d.syntax("looking for " + what)
	}
	d.i++
	if d.depth++; d.depth > maxJSONDepth {
		return fmt.Errorf("exceeded max depth")
	}
	return nil
}

func isValueStart(c byte) bool {
	switch c {
	case '{', '[', '"', 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// nextKey reads to the next key of the object whose '{' was read (first:
// right after it; else after a member's value) and past its ':'. more is
// false at the object's end.
func (d *jsonDec) nextKey(first bool) (key []byte, more bool, err error) {
	d.ws()
	switch c := d.peek(); {
	case c == '}':
		d.i++
		d.depth--
		return nil, false, nil
	case c == ',' && !first:
		d.i++
		d.ws()
	case !first:
		return nil, false, d.syntax("after an object value")
	}
	if d.peek() != '"' {
		return nil, false, d.syntax("looking for an object key")
	}
	if key, err = d.str(); err != nil {
		return nil, false, err
	}
	d.ws()
	if d.peek() != ':' {
		return nil, false, d.syntax("after an object key")
	}
	d.i++
	d.ws()
	return key, true, nil
}

// nextElem reads to the next element of the array whose '[' was read
// (first: right after it; else after an element), past a ',' between
// elements. more is false at the array's end; a ']' right after a ',' is
// left for the element's reader to refuse, as encoding/json refuses it.
func (d *jsonDec) nextElem(first bool) (more bool, err error) {
	d.ws()
	switch c := d.peek(); {
	case c == ']':
		d.i++
		d.depth--
		return false, nil
	case c == ',' && !first:
		d.i++
		d.ws()
	case !first:
		return false, d.syntax("after an array element")
	}
	return true, nil
}

// field says which of names key selects, as encoding/json matches a key
// to a field (exactly, else folding case as bytes.EqualFold does; the
// names here differ under folding), or -1.
func field(key []byte, names ...string) int {
	for i, n := range names {
		if len(key) == len(n) && string(key) == n {
			return i
		}
	}
	for i, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return i
		}
	}
	return -1
}

// object reads an object whose '{' is next (what names it in errors). For
// each key that names one of names (as field matches them) it calls member
// with its index, to read the value; other keys' values are skipped. A name
// given twice is errDuplicateKey.
func (d *jsonDec) object(what string, names []string, member func(k int) error) error {
	if err := d.open('{', what); err != nil {
		return err
	}
	var seen uint64 // bit k: names[k] was read
	for first := true; ; first = false {
		key, more, err := d.nextKey(first)
		if err != nil || !more {
			return err
		}
		k := field(key, names...)
		if k < 0 {
			if err := d.skip(); err != nil {
				return err
			}
			continue
		}
		if seen&(1<<k) != 0 {
			return fmt.Errorf("%w: %q", errDuplicateKey, key)
		}
		seen |= 1 << k
		if err := member(k); err != nil {
			return err
		}
	}
}

// The fields of the objects read, as named in JSON.
var (
	offerFilesNames = []string{"start", "files"}
	entryNames      = []string{"path", "size", "mode", "mtime", "holes"}
)

func (d *jsonDec) offerFiles(m *OfferFiles) error {
	return d.object("the offer-files message", offerFilesNames, func(k int) error {
		if k == 1 {
			return d.files(m)
		}
		n, null, err := d.int("start")
		if err == nil && !null {
			m.Start = int(n)
		}
		return err
	})
}

func (d *jsonDec) files(m *OfferFiles) error {
	if d.null() {
		m.Files = nil
		return nil
	}
	if err := d.open('[', "files"); err != nil {
		return err
	}
	// Room for the entries the rest of the body can hold at 64 bytes each
	// (D's take about 100): rarely grown, at most MaxFilesPerPart.
	m.Files = make([]FileEntry, 0, min(MaxFilesPerPart, (len(d.b)-d.i)/64))
	for first := true; ; first = false {
		more, err := d.nextElem(first)
		if err != nil || !more {
			return err
		}
		if len(m.Files) == MaxFilesPerPart {
			return fmt.Errorf("more than %d files", MaxFilesPerPart)
		}
		m.Files = append(m.Files, FileEntry{})
		if !d.null() {
			if err := d.entry(&m.Files[len(m.Files)-1]); err != nil {
				return err
			}
		}
	}
}

// entry reads a file entry into f, zero on entry: a null leaves a field as
// it was, as with encoding/json.
func (d *jsonDec) entry(f *FileEntry) error {
	return d.object("a file entry", entryNames, func(k int) error {
		var n int64
		var null bool
		var err error
		switch k {
		case 0:
			f.Path, _, err = d.string("path")
		case 1:
			if n, null, err = d.int("size"); err == nil && !null {
				f.Size = n
			}
		case 2:
			var u uint32
			if u, null, err = d.uint32("mode"); err == nil && !null {
				f.Mode = u
			}
		case 3:
			if n, null, err = d.int("mtime"); err == nil && !null {
				f.MTime = n
			}
		default:
			if n, null, err = d.int("holes"); err == nil && !null {
				f.Holes = n
			}
		}
		return err
	})
}

// typeErr: a value of the wrong kind for field (after checking the value
// is at least the start of one, so a syntax error reads as one).
func (d *jsonDec) typeErr(field string) error {
	if d.i < len(d.b) && isValueStart(d.b[d.i]) {
		return fmt.Errorf("%s: a value of the wrong type", field)
	}
	return d.syntax("looking for a value")
}

// number consumes a JSON number and returns its text.
func (d *jsonDec) number() ([]byte, error) {
	start := d.i
	if d.peek() == '-' {
		d.i++
	}
	switch c := d.peek(); {
	case c == '0':
		d.i++
	case '1' <= c && c <= '9':
		for d.i++; isDigit(d.peek()); d.i++ {
		}
	default:
		return nil, d.syntax("in a number")
	}
	if d.peek() == '.' {
		d.i++
		if !isDigit(d.peek()) {
			return nil, d.syntax("after a decimal point")
		}
		for isDigit(d.peek()) {
			d.i++
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.i++
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if !isDigit(d.peek()) {
			return nil, d.syntax("in an exponent")
		}
		for isDigit(d.peek()) {
			d.i++
		}
	}
	return d.b[start:d.i], nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// int reads an integer field; null is true for a null (the field keeps
// its value, as with encoding/json). A fraction, an exponent or a value out
// of range is an error, as strconv.ParseInt makes it for encoding/json.
func (d *jsonDec) int(name string) (n int64, null bool, err error) {
	if d.null() {
		return 0, true, nil
	}
	if c := d.peek(); c != '-' && !isDigit(c) {
		return 0, false, d.typeErr(name)
	}
	tok, err := d.number()
	if err != nil {
		return 0, false, err
	}
	neg := tok[0] == '-'
	digits := tok
	if neg {
		digits = tok[1:]
	}
	var u uint64
	for _, c := range digits {
		if !isDigit(c) {
			return 0, false, fmt.Errorf("%s: %s is not an integer", name, tok)
		}
		if u > (1<<63)/10 {
			return 0, false, fmt.Errorf("%s: %s is out of range", name, tok)
		}
		if u = u*10 + uint64(c-'0'); u > 1<<63 {
			return 0, false, fmt.Errorf("%s: %s is out of range", name, tok)
		}
	}
	if !neg && u == 1<<63 {
		return 0, false, fmt.Errorf("%s: %s is out of range", name, tok)
	}
	if n = int64(u); neg {
		n = -n // -(1<<63) wraps to itself: right
	}
	return n, false, nil
}

// uint32 reads an unsigned 32-bit field, as int does ("-0" is refused, as
// strconv.ParseUint refuses it).
func (d *jsonDec) uint32(name string) (uint32, bool, error) {
	if d.peek() == '-' {
		if _, err := d.number(); err != nil {
			return 0, false, err
		}
		return 0, false, fmt.Errorf("%s: a negative value", name)
	}
	n, null, err := d.int(name)
	if err != nil || null {
		return 0, null, err
	}
	if n > 1<<32-1 {
		return 0, false, fmt.Errorf("%s: %d is out of range", name, n)
	}
	return uint32(n), false, nil
}

// string reads a string field; null is true for a null (and the string
// empty).
func (d *jsonDec) string(name string) (string, bool, error) {
	if d.null() {
		return "", true, nil
	}
	if d.peek() != '"' {
		return "", false, d.typeErr(name)
	}
	s, err := d.str()
	if err != nil {
		return "", false, err
	}
	return string(s), false, nil
}

// str consumes a string and returns its value, unescaped as encoding/json
// unescapes it (a lone surrogate becomes U+FFFD). The bytes are valid until
// the next call.
func (d *jsonDec) str() ([]byte, error) {
	d.i++ // the opening quote
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], nil
		case c == '\\':
			d.scratch = append(d.scratch[:0], d.b[start:d.i]...)
			return d.escaped()
		case c < 0x20:
			return nil, d.syntax("in a string literal")
		}
		d.i++
	}
	return nil, d.syntax("in a string literal")
}

// escaped continues str from its first backslash.
func (d *jsonDec) escaped() ([]byte, error) {
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.scratch, nil
		case c < 0x20:
			return nil, d.syntax("in a string literal")
		case c != '\\':
			d.scratch = append(d.scratch, c)
			d.i++
			continue
		}
		d.i++
		switch e := d.peek(); e {
		case '"', '\\', '/':
			d.scratch = append(d.scratch, e)
		case 'b':
			d.scratch = append(d.scratch, '\b')
		case 'f':
			d.scratch = append(d.scratch, '\f')
		case 'n':
			d.scratch = append(d.scratch, '\n')
		case 'r':
			d.scratch = append(d.scratch, '\r')
		case 't':
			d.scratch = append(d.scratch, '\t')
		case 'u':
			r := d.hex4(d.i + 1)
			if r < 0 {
				return nil, d.syntax("in a \\u escape")
			}
			d.i += 4
			if utf16.IsSurrogate(r) {
				// A pair when a second escape completes it; else U+FFFD,
				// and what follows is read as itself.
				if d.i+2 < len(d.b) && d.b[d.i+1] == '\\' && d.b[d.i+2] == 'u' {
					if r2 := d.hex4(d.i + 3); r2 >= 0 {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							d.scratch = utf8.AppendRune(d.scratch, dec)
							d.i += 7
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			d.scratch = utf8.AppendRune(d.scratch, r)
		default:
			return nil, d.syntax("in a string escape")
		}
		d.i++
	}
	return nil, d.syntax("in a string literal")
}

// hex4 is the value of the four hex digits at b[i:], or -1.
func (d *jsonDec) hex4(i int) rune {
	if i+4 > len(d.b) {
		return -1
	}
	var r rune
	for _, c := range d.b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// skip consumes any one value (a field this build does not know: a newer
// peer's, kept compatible as encoding/json keeps it).
func (d *jsonDec) skip() error {
	switch c := d.peek(); {
	case c == '"':
		_, err := d.str()
		return err
	case c == '-' || isDigit(c):
		_, err := d.number()
		return err
	case c == '{':
		if err := d.open('{', "a value"); err != nil {
			return err
		}
		for first := true; ; first = false {
			_, more, err := d.nextKey(first)
			if err != nil || !more {
				return err
			}
			if err := d.skip(); err != nil {
				return err
			}
		}
	case c == '[':
		if err := d.open('[', "a value"); err != nil {
			return err
		}
		for first := true; ; first = false {
			more, err := d.nextElem(first)
			if err != nil || !more {
				return err
			}
			if err := d.skip(); err != nil {
				return err
			}
		}
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(d.b[d.i:], []byte(lit)) {
			d.i += len(lit)
			return nil
		}
	}
	return d.syntax("looking for a value")
}
