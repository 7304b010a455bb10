package weblink

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// startServer serves on 127.0.0.1:0 for the test.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := Listen("127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// startServerOnAFakeClock starts a server for Alice whose clock only
// advance moves.
func startServerOnAFakeClock(t *testing.T) (s *Server, advance func(time.Duration)) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	s = startServer(t, Options{DeviceName: "Alice", Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}})
	return s, func(d time.Duration) {
		mu.Lock()
		now = now.Add(d)
		mu.Unlock()
	}
}

// base is the server's root URL.
func base(s *Server) string { return "http://" + s.Addr().String() }

// writeFile writes n random bytes (or the given content) under dir.
func writeFile(t *testing.T, dir, name string, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func get(t *testing.T, c *http.Client, u string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

func TestShareFileRangeAndZip(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.bin", 300_000)
	b := writeFile(t, dir, "folder/sub/b.txt", 1234)
	writeFile(t, dir, "folder/c.bin", 0)
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "folder", "link")); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Options{DeviceName: "Alice's <laptop>"})
	l, err := s.Share(context.Background(), []string{filepath.Join(dir, "a.bin"), filepath.Join(dir, "folder")}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names, _ := l.Files()
	if want := "a.bin folder/c.bin folder/sub/b.txt"; strings.Join(names, " ") != want {
		t.Fatalf("files %q, want %q (the symlink left out)", names, want)
	}
	c := &http.Client{}
	res, page := get(t, c, base(s)+l.Path())
	if res.StatusCode != 200 {
		t.Fatalf("page: %d", res.StatusCode)
	}
	if !bytes.Contains(page, []byte("Alice&#39;s &lt;laptop&gt;")) {
		t.Errorf("page does not show the escaped device name:\n%s", page)
	}
	for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Cache-Control"} {
		if res.Header.Get(h) == "" {
			t.Errorf("page lacks %s", h)
		}
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}

	res, got := get(t, c, base(s)+l.Path()+"f/0/a.bin")
	if res.StatusCode != 200 || !bytes.Equal(got, a) {
		t.Fatalf("file: %d, %d bytes", res.StatusCode, len(got))
	}
	if cd := res.Header.Get("Content-Disposition"); cd != `attachment; filename=a.bin` {
		t.Errorf("Content-Disposition %q", cd)
	}
	res, got = get(t, c, base(s)+l.Path()+"f/0/a.bin", "Range", "bytes=1000-")
	if res.StatusCode != http.StatusPartialContent || !bytes.Equal(got, a[1000:]) {
		t.Fatalf("range: %d, %d bytes", res.StatusCode, len(got))
	}
	res, got = get(t, c, base(s)+l.Path()+"f/2/b.txt")
	if res.StatusCode != 200 || !bytes.Equal(got, b) {
		t.Fatalf("file in folder: %d", res.StatusCode)
	}

	res, z := get(t, c, base(s)+l.Path()+"all.zip")
	if res.StatusCode != 200 {
		t.Fatalf("zip: %d", res.StatusCode)
	}
	checkZip(t, z, map[string][]byte{"a.bin": a, "folder/sub/b.txt": b, "folder/c.bin": {}})
	acts := l.Activities()
	if len(acts) != 4 {
		t.Fatalf("%d activities, want 4", len(acts))
	}
	for _, a := range acts {
		// The range to the end counts as whole: it ends a resumed download.
		if !a.Done || a.Err != nil {
			t.Errorf("activity %+v", a)
		}
	}
}

// TestLinkExpiringAtOnce: a link whose expiry is over as it opens (share
// --expire 1ns) ends by its timer, which may run before open has kept it:
// the end read the timer while open wrote it (a data race under -race,
// seen from ferry-cli's TestShareSaysWhileListing).
func TestLinkExpiringAtOnce(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a", 10)
	s := startServer(t, Options{})
	for range 20 {
		l, err := s.Share(context.Background(), []string{filepath.Join(dir, "a")}, ShareOptions{LinkOptions: LinkOptions{Expire: time.Nanosecond}})
		if err != nil {
			t.Fatal(err)
		}
		for range l.Events() {
		}
		if !errors.Is(l.Err(), ErrExpired) {
			t.Errorf("Err %v, want expired", l.Err())
		}
	}
}

func TestStoppedAndExpiredLinks(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a", 10)
	var shift atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	s := startServer(t, Options{Now: clock})
	stopped, err := s.Share(context.Background(), []string{filepath.Join(dir, "a")}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expiring, err := s.Share(context.Background(), []string{filepath.Join(dir, "a")}, ShareOptions{LinkOptions: LinkOptions{Expire: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{}
	if res, _ := get(t, c, base(s)+stopped.Path()+"f/0/a"); res.StatusCode != 200 {
		t.Fatalf("open link: %d", res.StatusCode)
	}
	stopped.Stop()
	if !errors.Is(stopped.Err(), ErrStopped) {
		t.Errorf("Err %v", stopped.Err())
	}
	shift.Store(int64(time.Hour))
	for _, u := range []string{stopped.Path(), stopped.Path() + "f/0/a", expiring.Path(), expiring.Path() + "all.zip"} {
		if res, _ := get(t, c, base(s)+u); res.StatusCode != http.StatusGone {
			t.Errorf("%s: %d, want 410", u, res.StatusCode)
		}
	}
	if !errors.Is(expiring.Err(), ErrExpired) {
		t.Errorf("Err %v", expiring.Err())
	}
	tok, _ := newToken()
	if res, _ := get(t, c, base(s)+"/l/"+tok+"/"); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown token: %d", res.StatusCode)
	}
	// Events end with EventEnded, then the channel closes.
	var last Event
	for ev := range stopped.Events() {
		last = ev
	}
	if last.Kind != EventEnded || !errors.Is(last.Err, ErrStopped) {
		t.Errorf("last event %+v", last)
	}
}

func TestPIN(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a", 10)
	s := startServer(t, Options{})
	l, err := s.Share(context.Background(), []string{filepath.Join(dir, "a")}, ShareOptions{LinkOptions: LinkOptions{PIN: "4711", MaxPINTries: 3}})
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, page := get(t, c, base(s)+l.Path())
	if res.StatusCode != 200 || !bytes.Contains(page, []byte(`name="pin"`)) {
		t.Fatalf("no PIN form: %d\n%s", res.StatusCode, page)
	}
	if res, _ := get(t, c, base(s)+l.Path()+"f/0/a"); res.StatusCode != http.StatusForbidden {
		t.Fatalf("file without PIN: %d", res.StatusCode)
	}
	post := func(pin string) int {
		res, err := c.PostForm(base(s)+l.Path()+"pin", url.Values{"pin": {pin}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post("0000"); code != http.StatusForbidden {
		t.Fatalf("wrong PIN: %d", code)
	}
	if code := post("4711"); code != 200 {
		t.Fatalf("right PIN: %d", code)
	}
	if res, _ := get(t, c, base(s)+l.Path()+"f/0/a"); res.StatusCode != 200 {
		t.Fatalf("file with PIN: %d", res.StatusCode)
	}
	// A device without the cookie is still kept out, and the wrong tries
	// count for the whole link until it locks.
	other := &http.Client{}
	for range 2 {
		res, err := other.PostForm(base(s)+l.Path()+"pin", url.Values{"pin": {"1234"}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	res, err = other.PostForm(base(s)+l.Path()+"pin", url.Values{"pin": {"4711"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || !bytes.Contains(b, []byte("Too many wrong PINs")) {
		t.Fatalf("locked link took the PIN: %d", res.StatusCode)
	}
	// A device coming to the locked link is told so at once, not shown a
	// form whose PIN, right or not, is refused.
	res, again := get(t, other, base(s)+l.Path())
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("the locked link's page: %d", res.StatusCode)
	}
	for _, b := range [][]byte{b, again} {
		if bytes.Contains(b, []byte(`name="pin"`)) || !bytes.Contains(b, []byte("Too many wrong PINs")) {
			t.Fatalf("the locked link's page:\n%s", b)
		}
	}
	// A device that typed it before still has it.
	if res, _ := get(t, c, base(s)+l.Path()+"f/0/a"); res.StatusCode != 200 {
		t.Fatalf("file with PIN, after the lock: %d", res.StatusCode)
	}
	// Its owner learns of it.
	if wrong, locked, away := l.Guards(); wrong != 3 || !locked || away != 0 {
		t.Fatalf("Guards: %d wrong, locked %v, %d away; want 3, true, 0", wrong, locked, away)
	}
}

// A page of a share's files opened on a link with a PIN opens at that page
// once the PIN is typed (a link to page 6 passed on, a reload after the
// session ended), where the PIN always led to page 1. The page goes through
// the form as a number of the share's pages only: anything else leads to
// page 1, never elsewhere.
func TestPINOpensThePageAsked(t *testing.T) {
	s, l := threePagesBehindAPIN(t)
	res, page := get(t, &http.Client{}, base(s)+l.Path()+"?page=3")
	if res.StatusCode != 200 || !bytes.Contains(page, []byte(`<input type="hidden" name="page" value="3">`)) {
		t.Fatalf("the PIN form does not carry page 3: %d\n%s", res.StatusCode, page)
	}
	if _, page := get(t, &http.Client{}, base(s)+l.Path()); bytes.Contains(page, []byte(`name="page"`)) {
		t.Fatalf("the first page's PIN form carries a page:\n%s", page)
	}
	for _, c := range []struct {
		form url.Values
		to   string
	}{
		{url.Values{"pin": {"4711"}, "page": {"3"}}, "?page=3"},
		{url.Values{"pin": {"4711"}, "page": {"2"}}, "?page=2"},
		{url.Values{"pin": {"4711"}}, ""},
		{url.Values{"pin": {"4711"}, "page": {"1"}}, ""},
		{url.Values{"pin": {"4711"}, "page": {"4"}}, ""}, // past the last
		{url.Values{"pin": {"4711"}, "page": {"0"}}, ""},
		{url.Values{"pin": {"4711"}, "page": {"03"}}, ""},
		{url.Values{"pin": {"4711"}, "page": {"2", "3"}}, ""},
		{url.Values{"pin": {"4711"}, "page": {"2&x=1"}}, ""},
		{url.Values{"pin": {"4711"}, "page": {"//evil.example/"}}, ""},
		{url.Values{"pin": {"4711"}, "page": {"https://evil.example/"}}, ""},
		{url.Values{"pin": {"4711"}, "page": {"2\r\nSet-Cookie: x=y"}}, ""},
	} {
		checkPINRedirect(t, s, l, c.form, c.to)
	}
	// A wrong PIN asks again on the same page.
	res, err := http.PostForm(base(s)+l.Path()+"pin", url.Values{"pin": {"0000"}, "page": {"3"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || !bytes.Contains(b, []byte(`<input type="hidden" name="page" value="3">`)) {
		t.Fatalf("a wrong PIN lost the page: %d\n%s", res.StatusCode, b)
	}
}

// The PIN opens the search or the folder list it was asked on, at its
// page: the form carries them, each read by its parser again, so only a
// page number, a search's text (escaped) and the folder list reach the
// redirect. Before, a link to a search's second page led to every file's
// first page once the PIN was typed.
func TestPINOpensTheSearchAsked(t *testing.T) {
	s, l := threePagesBehindAPIN(t)
	_, page := get(t, &http.Client{}, base(s)+l.Path()+"?q=F0&page=2")
	if !bytes.Contains(page, []byte(`<input type="hidden" name="page" value="2">`)) || !bytes.Contains(page, []byte(`<input type="hidden" name="q" value="F0">`)) {
		t.Fatalf("the PIN form does not carry the search:\n%s", page)
	}
	for _, c := range []struct {
		form url.Values
		to   string
	}{
		{url.Values{"q": {"F0"}, "page": {"2"}}, "?q=F0&page=2"},
		{url.Values{"q": {"a b&page=9"}}, "?q=a+b%26page%3D9"},
		{url.Values{"q": {"//evil.example/"}}, "?q=%2F%2Fevil.example%2F"},
		{url.Values{"q": {"x\r\nSet-Cookie: x=y"}}, ""}, // not a search
		{url.Values{"q": {strings.Repeat("a", maxSearchBytes+1)}, "page": {"2"}}, "?page=2"},
		{url.Values{"q": {"a", "b"}}, ""},
		{url.Values{"folders": {"1"}}, "?folders=1"},
		{url.Values{"folders": {"1"}, "page": {"2"}}, "?folders=1"}, // one page of folders
		{url.Values{"folders": {"x"}, "page": {"3"}}, "?page=3"},
	} {
		c.form.Set("pin", "4711")
		checkPINRedirect(t, s, l, c.form, c.to)
	}
}

// checkPINRedirect posts form to l's PIN form as a new browser would and
// checks that it is sent on to l's page with the query to.
func checkPINRedirect(t *testing.T, s *Server, l *Link, form url.Values, to string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.PostForm(base(s)+l.Path()+"pin", form)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if want := l.Path() + to; res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != want {
		t.Errorf("PIN with %v: %d to %q, want %q", form, res.StatusCode, res.Header.Get("Location"), want)
	}
}

// A page number that names no page of the share (past the last, 0, not a
// number) shows the share's nearest page under a 404, with a line saying
// which pages there are, behind the link's PIN as every page is. Before,
// it was a bare 404 page, "No such page", with no way on but the address bar.
func TestBadPageShowsTheNearest(t *testing.T) {
	dir := t.TempDir()
	for i := range 2*pageRows + 1 { // 3 pages
		writeFile(t, dir, fmt.Sprintf("f%04d", i), 1)
	}
	s := startServer(t, Options{})
	l, err := s.Share(context.Background(), []string{dir}, ShareOptions{LinkOptions: LinkOptions{PIN: "4711"}})
	if err != nil {
		t.Fatal(err)
	}
	// Without the PIN, the PIN form, as for any page.
	if res, b := get(t, &http.Client{}, base(s)+l.Path()+"?page=999999"); res.StatusCode != 200 || !bytes.Contains(b, []byte(`name="pin"`)) || bytes.Contains(b, []byte("f0400")) {
		t.Fatalf("a bad page without the PIN: %d\n%s", res.StatusCode, b)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	if res, err := c.PostForm(base(s)+l.Path()+"pin", url.Values{"pin": {"4711"}}); err != nil || res.StatusCode != 200 {
		t.Fatalf("PIN: %v %v", res, err)
	}
	for _, tc := range []struct {
		query, says string
		page        int
	}{
		{"page=999999", "There is no page 999999: this share has 3 pages. This is the last.", 3},
		{"page=4", "There is no page 4: this share has 3 pages. This is the last.", 3},
		{"page=0", "There is no page 0: this share has 3 pages. This is the first.", 1},
		{"page=03", "There is no page 03: this share has 3 pages. This is page 3.", 3},
		{"page=abc", "That is not a page number: this share has 3 pages. This is the first.", 1},
		{"page=%3Cscript%3Ealert(1)%3C/script%3E", "That is not a page number: this share has 3 pages. This is the first.", 1},
		{"page=2&page=3", "That is not a page number: this share has 3 pages. This is the first.", 1},
		{"page=" + strings.Repeat("9", 40), "There is no such page: this share has 3 pages. This is the last.", 3},
	} {
		res, b := get(t, c, base(s)+l.Path()+"?"+tc.query)
		first := fmt.Sprintf("f%04d", (tc.page-1)*pageRows)
		if res.StatusCode != http.StatusNotFound || !bytes.Contains(b, []byte(`<p class="notice" role="alert">`+tc.says+`</p>`)) ||
			!bytes.Contains(b, []byte(">"+first+"</a>")) || !bytes.Contains(b, []byte(fmt.Sprintf("page %d of 3", tc.page))) {
			t.Errorf("?%s: %d, want 404 with %q and page %d:\n%.3000s", tc.query, res.StatusCode, tc.says, tc.page, b)
		}
		if bytes.Contains(b, []byte("script")) || bytes.Contains(b, []byte("alert(")) {
			t.Errorf("?%s: the page repeats the query", tc.query)
		}
	}
}

// The PIN field brings up a phone's number pad only for a PIN of digits:
// the app takes any PIN up to 64 characters ("ab", "sunny"), and one with
// letters could not be typed on a phone whose browser showed only digits
// (inputmode="numeric" on every PIN page; an iPhone's number pad has no
// letters at all).
func TestPINFieldKeyboardFitsThePIN(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a", 10)
	s := startServer(t, Options{})
	for _, c := range []struct {
		pin     string
		numeric bool
	}{{"4711", true}, {"ab", false}, {"12a4", false}, {"sunny day", false}} {
		l, err := s.Share(context.Background(), []string{filepath.Join(dir, "a")}, ShareOptions{LinkOptions: LinkOptions{PIN: c.pin}})
		if err != nil {
			t.Fatal(err)
		}
		_, page := get(t, http.DefaultClient, base(s)+l.Path())
		if !bytes.Contains(page, []byte(`name="pin"`)) {
			t.Fatalf("PIN %q: no PIN form:\n%s", c.pin, page)
		}
		if got := bytes.Contains(page, []byte(`inputmode="numeric"`)); got != c.numeric {
			t.Errorf("PIN %q: the field asks for a number pad: %v, want %v", c.pin, got, c.numeric)
		}
	}
}

// A device past the link's MaxDevices is turned away, and counted once for
// the link's owner (it was never told).
func TestTurnedAwayIsCounted(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a", 10)
	s := startServer(t, Options{})
	l, err := s.Share(context.Background(), []string{filepath.Join(dir, "a")}, ShareOptions{LinkOptions: LinkOptions{MaxDevices: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := get(t, &http.Client{}, base(s)+l.Path()); res.StatusCode != 200 {
		t.Fatalf("first device: %d", res.StatusCode)
	}
	from := func(ip byte) *http.Client {
		return &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, ip)}}).DialContext}}
	}
	for _, ip := range []byte{2, 2, 3} {
		if res, _ := get(t, from(ip), base(s)+l.Path()); res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("127.0.0.%d: %d, want it turned away", ip, res.StatusCode)
		}
	}
	if _, locked, away := l.Guards(); away != 2 || locked {
		t.Fatalf("Guards: %d turned away, locked %v; want 2 devices, not locked", away, locked)
	}
}

// tusClient is a minimal tus 1.0 client, as the page's tus-js-client
// speaks it.
type tusClient struct {
	c    *http.Client
	base string // the link's tus endpoint
}

func (tc *tusClient) create(name string, size int64) (string, *http.Response) {
	req, _ := http.NewRequest(http.MethodPost, tc.base, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", strconv.FormatInt(size, 10))
	req.Header.Set("Upload-Metadata", "filename "+base64.StdEncoding.EncodeToString([]byte(name)))
	res, err := tc.c.Do(req)
	if err != nil {
		panic(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.Header.Get("Location"), res
}

func (tc *tusClient) patch(loc string, off int64, body []byte) *http.Response {
	req, _ := http.NewRequest(http.MethodPatch, loc, bytes.NewReader(body))
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	req.Header.Set("Upload-Offset", strconv.FormatInt(off, 10))
	res, err := tc.c.Do(req)
	if err != nil {
		panic(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

func (tc *tusClient) head(loc string) (int64, int) {
	req, _ := http.NewRequest(http.MethodHead, loc, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	res, err := tc.c.Do(req)
	if err != nil {
		panic(err)
	}
	res.Body.Close()
	off, _ := strconv.ParseInt(res.Header.Get("Upload-Offset"), 10, 64)
	return off, res.StatusCode
}

// upload sends data whole, chunk by chunk.
func (tc *tusClient) upload(t *testing.T, name string, data []byte) string {
	t.Helper()
	loc, res := tc.create(name, int64(len(data)))
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create %q: %d", name, res.StatusCode)
	}
	for off := 0; off < len(data); off += ChunkSize {
		end := min(off+ChunkSize, len(data))
		if res := tc.patch(loc, int64(off), data[off:end]); res.StatusCode != http.StatusNoContent {
			t.Fatalf("patch %q at %d: %d", name, off, res.StatusCode)
		}
	}
	return loc
}

func startReceive(t *testing.T, opts ReceiveOptions) (*Server, *Link, *FolderInbox, *tusClient) {
	t.Helper()
	return startReceiveIn(t, t.TempDir(), opts)
}

// startReceiveIn is startReceive into the folder dir.
func startReceiveIn(t *testing.T, dir string, opts ReceiveOptions) (*Server, *Link, *FolderInbox, *tusClient) {
	t.Helper()
	s := startServer(t, Options{DeviceName: "Alice"})
	in, err := NewFolderInbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	l, err := s.Receive(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, l, in, &tusClient{c: &http.Client{}, base: base(s) + l.Path() + "tus/"}
}

func TestReceiveResumes(t *testing.T) {
	_, l, in, tc := startReceive(t, ReceiveOptions{})
	data := make([]byte, ChunkSize+12345)
	rand.Read(data)
	loc, res := tc.create("photo.jpg", int64(len(data)))
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", res.StatusCode)
	}
	// A first chunk cut short: what arrived is kept, and the offset says so.
	if res := tc.patch(loc, 0, data[:1000]); res.StatusCode != http.StatusNoContent {
		t.Fatalf("patch: %d", res.StatusCode)
	}
	off, code := tc.head(loc)
	if code != 200 || off != 1000 {
		t.Fatalf("head: %d, offset %d", code, off)
	}
	// The wrong offset is refused and loses nothing.
	if res := tc.patch(loc, 0, data[:10]); res.StatusCode != http.StatusConflict {
		t.Fatalf("wrong offset: %d", res.StatusCode)
	}
	if res := tc.patch(loc, 1000, data[1000:ChunkSize]); res.StatusCode != http.StatusNoContent {
		t.Fatalf("patch: %d", res.StatusCode)
	}
	if res := tc.patch(loc, ChunkSize, data[ChunkSize:]); res.StatusCode != http.StatusNoContent {
		t.Fatalf("patch: %d", res.StatusCode)
	}
	got, err := os.ReadFile(filepath.Join(in.Dir(), "photo.jpg"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("saved file: %v, %d bytes", err, len(got))
	}
	// A second file of the same name gets a number.
	tc.upload(t, "photo.jpg", []byte("second"))
	if got, err := os.ReadFile(filepath.Join(in.Dir(), "photo (1).jpg")); err != nil || string(got) != "second" {
		t.Fatalf("second file: %v %q", err, got)
	}
	acts := l.Activities()
	if len(acts) != 2 || !acts[0].Done || acts[0].Err != nil || acts[1].SavedAs != "photo (1).jpg" {
		t.Fatalf("activities %+v", acts)
	}
}

// TestBackslashSavedAsUnderscore: a file named "a\b.txt" (legal on Linux
// and macOS) is saved as "a_b.txt", and its activity says so.
func TestBackslashSavedAsUnderscore(t *testing.T) {
	_, l, in, tc := startReceive(t, ReceiveOptions{})
	tc.upload(t, `a\b.txt`, []byte("hello"))
	if got, err := os.ReadFile(filepath.Join(in.Dir(), "a_b.txt")); err != nil || string(got) != "hello" {
		t.Fatalf("saved: %q, %v", got, err)
	}
	acts := l.Activities()
	if len(acts) != 1 || !acts[0].Done || acts[0].Err != nil || acts[0].Name != `a\b.txt` || acts[0].SavedAs != "a_b.txt" {
		t.Fatalf("activities %+v", acts)
	}
}

// TestQuietUploadsGiveWay: at MaxOpen, a new upload takes the place of the
// one quiet longest once it has been quiet for EvictQuiet: its partial goes,
// its activity ends "not sent", and its page finds it gone (404) and would
// send it anew; one quiet for less keeps its place, and the newcomer is
// refused as before. Uploads created and left held every place for the
// link's life: anyone with the link kept every other browser out
// ("too many files are being sent at once") by creating 64 and sending
// nothing.
func TestQuietUploadsGiveWay(t *testing.T) {
	s, advance := startServerOnAFakeClock(t)
	in, err := NewFolderInbox(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	l, err := s.Receive(in, ReceiveOptions{MaxOpen: 2})
	if err != nil {
		t.Fatal(err)
	}
	tc := &tusClient{c: &http.Client{}, base: base(s) + l.Path() + "tus/"}
	left, res := tc.create("left.bin", 100)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", res.StatusCode)
	}
	if res := tc.patch(left, 0, make([]byte, 10)); res.StatusCode != http.StatusNoContent {
		t.Fatalf("patch: %d", res.StatusCode)
	}
	advance(30 * time.Second)
	second, res := tc.create("second.bin", 5)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create second: %d", res.StatusCode)
	}
	if _, res := tc.create("third.bin", 5); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third, with every upload quiet less than a minute: %d, want 429", res.StatusCode)
	}
	advance(31 * time.Second) // left.bin quiet for 61 s, second.bin for 31 s
	third, res := tc.create("third.bin", 5)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("third, left.bin quiet for a minute: %d, want 201", res.StatusCode)
	}
	if _, code := tc.head(left); code != http.StatusNotFound {
		t.Errorf("the upload that gave way: HEAD %d, want 404", code)
	}
	for _, c := range []struct {
		loc, name string
	}{{second, "second.bin"}, {third, "third.bin"}} {
		if res := tc.patch(c.loc, 0, []byte("hello")); res.StatusCode != http.StatusNoContent {
			t.Fatalf("patch %s: %d", c.name, res.StatusCode)
		}
	}
	entries, err := os.ReadDir(in.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[second.bin third.bin]" {
		t.Errorf("download folder holds %v, want second.bin and third.bin", names)
	}
	for _, a := range l.Activities() {
		if a.Name == "left.bin" && (!a.Done || !errors.Is(a.Err, errEvicted)) {
			t.Errorf("left.bin: %+v", a)
		}
	}
}

func TestStopDiscardsUploads(t *testing.T) {
	s, l, in, tc := startReceive(t, ReceiveOptions{})
	loc, _ := tc.create("half.bin", 100)
	tc.patch(loc, 0, make([]byte, 50))
	if ents, _ := os.ReadDir(in.Dir()); len(ents) != 1 || ents[0].Name() != "half.bin.partial" {
		t.Fatalf("before stop: %v", ents)
	}
	l.Stop()
	if ents, _ := os.ReadDir(in.Dir()); len(ents) != 0 {
		t.Fatalf("after stop, left behind: %v", ents)
	}
	if res := tc.patch(loc, 50, make([]byte, 50)); res.StatusCode != http.StatusGone {
		t.Fatalf("patch after stop: %d", res.StatusCode)
	}
	res, _ := get(t, &http.Client{}, base(s)+l.Path())
	if res.StatusCode != http.StatusGone {
		t.Fatalf("page after stop: %d", res.StatusCode)
	}
	if ents, _ := os.ReadDir(in.Dir()); len(ents) != 0 {
		t.Fatalf("after stop, left behind: %v", ents)
	}
}

func TestAttachment(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a.txt", `attachment; filename=a.txt`},
		{"my file.txt", `attachment; filename="my file.txt"`},
		{`a"b\c.txt`, `attachment; filename=a_b_c.txt; filename*=UTF-8''a%22b%5Cc.txt`},
		{"grüße.txt", `attachment; filename=gr__e.txt; filename*=UTF-8''gr%C3%BC%C3%9Fe.txt`},
		{"a;b=c.txt", `attachment; filename="a;b=c.txt"`},
		{"100%.txt", `attachment; filename=100_.txt; filename*=UTF-8''100%25.txt`},
		{"../../etc/passwd", `attachment; filename=passwd`},
		{"", `attachment; filename=download`},
		{"line\r\nX-Evil: 1", `attachment; filename="line__X-Evil: 1"; filename*=UTF-8''line%0D%0AX-Evil%3A%201`},
	} {
		if got := attachment(c.in); got != c.want {
			t.Errorf("attachment(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestStopCutsStalledTransfers(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "big.bin", 64<<20)
	s := startServer(t, Options{})
	l, err := s.Share(context.Background(), []string{filepath.Join(dir, "big.bin")}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A client that asks and never reads: the server fills the socket and
	// blocks.
	conn, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %sf/0/big.bin HTTP/1.1\r\nHost: x\r\n\r\n", l.Path())
	for ev := range l.Events() {
		if ev.Kind == EventStart {
			break
		}
	}
	l.Stop() // returns only once the download's request ended

	_, rl, in, tc := startReceive(t, ReceiveOptions{})
	loc, _ := tc.create("stalled.bin", 1<<20)
	u, _ := url.Parse(loc)
	up, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	// A body that promises 1 MiB and stops after 10 bytes.
	fmt.Fprintf(up, "PATCH %s HTTP/1.1\r\nHost: x\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: %d\r\n\r\n0123456789", u.Path, 1<<20)
	for ev := range rl.Events() {
		if ev.Kind == EventProgress {
			break
		}
	}
	rl.Stop()
	if ents, _ := os.ReadDir(in.Dir()); len(ents) != 0 {
		t.Fatalf("after Stop: %v", ents)
	}
}

// A shared file deleted before the zip is made is left out of it, and a
// note in the zip names it and why; the others arrive. A shared file named
// like the note keeps its name.
func TestZipLeavesOutWhatIsGone(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.bin", 3000)
	writeFile(t, dir, "gone.txt", 10)
	clash := writeFile(t, dir, "NOT INCLUDED.txt", 5)
	s := startServer(t, Options{DeviceName: "Alice"})
	l, err := s.Share(context.Background(), []string{filepath.Join(dir, "a.bin"), filepath.Join(dir, "gone.txt"), filepath.Join(dir, "NOT INCLUDED.txt")}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "gone.txt"))
	res, z := get(t, &http.Client{}, base(s)+l.Path()+"all.zip")
	if res.StatusCode != 200 {
		t.Fatalf("zip: %d", res.StatusCode)
	}
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatalf("the zip is broken: %v", err)
	}
	got := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		got[f.Name] = string(b)
	}
	if len(got) != 3 || got["a.bin"] != string(a) || got["NOT INCLUDED.txt"] != string(clash) {
		t.Fatalf("zip entries %v", slices.Collect(maps.Keys(got)))
	}
	note := got["NOT INCLUDED (2).txt"]
	if !strings.Contains(note, "could not be read on Alice") || !strings.Contains(note, "gone.txt (no such file or directory)") {
		t.Errorf("note %q", note)
	}
	// The sharer is told too: the download's activity names it.
	var left []string
	for _, a := range l.Activities() {
		if a.Zip && a.Done {
			left = a.LeftOut
		}
	}
	if !slices.Equal(left, []string{"gone.txt (no such file or directory)"}) {
		t.Errorf("the sharer's activity says it left out %q", left)
	}
}

// TestShareCancelledWhileListing: a share's files are listed before the
// link opens; a context that ends stops the listing, and no link is left
// registered (its token answers nothing, the server holds none).
func TestShareCancelledWhileListing(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		writeFile(t, dir, fmt.Sprintf("album/%02d.jpg", i), 10)
	}
	s := startServer(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l, err := s.Share(ctx, []string{filepath.Join(dir, "album")}, ShareOptions{})
	if !errors.Is(err, context.Canceled) || l != nil {
		t.Fatalf("Share with an ended context = %v, %v; want context.Canceled and no link", l, err)
	}
	s.mu.Lock()
	n := len(s.links)
	s.mu.Unlock()
	if n != 0 {
		t.Errorf("the server holds %d links after a cancelled share", n)
	}
	if l, err := s.Share(context.Background(), []string{filepath.Join(dir, "album")}, ShareOptions{}); err != nil {
		t.Fatal(err)
	} else if names, _ := l.Files(); len(names) != 50 {
		t.Errorf("the share after lists %d files, want 50", len(names))
	}
}

// TestShareSameNameTwice: two files of one name given from two folders, and
// two folders of one name, are both shared: the second under "name (1)",
// each served from where it was found.
func TestShareSameNameTwice(t *testing.T) {
	dir := t.TempDir()
	first := writeFile(t, dir, "phone/photo.jpg", 100)
	second := writeFile(t, dir, "camera/photo.jpg", 200)
	inFirst := writeFile(t, dir, "one/Trip/a.txt", 10)
	inSecond := writeFile(t, dir, "two/Trip/a.txt", 20)
	s := startServer(t, Options{})
	l, err := s.Share(context.Background(), []string{
		filepath.Join(dir, "phone", "photo.jpg"), filepath.Join(dir, "camera", "photo.jpg"),
		filepath.Join(dir, "one", "Trip"), filepath.Join(dir, "two", "Trip"),
	}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names, _ := l.Files()
	if want := "photo.jpg|photo (1).jpg|Trip/a.txt|Trip (1)/a.txt"; strings.Join(names, "|") != want {
		t.Fatalf("files %q, want %q", strings.Join(names, "|"), want)
	}
	c := &http.Client{}
	for i, want := range [][]byte{first, second, inFirst, inSecond} {
		u := base(s) + l.Path() + "f/" + strconv.Itoa(i) + "/" + url.PathEscape(path.Base(names[i]))
		if res, got := get(t, c, u); res.StatusCode != 200 || !bytes.Equal(got, want) {
			t.Errorf("%s: %d, %d bytes; want the %d bytes found there", names[i], res.StatusCode, len(got), len(want))
		}
	}
}

// TestShareRefusesMoreThanMaxFiles: a share takes up to MaxFiles files and
// says the bound when the paths hold more, once and without the path.
func TestShareRefusesMoreThanMaxFiles(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		writeFile(t, dir, fmt.Sprintf("album/%02d.jpg", i), 1)
	}
	writeFile(t, dir, "notes.txt", 1)
	s := startServer(t, Options{})
	for _, c := range []struct {
		paths []string
		max   int
		ok    bool
	}{
		{[]string{"album"}, 50, true},
		{[]string{"album"}, 49, false},
		{[]string{"album", "notes.txt"}, 50, false},
		{[]string{"notes.txt", "album"}, 50, false},
	} {
		var paths []string
		for _, p := range c.paths {
			paths = append(paths, filepath.Join(dir, p))
		}
		l, err := s.Share(context.Background(), paths, ShareOptions{MaxFiles: c.max})
		if c.ok {
			if err != nil {
				t.Errorf("%v with at most %d: %v", c.paths, c.max, err)
			}
			continue
		}
		want := fmt.Sprintf("weblink: too many files to share: the paths given hold more than %d files", c.max)
		if !errors.Is(err, ErrTooManyFiles) || err.Error() != want || l != nil {
			t.Errorf("%v with at most %d = %v, %v; want %q", c.paths, c.max, l, err, want)
		}
	}
}

func TestZipEntryName(t *testing.T) {
	for in, want := range map[string]string{
		"Trip/a.txt":         "Trip/a.txt",
		`Trip/C:\x\evil.txt`: "Trip/C__x_evil.txt",
		"Trip/../../etc/x":   "Trip/etc/x",
		"./a//b":             "a/b",
		"..":                 "file",
		"":                   "file",
	} {
		if got := zipEntryName(in); got != want {
			t.Errorf("zipEntryName(%q) = %q, want %q", in, got, want)
		}
	}
}

// progressInbox is a FolderInbox that reports each upload's bytes on a
// channel.
type progressInbox struct {
	*FolderInbox
	at chan int64
}

func (p *progressInbox) Progress(a Arrival, bytes int64) { p.at <- bytes }

func TestSlowChunkEnds(t *testing.T) {
	s, advance := startServerOnAFakeClock(t)
	fi, err := NewFolderInbox(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fi.Close() })
	in := &progressInbox{FolderInbox: fi, at: make(chan int64, 16)}
	l, err := s.Receive(in, ReceiveOptions{}) // at least 64 KiB in each 30 s
	if err != nil {
		t.Fatal(err)
	}
	tc := &tusClient{c: &http.Client{}, base: base(s) + l.Path() + "tus/"}
	loc, res := tc.create("slow.bin", 10)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", res.StatusCode)
	}
	// A chunk of 3 bytes that trickles: one, then 31 s later another.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPatch, loc, pr)
	req.ContentLength = 3
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	req.Header.Set("Upload-Offset", "0")
	done := make(chan *http.Response, 1)
	go func() {
		res, err := tc.c.Do(req)
		if err != nil {
			done <- nil
			return
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		done <- res
	}()
	pw.Write([]byte("a"))
	if at := <-in.at; at != 1 {
		t.Fatalf("progress %d, want 1", at)
	}
	advance(31 * time.Second)
	pw.Write([]byte("b"))
	if at := <-in.at; at != 2 {
		t.Fatalf("progress %d, want 2", at)
	}
	// The third byte completes the chunk unless it was ended already.
	go func() { pw.Write([]byte("c")); pw.Close() }()
	res = <-done
	if res == nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a chunk that brought 1 byte in 31 s: %+v, want 503", res)
	}
	// The upload stays, resumable from what arrived.
	if off, code := tc.head(loc); code != http.StatusOK || off != 2 {
		t.Fatalf("HEAD after: %d at %d, want 200 at 2", code, off)
	}
	go func() {
		for range in.at {
		}
	}()
	if res := tc.patch(loc, 2, []byte("cdefghij")); res.StatusCode != http.StatusNoContent {
		t.Fatalf("resume: %d", res.StatusCode)
	}
	got, err := os.ReadFile(filepath.Join(fi.Dir(), "slow.bin"))
	if err != nil || string(got) != "abcdefghij" {
		t.Fatalf("saved %q, %v", got, err)
	}
}

// TestExpiryLetsUploadsGoingFinish: a receive link that expires lets the
// uploads going then finish (ReceiveOptions.ExpiryGrace), and those only:
// one whose chunk ended less than EvictQuiet before sends its last bytes
// and is saved whole, while one quiet longer is refused and its partial
// goes, and so is a new upload, each with 410 "expired". The grace is
// bounded: an upload still going when it runs out is cut, and Stop cuts
// at once. Before, the expiry cut every upload on its way and its partial
// went.
func TestExpiryLetsUploadsGoingFinish(t *testing.T) {
	s, advance := startServerOnAFakeClock(t)
	open := func(grace time.Duration) (*Link, *FolderInbox, *tusClient) {
		in, err := NewFolderInbox(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { in.Close() })
		l, err := s.Receive(in, ReceiveOptions{LinkOptions: LinkOptions{Expire: 90 * time.Second}, ExpiryGrace: grace})
		if err != nil {
			t.Fatal(err)
		}
		drain(l)
		return l, in, &tusClient{c: &http.Client{}, base: base(s) + l.Path() + "tus/"}
	}
	begin := func(tc *tusClient, name string) string {
		loc, res := tc.create(name, 100)
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d", name, res.StatusCode)
		}
		if res := tc.patch(loc, 0, make([]byte, 10)); res.StatusCode != http.StatusNoContent {
			t.Fatalf("patch %s: %d", name, res.StatusCode)
		}
		return loc
	}
	expired := func(what string, res *http.Response) {
		t.Helper()
		if res.StatusCode != http.StatusGone || res.Header.Get(endedHeader) != "expired" {
			t.Errorf("%s: %d %q, want 410 expired", what, res.StatusCode, res.Header.Get(endedHeader))
		}
	}

	l, in, tc := open(0)
	quiet := begin(tc, "quiet.bin")
	advance(61 * time.Second)
	going := begin(tc, "going.bin")
	advance(30 * time.Second) // past the link's end: quiet.bin quiet for 91 s, going.bin for 30 s
	_, res := tc.create("new.bin", 5)
	expired("a new upload", res)
	if l.Err() == nil {
		t.Fatal("the link did not expire")
	}
	expired("quiet.bin's chunk", tc.patch(quiet, 10, make([]byte, 90)))
	if res := tc.patch(going, 10, make([]byte, 90)); res.StatusCode != http.StatusNoContent {
		t.Fatalf("going.bin's last chunk: %d, want 204", res.StatusCode)
	}
	l.wait()
	if st, err := os.Stat(filepath.Join(in.Dir(), "going.bin")); err != nil || st.Size() != 100 {
		t.Fatalf("going.bin: %v", err)
	}
	if names := dirNames(t, in.Dir()); fmt.Sprint(names) != "[going.bin]" {
		t.Errorf("download folder holds %v, want going.bin alone", names)
	}
	expired("a request after the uploads finished", tc.patch(going, 100, nil))

	// The grace runs out: what is still going is cut.
	l, in, tc = open(time.Millisecond)
	advance(61 * time.Second)
	going = begin(tc, "slow.bin")
	advance(30 * time.Second)
	_, res = tc.create("new.bin", 5)
	expired("a new upload", res)
	l.wait()
	expired("slow.bin after the grace", tc.patch(going, 10, make([]byte, 90)))
	if names := dirNames(t, in.Dir()); len(names) != 0 {
		t.Errorf("download folder holds %v after the grace, want nothing", names)
	}

	// Stop cuts what the expiry let go on.
	l, in, tc = open(time.Hour)
	advance(61 * time.Second)
	going = begin(tc, "stopped.bin")
	advance(30 * time.Second)
	_, res = tc.create("new.bin", 5)
	expired("a new upload", res)
	l.Stop()
	expired("stopped.bin after Stop", tc.patch(going, 10, make([]byte, 90)))
	if names := dirNames(t, in.Dir()); len(names) != 0 {
		t.Errorf("download folder holds %v after Stop, want nothing", names)
	}
}

// dirNames lists dir's entries.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestSavedAsHeaderIsBounded: the answer that finishes an upload saved
// under another name says the name in Ferry-Saved-As, in at most
// maxSavedAsHeader bytes: only the file's name where its folder is the one
// the page sent it in, and of a folder named otherwise the path's last
// elements after "…/" where the whole does not fit. A HEAD after the end
// says the same. Before, the whole path went percent-encoded: a 4073-byte
// path of accented letters made a header of 12 KB.
func TestSavedAsHeaderIsBounded(t *testing.T) {
	_, _, in, tc := startReceive(t, ReceiveOptions{})
	elem := strings.Repeat("é", 127) // 254 bytes
	deep := strings.Repeat(elem+"/", 15) + strings.Repeat("é", 120) + ".bin"
	for _, c := range []struct {
		name    string
		sent    string // the path the page gives
		planted string // a file there first
		want    string // the header, decoded
	}{
		{"folder kept", deep, deep, strings.Repeat("é", 120) + " (1).bin"},
		// Its last elements, after "…/", as many as fit.
		{"folder renamed", "Trip/" + deep, "Trip", "…/" + strings.Repeat("é", 120) + ".bin"},
		{"short path, folder renamed", "Box/a.txt", "Box", "Box (1)/a.txt"},
		{"name kept", "plain.txt", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.planted != "" {
				// Through a Root: the whole path is longer than one the
				// kernel takes.
				r, err := os.OpenRoot(in.Dir())
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				p := filepath.FromSlash(c.planted)
				if err := r.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := r.WriteFile(p, []byte("already here"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			req, _ := http.NewRequest(http.MethodPost, tc.base, nil)
			req.Header.Set("Tus-Resumable", "1.0.0")
			req.Header.Set("Upload-Length", "3")
			req.Header.Set("Upload-Metadata", "filename "+base64.StdEncoding.EncodeToString([]byte(path.Base(c.sent)))+
				",relativepath "+base64.StdEncoding.EncodeToString([]byte(c.sent)))
			res, err := tc.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusCreated {
				t.Fatalf("create: %d", res.StatusCode)
			}
			loc := res.Header.Get("Location")
			preq, _ := http.NewRequest(http.MethodPatch, loc, strings.NewReader("abc"))
			preq.Header.Set("Tus-Resumable", "1.0.0")
			preq.Header.Set("Content-Type", "application/offset+octet-stream")
			preq.Header.Set("Upload-Offset", "0")
			pres, err := tc.c.Do(preq)
			if err != nil {
				t.Fatal(err)
			}
			pres.Body.Close()
			if pres.StatusCode != http.StatusNoContent {
				t.Fatalf("patch: %d", pres.StatusCode)
			}
			hreq, _ := http.NewRequest(http.MethodHead, loc, nil)
			hreq.Header.Set("Tus-Resumable", "1.0.0")
			hres, err := tc.c.Do(hreq)
			if err != nil {
				t.Fatal(err)
			}
			hres.Body.Close()
			for what, h := range map[string]string{"the last PATCH": pres.Header.Get(savedAsHeader), "a HEAD after": hres.Header.Get(savedAsHeader)} {
				if len(h) > 1024 { // maxSavedAsHeader

					t.Errorf("%s: a header of %d bytes", what, len(h))
				}
				got, err := url.PathUnescape(h)
				if err != nil || got != c.want {
					t.Errorf("%s says %.80q (%v), want %.80q", what, got, err, c.want)
				}
			}
		})
	}
}

// threePagesBehindAPIN shares a folder of three pages of files behind the
// PIN 4711 (100 tries).
func threePagesBehindAPIN(t *testing.T) (*Server, *Link) {
	t.Helper()
	dir := t.TempDir()
	for i := range 2*pageRows + 1 {
		writeFile(t, dir, fmt.Sprintf("f%04d", i), 1)
	}
	s := startServer(t, Options{})
	l, err := s.Share(context.Background(), []string{dir}, ShareOptions{LinkOptions: LinkOptions{PIN: "4711", MaxPINTries: 100}})
	if err != nil {
		t.Fatal(err)
	}
	return s, l
}
