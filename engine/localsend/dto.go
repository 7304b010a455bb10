// Package localsend speaks the LocalSend protocol (v2.x, the HTTPS REST API
// and multicast discovery that the LocalSend apps use; see
// https://github.com/localsend/protocol and docs/localsend.md). It is
// independent of the engine: the server asks a Receiver (an interface this
// package defines) about each offer and writes each accepted file into the
// sink the receiver hands back; the client sends files to a LocalSend
// server; the discoverer announces this device and hears the others.
//
// Everything a peer sends is peer input: JSON bodies are read with a byte
// cap and a nesting bound (decodeJSON), uploads are bounded to the size
// their offer declared, and tokens are unguessable and bound to their
// session, file and source address.
package localsend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Protocol constants: the routes' prefix, the default port and the
// multicast groups of the LocalSend apps.
const (
	// ProtocolVersion is the version this package announces. The official
	// app 1.18 announces "2.2"; nothing documents 2.2 beyond 2.1's API,
	// which is what this package speaks.
	ProtocolVersion = "2.2"
	// DefaultPort is LocalSend's TCP (HTTPS) and UDP (multicast) port.
	DefaultPort = 53317
	// MulticastIPv4 and MulticastIPv6 are the groups the apps join.
	MulticastIPv4 = "224.0.0.167"
	MulticastIPv6 = "ff12::fd3a:e420"
	apiPrefix     = "/api/localsend/v2/"
)

// Device types a peer may announce.
const (
	TypeMobile   = "mobile"
	TypeDesktop  = "desktop"
	TypeWeb      = "web"
	TypeHeadless = "headless"
	TypeServer   = "server"
)

// ModelNotReceiving is the device model a Ferry announces while it only
// looks for devices (ferry-cli peers and send, whose LocalSend server
// answers registers and declines every offer): a LocalSend app shows it
// under the name, and Ferry lists no device that announces it, as nothing
// can be sent there. A "vm" of model "Ferry" was listed in the app beside
// the real devices for a minute after each ferry-cli send by name, and a
// drop on it was declined.
const ModelNotReceiving = "Ferry (not receiving)"

// Limits on what a peer's JSON may hold. A prepare-upload body is one JSON
// document with every file's entry (and text previews), so it has a cap of
// its own; everything else is small.
const (
	// MaxPrepareBytes caps a prepare-upload body.
	MaxPrepareBytes = 32 << 20
	// MaxSmallBytes caps announcements, registers, info and answers.
	MaxSmallBytes = 64 << 10
	// MaxDepth bounds the nesting of any JSON document a peer sends (the
	// protocol's documents nest three deep).
	MaxDepth = 8
	// MaxFiles bounds the files of one offer (the engine's own bound, for
	// Ferry offers, is the same).
	MaxFiles = 100_000
	// MaxFieldLen bounds alias, model, fingerprint, IDs and MIME types.
	MaxFieldLen = 512
	// MaxNameLen bounds one file name (a relative path).
	MaxNameLen = 4096
	// MaxPreviewLen bounds a text offer's text (the preview field).
	MaxPreviewLen = 1 << 20
)

// ErrBadInput means a peer's JSON or parameters break the protocol or the
// limits above; the server answers 400.
var ErrBadInput = errors.New("localsend: bad input")

// Info describes a device: what announcements, registers, info answers and
// an offer's info field carry. Port, Protocol and Download are always
// written (third-party receivers' schemas require them in an offer);
// Announce is set only in multicast messages.
type Info struct {
	Alias       string `json:"alias"`
	Version     string `json:"version"`
	DeviceModel string `json:"deviceModel"`
	DeviceType  string `json:"deviceType,omitempty"`
	Fingerprint string `json:"fingerprint"`
	Port        int    `json:"port"`
	Protocol    string `json:"protocol"` // "https" or "http"
	Download    bool   `json:"download"`
	Announce    *bool  `json:"announce,omitempty"`
}

// FileMeta is the optional metadata of an offered file.
type FileMeta struct {
	Modified string `json:"modified,omitempty"`
	Accessed string `json:"accessed,omitempty"`
}

// File is one file of an offer (prepare-upload) as the protocol has it.
// FileName is "<folder>/<relative/path>" for a folder's files.
type File struct {
	ID       string    `json:"id"`
	FileName string    `json:"fileName"`
	Size     int64     `json:"size"`
	FileType string    `json:"fileType"`
	SHA256   string    `json:"sha256,omitempty"`
	Preview  string    `json:"preview,omitempty"`
	Metadata *FileMeta `json:"metadata,omitempty"`

	// noSize is set when the JSON read had no size, or a null one: only
	// a text may come without it (its preview holds it), so Validate
	// refuses such a file at once rather than let it be accepted and then
	// fail, its upload never the 0 bytes it would be taken for.
	noSize bool
}

// UnmarshalJSON reads a file as File's tags say, noting a size left out.
func (f *File) UnmarshalJSON(b []byte) error {
	type plain File // File's fields without this method
	var v struct {
		plain
		Size *int64 `json:"size"` // shadows plain's: nil when left out
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = File(v.plain)
	if v.Size != nil {
		f.Size = *v.Size
	}
	f.noSize = v.Size == nil
	return nil
}

// PrepareUpload is the body of POST prepare-upload.
type PrepareUpload struct {
	Info  Info            `json:"info"`
	Files map[string]File `json:"files"`
}

// PrepareUploadAnswer is the 200 answer to prepare-upload: the session and
// a token for each accepted file.
type PrepareUploadAnswer struct {
	SessionID string            `json:"sessionId"`
	Files     map[string]string `json:"files"`
}

// message is the body of every error answer.
type message struct {
	Message string `json:"message"`
}

// decodeJSON reads one JSON document of at most limit bytes from r into v,
// refusing documents nested deeper than MaxDepth, trailing data, and
// anything encoding/json refuses. Errors wrap ErrBadInput.
func decodeJSON(r io.Reader, limit int64, v any) error {
	b, err := readBounded(r, limit)
	if err != nil {
		return err
	}
	return unmarshalBounded(b, limit, v)
}

// readChunk is the piece a body is read in.
const readChunk = 1 << 20

// readBounded reads r whole when it holds at most limit bytes. It reads in
// pieces and joins them once at the end: io.ReadAll's doubling buffer made
// a body over the limit (a flood's) cost about twice the limit in garbage
// before it was refused.
func readBounded(r io.Reader, limit int64) ([]byte, error) {
	return readBudgeted(r, -1, limit, nil)
}

// errBodyBudget refuses a body that does not fit in what the server holds
// for the bodies it reads (ServerConfig.MaxBodyBytes) now.
var errBodyBudget = fmt.Errorf("%w: other offers' bodies are being read", ErrBusy)

// errBodyTooLarge refuses a body of unknown length that could never fit:
// read in pieces and joined, it needs twice its size.
var errBodyTooLarge = fmt.Errorf("%w: the body is too large to read without a length", ErrBadInput)

// readBudgeted is readBounded for a body of size bytes (-1: unknown) whose
// memory is charged to take first (nil: nothing is charged). A body of
// known size is read into one buffer of that size, charged before it is
// read (take may wait for it: wait is set); one of unknown size is charged
// piece by piece, then again for the join, without waiting (a body that
// holds memory must not wait for more). When take refuses, the read ends
// with errBodyBudget (or errBodyTooLarge, when take says it never fits).
func readBudgeted(r io.Reader, size, limit int64, take func(n int64, wait bool) error) ([]byte, error) {
	if take == nil {
		take = func(int64, bool) error { return nil }
	}
	if size >= 0 && size <= limit {
		if err := take(size, true); err != nil {
			return nil, err
		}
		buf := make([]byte, size)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("%w: reading the body: %v", ErrBadInput, err)
		}
		if n, _ := r.Read(make([]byte, 1)); n > 0 { // net/http ends a body at its length; others may not
			return nil, fmt.Errorf("%w: the body is longer than it said", ErrBadInput)
		}
		return buf, nil
	}
	var parts [][]byte
	var total int64
	for {
		n := min(readChunk, limit+1-total)
		if err := take(n, false); err != nil {
			return nil, err
		}
		buf := make([]byte, n)
		got, err := io.ReadFull(r, buf)
		parts = append(parts, buf[:got])
		total += int64(got)
		if total > limit {
			return nil, fmt.Errorf("%w: the body is over %d bytes", ErrBadInput, limit)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: reading the body: %v", ErrBadInput, err)
		}
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	if err := take(total, false); err != nil {
		return nil, err
	}
	out := make([]byte, 0, total)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// unmarshalBounded is decodeJSON for a document already in memory.
func unmarshalBounded(b []byte, limit int64, v any) error {
	if int64(len(b)) > limit {
		return fmt.Errorf("%w: the body is over %d bytes", ErrBadInput, limit)
	}
	if d := depth(b); d > MaxDepth {
		return fmt.Errorf("%w: the JSON nests deeper than %d", ErrBadInput, MaxDepth)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	// Not dec.More: it takes a ']' or '}' after the document for the end
	// of an array or object holding it, and says there is nothing more.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: data after the JSON document", ErrBadInput)
	}
	return nil
}

// depth is the deepest nesting of objects and arrays in b, reading strings
// (and their escapes) as opaque; it does not validate b.
func depth(b []byte) int {
	d, maxd, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if d++; d > maxd {
				maxd = d
			}
		case c == '}' || c == ']':
			d--
		}
	}
	return maxd
}

// checkField bounds one short string field of a peer.
func checkField(name, v string, required bool) error {
	switch {
	case required && v == "":
		return fmt.Errorf("%w: %s is missing", ErrBadInput, name)
	case len(v) > MaxFieldLen:
		return fmt.Errorf("%w: %s is over %d bytes", ErrBadInput, name, MaxFieldLen)
	case !utf8.ValidString(v):
		return fmt.Errorf("%w: %s is not UTF-8", ErrBadInput, name)
	}
	return nil
}

// Validate checks a device description a peer sent. needPort is set for
// announcements and registers, which say where the device listens.
func (i *Info) Validate(needPort bool) error {
	for _, f := range []struct {
		name, v  string
		required bool
	}{
		{"alias", i.Alias, false}, {"version", i.Version, false}, {"deviceModel", i.DeviceModel, false},
		{"deviceType", i.DeviceType, false}, {"fingerprint", i.Fingerprint, true}, {"protocol", i.Protocol, false},
	} {
		if err := checkField(f.name, f.v, f.required); err != nil {
			return err
		}
	}
	if needPort && (i.Port <= 0 || i.Port > 65535) {
		return fmt.Errorf("%w: port %d", ErrBadInput, i.Port)
	}
	if i.Port < 0 || i.Port > 65535 {
		return fmt.Errorf("%w: port %d", ErrBadInput, i.Port)
	}
	switch i.Protocol {
	case "", "https", "http":
	default:
		return fmt.Errorf("%w: protocol %q", ErrBadInput, i.Protocol)
	}
	return nil
}

// parseInfo reads a device description a peer sent (an announcement, or
// the answer to info or register), bounded and checked by Validate.
func parseInfo(b []byte, needPort bool) (Info, error) {
	var in Info
	if err := unmarshalBounded(b, MaxSmallBytes, &in); err != nil {
		return Info{}, err
	}
	if err := in.Validate(needPort); err != nil {
		return Info{}, err
	}
	return in, nil
}

// Scheme is the URL scheme of the device's server ("https" unless it said "http").
func (i *Info) Scheme() string {
	if i.Protocol == "http" {
		return "http"
	}
	return "https"
}

// Validate checks an offer: its sender, at least one and at most MaxFiles
// files, each with an ID equal to its key, a name, a size >= 0, a sha256
// of 64 hex digits when given, and bounded fields. File names are checked
// for safety by whoever stores them (the engine's store), not here.
func (p *PrepareUpload) Validate() error {
	if err := p.Info.Validate(false); err != nil {
		return fmt.Errorf("info: %w", err)
	}
	if len(p.Files) == 0 {
		return fmt.Errorf("%w: no files", ErrBadInput)
	}
	if len(p.Files) > MaxFiles {
		return fmt.Errorf("%w: %d files, over %d", ErrBadInput, len(p.Files), MaxFiles)
	}
	for key, f := range p.Files {
		if err := checkField("file id", key, true); err != nil {
			return err
		}
		if f.ID != "" && f.ID != key {
			return fmt.Errorf("%w: file %q has id %q", ErrBadInput, key, f.ID)
		}
		if f.FileName == "" || len(f.FileName) > MaxNameLen || !utf8.ValidString(f.FileName) {
			return fmt.Errorf("%w: file %q has no usable name", ErrBadInput, key)
		}
		if f.Size < 0 {
			return fmt.Errorf("%w: file %q has size %d", ErrBadInput, key, f.Size)
		}
		if f.noSize && !(len(p.Files) == 1 && strings.HasPrefix(f.FileType, "text/") && f.Preview != "") {
			return fmt.Errorf("%w: file %q has no size", ErrBadInput, key)
		}
		if err := checkField("fileType", f.FileType, false); err != nil {
			return err
		}
		if f.SHA256 != "" && !isHex64(f.SHA256) {
			return fmt.Errorf("%w: file %q: sha256 is not 64 hex digits", ErrBadInput, key)
		}
		if len(f.Preview) > MaxPreviewLen || !utf8.ValidString(f.Preview) {
			return fmt.Errorf("%w: file %q: preview over %d bytes or not UTF-8", ErrBadInput, key, MaxPreviewLen)
		}
	}
	return nil
}

// TextOf returns the text of a text offer: exactly one file whose type is
// text/* and whose preview holds the text.
func (p *PrepareUpload) TextOf() (string, bool) {
	if len(p.Files) != 1 {
		return "", false
	}
	for _, f := range p.Files {
		if strings.HasPrefix(f.FileType, "text/") && f.Preview != "" {
			return f.Preview, true
		}
	}
	return "", false
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
