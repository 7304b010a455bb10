package localsend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// memShared is a share held in memory.
type memShared struct {
	pin    string
	files  map[string][]byte // id -> bytes
	served atomic.Int32
}

func (m *memShared) SharedCount() int { return len(m.files) }

func (m *memShared) SharedFile(i int) File {
	return m.file(slices.Sorted(maps.Keys(m.files))[i])
}

func (m *memShared) SharedLookup(id string) (File, bool) {
	if _, ok := m.files[id]; !ok {
		return File{}, false
	}
	return m.file(id), true
}

func (m *memShared) file(id string) File {
	return File{ID: id, FileName: "dir/" + id + ".bin", Size: int64(len(m.files[id])), FileType: "application/octet-stream"}
}

func (m *memShared) SharedPIN() string { return m.pin }

func (m *memShared) ServeShared(w http.ResponseWriter, r *http.Request, id string) {
	m.served.Add(1)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(m.files[id]))
}

// dlServer is a server whose download API serves *cur (nil: no share).
func dlServer(t *testing.T, cur *atomic.Pointer[memShared]) *Server {
	t.Helper()
	s, err := NewServer(ServerConfig{Cert: testCert(t, 0), Receiver: &memReceiver{}, Shared: func() Shared {
		if m := cur.Load(); m != nil {
			return m
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// call sends one request from addr to the server's routes.
func call(s *Server, method, target, from string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	req.RemoteAddr = from + ":40000"
	rec := httptest.NewRecorder()
	s.http.Handler.ServeHTTP(rec, req)
	return rec
}

func sessionOf(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var ans PrepareDownloadAnswer
	if rec.Code != 200 {
		t.Fatalf("prepare-download: %d %s", rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil || ans.SessionID == "" || !ans.Info.Download {
		t.Fatalf("prepare-download answer %s: %v", rec.Body, err)
	}
	return ans.SessionID
}

const (
	pd = apiPrefix + "prepare-download"
	dl = apiPrefix + "download"
)

// TestDownloadHostile is the table of hostile requests to the download
// API: each is refused with the protocol's status and serves no byte.
func TestDownloadHostile(t *testing.T) {
	var cur atomic.Pointer[memShared]
	s := dlServer(t, &cur)
	const me, other = "192.0.2.1", "192.0.2.2"
	if rec := call(s, "POST", pd, me); rec.Code != http.StatusForbidden {
		t.Fatalf("no share: %d", rec.Code)
	}
	if s.Info().Download {
		t.Fatal("Info says download with no share")
	}
	sh := &memShared{pin: "1234", files: map[string][]byte{"a": []byte("alpha"), "b": []byte("beta")}}
	cur.Store(sh)
	if !s.Info().Download {
		t.Fatal("Info does not say download while a share is open")
	}
	sess := sessionOf(t, call(s, "POST", pd+"?pin=1234", me))
	long := strings.Repeat("x", MaxFieldLen+1)
	for _, c := range []struct {
		name, method, target, from string
		want                       int
	}{
		{"no PIN", "POST", pd, other, 401},
		{"sessionId twice", "POST", pd + "?pin=1234&sessionId=a&sessionId=b", me, 400},
		{"pin twice", "POST", pd + "?pin=1234&pin=1234", me, 400},
		{"PIN too long", "POST", pd + "?pin=" + long, me, 400},
		{"bad escape", "POST", pd + "?pin=%zz", me, 400},
		{"prepare with GET", "GET", pd, me, 405},
		{"download with POST", "POST", dl + "?sessionId=" + sess + "&fileId=a", me, 405},
		{"no sessionId", "GET", dl + "?fileId=a", me, 400},
		{"no fileId", "GET", dl + "?sessionId=" + sess, me, 400},
		{"empty sessionId", "GET", dl + "?sessionId=&fileId=a", me, 400},
		{"fileId twice", "GET", dl + "?sessionId=" + sess + "&fileId=a&fileId=b", me, 400},
		{"fileId too long", "GET", dl + "?sessionId=" + sess + "&fileId=" + long, me, 400},
		{"unknown session", "GET", dl + "?sessionId=00112233445566778899aabbccddeeff&fileId=a", me, 403},
		{"another address's session", "GET", dl + "?sessionId=" + sess + "&fileId=a", other, 403},
		{"file not shared", "GET", dl + "?sessionId=" + sess + "&fileId=c", me, 403},
		{"path as fileId", "GET", dl + "?sessionId=" + sess + "&fileId=..%2F..%2Fetc%2Fpasswd", me, 403},
		{"file name as fileId", "GET", dl + "?sessionId=" + sess + "&fileId=dir%2Fa.bin", me, 403},
	} {
		if rec := call(s, c.method, c.target, c.from); rec.Code != c.want {
			t.Errorf("%s: %d, want %d (%s)", c.name, rec.Code, c.want, rec.Body)
		}
	}
	if n := sh.served.Load(); n != 0 {
		t.Fatalf("%d files served to hostile requests", n)
	}
	// The right request is served, with a range.
	req := httptest.NewRequest("GET", dl+"?sessionId="+sess+"&fileId=b", nil)
	req.RemoteAddr = me + ":1"
	req.Header.Set("Range", "bytes=1-")
	rec := httptest.NewRecorder()
	s.http.Handler.ServeHTTP(rec, req)
	if rec.Code != 206 || rec.Body.String() != "eta" || rec.Header().Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("range: %d %q %q", rec.Code, rec.Body, rec.Header().Get("Content-Type"))
	}
	// A session of another address does not spare that address the PIN.
	if rec := call(s, "POST", pd+"?sessionId="+sess, other); rec.Code != 401 {
		t.Fatalf("another address's session without PIN: %d", rec.Code)
	}

	// Three wrong PINs (401), then 429 even for the right PIN.
	for i, want := range []int{401, 401, 401, 429} {
		pin := "0000"
		if i == 3 {
			pin = "1234"
		}
		if rec := call(s, "POST", pd+"?pin="+pin, "192.0.2.9"); rec.Code != want {
			t.Fatalf("wrong PIN %d: %d, want %d", i+1, rec.Code, want)
		}
	}

	// A share opened since: sessions of the old one are refused.
	cur.Store(&memShared{files: map[string][]byte{"a": []byte("new")}})
	if rec := call(s, "GET", dl+"?sessionId="+sess+"&fileId=a", me); rec.Code != 403 {
		t.Fatalf("an old share's session: %d", rec.Code)
	}
	// Sessions are bounded: the oldest are forgotten.
	first := sessionOf(t, call(s, "POST", pd, me))
	for range maxDownloadSessions {
		sessionOf(t, call(s, "POST", pd, me))
	}
	if rec := call(s, "GET", dl+"?sessionId="+first+"&fileId=a", me); rec.Code != 403 {
		t.Fatalf("a session beyond the bound: %d", rec.Code)
	}
	if len(s.dls.byID) > maxDownloadSessions {
		t.Fatalf("%d sessions kept", len(s.dls.byID))
	}
	// Stopped: nothing is served.
	cur.Store(nil)
	if rec := call(s, "GET", dl+"?sessionId="+first+"&fileId=a", me); rec.Code != 403 {
		t.Fatalf("after the share ended: %d", rec.Code)
	}
}

// TestAnnouncementSaysDownload: announcements carry download: true while
// the download API is on.
func TestAnnouncementSaysDownload(t *testing.T) {
	on := false
	d := &Discoverer{cfg: DiscoveryConfig{Info: Info{Alias: "x", Fingerprint: "f"}, Download: func() bool { return on }}}
	for _, want := range []bool{false, true} {
		on = want
		var in Info
		if err := json.Unmarshal(d.announcement(true), &in); err != nil || in.Download != want {
			t.Fatalf("announcement with download %v: %+v %v", want, in, err)
		}
	}
}

func FuzzDownloadQuery(f *testing.F) {
	for _, s := range []string{"", "sessionId=a&fileId=b", "sessionId=a&sessionId=b&fileId=c", "fileId=%zz",
		"pin=1234", "sessionId=" + strings.Repeat("x", MaxFieldLen+1), "a=b;c=d", "sessionId=%00&fileId=..%2F"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		dq, err := parseDownloadQuery(raw)
		if err == nil {
			if dq.SessionID == "" || dq.FileID == "" || len(dq.SessionID) > MaxFieldLen || len(dq.FileID) > MaxFieldLen {
				t.Fatalf("accepted %q as %+v", raw, dq)
			}
		} else if dq != (downloadQuery{}) {
			t.Fatalf("an error with a value: %+v", dq)
		}
		pq, err := parsePrepareDownloadQuery(raw)
		if err == nil && (len(pq.SessionID) > MaxFieldLen || len(pq.PIN) > MaxFieldLen) {
			t.Fatalf("accepted %q as %+v", raw, pq)
		}
	})
}

// TestDownloadPINRefusalsAreHeard: a share's PIN refused (missing, wrong,
// then locked out) is told to OnPIN, as an upload's is.
func TestDownloadPINRefusalsAreHeard(t *testing.T) {
	var cur atomic.Pointer[memShared]
	cur.Store(&memShared{pin: "1234", files: map[string][]byte{"a": []byte("hi")}})
	var heard []error
	s, err := NewServer(ServerConfig{Cert: testCert(t, 0), Receiver: &memReceiver{},
		Shared: func() Shared { return cur.Load() },
		OnPIN: func(addr netip.Addr, err error) {
			if addr != netip.MustParseAddr("192.0.2.9") {
				t.Errorf("OnPIN from %v", addr)
			}
			heard = append(heard, err)
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"", "?pin=1", "?pin=2", "?pin=3", "?pin=4"} {
		call(s, http.MethodPost, pd+q, "192.0.2.9")
	}
	want := []error{ErrPINRequired, ErrWrongPIN, ErrWrongPIN, ErrWrongPIN, ErrTooManyPINs}
	if len(heard) != len(want) {
		t.Fatalf("OnPIN heard %v, want %v", heard, want)
	}
	for i := range want {
		if !errors.Is(heard[i], want[i]) {
			t.Errorf("refusal %d: %v, want %v", i, heard[i], want[i])
		}
	}
	if rec := call(s, http.MethodPost, pd+"?pin=1234", "192.0.2.10"); rec.Code != http.StatusOK {
		t.Errorf("the right PIN from elsewhere: %d", rec.Code)
	}
	if len(heard) != len(want) {
		t.Errorf("the right PIN was heard as a refusal: %v", heard[len(want):])
	}
}

// fileEntries are files as the share lists them, hostile names too, for
// TestAppendFileEntry and FuzzAppendFileEntry's seeds.
var fileEntries = []File{
	{ID: "0", FileName: "a.txt", Size: 5, FileType: "text/plain"},
	{ID: "12345", FileName: "Trip/day 1/IMG_0001.jpg", Size: 1 << 40, FileType: "image/jpeg"},
	{ID: "1", FileName: `a"b\c` + "\n\r\t\b\f\x00\x1f\x7f.bin", FileType: "application/octet-stream"},
	{ID: "2", FileName: "<script>&amp;</script>.html", FileType: "text/html; charset=utf-8"},
	{ID: "3", FileName: "photo\u202egpj.exe \u2028\u2029", FileType: "application/octet-stream"},
	{ID: "4", FileName: "bad \xff\xfe utf-8 \xe2\x80", FileType: "application/octet-stream"},
	{ID: "5", FileName: "grüße 日本 🙂.txt", Size: -1},
	{ID: "6", FileName: "with.sha", SHA256: "abc", Preview: "x", Metadata: &FileMeta{}},
	{},
}

// appendFileEntry writes a file as encoding/json writes it, byte for byte.
func TestAppendFileEntry(t *testing.T) {
	for _, f := range fileEntries {
		checkFileEntry(t, f)
	}
}

func FuzzAppendFileEntry(f *testing.F) {
	for _, e := range fileEntries {
		f.Add(e.ID, e.FileName, e.Size, e.FileType)
	}
	f.Fuzz(func(t *testing.T, id, name string, size int64, typ string) {
		checkFileEntry(t, File{ID: id, FileName: name, Size: size, FileType: typ})
	})
}

func checkFileEntry(t *testing.T, f File) {
	t.Helper()
	k, _ := json.Marshal(f.ID)
	v, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := string(k) + ":" + string(v)
	got, err := appendFileEntry(nil, f)
	if err != nil || string(got) != want {
		t.Fatalf("appendFileEntry(%+v) = %s, %v; want %s", f, got, err, want)
	}
}

// lazyShared is a share of n files made up as they are asked for.
type lazyShared struct{ n int }

func (l lazyShared) SharedCount() int { return l.n }
func (l lazyShared) SharedFile(i int) File {
	return File{ID: strconv.Itoa(i), FileName: fmt.Sprintf("Photos/IMG_%07d.jpg", i), Size: int64(i), FileType: "image/jpeg"}
}
func (l lazyShared) SharedLookup(id string) (File, bool) {
	i, err := strconv.Atoi(id)
	if err != nil || i < 0 || i >= l.n || strconv.Itoa(i) != id {
		return File{}, false
	}
	return l.SharedFile(i), true
}
func (l lazyShared) ServeShared(w http.ResponseWriter, r *http.Request, id string) {}
func (l lazyShared) SharedPIN() string                                             { return "" }

// prepare-download lists a share of up to MaxDownloadFiles files whole, and
// refuses a bigger one with a message that says why and what to do, never
// a part of it that would read as the whole share.
func TestPrepareDownloadOfTooManyFiles(t *testing.T) {
	var cur atomic.Pointer[lazyShared]
	s, err := NewServer(ServerConfig{Cert: testCert(t, 0), Receiver: &memReceiver{}, MaxDownloadFiles: 1000, Shared: func() Shared {
		if l := cur.Load(); l != nil {
			return *l
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	cur.Store(&lazyShared{1000})
	rec := call(s, "POST", pd, "192.0.2.7")
	var ans PrepareDownloadAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &ans); rec.Code != 200 || err != nil || len(ans.Files) != 1000 || ans.Files["999"].FileName != "Photos/IMG_0000999.jpg" || ans.SessionID == "" || !ans.Info.Download {
		t.Fatalf("a share of 1000: %d, %d files, %v", rec.Code, len(ans.Files), err)
	}
	cur.Store(&lazyShared{1001})
	rec = call(s, "POST", pd, "192.0.2.7")
	var msg struct{ Message string }
	json.Unmarshal(rec.Body.Bytes(), &msg)
	if want := "This share holds 1001 files, more than the 1000 a LocalSend download list takes. Open the share's link in a browser instead: its page lists every file."; rec.Code != http.StatusForbidden || msg.Message != want {
		t.Fatalf("a share of 1001: %d %s", rec.Code, rec.Body)
	}
}

// heldShared is a share of n files whose lists stop at their first file
// until hold is closed; entered gets a value as each list reaches it.
type heldShared struct {
	lazyShared
	hold    chan struct{}
	entered chan struct{}
}

func (h heldShared) SharedFile(i int) File {
	if i == 0 {
		h.entered <- struct{}{}
		<-h.hold
	}
	return h.lazyShared.SharedFile(i)
}

// prepare-download writes at most maxListingsPerAddr lists at once to one
// address and maxListings in all, and refuses more with the protocol's 429
// at once: a list of 100,000 files costs about 0.3 CPU-s, and every list
// asked for was written, so a device asking over and over took every core.
func TestPrepareDownloadListsAtOnceAreBounded(t *testing.T) {
	h := heldShared{lazyShared{1000}, make(chan struct{}), make(chan struct{}, 16)}
	s, err := NewServer(ServerConfig{Cert: testCert(t, 0), Receiver: &memReceiver{}, Shared: func() Shared { return h }})
	if err != nil {
		t.Fatal(err)
	}
	codes := make(chan int, maxListings)
	held := func(from string) {
		go func() { codes <- call(s, "POST", pd, from).Code }()
		<-h.entered
	}
	// refused asks for a list that must be refused: written, it would
	// reach the held first file.
	refused := func(from, what string) {
		got := make(chan int, 1)
		go func() { got <- call(s, "POST", pd, from).Code }()
		select {
		case c := <-got:
			if c != http.StatusTooManyRequests {
				t.Errorf("%s: %d, want 429", what, c)
			}
		case <-h.entered:
			t.Errorf("%s: written, want 429", what)
		}
	}
	held("192.0.2.7")
	refused("192.0.2.7", "a second list to one address while its first is written")
	for i := 1; i < maxListings; i++ {
		held(fmt.Sprintf("192.0.2.%d", 7+i))
	}
	refused("192.0.2.99", fmt.Sprintf("list %d in all", maxListings+1))
	close(h.hold)
	for range maxListings {
		if c := <-codes; c != 200 {
			t.Errorf("a list held: %d, want 200", c)
		}
	}
	if rec := call(s, "POST", pd, "192.0.2.7"); rec.Code != 200 {
		t.Errorf("a list once the others were written: %d, want 200", rec.Code)
	}
}
