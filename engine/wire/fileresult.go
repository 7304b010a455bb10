package wire

import "bytes"

// A receiver sends the sender one FileResult per file: 10^5 for a tree of
// 10^5 files. encoding/json's reflection was the largest piece of the
// sender's own Go code on workload D (5 % of its CPU, about 0.2 CPU-s:
// docs/benchmarks/trees.md, "The sender's reading of the receiver's
// results"), so the message has its own decoder, as
// OfferFiles has (offerfiles.go): it accepts exactly what encoding/json and
// validate accept, but for a key given twice in one object, which is
// ErrProtocol. FuzzFileResultDecoder checks it against encoding/json.

// decodeFileResult decodes body (valid UTF-8: ReadMessage checks it) into
// m, as json.Unmarshal would, m zero on entry.
func decodeFileResult(body []byte, m *FileResult) error {
	d := jsonDec{b: body}
	return d.top(func() error { return d.fileResult(m) })
}

var fileResultNames = []string{"file", "ok", "saved_as", "code", "reason"}

// fileResult reads m, zero on entry: a null leaves a field as it was, as
// with encoding/json.
func (d *jsonDec) fileResult(m *FileResult) error {
	return d.object("the file-result message", fileResultNames, func(k int) error {
		var null bool
		var err error
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
		return err
	})
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
