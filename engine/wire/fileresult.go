package wire

import (
	"bytes"
	"fmt"
)

// A receiver sends the sender one FileResult per file: 10^5 for a tree of
// 10^5 files. encoding/json's reflection took most of the sender's CPU for
// reading them (0.2-0.3 CPU-s of a transfer of workload D, more than the
// walk of its folders: docs/benchmarks/trees.md, "The sender's reading of
// the receiver's results"), so the message has its own decoder, as
// OfferFiles has (offerfiles.go): it accepts exactly what encoding/json and
// validate accept, but for a key given twice in one object, which is
// ErrProtocol. FuzzFileResultDecoder checks it against encoding/json.

// decodeFileResult decodes body (valid UTF-8: ReadMessage checks it) into
// m, as json.Unmarshal would, m zero on entry.
func decodeFileResult(body []byte, m *FileResult) error {
	d := jsonDec{b: body}
	return d.top(func() error { return d.fileResult(m) })
}

func (d *jsonDec) fileResult(m *FileResult) error {
	if err := d.open('{', "the file-result message"); err != nil {
		return err
	}
	var seen [5]bool
	for first := true; ; first = false {
		key, more, err := d.nextKey(first)
		if err != nil || !more {
			return err
		}
		k := field(key, "file", "ok", "saved_as", "code", "reason")
		if k < 0 {
			if err := d.skip(); err != nil {
				return err
			}
			continue
		}
		if seen[k] {
			return fmt.Errorf("%w: %q", errDuplicateKey, key)
		}
		seen[k] = true
		// A null leaves the field as it was (zero), as with encoding/json.
		var null bool
		switch k {
		case 0:
			var n uint32
			if n, null, err = d.uint32("file"); err == nil && !null {
				m.File = n
			}
		case 1:
			var ok bool
			if ok, null, err = d.bool("ok"); err == nil && !null {
				m.OK = ok
			}
		case 2:
			m.SavedAs, _, err = d.string("saved_as")
		case 3:
			var code string
			code, _, err = d.string("code")
			m.Code = Code(code)
		default:
			m.Reason, _, err = d.string("reason")
		}
		if err != nil {
			return err
		}
	}
}

// bool reads a boolean field; null is true for a null.
func (d *jsonDec) bool(name string) (v, null bool, err error) {
	switch {
	case d.null():
		return false, true, nil
	case bytes.HasPrefix(d.b[d.i:], []byte("true")):
		d.i += 4
		return true, false, nil
	case bytes.HasPrefix(d.b[d.i:], []byte("false")):
		d.i += 5
		return false, false, nil
	}
	return false, false, d.typeErr(name)
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
