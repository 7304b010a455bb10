package localsend

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
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

// Shared is a share served by the download API: a fixed list of files.
type Shared interface {
	// SharedFiles lists the files: IDs unique, names relative and
	// slash-separated ("folder/photo.jpg").
	SharedFiles() []File
	// ServeShared answers r with the bytes of a listed file (ranges work),
	// or an error status of its own (the share ended meanwhile, the file
	// is gone).
	ServeShared(w http.ResponseWriter, r *http.Request, id string)
	// SharedPIN is the PIN prepare-download asks for ("": none).
	SharedPIN() string
}

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
	ans := PrepareDownloadAnswer{Info: s.answerInfo(r), SessionID: id, Files: map[string]File{}}
	ans.Info.Port, ans.Info.Protocol = 0, "" // the protocol's answer has neither
	for _, f := range sh.SharedFiles() {
		ans.Files[f.ID] = f
	}
	writeJSON(w, ans)
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
	var file *File
	for _, f := range sh.SharedFiles() {
		if f.ID == q.FileID {
			file = &f
			break
		}
	}
	if file == nil {
		fail(w, http.StatusForbidden, "Invalid fileId.")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream") // the protocol's; ServeShared names the file
	w.Header().Set("X-Content-Type-Options", "nosniff")
	sh.ServeShared(w, r, file.ID)
}
