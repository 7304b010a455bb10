package main

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/ferrydrop/ferry/engine"
)

// fileLines writes the --json line of a file event (EventFile) without
// encoding/json's reflection: a receiver of 10^5 small files prints one per
// file, and encoding the whole Event each time cost about as much CPU as
// creating the file's folder entry. The line is byte for byte what
// json.Encoder writes for the same event (TestFileLineSameAsEncoder,
// FuzzFileLine): the part that stays the same from file to file (kind,
// transfer, delivery, direction, peer, state) is encoded once by
// encoding/json and kept; the time and the file are appended here. An event
// it cannot write exactly (another field set, a time encoding/json would
// refuse) is left to the caller (ok false).
type fileLines struct {
	key  fileLineKey // what head was encoded from
	head []byte      // its encoding after the time, up to the closing brace
	buf  []byte      // the line being built
}

// fileLineKey is the part of a file event that fileLines keeps encoded.
type fileLineKey struct {
	Kind       engine.EventKind
	TransferID string
	Delivery   string
	Direction  engine.Direction
	Peer       engine.PeerInfo
	State      engine.State
}

// zeroTimeJSON is how encoding/json writes the zero time.Time.
const zeroTimeJSON = `{"time":"0001-01-01T00:00:00Z"`

// line returns ev's JSON line (with its newline), valid until the next call.
func (l *fileLines) line(ev engine.Event) (b []byte, ok bool) {
	if ev.Kind != engine.EventFile || ev.File == nil || ev.Offer != nil || ev.Progress != nil ||
		ev.Metrics != nil || ev.Result != nil || ev.Transport != nil || ev.Listener != nil ||
		ev.Pair != nil || ev.KeyChange != nil || ev.Path != nil || ev.Link != nil || !rfc3339Safe(ev.Time) {
		return nil, false
	}
	key := fileLineKey{ev.Kind, ev.TransferID, ev.Delivery, ev.Direction, ev.Peer, ev.State}
	if l.head == nil || key != l.key {
		env := engine.Event{Kind: ev.Kind, TransferID: ev.TransferID, Delivery: ev.Delivery, Direction: ev.Direction, Peer: ev.Peer, State: ev.State}
		enc, err := json.Marshal(env)
		if err != nil || len(enc) < len(zeroTimeJSON)+1 || string(enc[:len(zeroTimeJSON)]) != zeroTimeJSON {
			return nil, false
		}
		l.key, l.head = key, enc[len(zeroTimeJSON):len(enc)-1]
	}
	b = append(l.buf[:0], `{"time":"`...)
	b = ev.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = append(b, l.head...)
	f := ev.File
	b = append(b, `,"file":{"path":`...)
	b = appendJSONString(b, f.Path)
	if f.SavedAs != "" {
		b = append(b, `,"saved_as":`...)
		b = appendJSONString(b, f.SavedAs)
	}
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, f.Size, 10)
	b = append(b, `,"verified":`...)
	b = strconv.AppendBool(b, f.Verified)
	if f.Root != "" {
		b = append(b, `,"root":`...)
		b = appendJSONString(b, f.Root)
	}
	if f.Err != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, f.Err)
	}
	if f.Kept {
		b = append(b, `,"kept":true`...)
	}
	b = append(b, "}}\n"...)
	l.buf = b
	return b, true
}

// rfc3339Safe reports whether encoding/json writes t as its RFC 3339 text
// with nanoseconds (it refuses years outside 0-9999 and zones of a day or
// more; zones of odd seconds are left to it too).
func rfc3339Safe(t time.Time) bool {
	_, off := t.Zone()
	y := t.Year()
	return y >= 0 && y <= 9999 && off > -24*3600 && off < 24*3600 && off%60 == 0
}

// appendJSONString appends s as encoding/json writes a string: plain when
// every byte is printable ASCII other than the quote, the backslash and the
// three it escapes for HTML; anything else through encoding/json itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s) // a string always encodes
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
