package localsend

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"unicode/utf8"
)

// The download API ("share via link" in the official app; protocol README
// section 5): while a share is open, a device that has no LocalSend server
// of its own (a browser page, a CLI) fetches its files.
//
//   - POST prepare-download[?sessionId=S][&pin=PIN] answers
//     {info, sessionId, files: {id: file}}: a session for the asking
//     address. A sessionId it already holds is given back without asking
//     for the PIN again (a page reloaded). 401 without the share's PIN or
//     with a wrong one, 429 after 3 wrong ones from an address (the upload
//     PIN's rule), 403 when no share is open.
//   - GET download?sessionId=S&fileId=ID answers the file's bytes (ranges
//     work). 400 without either parameter, 403 for a session that is not
//     this address's or not of the share open now, or a file not in it.
//
// Nothing is prompted: the user opened the share on purpose, with its PIN.

// Shared is a share served by the download API: a fixed list of files,
// read one at a time, so that neither a listing nor a download holds the
// whole list (a share may hold 10^6 files).
type Shared interface {
	// SharedCount is how many files the share holds.
	SharedCount() int
	// SharedFile is file i, 0 <= i < SharedCount(): IDs unique, names
	// relative and slash-separated ("folder/photo.jpg").
	SharedFile(i int) File
	// SharedLookup is the file whose ID is id; ok is false for none.
	SharedLookup(id string) (f File, ok bool)
	// ServeShared answers r with the bytes of a listed file (ranges work),
	// or an error status of its own (the share ended meanwhile, the file
	// is gone).
	ServeShared(w http.ResponseWriter, r *http.Request, id string)
	// SharedPIN is the PIN prepare-download asks for ("": none).
	SharedPIN() string
}

// DefaultMaxDownloadFiles is how many files prepare-download lists by
// default (ServerConfig.MaxDownloadFiles). Its answer is one JSON object
// that a client reads whole before it shows anything (the official app's
// client: reqwest's json(), into a map), about 100 bytes a file: 10 MB for
// 100,000 files, which a phone still takes in about a second; a million
// files would be 100 MB to a phone. A bigger share is refused with a
// message saying to open its link in a browser, whose page lists it in
// pages (docs/weblink.md has the figures).
const DefaultMaxDownloadFiles = 100_000

// PrepareDownloadAnswer is the 200 answer to prepare-download.
type PrepareDownloadAnswer struct {
	Info      Info            `json:"info"`
	SessionID string          `json:"sessionId"`
	Files     map[string]File `json:"files"`
}

// maxDownloadSessions bounds the download sessions remembered (the oldest
// goes first): each is a few bytes, and a device makes one.
const maxDownloadSessions = 256

// downloadSessions are the sessions prepare-download handed out.
type downloadSessions struct {
	mu    sync.Mutex // guards the fields below
	byID  map[string]downloadSession
	order []string
}

// downloadSession ties a session ID to the address that asked and the
// share it was for: another address, or a share opened since, is refused.
type downloadSession struct {
	addr  netip.Addr
	share Shared
}

func (d *downloadSessions) add(addr netip.Addr, sh Shared) (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	id := hex.EncodeToString(b)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byID == nil {
		d.byID = map[string]downloadSession{}
	}
	if len(d.order) >= maxDownloadSessions {
		delete(d.byID, d.order[0])
		d.order = d.order[1:]
	}
	d.byID[id] = downloadSession{addr: addr, share: sh}
	d.order = append(d.order, id)
	return id, nil
}

// valid reports whether id is a session of addr for sh.
func (d *downloadSessions) valid(id string, addr netip.Addr, sh Shared) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	ss, ok := d.byID[id]
	return ok && ss.addr == addr && ss.share == sh
}

// shared is the share open now, or nil.
func (s *Server) shared() Shared {
	if s.cfg.Shared == nil {
		return nil
	}
	return s.cfg.Shared()
}

// downloadQuery is what a download request names.
type downloadQuery struct {
	SessionID, FileID string
}

// Errors of the download API's parameters.
var (
	errMissingSession = fmt.Errorf("%w: missing sessionId", ErrBadInput)
	errMissingFile    = fmt.Errorf("%w: missing fileId", ErrBadInput)
)

// parseDownloadQuery reads download's query: both parameters present, once
// each, within MaxFieldLen.
func parseDownloadQuery(raw string) (downloadQuery, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return downloadQuery{}, fmt.Errorf("%w: query: %v", ErrBadInput, err)
	}
	var dq downloadQuery
	if dq.SessionID, err = oneParam(q, "sessionId", true); err != nil {
		return downloadQuery{}, err
	}
	if dq.FileID, err = oneParam(q, "fileId", true); err != nil {
		return downloadQuery{}, err
	}
	return dq, nil
}

// prepareDownloadQuery is what a prepare-download request carries.
type prepareDownloadQuery struct {
	SessionID, PIN string
}

// parsePrepareDownloadQuery reads prepare-download's query: sessionId and
// pin, both optional, once each, within MaxFieldLen.
func parsePrepareDownloadQuery(raw string) (prepareDownloadQuery, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return prepareDownloadQuery{}, fmt.Errorf("%w: query: %v", ErrBadInput, err)
	}
	var pq prepareDownloadQuery
	if pq.SessionID, err = oneParam(q, "sessionId", false); err != nil {
		return prepareDownloadQuery{}, err
	}
	if pq.PIN, err = oneParam(q, "pin", false); err != nil {
		return prepareDownloadQuery{}, err
	}
	return pq, nil
}

// oneParam is the value of name in q: at most once, at most MaxFieldLen
// bytes, and present when required.
func oneParam(q url.Values, name string, required bool) (string, error) {
	vs := q[name]
	switch {
	case len(vs) > 1:
		return "", fmt.Errorf("%w: %s given %d times", ErrBadInput, name, len(vs))
	case len(vs) == 0 || vs[0] == "":
		if !required {
			return "", nil
		}
		if name == "sessionId" {
			return "", errMissingSession
		}
		return "", errMissingFile
	case len(vs[0]) > MaxFieldLen:
		return "", fmt.Errorf("%w: %s too long", ErrBadInput, name)
	}
	return vs[0], nil
}

func (s *Server) prepareDownload(w http.ResponseWriter, r *http.Request) {
	sh := s.shared()
	if sh == nil {
		fail(w, http.StatusForbidden, "Web send not initialized.")
		return
	}
	if n := sh.SharedCount(); n > s.cfg.MaxDownloadFiles {
		tooManyToList(w, n, s.cfg.MaxDownloadFiles)
		return
	}
	q, err := parsePrepareDownloadQuery(r.URL.RawQuery)
	if err != nil {
		fail(w, http.StatusBadRequest, "Invalid query.")
		return
	}
	addr := remote(r)
	id := q.SessionID
	if id == "" || !s.dls.valid(id, addr, sh) {
		// A new session: the share's PIN first.
		if err := s.checkPINFor(sh.SharedPIN(), addr, q.PIN); err != nil {
			msg := map[error]string{ErrTooManyPINs: "Too many requests", ErrPINRequired: "PIN required", ErrWrongPIN: "Invalid PIN"}[err]
			fail(w, statusOf(err), msg)
			if s.cfg.OnPIN != nil {
				s.cfg.OnPIN(addr, err)
			}
			return
		}
		if id, err = s.dls.add(addr, sh); err != nil {
			fail(w, http.StatusInternalServerError, "Cannot open a session.")
			return
		}
	}
	done, ok := s.startListing(addr)
	if !ok {
		fail(w, http.StatusTooManyRequests, "Too many requests")
		return
	}
	defer done()
	info := s.answerInfo(r)
	info.Port, info.Protocol = 0, "" // the protocol's answer has neither
	writePrepareDownload(w, info, id, sh)
}

// maxListings bounds the prepare-download lists written at once, and
// maxListingsPerAddr those for one address: a list of 100,000 files costs
// about 0.3 CPU-s to write, a client makes one per visit, and a device
// asking over and over (or reading slowly) would otherwise take every core.
const maxListings, maxListingsPerAddr = 4, 1

// startListing takes a place for a list written to addr, or reports that
// none is free (ok false); done gives it back.
func (s *Server) startListing(addr netip.Addr) (done func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := 0
	for _, n := range s.listing {
		all += n
	}
	if all >= maxListings || s.listing[addr] >= maxListingsPerAddr {
		return nil, false
	}
	if s.listing == nil {
		s.listing = map[netip.Addr]int{}
	}
	s.listing[addr]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.listing[addr]--; s.listing[addr] == 0 {
			delete(s.listing, addr)
		}
	}, true
}

// tooManyToList refuses a share of more files than prepare-download lists:
// a list cut short would read as the whole share.
func tooManyToList(w http.ResponseWriter, n, max int) {
	fail(w, http.StatusForbidden, fmt.Sprintf("This share holds %d files, more than the %d a LocalSend download list takes. Open the share's link in a browser instead: its page lists every file.", n, max))
}

// writePrepareDownload writes prepare-download's answer
// (PrepareDownloadAnswer) file by file, so that its memory here is one
// file's, whatever the share holds (before, the answer was built whole:
// 121 MB allocated for 100,000 files).
func writePrepareDownload(w http.ResponseWriter, info Info, session string, sh Shared) {
	head, err := json.Marshal(struct {
		Info      Info   `json:"info"`
		SessionID string `json:"sessionId"`
	}{info, session})
	if err != nil {
		fail(w, http.StatusInternalServerError, "Cannot list the files.")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	bw := bufio.NewWriterSize(w, 32<<10)
	bw.Write(head[:len(head)-1]) // without its "}"
	bw.WriteString(`,"files":{`)
	var buf []byte
	for i := range sh.SharedCount() {
		if i > 0 {
			bw.WriteByte(',')
		}
		if buf, err = appendFileEntry(buf[:0], sh.SharedFile(i)); err != nil {
			return // cut short: the client sees a broken answer, not a short list
		}
		if _, err := bw.Write(buf); err != nil {
			return // the client went away
		}
	}
	bw.WriteString("}}\n")
	bw.Flush()
}

// appendFileEntry appends `"ID":{file}` as encoding/json writes a File,
// without the allocations of encoding/json for the common file of an ID, a
// name, a size and a type.
func appendFileEntry(b []byte, f File) ([]byte, error) {
	b = appendJSONString(b, f.ID)
	b = append(b, ':')
	if f.SHA256 != "" || f.Preview != "" || f.Metadata != nil {
		v, err := json.Marshal(f)
		return append(b, v...), err
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, f.ID)
	b = append(b, `,"fileName":`...)
	b = appendJSONString(b, f.FileName)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, f.Size, 10)
	b = append(b, `,"fileType":`...)
	b = appendJSONString(b, f.FileType)
	return append(b, '}'), nil
}

// appendJSONString appends s as a JSON string, as encoding/json writes it:
// invalid UTF-8 as U+FFFD, control characters, quotes, backslashes, <, >,
// & and U+2028/U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&15])
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	q, err := parseDownloadQuery(r.URL.RawQuery)
	switch {
	case errors.Is(err, errMissingSession):
		fail(w, http.StatusBadRequest, "Missing sessionId.")
		return
	case errors.Is(err, errMissingFile):
		fail(w, http.StatusBadRequest, "Missing fileId.")
		return
	case err != nil:
		fail(w, http.StatusBadRequest, "Invalid query.")
		return
	}
	sh := s.shared()
	if sh == nil || !s.dls.valid(q.SessionID, remote(r), sh) {
		fail(w, http.StatusForbidden, "Invalid sessionId.")
		return
	}
	// Looked up by its ID, not found in a list of every file: 35 MB
	// allocated for each download of a share of 100,000 files before.
	file, ok := sh.SharedLookup(q.FileID)
	if !ok {
		fail(w, http.StatusForbidden, "Invalid fileId.")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream") // the protocol's; ServeShared names the file
	w.Header().Set("X-Content-Type-Options", "nosniff")
	sh.ServeShared(w, r, file.ID)
}
